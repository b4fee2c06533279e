package httpapi

import (
	"net/http"
	"strings"
)

// statusInBody answers every error of h as ElasticJob-UI's backend does:
// HTTP 200 with the error's status in the envelope's errorCode (a missing
// or dead token: errorCode 403). The UI's HTTP client (axios) reads the
// envelope of a 2xx answer only, so an error sent with its own HTTP status
// would reach the user as "Request failed with status code 400" instead of
// the message, and a dead token would not send the user to the login page.
// Only JSON answers are rewritten: every error of the /api routes is an
// envelope. The console's own endpoints (/console/api/) keep real HTTP
// statuses.
func statusInBody(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(&envelopeWriter{ResponseWriter: w}, r)
	})
}

// envelopeWriter writes 200 for an error status of a JSON answer.
type envelopeWriter struct {
	http.ResponseWriter
}

func (e *envelopeWriter) WriteHeader(status int) {
	if status >= 400 && strings.HasPrefix(e.Header().Get("Content-Type"), "application/json") {
		status = http.StatusOK
	}
	e.ResponseWriter.WriteHeader(status)
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (e *envelopeWriter) Unwrap() http.ResponseWriter { return e.ResponseWriter }
