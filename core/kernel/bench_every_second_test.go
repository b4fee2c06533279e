package kernel_test

import (
	"context"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ejob-io/ejob/core/config"
	"github.com/ejob-io/ejob/core/executor"
	"github.com/ejob-io/ejob/core/kernel"
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
		jobs := make([]kernel.Job, njobs)
		for i := range jobs {
			cfg := config.New("every-second-"+strconv.Itoa(i), 1)
			cfg.Cron = "* * * * * ?"
			jobs[i] = kernel.Job{Config: cfg, Runner: run}
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

// BenchmarkFire100Jobs: the execution path of BenchmarkEverySecond100Jobs
// without its wait for the next second, so that a profile (-cpuprofile,
// -memprofile) has enough samples: one scheduler on the embedded registry
// with 100 idle 1-item jobs; each op triggers all 100 at once and waits
// until every execution has returned (its after-listener ran; a trigger
// that found the job still ending is sent again). Reported: the process's
// CPU time per execution (getrusage) and, with -benchmem, allocations per
// op (100 executions).
func BenchmarkFire100Jobs(b *testing.B) {
	const njobs = 100
	returned := make(chan int, njobs)
	var started [njobs]atomic.Bool
	name := func(i int) string { return "fire-" + strconv.Itoa(i) }
	jobs := make([]kernel.Job, njobs)
	for i := range jobs {
		cfg := config.New(name(i), 1)
		cfg.Cron = "0 0 0 1 1 ? 2099"
		jobs[i] = kernel.Job{
			Config: cfg,
			Runner: executor.SimpleFunc(func(context.Context, spi.ShardingContext) error {
				started[i].Store(true)
				return nil
			}),
			Listeners: []executor.Listener{afterListener(func() { returned <- i })},
		}
	}
	be := embeddedBackend()
	n := startNode(b, be.connect(b, "fire-100"), "10.0.5.1", 500, nil, jobs...)
	round := func() {
		for i := range njobs {
			started[i].Store(false)
			if err := n.sched.Trigger(name(i)); err != nil {
				b.Fatal(err)
			}
		}
		deadline := time.After(30 * time.Second)
		for got := 0; got < njobs; {
			select {
			case <-returned:
				got++
			case <-time.After(50 * time.Millisecond):
				for i := range njobs {
					if !started[i].Load() {
						_ = n.sched.Trigger(name(i))
					}
				}
			case <-deadline:
				b.Fatalf("%d of %d executions returned", got, njobs)
			}
		}
	}
	for range 3 { // the first triggers shard: not measured
		round()
	}
	quiesce(b, be.settle, []*benchNode{n})
	c0 := processCPU(b)
	for b.Loop() {
		round()
	}
	quiesce(b, be.settle, []*benchNode{n})
	b.ReportMetric(float64(processCPU(b)-c0)/float64(b.N*njobs)/float64(time.Microsecond), "cpu-µs/exec")
}

// afterListener calls its func after each execution of the job.
type afterListener func()

func (afterListener) BeforeJobExecuted(context.Context, executor.ShardingContexts) error { return nil }

func (l afterListener) AfterJobExecuted(context.Context, executor.ShardingContexts) error {
	l()
	return nil
}

func (afterListener) Order() int { return 0 }
