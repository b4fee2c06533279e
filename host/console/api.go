package console

import "net/http"

// apiRoutes registers the console's own endpoints (behind Authenticate).
func (c *Console) apiRoutes(mux *http.ServeMux) {
	_ = mux
}
