package tracing_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ejob-io/ejob/core/config"
	"github.com/ejob-io/ejob/core/executor"
	"github.com/ejob-io/ejob/core/kernel"
	"github.com/ejob-io/ejob/core/reg/embedded"
	"github.com/ejob-io/ejob/core/tracing"
	"github.com/ejob-io/ejob/internal/dbtest"
	"github.com/ejob-io/ejob/internal/testkit"
	"github.com/ejob-io/ejob/plugins/builtin"
	"github.com/ejob-io/ejob/plugins/tracing/rdb"
	"github.com/ejob-io/ejob/spi"
)

// sinks are the stores the benchmarks write into: an SQLite file and a
// real PostgreSQL (started by scripts/db.sh).
func sinks(b *testing.B) []struct {
	name string
	cfg  func(b *testing.B) map[string]string
} {
	return []struct {
		name string
		cfg  func(b *testing.B) map[string]string
	}{
		{"sqlite", func(b *testing.B) map[string]string {
			return map[string]string{"driver": "sqlite", "url": filepath.Join(b.TempDir(), "trace.db")}
		}},
		{"postgres", func(b *testing.B) map[string]string {
			s := dbtest.Start(b, dbtest.Postgres)
			return map[string]string{"driver": "postgres", "url": s.DSN()}
		}},
	}
}

// BenchmarkEventsPerSecond: how many item events (start + completion
// pairs, as a job posts them) one host's writer stores per second, in
// batches of DefaultBatchSize, through the RDB sink in-process (the plugin
// call adds ~0.2 ms per batch).
func BenchmarkEventsPerSecond(b *testing.B) {
	for _, s := range sinks(b) {
		b.Run(s.name, func(b *testing.B) {
			sink := rdb.New()
			b.Cleanup(func() { sink.Close() })
			cfg := s.cfg(b)
			const n = 20_000
			var rate float64
			for b.Loop() {
				rate = n / recordExecutions(b, sink, cfg, n/2, spi.Output{}).Seconds()
			}
			b.ReportMetric(rate, "events/s")
		})
	}
}

// recordExecutions queues n executions (a start and a completion with
// out each) into a new Recorder writing into sink as fast as it can, and
// returns how long it took until all were stored.
func recordExecutions(b *testing.B, sink spi.Tracer, cfg map[string]string, n int, out spi.Output) time.Duration {
	r, err := tracing.New(tracing.Options{Tracer: sink, Config: cfg, QueueSize: 2 * n})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	defer func() { cancel(); <-done }()
	start := time.Now()
	for i := range n {
		ev := executor.ItemEvent{ID: executor.NewEventID(), JobName: "bench", TaskID: "bench@-@0@-@READY@-@10.0.0.1@-@1",
			InstanceID: "10.0.0.1@-@1", Item: i % 8, Start: time.Now()}
		r.ItemStarted(ctx, ev)
		ev.Complete, ev.Success, ev.Output = time.Now(), true, out
		r.ItemCompleted(ctx, ev)
	}
	testkit.Eventually(b, 5*time.Minute, "every event written", func() bool { return r.Written()+r.Dropped() == int64(2*n) })
	took := time.Since(start)
	if r.Dropped() != 0 {
		b.Fatalf("dropped %d events", r.Dropped())
	}
	return took
}

// BenchmarkTriggerJitterTracing: one host (embedded registry) runs a
// 3-item in-process job every second, with tracing off, into SQLite and
// into PostgreSQL, in one run; it reports the delay from the scheduled
// second to each item's start over 10 fires (p50, max). The goal is no
// measurable difference: the pipeline only queues events.
func BenchmarkTriggerJitterTracing(b *testing.B) {
	modes := append([]struct {
		name string
		cfg  func(b *testing.B) map[string]string
	}{{"off", nil}}, sinks(b)...)
	for _, m := range modes {
		b.Run(m.name, func(b *testing.B) {
			var events executor.Events
			if m.cfg != nil {
				sink := rdb.New()
				b.Cleanup(func() { sink.Close() })
				r, err := tracing.New(tracing.Options{Tracer: sink, Config: m.cfg(b)})
				if err != nil {
					b.Fatal(err)
				}
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan error, 1)
				go func() { done <- r.Run(ctx) }()
				b.Cleanup(func() { cancel(); <-done })
				events = r
			}
			var p50, worst float64
			for b.Loop() {
				lat := jitter(b, events, 10)
				p50, worst = lat[len(lat)/2], lat[len(lat)-1]
			}
			b.ReportMetric(p50, "p50-ms")
			b.ReportMetric(worst, "max-ms")
		})
	}
}

