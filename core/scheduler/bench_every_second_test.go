package scheduler_test

import (
	"context"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/ejob-io/ejob/core/config"
	"github.com/ejob-io/ejob/core/executor"
	"github.com/ejob-io/ejob/core/scheduler"
	"github.com/ejob-io/ejob/spi"
)

// BenchmarkEverySecond100Jobs: one scheduler (one Go program embedding
// ejob as a library) on the embedded registry with 100 1-item jobs whose
// cron fires every second, each running a no-op. After a warm-up (the
// first fires do the sharding) it records, over a 20 s window, every
// item's delay from its scheduled fire (the whole second; cron fires on
// whole seconds) to the runner being called, and the CPU time the process
// spends (getrusage). Reported: fire-to-run-p50-ms, fire-to-run-p99-ms,
// cpu-s/20s, goroutines. The same program shape written with
// go-co-op/gocron v2 is bench/gocron's BenchmarkEverySecond100Jobs (its own
// module, so that gocron is no dependency of ejob).
func BenchmarkEverySecond100Jobs(b *testing.B) {
	const (
		njobs  = 100
		window = 20 * time.Second
		warmup = 3 * time.Second
	)
	var mu sync.Mutex
	var delays []time.Duration
	recording := false
	run := executor.SimpleFunc(func(context.Context, spi.ShardingContext) error {
		now := time.Now()
		d := now.Sub(now.Truncate(time.Second))
		mu.Lock()
		if recording {
			delays = append(delays, d)
		}
		mu.Unlock()
		return nil
	})
	be := embeddedBackend()
	var p50, p99, cpu float64
	var goroutines int
	for b.Loop() {
		jobs := make([]scheduler.Job, njobs)
		for i := range jobs {
			cfg := config.New("every-second-"+strconv.Itoa(i), 1)
			cfg.Cron = "* * * * * ?"
			jobs[i] = scheduler.Job{Config: cfg, Runner: run}
		}
		n := startNode(b, be.connect(b, "every-second-"+strconv.Itoa(b.N)), "10.0.4.1", 400, nil, jobs...)
		time.Sleep(warmup) // the first fires shard; not measured
		mu.Lock()
		recording, delays = true, delays[:0]
		mu.Unlock()
		c0 := processCPU(b)
		time.Sleep(window) // the measured window, not a synchronisation
		cpu = (processCPU(b) - c0).Seconds()
		goroutines = runtime.NumGoroutine()
		mu.Lock()
		recording = false
		got := slices.Clone(delays)
		mu.Unlock()
		n.stop()
		if len(got) < njobs*int(window/time.Second)*9/10 {
			b.Fatalf("%d runs in %v, want about %d", len(got), window, njobs*int(window/time.Second))
		}
		slices.Sort(got)
		p50 = float64(got[len(got)/2]) / float64(time.Millisecond)
		p99 = float64(got[len(got)*99/100]) / float64(time.Millisecond)
	}
	b.ReportMetric(p50, "fire-to-run-p50-ms")
	b.ReportMetric(p99, "fire-to-run-p99-ms")
	b.ReportMetric(cpu, "cpu-s/20s")
	b.ReportMetric(float64(goroutines), "goroutines")
}
