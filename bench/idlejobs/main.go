// Command idlejobs is ejob's side of the idle-jobs comparison with
// go-co-op/gocron v2 (bench/gocron's BenchmarkIdleJobsSameRun builds and
// runs it beside bench/gocron/idlejobs, each in a process of its own, so
// that one's heap does not count in the other's RSS).
//
// It registers -jobs idle jobs (1 item, a cron that next fires in 2099)
// with the library on its embedded registry, as a Go program embedding
// ejob would, waits until the registry requests have settled, collects
// the garbage and prints one JSON line on stdout: the time from creating
// the registry to Start's return, the heap in use, the live heap and the
// goroutine stacks after GC (differences from the program's start), and
// the goroutines. It then waits for its stdin to close (the caller reads
// its VmRSS meanwhile) and shuts the scheduler down.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"time"

	"github.com/ejob-io/ejob"
	"github.com/ejob-io/ejob/core/reg/regcount"
)

// report is the JSON line printed once the jobs are idle; the gocron
// program prints the same fields.
type report struct {
	Jobs       int     `json:"jobs"`
	SetupS     float64 `json:"setup_s"`
	HeapMiB    float64 `json:"heap_mib"`
	LiveMiB    float64 `json:"live_mib"`
	StackMiB   float64 `json:"stack_mib"`
	Goroutines int     `json:"goroutines"`
}

func main() {
	jobs := flag.Int("jobs", 10_000, "idle jobs to register")
	settle := flag.Duration("settle", 500*time.Millisecond, "how long the registry requests must stay unchanged after Start")
	flag.Parse()
	if err := run(context.Background(), *jobs, *settle); err != nil {
		fmt.Fprintln(os.Stderr, "idlejobs:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, njobs int, settle time.Duration) error {
	runtime.GC()
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	start := time.Now()
	r, err := ejob.EmbeddedRegistry("idle")
	if err != nil {
		return fmt.Errorf("embedded registry: %w", err)
	}
	defer r.Close()
	rc := regcount.New(r)
	s, err := ejob.NewScheduler(rc)
	if err != nil {
		return fmt.Errorf("scheduler: %w", err)
	}
	noop := func(context.Context, ejob.ShardingContext) error { return nil }
	for i := range njobs {
		cfg := ejob.NewJobConfig("idle-"+strconv.Itoa(i), 1)
		cfg.Cron = "0 0 0 1 1 ? 2099"
		if err := s.Simple(ctx, cfg, noop); err != nil {
			return fmt.Errorf("job %d: %w", i, err)
		}
	}
	if err := s.Start(ctx); err != nil {
		return fmt.Errorf("start: %w", err)
	}
	setup := time.Since(start)
	if err := quiesce(rc, settle, 2*time.Minute); err != nil {
		return err
	}
	runtime.GC()
	runtime.ReadMemStats(&m1)
	rep := report{
		Jobs: njobs, SetupS: setup.Seconds(),
		HeapMiB:    mib(m1.HeapInuse, m0.HeapInuse),
		LiveMiB:    mib(m1.HeapAlloc, m0.HeapAlloc),
		StackMiB:   mib(m1.StackInuse, m0.StackInuse),
		Goroutines: runtime.NumGoroutine(),
	}
	if err := json.NewEncoder(os.Stdout).Encode(rep); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	if _, err := io.Copy(io.Discard, os.Stdin); err != nil {
		return fmt.Errorf("stdin: %w", err)
	}
	if err := s.Shutdown(ctx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	return nil
}

// quiesce waits until rc's request counts stay unchanged for settle (the
// jobs' start-up done: resharding flags, cache loads), or fails after
// limit.
func quiesce(rc *regcount.Client, settle, limit time.Duration) error {
	last, stable := rc.Counts(), time.Now()
	deadline := stable.Add(limit)
	for time.Since(stable) < settle {
		if time.Now().After(deadline) {
			return errors.New("registry requests never settled")
		}
		time.Sleep(settle / 10) // polling an observable count, with a deadline
		if c := rc.Counts(); c != last {
			last, stable = c, time.Now()
		}
	}
	return nil
}

func mib(after, before uint64) float64 { return float64(int64(after)-int64(before)) / (1 << 20) }
