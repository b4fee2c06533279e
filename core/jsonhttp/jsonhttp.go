package jsonhttp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"
)

// Limits bound each request a Gate admits. Every field must be positive.
type Limits struct {
	// MaxBody is the largest request body, in bytes.
	MaxBody int64
	// Timeout is how long one request may take, waiting for its slot
	// included.
	Timeout time.Duration
	// Concurrency is how many requests are served at once.
	Concurrency int
}

// Or is l with each field that is not positive taken from def.
func (l Limits) Or(def Limits) Limits {
	if l.MaxBody <= 0 {
		l.MaxBody = def.MaxBody
	}
	if l.Timeout <= 0 {
		l.Timeout = def.Timeout
	}
	if l.Concurrency <= 0 {
		l.Concurrency = def.Concurrency
	}
	return l
}

// Gate admits requests within its Limits.
type Gate struct {
	limits Limits
	sem    chan struct{}
}

// NewGate returns a gate with l.
func NewGate(l Limits) *Gate { return &Gate{limits: l, sem: make(chan struct{}, l.Concurrency)} }

// Refusal is why a Gate refused a request before serving it: the HTTP
// status to answer and what to say.
type Refusal struct {
	Status  int
	Message string
}

// Enter waits for a request slot (within Timeout) and reads r's body
// (within MaxBody). Served, it returns the request's ctx (ending at
// Timeout), the body and done, which the caller calls once it has
// answered; refused, a Refusal: 503 with no slot in time, 413 for a body
// over MaxBody, 400 for a body that cannot be read.
func (g *Gate) Enter(w http.ResponseWriter, r *http.Request) (ctx context.Context, body []byte, done func(), refused *Refusal) {
	ctx, cancel := context.WithTimeout(r.Context(), g.limits.Timeout)
	select {
	case g.sem <- struct{}{}:
	case <-ctx.Done():
		cancel()
		return nil, nil, nil, &Refusal{http.StatusServiceUnavailable, fmt.Sprintf("busy: no request slot within %v", g.limits.Timeout)}
	}
	done = func() { <-g.sem; cancel() }
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, g.limits.MaxBody))
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		done()
		return nil, nil, nil, &Refusal{http.StatusRequestEntityTooLarge, fmt.Sprintf("request body over %d bytes", g.limits.MaxBody)}
	case err != nil:
		done()
		return nil, nil, nil, &Refusal{http.StatusBadRequest, "read request: " + err.Error()}
	}
	return ctx, body, done, nil
}

// Reply answers v as JSON with status.
func Reply(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// Decode reads body into v: one JSON value with known fields only.
func Decode(body []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("request: %w", err)
	}
	if dec.More() {
		return errors.New("request: data after the JSON value")
	}
	return nil
}

// ReadAnswer reads resp's body, at most max bytes: more is an error.
func ReadAnswer(resp *http.Response, max int64) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(resp.Body, max+1))
	if err != nil {
		return nil, fmt.Errorf("read the answer: %w", err)
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("answer over %d bytes", max)
	}
	return data, nil
}

// Unexpected is the error of an answer of resp's status (not 200) whose
// body data is not the protocol's error: the status and the body's start.
func Unexpected(resp *http.Response, data []byte) error {
	return fmt.Errorf("%s: %s", resp.Status, bytes.TrimSpace(data[:min(len(data), 200)]))
}

// CodeOf is the code under which codes holds a sentinel that err wraps
// ("" for none).
func CodeOf(codes map[string]error, err error) string {
	for code, s := range codes {
		if errors.Is(err, s) {
			return code
		}
	}
	return ""
}

// RemoteError is an error the serving side returned: its text, and the
// sentinel it wrapped there (nil when none crossed).
type RemoteError struct {
	Message  string
	Sentinel error
}

func (e *RemoteError) Error() string { return e.Message }
func (e *RemoteError) Unwrap() error { return e.Sentinel }
