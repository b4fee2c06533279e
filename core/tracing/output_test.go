package tracing_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ejob-io/ejob/core/tracing"
	"github.com/ejob-io/ejob/plugins/tracing/rdb"
	"github.com/ejob-io/ejob/spi"
)

// TestOutputStoredMasked checks that a completion's output reaches a real
// SQLite trace with its secrets (and those of its failure cause) masked,
// and that the purge removes it with its execution.
func TestOutputStoredMasked(t *testing.T) {
	sink := rdb.New()
	t.Cleanup(func() { sink.Close() })
	cfg := sqliteConfig(t)
	r, err := tracing.New(tracing.Options{Tracer: sink, Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	stop := start(t, r)
	ev := itemEvents("masked", 1)[0]
	r.ItemStarted(t.Context(), ev)
	ev.Complete = ev.Start.Add(time.Millisecond)
	ev.FailureCause = `script: stderr tail: "login failed with password=hunter2"`
	ev.Output = spi.Output{Text: spi.StdoutPrefix + "connecting to postgres://app:hunter2@db/app\n" +
		spi.StderrPrefix + "login failed with password=hunter2\n", Cut: 12}
	r.ItemCompleted(t.Context(), ev)
	stop()

	got, err := sink.QueryOutput(t.Context(), spi.OutputQuery{Config: cfg, ID: ev.ID})
	if err != nil || !got.Found {
		t.Fatalf("QueryOutput = %+v, %v", got, err)
	}
	p, err := sink.QueryExecutions(t.Context(), spi.ExecutionQuery{Config: cfg, ID: ev.ID})
	if err != nil || len(p.Executions) != 1 {
		t.Fatalf("QueryExecutions = %+v, %v", p, err)
	}
	for what, s := range map[string]string{"output": got.Output.Text, "failure cause": p.Executions[0].FailureCause} {
		if strings.Contains(s, "hunter2") || !strings.Contains(s, "password=") {
			t.Errorf("%s not masked: %q", what, s)
		}
	}
	if !strings.Contains(got.Output.Text, "connecting to postgres://") || got.Output.Cut != 12 {
		t.Errorf("output %+v: want the text around the secrets and the cut kept", got.Output)
	}
	resp, err := sink.Purge(context.Background(), spi.TracePurgeRequest{Config: cfg, Before: time.Now().Add(time.Hour)})
	if err != nil || resp.Outputs != 1 || resp.Executions != 1 {
		t.Fatalf("Purge = %+v, %v; want one execution and its output", resp, err)
	}
	if got, err := sink.QueryOutput(t.Context(), spi.OutputQuery{Config: cfg, ID: ev.ID}); err != nil || got.Found {
		t.Errorf("QueryOutput after the purge = %+v, %v", got, err)
	}
}
