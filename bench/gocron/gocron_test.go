package gocron

import (
	"runtime"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-co-op/gocron/v2"
)

func processCPU(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func newScheduler(tb testing.TB) gocron.Scheduler {
	s, err := gocron.NewScheduler()
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

// BenchmarkEverySecond100Jobs is core/kernel's benchmark of the same
// name with gocron: 100 jobs on a cron firing every second, each a no-op
// recording its delay from the whole second; over a 20 s window after a
// 3 s warm-up.
func BenchmarkEverySecond100Jobs(b *testing.B) {
	const (
		njobs  = 100
		window = 20 * time.Second
		warmup = 3 * time.Second
	)
	var mu sync.Mutex
	var delays []time.Duration
	recording := false
	run := func() {
		now := time.Now()
		d := now.Sub(now.Truncate(time.Second))
		mu.Lock()
		if recording {
			delays = append(delays, d)
		}
		mu.Unlock()
	}
	var p50, p99, cpu float64
	var goroutines int
	for b.Loop() {
		s := newScheduler(b)
		for i := range njobs {
			if _, err := s.NewJob(gocron.CronJob("* * * * * *", true), gocron.NewTask(run),
				gocron.WithName("every-second-"+strconv.Itoa(i))); err != nil {
				b.Fatal(err)
			}
		}
		s.Start()
		time.Sleep(warmup)
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
		if err := s.Shutdown(); err != nil {
			b.Fatal(err)
		}
		if len(got) < njobs*int(window/time.Second)*9/10 {
			b.Fatalf("%d runs in %v", len(got), window)
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

// BenchmarkIdleJobs: 10,000 jobs that next fire on 1 January (idle), as
// core/kernel's BenchmarkIdleJobs: heap in use and goroutine stacks
// after GC (differences from before), goroutines, the time to add and
// start them, and the CPU the process spends over 20 s of idleness.
func BenchmarkIdleJobs(b *testing.B) {
	const (
		njobs  = 10_000
		window = 20 * time.Second
	)
	for b.Loop() {
		runtime.GC()
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		g0 := runtime.NumGoroutine()
		start := time.Now()
		s := newScheduler(b)
		for i := range njobs {
			if _, err := s.NewJob(gocron.CronJob("0 0 0 1 1 *", true), gocron.NewTask(func() {}),
				gocron.WithName("idle-"+strconv.Itoa(i))); err != nil {
				b.Fatal(err)
			}
		}
		s.Start()
		setup := time.Since(start)
		runtime.GC()
		runtime.ReadMemStats(&m1)
		g := runtime.NumGoroutine() - g0
		c0 := processCPU(b)
		time.Sleep(window) // the measured idle window
		cpu := processCPU(b) - c0
		if err := s.Shutdown(); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(int64(m1.HeapInuse)-int64(m0.HeapInuse))/(1<<20), "heap-MiB")
		b.ReportMetric(float64(int64(m1.StackInuse)-int64(m0.StackInuse))/(1<<20), "stack-MiB")
		b.ReportMetric(float64(g), "goroutines")
		b.ReportMetric(setup.Seconds(), "setup-s")
		b.ReportMetric(cpu.Seconds(), "cpu-s/20s")
	}
}
