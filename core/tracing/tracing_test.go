package tracing_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ejob-io/ejob/core/executor"
	"github.com/ejob-io/ejob/core/tracing"
	"github.com/ejob-io/ejob/internal/dbtest"
	"github.com/ejob-io/ejob/internal/proctest"
	"github.com/ejob-io/ejob/internal/testkit"
	"github.com/ejob-io/ejob/plugins/tracing/rdb"
	"github.com/ejob-io/ejob/spi"
)

func logger(buf *proctest.Buffer) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{Output: buf, Level: hclog.Info})
}

func sqliteConfig(t *testing.T) map[string]string {
	return map[string]string{"driver": "sqlite", "url": filepath.Join(t.TempDir(), "trace.db")}
}

// start runs r's writer until the test ends (or stop is called) and
// returns stop, which waits for Run to return.
func start(t *testing.T, r *tracing.Recorder) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Run: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

const instanceID = "10.1.2.3@-@77"

func itemEvents(job string, n int) []executor.ItemEvent {
	var out []executor.ItemEvent
	for i := range n {
		ev := executor.ItemEvent{ID: executor.NewEventID(), JobName: job, TaskID: job + "@-@0@-@READY@-@" + instanceID,
			InstanceID: instanceID, Item: i % 3, Start: time.Now(), FencingToken: int64(1000 + i)}
		out = append(out, ev)
	}
	return out
}

func count(t *testing.T, tr spi.Tracer, cfg map[string]string, job string) int {
	t.Helper()
	p, err := tr.QueryExecutions(context.Background(), spi.ExecutionQuery{Config: cfg, JobName: job, Limit: rdb.MaxLimit})
	if err != nil {
		t.Fatalf("query: %v", err)
	}
	return len(p.Executions)
}

func TestEventsStoredInBatches(t *testing.T) {
	sink := rdb.New()
	t.Cleanup(func() { sink.Close() })
	calls := &countingTracer{Tracer: sink}
	cfg := sqliteConfig(t)
	r, err := tracing.New(tracing.Options{Tracer: calls, Config: cfg, BatchSize: 50, Hostname: "box"})
	if err != nil {
		t.Fatal(err)
	}
	// Queue everything before the writer starts, so batches are full.
	for _, ev := range itemEvents("j", 200) {
		r.ItemStarted(context.Background(), ev)
	}
	r.TaskStaging(context.Background(), executor.StatusEvent{JobName: "j", TaskID: "j@-@0,1@-@READY@-@" + instanceID,
		InstanceID: instanceID, Items: []int{0, 1}, State: executor.TaskStaging, Message: "Job 'j' execute begin."})
	stop := start(t, r)
	testkit.Eventually(t, 30*time.Second, "201 events written", func() bool { return r.Written() == 201 })
	stop()
	if n := calls.n.Load(); n != 5 {
		t.Errorf("%d Write calls for 201 events in batches of 50, want 5", n)
	}
	if got := count(t, sink, cfg, "j"); got != 200 {
		t.Errorf("%d rows, want 200", got)
	}
	p, err := sink.QueryExecutions(context.Background(), spi.ExecutionQuery{Config: cfg, Limit: 1})
	if err != nil || len(p.Executions) != 1 || p.Executions[0].Hostname != "box" || p.Executions[0].IP != "10.1.2.3" ||
		p.Executions[0].Source != "NORMAL_TRIGGER" || p.Executions[0].FencingToken < 1000 {
		t.Errorf("row = %+v, %v", p, err)
	}
	sp, err := sink.QueryStatuses(context.Background(), spi.StatusQuery{Config: cfg, JobName: "j"})
	if err != nil || len(sp.Statuses) != 1 {
		t.Fatalf("statuses = %+v, %v", sp, err)
	}
	if s := sp.Statuses[0]; s.SlaveID != "10.1.2.3" || s.ShardingItems != "[0, 1]" || s.ExecutionType != "READY" || s.State != "TASK_STAGING" {
		t.Errorf("status row = %+v", s)
	}
}

// countingTracer counts Write calls to a real sink.
type countingTracer struct {
	spi.Tracer
	n atomic.Int64
}

func (c *countingTracer) Write(ctx context.Context, req spi.TraceWriteRequest) (spi.TraceWriteResponse, error) {
	c.n.Add(1)
	return c.Tracer.Write(ctx, req)
}

func TestIncludeExclude(t *testing.T) {
	if err := (tracing.Filter{Include: []string{"a"}, Exclude: []string{"b"}}).Validate(); !errors.Is(err, tracing.ErrMutuallyExclusive) ||
		err.Error() != "[tracing.includeJobNames] and [tracing.excludeJobNames] are mutually exclusive." {
		t.Errorf("Validate = %v", err)
	}
	for _, tc := range []struct {
		f    tracing.Filter
		want string // the jobs of a, b, c whose events are stored
	}{
		{tracing.Filter{}, "abc"},
		{tracing.Filter{Include: []string{"a", "c"}}, "ac"},
		{tracing.Filter{Exclude: []string{"b"}}, "ac"},
	} {
		sink := rdb.New()
		t.Cleanup(func() { sink.Close() })
		cfg := sqliteConfig(t)
		r, err := tracing.New(tracing.Options{Tracer: sink, Config: cfg, Filter: tc.f})
		if err != nil {
			t.Fatal(err)
		}
		stop := start(t, r)
		for _, job := range []string{"a", "b", "c"} {
			r.ItemStarted(context.Background(), itemEvents(job, 1)[0])
		}
		stop() // flushes
		var got string
		for _, job := range []string{"a", "b", "c"} {
			if count(t, sink, cfg, job) == 1 {
				got += job
			}
		}
		if got != tc.want {
			t.Errorf("filter %+v stored jobs %q, want %q", tc.f, got, tc.want)
		}
	}
}

