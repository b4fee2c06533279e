package httpapi_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ejob-io/ejob/core/tracing"
	"github.com/ejob-io/ejob/host/httpapi"
	"github.com/ejob-io/ejob/spi"
)

// TestConsoleExecutionOutput reads executions' output from a host's
// in-memory history: the recent list carries an excerpt for the
// execution that has output only, the output endpoint the execution with
// its whole failure cause and the whole output, 404 for an unknown id.
func TestConsoleExecutionOutput(t *testing.T) {
	mem := tracing.NewMemory(tracing.MemoryOptions{})
	long := strings.Repeat("out| row\n", 100) + "err| cannot reach db for item 2\n"
	cause := `job "flaky" item 2: plugin builtin: execute "SCRIPT": script: Execute script failure: ` +
		`Process exited with an error: 3 (Exit value: 3); stderr tail: "cannot reach db for item 2"`
	start := time.Now().Add(-time.Minute)
	quiet := spi.ExecutionEvent{ID: "quiet", JobName: "flaky", IP: "10.0.0.1", ShardingItem: 1, StartTime: start,
		CompleteTime: start.Add(time.Second), Success: true}
	loud := spi.ExecutionEvent{ID: "loud", JobName: "flaky", IP: "10.0.0.1", ShardingItem: 2, StartTime: start.Add(time.Second),
		CompleteTime: start.Add(2 * time.Second), FailureCause: cause, Output: spi.Output{Text: long, Cut: 5}}
	if _, err := mem.Write(context.Background(), spi.TraceWriteRequest{Executions: []spi.ExecutionEvent{quiet, loud}}); err != nil {
		t.Fatal(err)
	}
	f := startWith(t, defaultUsers(t), withConsole(httpapi.Options{Tracer: mem}))
	token := f.login("guest", guestPW)

	var r httpapi.Recent
	f.get("/console/api/jobs/flaky/executions", token, &r)
	if len(r.Rows) != 2 || r.Rows[0].ID != "loud" || r.Rows[1].Output != nil {
		t.Fatalf("rows %+v: want loud then quiet, quiet without output", r.Rows)
	}
	x := r.Rows[0].Output
	if x == nil || !strings.HasSuffix(long, x.Tail) || len([]rune(x.Tail)) != spi.OutputExcerptChars || x.Cut != 5+int64(len(long)-len(x.Tail)) {
		t.Errorf("excerpt %+v", x)
	}

	var o httpapi.ExecutionOutput
	f.get("/console/api/executions/loud/output", token, &o)
	if !o.HasOutput || o.Output != long || o.Cut != 5 || o.Execution.FailureCause != cause || o.Execution.ShardingItem != 2 {
		t.Errorf("output of loud: %+v", o)
	}
	f.get("/console/api/executions/quiet/output", token, &o)
	if o.HasOutput || o.Output != "" || o.Execution.ID != "quiet" {
		t.Errorf("output of quiet: %+v", o)
	}
	st, data := f.do("GET", "/console/api/executions/nope/output", token, nil)
	if env := f.envelope(data); st != http.StatusNotFound || !strings.Contains(string(env["errorMsg"]), "nope") {
		t.Errorf("unknown id: %d %s", st, data)
	}
}
