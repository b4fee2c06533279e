package httptrace

import (
	"github.com/ejob-io/ejob/core/jsonhttp"
	"github.com/ejob-io/ejob/spi"
)

// PathPrefix is the URL path under which Handler serves, one POST per
// method: PathPrefix+"executions", "statuses", "output", "distinct" and
// "purge". Requests and answers are the spi structs as JSON (their Config
// is not sent: the handler uses its own).
const PathPrefix = "/tracing/v1/"

type errorResponse struct {
	Error *wireError `json:"error"`
}

// wireError is an error as it crosses: the spi sentinel it wraps (Code)
// and its text.
type wireError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// sentinels maps each wire code to the spi sentinel it stands for.
func sentinels() map[string]error {
	return map[string]error{
		"INVALID_CONFIG": spi.ErrInvalidConfig,
		"UNSUPPORTED":    spi.ErrUnsupported,
		"PLUGIN_EXITED":  spi.ErrPluginExited,
	}
}

func fromWire(w *wireError) error {
	return &jsonhttp.RemoteError{Message: w.Message, Sentinel: sentinels()[w.Code]}
}
