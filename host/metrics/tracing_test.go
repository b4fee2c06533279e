package metrics_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ejob-io/ejob/core/executor"
	"github.com/ejob-io/ejob/core/tracing"
	"github.com/ejob-io/ejob/host/metrics"
	"github.com/ejob-io/ejob/internal/testkit"
	"github.com/ejob-io/ejob/plugins/tracing/rdb"
)

// TestTracingCounters: a recorder with a queue of 2 gets 5 events before
// its writer runs: 3 are dropped, 2 written to a real SQLite sink, and the
// scrape shows both.
func TestTracingCounters(t *testing.T) {
	sink := rdb.New()
	t.Cleanup(func() { _ = sink.Close() })
	rec, err := tracing.New(tracing.Options{Tracer: sink, QueueSize: 2,
		Config: map[string]string{"driver": "sqlite", "url": filepath.Join(t.TempDir(), "trace.db")}})
	if err != nil {
		t.Fatal(err)
	}
	mx := metrics.New()
	mx.Tracing(rec)
	if s := scrape(t, mx); !strings.Contains(s, "ejob_tracing_events_dropped_total 0\n") || !strings.Contains(s, "ejob_tracing_events_written_total 0\n") {
		t.Errorf("scrape before any event:\n%s", s)
	}
	for i := range 5 {
		rec.ItemStarted(context.Background(), executor.ItemEvent{ID: executor.NewEventID(), JobName: "j", Item: i,
			TaskID: "j@-@0@-@READY@-@10.0.0.1@-@1", InstanceID: "10.0.0.1@-@1", Start: time.Now()})
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- rec.Run(ctx) }()
	defer func() { cancel(); <-done }()
	testkit.Eventually(t, 30*time.Second, "2 events written", func() bool { return rec.Written() == 2 })
	s := scrape(t, mx)
	for _, want := range []string{"ejob_tracing_events_dropped_total 3\n", "ejob_tracing_events_written_total 2\n", "ejob_tracing_write_errors_total 0\n",
		"# TYPE ejob_tracing_events_dropped_total counter"} {
		if !strings.Contains(s, want) {
			t.Errorf("scrape has no %q:\n%s", want, s)
		}
	}
}