// jitter runs the 3-item job for fires seconds after its first fire and
// returns the sorted start delays in milliseconds.
func jitter(b *testing.B, events executor.Events, fires int) []float64 {
	var (
		mu     sync.Mutex
		starts []time.Time
	)
	cfg := config.New("jitter", 3)
	cfg.Cron = "* * * * * ?"
	job := kernel.Job{Config: cfg, Runner: executor.SimpleFunc(func(context.Context, spi.ShardingContext) error {
		mu.Lock()
		starts = append(starts, time.Now())
		mu.Unlock()
		return nil
	})}
	c, err := embedded.NewServer().Connect("bench")
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	s, err := kernel.New(kernel.Options{Client: c, InstanceID: "10.0.0.1@-@1", ServerIP: "10.0.0.1",
		Plugins: builtin.New(builtin.Options{Logger: hclog.NewNullLogger()}), Logger: hclog.NewNullLogger(), Events: events})
	if err != nil {
		b.Fatal(err)
	}
	if err := s.Add(context.Background(), job); err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	defer func() { cancel(); <-done }()
	count := func() int { mu.Lock(); defer mu.Unlock(); return len(starts) }
	testkit.Eventually(b, 30*time.Second, "the first fire", func() bool { return count() > 0 })
	mu.Lock()
	from := starts[0].Truncate(time.Second).Add(time.Second)
	mu.Unlock()
	until := from.Add(time.Duration(fires) * time.Second)
	testkit.Eventually(b, time.Duration(fires+10)*time.Second, "the measured fires", func() bool {
		return time.Now().After(until.Add(500 * time.Millisecond))
	})
	mu.Lock()
	defer mu.Unlock()
	var lat []float64
	for _, t := range starts {
		if !t.Before(from) && t.Before(until) {
			lat = append(lat, float64(t.Sub(t.Truncate(time.Second)))/float64(time.Millisecond))
		}
	}
	if len(lat) == 0 {
		b.Fatal(fmt.Sprintf("no item started in %d fires", fires))
	}
	slices.Sort(lat)
	return lat
}

// BenchmarkHistoryQuery: the newest page of one job's executions, and of
// its failed executions, in an SQLite table of 1,000,000 rows (10 jobs),
// with upstream's DDL only (no index on JOB_EXECUTION_LOG: a scan), then
// with the index docs/tracing.md recommends.
func BenchmarkHistoryQuery(b *testing.B) {
	sink := rdb.New()
	b.Cleanup(func() { sink.Close() })
	cfg := map[string]string{"driver": "sqlite", "url": filepath.Join(b.TempDir(), "trace.db")}
	t0 := time.Now().Add(-1000 * time.Hour)
	const rows, batch = 1_000_000, 5_000
	for n := 0; n < rows; n += batch {
		req := spi.TraceWriteRequest{Config: cfg}
		for i := n; i < n+batch; i++ {
			e := spi.ExecutionEvent{ID: fmt.Sprintf("e%07d", i), Hostname: "h", IP: "10.0.0.1", TaskID: "t", JobName: fmt.Sprint("job", i%10),
				Source: "NORMAL_TRIGGER", ShardingItem: i % 8, StartTime: t0.Add(time.Duration(i) * time.Second)}
			e.CompleteTime, e.Success = e.StartTime.Add(time.Second), i%100 != 0
			req.Executions = append(req.Executions, e)
		}
		if _, err := sink.Write(context.Background(), req); err != nil {
			b.Fatal(err)
		}
	}
	queries := func(prefix string) {
		for _, c := range []struct {
			name string
			q    spi.ExecutionQuery
		}{
			{"job", spi.ExecutionQuery{JobName: "job3", Limit: 50}},
			{"job-failed", spi.ExecutionQuery{JobName: "job0", Success: new(false), Limit: 50}},
		} {
			b.Run(prefix+c.name, func(b *testing.B) {
				c.q.Config = cfg
				for b.Loop() {
					p, err := sink.QueryExecutions(context.Background(), c.q)
					if err != nil || len(p.Executions) != 50 {
						b.Fatalf("%d rows, %v", len(p.Executions), err)
					}
				}
			})
		}
	}
	queries("index/") // the sink creates JOB_EXECUTION_LOG_JOB_START
	db, err := sql.Open("sqlite", cfg["url"])
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec("DROP INDEX JOB_EXECUTION_LOG_JOB_START"); err != nil {
		b.Fatal(err)
	}
	queries("scan/") // upstream's DDL alone
}

