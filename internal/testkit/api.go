package testkit

import (
	"encoding/json"
	"net/http"
)

// APIStatus is the status an answer of ejob's REST API reports: the
// envelope's errorCode when an HTTP 200 carries an error envelope
// ({"success":false,"errorCode":N,...}, as /api/* answers every error,
// after ElasticJob-UI's backend), else the HTTP status (a success, a bare
// count, the console's own endpoints, which answer with real statuses).
// Tests read statuses of /api/* through it, so one assertion reads both
// kinds of answer.
func APIStatus(httpStatus int, body []byte) int {
	if httpStatus != http.StatusOK {
		return httpStatus
	}
	var env struct {
		Success   *bool `json:"success"`
		ErrorCode int   `json:"errorCode"`
	}
	if json.Unmarshal(body, &env) != nil || env.Success == nil || *env.Success || env.ErrorCode == 0 {
		return httpStatus
	}
	return env.ErrorCode
}
