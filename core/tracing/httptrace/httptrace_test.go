package httptrace_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/ejob-io/ejob/core/tracing"
	"github.com/ejob-io/ejob/core/tracing/httptrace"
	"github.com/ejob-io/ejob/spi"
)

// served is a Memory with two runs of job "j" item 0 (the newer one
// failed with output) behind a Handler on a real HTTP server, and a
// client of it.
func served(t *testing.T, opts httptrace.HandlerOptions) (*httptest.Server, *httptrace.Client) {
	t.Helper()
	m := tracing.NewMemory(tracing.MemoryOptions{})
	t0 := time.Now().Add(-time.Minute).Truncate(time.Millisecond)
	run := func(id string, at time.Time, ok bool, out string) []spi.ExecutionEvent {
		start := spi.ExecutionEvent{ID: id, JobName: "j", IP: "10.0.0.1", StartTime: at}
		done := start
		done.CompleteTime, done.Success = at.Add(time.Second), ok
		if !ok {
			done.FailureCause, done.Output = "exit status 3", spi.Output{Text: out}
		}
		return []spi.ExecutionEvent{start, done}
	}
	evs := append(run("a", t0, true, ""), run("b", t0.Add(10*time.Second), false, "err| cannot reach db\n")...)
	if _, err := m.Write(context.Background(), spi.TraceWriteRequest{Executions: evs,
		Statuses: []spi.StatusEvent{{ID: "s", JobName: "j", State: "TASK_ERROR", CreationTime: t0}}}); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(httptrace.Handler(m, map[string]string{"driver": tracing.MemoryDriver}, opts))
	t.Cleanup(srv.Close)
	return srv, httptrace.New(srv.Client(), srv.URL)
}

// TestClientReadsTheServedHistory: every read method and Purge of the
// client answer what the tracer behind the handler holds, and an error
// of that tracer comes back wrapping the same spi sentinel.
func TestClientReadsTheServedHistory(t *testing.T) {
	_, c := served(t, httptrace.HandlerOptions{})
	ctx := context.Background()
	item := 0
	p, err := c.QueryExecutions(ctx, spi.ExecutionQuery{JobName: "j", Item: &item, Limit: 10})
	if err != nil || len(p.Executions) != 2 || p.Executions[0].ID != "b" || p.Executions[0].Success ||
		p.Executions[0].FailureCause != "exit status 3" || p.Executions[0].CompleteTime.IsZero() {
		t.Fatalf("QueryExecutions = %+v, %v", p, err)
	}
	o, err := c.QueryOutput(ctx, spi.OutputQuery{ID: "b"})
	if err != nil || !o.Found || o.Output.Text != "err| cannot reach db\n" {
		t.Errorf("QueryOutput = %+v, %v", o, err)
	}
	s, err := c.QueryStatuses(ctx, spi.StatusQuery{JobName: "j", Limit: 10})
	if err != nil || len(s.Statuses) != 1 || s.Statuses[0].State != "TASK_ERROR" {
		t.Errorf("QueryStatuses = %+v, %v", s, err)
	}
	d, err := c.Distinct(ctx, spi.DistinctQuery{Field: spi.ExecutionIPs})
	if err != nil || strings.Join(d.Values, ",") != "10.0.0.1" {
		t.Errorf("Distinct = %+v, %v", d, err)
	}
	if _, err := c.QueryOutput(ctx, spi.OutputQuery{}); !errors.Is(err, spi.ErrInvalidConfig) {
		t.Errorf("QueryOutput without an id: %v, want spi.ErrInvalidConfig", err)
	}
	if _, err := c.Distinct(ctx, spi.DistinctQuery{Field: "nosuch"}); !errors.Is(err, spi.ErrUnsupported) {
		t.Errorf("Distinct of an unknown field: %v, want spi.ErrUnsupported", err)
	}
	if _, err := c.Write(ctx, spi.TraceWriteRequest{}); !errors.Is(err, spi.ErrUnsupported) {
		t.Errorf("Write: %v, want spi.ErrUnsupported", err)
	}
	r, err := c.Purge(ctx, spi.TracePurgeRequest{Before: time.Now()})
	if err != nil || r.Executions != 2 || r.Outputs != 1 || r.Statuses != 1 {
		t.Errorf("Purge = %+v, %v", r, err)
	}
}

// TestHandlerBounds: a body over MaxBody is answered 413, a body that is
// not one JSON value of the method's request (bad JSON, unknown fields,
// trailing data) 400, an unknown method 404, each with an error naming
// the problem, and the handler serves the next request.
func TestHandlerBounds(t *testing.T) {
	srv, c := served(t, httptrace.HandlerOptions{MaxBody: 1 << 10})
	for name, tc := range map[string]struct {
		path, body string
		status     int
		message    string
	}{
		"oversized":      {"executions", `{"JobName":"` + strings.Repeat("x", 2<<10) + `"}`, http.StatusRequestEntityTooLarge, "request body over 1024 bytes"},
		"bad JSON":       {"executions", `{"JobName":`, http.StatusBadRequest, "executions: request:"},
		"unknown field":  {"statuses", `{"NoSuch":1}`, http.StatusBadRequest, "unknown field"},
		"trailing data":  {"output", `{"ID":"b"} {}`, http.StatusBadRequest, "data after the JSON value"},
		"wrong type":     {"executions", `{"Item":"zero"}`, http.StatusBadRequest, "cannot unmarshal"},
		"unknown method": {"write", `{}`, http.StatusNotFound, ""},
	} {
		t.Run(name, func(t *testing.T) {
			resp, err := srv.Client().Post(srv.URL+httptrace.PathPrefix+tc.path, "application/json", strings.NewReader(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.status || !strings.Contains(string(b), tc.message) {
				t.Errorf("answer %d %s, want %d with %q", resp.StatusCode, b, tc.status, tc.message)
			}
		})
	}
	if p, err := c.QueryExecutions(context.Background(), spi.ExecutionQuery{JobName: "j", Limit: 1}); err != nil || len(p.Executions) != 1 {
		t.Errorf("a query after the bad requests: %+v, %v", p, err)
	}
}