// benchOutput is size bytes of SCRIPT-like output, one line per row.
func benchOutput(size int) spi.Output {
	var b strings.Builder
	for i := 0; b.Len() < size; i++ {
		fmt.Fprintf(&b, "%sprocessed row %d of 5000: ok, user=billing host=db-%d\n", spi.StdoutPrefix, i, i%7)
	}
	return spi.TailOutput(b.String(), size)
}

// BenchmarkOutputPerExecution: what the output of an execution costs the
// host's recording, per execution (a start and a completion) stored in
// batches through the SQLite sink and in the in-memory history, with no
// output and with 4 KiB and 64 KiB (the cap) of it. The writer masks the
// output (redact.Text) before the sink call; items only queue events, so
// the trigger path does not see this cost.
func BenchmarkOutputPerExecution(b *testing.B) {
	for _, store := range []string{"sqlite", "memory"} {
		for _, size := range []int{0, 4 << 10, spi.MaxOutputBytes} {
			b.Run(fmt.Sprintf("%s/output=%dKiB", store, size>>10), func(b *testing.B) {
				var sink spi.Tracer = tracing.NewMemory(tracing.MemoryOptions{Runs: 1 << 20, OutputBytes: 1 << 30})
				var cfg map[string]string
				if store == "sqlite" {
					s := rdb.New()
					b.Cleanup(func() { s.Close() })
					sink, cfg = s, map[string]string{"driver": "sqlite", "url": filepath.Join(b.TempDir(), "trace.db")}
				}
				out := spi.Output{}
				if size > 0 {
					out = benchOutput(size)
				}
				const n = 1000
				var per float64
				for b.Loop() {
					per = float64(recordExecutions(b, sink, cfg, n, out).Microseconds()) / n
				}
				b.ReportMetric(per, "us/execution")
			})
		}
	}
}

// BenchmarkOutputCaptureAndMask: the other per-execution costs of output,
// for 4 KiB and 64 KiB of 70-byte lines: capturing it line by line as a
// SCRIPT item does (spi.OutputBuffer, on the plugin's side), and masking
// it (tracing.MaskOutput, on the host's writer) when no line and when
// every line may hold a secret.
func BenchmarkOutputCaptureAndMask(b *testing.B) {
	for _, size := range []int{4 << 10, spi.MaxOutputBytes} {
		out := benchOutput(size)
		lines := strings.SplitAfter(out.Text, "\n")
		b.Run(fmt.Sprintf("capture/output=%dKiB", size>>10), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				var buf spi.OutputBuffer
				for _, l := range lines {
					buf.WriteLine(spi.StdoutPrefix, strings.TrimSuffix(strings.TrimPrefix(l, spi.StdoutPrefix), "\n"))
				}
				_ = buf.Output()
			}
		})
		b.Run(fmt.Sprintf("mask/output=%dKiB", size>>10), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = tracing.MaskOutput(out)
			}
		})
		// The worst case: every line names a secret word, so every
		// line goes through redact.Text.
		suspect := spi.TailOutput(strings.Repeat("out| refreshed the api token of user=billing, expires in 3600s\n", size/60), size)
		b.Run(fmt.Sprintf("mask-every-line-suspect/output=%dKiB", size>>10), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = tracing.MaskOutput(suspect)
			}
		})
	}
}
