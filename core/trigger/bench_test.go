package trigger_test

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ejob-io/ejob/core/trigger"
)

// BenchmarkIdleJobs measures what 10,000 idle jobs cost: heap bytes and
// goroutines per job (the loop itself is not counted).
func BenchmarkIdleJobs(b *testing.B) {
	const jobs = 10_000
	far := time.Now().Add(time.Hour)
	noop := func(context.Context, trigger.Fire) {}
	ids := make([]string, jobs)
	for i := range ids {
		ids[i] = fmt.Sprint("job-", i)
	}
	var bytesPerJob, goroutinesPerJob float64
	for b.Loop() {
		b.StopTimer()
		runtime.GC()
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		g0 := runtime.NumGoroutine()
		s := trigger.New(trigger.Options{})
		ctx, cancel := context.WithCancel(b.Context())
		errc := make(chan error, 1)
		go func() { errc <- s.Run(ctx) }()
		b.StartTimer()
		for _, id := range ids {
			s.Add(id, every{far, time.Hour}, noop, nil)
		}
		if _, err := s.Snapshot(ctx); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		runtime.GC()
		runtime.ReadMemStats(&m1)
		bytesPerJob = float64(int64(m1.HeapAlloc)-int64(m0.HeapAlloc)) / jobs
		goroutinesPerJob = float64(runtime.NumGoroutine()-g0-1) / jobs
		runtime.KeepAlive(s)
		cancel()
		if err := <-errc; err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.ReportMetric(bytesPerJob, "bytes/job")
	b.ReportMetric(goroutinesPerJob, "goroutines/job")
}

// BenchmarkFireJitter measures scheduled -> callback latency with the real
// clock: 20 jobs firing every 5 ms, staggered. Reports p50 and p99 in µs.
func BenchmarkFireJitter(b *testing.B) {
	const njobs = 20
	var (
		mu   sync.Mutex
		lat  []time.Duration
		done = make(chan struct{})
	)
	want := max(b.N, 200)
	s := trigger.New(trigger.Options{})
	ctx, cancel := context.WithCancel(b.Context())
	errc := make(chan error, 1)
	go func() { errc <- s.Run(ctx) }()
	origin := time.Now()
	for i := range njobs {
		o := origin.Add(time.Duration(i) * 250 * time.Microsecond)
		s.Add(fmt.Sprint(i), every{o, 5 * time.Millisecond}, func(ctx context.Context, f trigger.Fire) {
			d := time.Since(f.Scheduled())
			mu.Lock()
			defer mu.Unlock()
			if len(lat) < want {
				lat = append(lat, d)
				if len(lat) == want {
					close(done)
				}
			}
		}, nil)
	}
	b.ResetTimer()
	<-done
	b.StopTimer()
	cancel()
	if err := <-errc; err != nil {
		b.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}