// TestDatabaseDownAtStartThenBack: events recorded while the database is
// down never block the caller; they wait in the queue (the excess is
// dropped, counted and reported in a WARN), and the writer stores them
// once the database is back.
func TestDatabaseDownAtStartThenBack(t *testing.T) {
	db := dbtest.Start(t, dbtest.Postgres)
	if err := db.Stop(); err != nil {
		t.Fatal(err)
	}
	sink := rdb.New()
	t.Cleanup(func() { sink.Close() })
	cfg := map[string]string{"driver": "postgres", "url": db.DSN() + "&connect_timeout=2"}
	var logs proctest.Buffer
	r, err := tracing.New(tracing.Options{Tracer: sink, Config: cfg, QueueSize: 20, BatchSize: 10,
		RetryMin: 20 * time.Millisecond, RetryMax: 200 * time.Millisecond, WarnEvery: 20 * time.Millisecond, Logger: logger(&logs)})
	if err != nil {
		t.Fatal(err)
	}
	start(t, r)
	var recorded int64
	testkit.Eventually(t, 30*time.Second, "a failed write", func() bool {
		r.ItemStarted(context.Background(), itemEvents("j", 1)[0])
		recorded++
		return r.FailedWrites() > 0
	})
	// The writer holds at most one batch (10) and the queue 20: the rest
	// of these 100 is dropped at once, without blocking.
	for _, ev := range itemEvents("j", 100) {
		r.ItemStarted(context.Background(), ev)
		recorded++
	}
	if d := r.Dropped(); d < 70 {
		t.Errorf("dropped %d of 100 events over a full queue, want at least 70", d)
	}
	testkit.Eventually(t, 10*time.Second, "a WARN about dropped events", func() bool {
		return strings.Contains(logs.String(), "[WARN]  tracing: dropped ")
	})
	if strings.Count(logs.String(), "cannot write events") != 1 {
		t.Errorf("the failure should be logged once until it recovers:\n%s", logs.String())
	}
	if err := db.StartAgain(); err != nil {
		t.Fatal(err)
	}
	// Every event recorded is either written or dropped once the writer
	// has emptied its queue; only then are the counters final.
	testkit.Eventually(t, 60*time.Second, "the queued events written", func() bool {
		return r.Written() > 0 && r.Written()+r.Dropped() >= recorded &&
			len(logsMatching(&logs, "writing events again")) == 1
	})
	kept := r.Written()
	if got := count(t, sink, cfg, "j"); int64(got) != kept {
		t.Errorf("%d rows, want the %d events written", got, kept)
	}
	if kept+r.Dropped() != recorded {
		t.Errorf("written %d + dropped %d, want the %d events recorded", kept, r.Dropped(), recorded)
	}
}

func logsMatching(b *proctest.Buffer, s string) []string {
	var out []string
	for _, l := range strings.Split(b.String(), "\n") {
		if strings.Contains(l, s) {
			out = append(out, l)
		}
	}
	return out
}

// TestFlushOnShutdown: what is queued when Run's ctx ends is written
// before Run returns.
func TestFlushOnShutdown(t *testing.T) {
	sink := rdb.New()
	t.Cleanup(func() { sink.Close() })
	cfg := sqliteConfig(t)
	r, err := tracing.New(tracing.Options{Tracer: sink, Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	stop := start(t, r)
	for _, ev := range itemEvents("j", 300) {
		r.ItemStarted(context.Background(), ev)
	}
	stop()
	if got := count(t, sink, cfg, "j"); got != 300 || r.Dropped() != 0 {
		t.Errorf("after shutdown: %d rows, %d dropped; want 300 and 0", got, r.Dropped())
	}
}

// TestFlushDeadline: with the database gone at shutdown, Run returns by
// the flush deadline and counts the queued events as dropped.
func TestFlushDeadline(t *testing.T) {
	db := dbtest.Start(t, dbtest.MariaDB)
	sink := rdb.New()
	t.Cleanup(func() { sink.Close() })
	cfg := map[string]string{"driver": "mysql", "url": db.DSN() + "?timeout=1s"}
	r, err := tracing.New(tracing.Options{Tracer: sink, Config: cfg, FlushTimeout: 2 * time.Second, RetryMin: time.Hour, RetryMax: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	stop := start(t, r)
	r.ItemStarted(context.Background(), itemEvents("j", 1)[0])
	testkit.Eventually(t, 30*time.Second, "the first event written", func() bool { return r.Written() == 1 })
	if err := db.Kill(); err != nil {
		t.Fatal(err)
	}
	for _, ev := range itemEvents("j", 5) {
		r.ItemStarted(context.Background(), ev)
	}
	stop()
	if r.Dropped() != 5 {
		t.Errorf("dropped %d, want the 5 events left at the deadline", r.Dropped())
	}
}

func ExampleFilter_Traced() {
	f := tracing.Filter{Exclude: []string{"noisy"}}
	fmt.Println(f.Traced("billing"), f.Traced("noisy"))
	// Output: true false
}
