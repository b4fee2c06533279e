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

// TestMaskOutputLines checks that a long output's secrets are masked
// wherever they are (a line, a value spanning lines near it), that the
// lines around are kept, and that an output without a suspect line comes
// back unchanged.
func TestMaskOutputLines(t *testing.T) {
	clean := strings.Repeat("out| processed row 7 of 5000: ok\n", 1900)
	if got := tracing.MaskOutput(spi.Output{Text: clean}); got.Text != clean {
		t.Errorf("a clean output changed: %d bytes, want %d", len(got.Text), len(clean))
	}
	in := clean[:3300] + "err| retrying with password=hunter2\n" + clean[:330] +
		"out| {\"credentials\": {\"user\": \"bob\",\n\"pin\": \"4321\"}, \"n\": 1}\n" + clean[:3300] + "out| done\n"
	got := tracing.MaskOutput(spi.Output{Text: in, Cut: 3}).Text
	for _, secret := range []string{"hunter2", "4321", "bob"} {
		if strings.Contains(got, secret) {
			t.Errorf("%q not masked", secret)
		}
	}
	for _, kept := range []string{"err| retrying with password=***\n", `out| {"credentials": ***, "n": 1}` + "\n", "out| done\n"} {
		if !strings.Contains(got, kept) {
			t.Errorf("masked output lacks %q", kept)
		}
	}
	if want := len(in) - len("hunter2") + 3 - len(`{"user": "bob",`+"\n"+`"pin": "4321"}`) + 3; len(got) != want {
		t.Errorf("masked output of %d bytes, want %d", len(got), want)
	}
}
