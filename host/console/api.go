package console

import "net/http"

// apiRoutes registers the console's own endpoints (behind Authenticate).
func (c *Console) apiRoutes(mux *http.ServeMux) {
	// The job detail and recent executions (host/httpapi/console.go).
	c.srv.ConsoleRoutes(mux)
}
