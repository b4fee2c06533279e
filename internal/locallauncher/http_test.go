package locallauncher_test

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// serveDir serves dir over a real HTTP server for the test's lifetime.
func serveDir(t *testing.T, dir string) string {
	t.Helper()
	srv := httptest.NewServer(http.FileServer(http.Dir(dir)))
	t.Cleanup(srv.Close)
	return srv.URL
}
