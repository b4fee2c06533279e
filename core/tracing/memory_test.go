package tracing_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ejob-io/ejob/core/tracing"
	"github.com/ejob-io/ejob/spi"
	"github.com/ejob-io/ejob/spi/spitest"
)

// TestMemoryConformance runs spitest's tracing suite on a Memory, a fresh
// one per check (a Memory is one store whatever its Config).
func TestMemoryConformance(t *testing.T) {
	for _, c := range spitest.TracerChecks(spitest.TracerOptions{Config: func() map[string]string { return nil }}) {
		spitest.RunChecks[spi.Tracer](t, tracing.NewMemory(tracing.MemoryOptions{}), []spitest.Check[spi.Tracer]{c})
	}
}

// TestMemoryBounds checks that a Memory keeps the last Runs executions of
// each item and at most OutputBytes of output, dropping the oldest
// outputs first, through a Recorder as a host records into it.
func TestMemoryBounds(t *testing.T) {
	mem := tracing.NewMemory(tracing.MemoryOptions{Runs: 3, OutputBytes: 2500})
	r, err := tracing.New(tracing.Options{Tracer: mem})
	if err != nil {
		t.Fatal(err)
	}
	stop := start(t, r)
	t0 := time.Now()
	var ids []string
	for run := range 5 {
		for _, ev := range itemEvents("ring", 2) { // items 0 and 1
			ev.Start = t0.Add(time.Duration(run) * time.Second)
			r.ItemStarted(t.Context(), ev)
			ev.Complete, ev.Success = ev.Start, true
			ev.Output = spi.Output{Text: fmt.Sprintf("out| run %d item %d %s\n", run, ev.Item, strings.Repeat(".", 480))}
			r.ItemCompleted(t.Context(), ev)
			ids = append(ids, ev.ID)
		}
	}
	stop()
	p, err := mem.QueryExecutions(t.Context(), spi.ExecutionQuery{JobName: "ring"})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Executions) != 6 {
		t.Fatalf("%d executions kept, want 3 per item", len(p.Executions))
	}
	// Runs 2, 3 and 4 of both items are kept; 5 outputs fit in 2500 bytes.
	for i, id := range ids {
		got, err := mem.QueryOutput(t.Context(), spi.OutputQuery{ID: id})
		if err != nil {
			t.Fatal(err)
		}
		if want := i >= 5; got.Found != want {
			t.Errorf("execution %d (run %d item %d): output found %v, want %v", i, i/2, i%2, got.Found, want)
		}
	}
}
