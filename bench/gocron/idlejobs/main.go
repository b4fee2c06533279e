// Command idlejobs is go-co-op/gocron v2's side of the idle-jobs
// comparison (BenchmarkIdleJobsSameRun builds and runs it beside ejob's
// bench/idlejobs, each in a process of its own).
//
// It adds -jobs jobs that next fire on 1 January to a new scheduler,
// starts it, collects the garbage and prints the JSON line ejob's program
// prints: the time from creating the scheduler to Start's return, the
// heap in use, the live heap and the goroutine stacks after GC
// (differences from the program's start), and the goroutines. It then
// waits for its stdin to close (the caller reads its VmRSS meanwhile) and
// shuts the scheduler down.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"time"

	"github.com/go-co-op/gocron/v2"
)

// report is the JSON line printed once the jobs are idle.
type report struct {
	Jobs       int     `json:"jobs"`
	SetupS     float64 `json:"setup_s"`
	HeapMiB    float64 `json:"heap_mib"`
	LiveMiB    float64 `json:"live_mib"`
	StackMiB   float64 `json:"stack_mib"`
	Goroutines int     `json:"goroutines"`
}

func main() {
	jobs := flag.Int("jobs", 10_000, "idle jobs to add")
	flag.Parse()
	if err := run(*jobs); err != nil {
		fmt.Fprintln(os.Stderr, "idlejobs:", err)
		os.Exit(1)
	}
}

func run(njobs int) error {
	runtime.GC()
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	start := time.Now()
	s, err := gocron.NewScheduler()
	if err != nil {
		return fmt.Errorf("scheduler: %w", err)
	}
	for i := range njobs {
		if _, err := s.NewJob(gocron.CronJob("0 0 0 1 1 *", true), gocron.NewTask(func() {}),
			gocron.WithName("idle-"+strconv.Itoa(i))); err != nil {
			return fmt.Errorf("job %d: %w", i, err)
		}
	}
	s.Start()
	setup := time.Since(start)
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
	if err := s.Shutdown(); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	return nil
}

func mib(after, before uint64) float64 { return float64(int64(after)-int64(before)) / (1 << 20) }
