// Package alerttest holds what the alerting handlers' tests share: a
// Logger that records every line; Receiver, a real local HTTP server that
// records the requests it gets and answers as a test scripts it (status,
// body, delay); and SMTPServer, a real SMTP server (emersion/go-smtp) in
// plain, STARTTLS or implicit-TLS mode with AUTH PLAIN.
package alerttest

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// Logger records every line with its level and arguments; it has the
// methods of alert.Logger. It is safe for concurrent use.
type Logger struct {
	mu    sync.Mutex
	lines []string
}

func (l *Logger) add(level, msg string, args []any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, fmt.Sprintf("%s %s %v", level, msg, args))
}

func (l *Logger) Debug(msg string, args ...any) { l.add("DEBUG", msg, args) }
func (l *Logger) Info(msg string, args ...any)  { l.add("INFO", msg, args) }
func (l *Logger) Warn(msg string, args ...any)  { l.add("WARN", msg, args) }
func (l *Logger) Error(msg string, args ...any) { l.add("ERROR", msg, args) }

// Text returns every line so far, one per line: "LEVEL msg [k v ...]".
func (l *Logger) Text() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

// Request is one request a Receiver got.
type Request struct {
	Method string
	URL    *url.URL
	Header http.Header
	Body   []byte
}

// Response is what a Receiver answers: Status (0 means 200) and Body,
// after Delay. A delay longer than the client waits makes a slow server.
type Response struct {
	Status int
	Body   string
	Delay  time.Duration
}

// Receiver is a local HTTP server for alert tests.
type Receiver struct {
	// URL is the server's base URL (http://127.0.0.1:port).
	URL string

	mu   sync.Mutex
	reqs []Request
	got  chan struct{}
}

// NewReceiver starts a Receiver that answers the n-th request (from 1)
// with respond(n, request). It stops at the end of the test; requests
// still delayed then are cut short.
func NewReceiver(t testing.TB, respond func(n int, r Request) Response) *Receiver {
	t.Helper()
	rc := &Receiver{got: make(chan struct{}, 1)}
	stop := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		req := Request{Method: r.Method, URL: r.URL, Header: r.Header.Clone(), Body: body}
		rc.mu.Lock()
		rc.reqs = append(rc.reqs, req)
		n := len(rc.reqs)
		rc.mu.Unlock()
		select {
		case rc.got <- struct{}{}:
		default:
		}
		resp := respond(n, req)
		if resp.Delay > 0 {
			select {
			case <-time.After(resp.Delay):
			case <-stop:
			case <-r.Context().Done():
			}
		}
		if resp.Status == 0 {
			resp.Status = http.StatusOK
		}
		w.WriteHeader(resp.Status)
		io.WriteString(w, resp.Body)
	}))
	t.Cleanup(func() {
		close(stop)
		srv.Close()
	})
	rc.URL = srv.URL
	return rc
}

// Requests returns the requests so far, in arrival order.
func (rc *Receiver) Requests() []Request {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]Request(nil), rc.reqs...)
}

// WaitFor waits until at least n requests have arrived, or ctx ends, and
// returns them.
func (rc *Receiver) WaitFor(ctx context.Context, n int) ([]Request, error) {
	for {
		if reqs := rc.Requests(); len(reqs) >= n {
			return reqs, nil
		}
		select {
		case <-rc.got:
		case <-ctx.Done():
			return rc.Requests(), fmt.Errorf("%d of %d requests arrived: %w", len(rc.Requests()), n, ctx.Err())
		}
	}
}

// Always answers every request with resp.
func Always(resp Response) func(int, Request) Response {
	return func(int, Request) Response { return resp }
}
