package scheduler_test

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/ejob-io/ejob/core/reg/regcount"
	"github.com/ejob-io/ejob/core/reg/zktest"
)

// The per-path breakdown folds a job root to /J and a latch participant
// to LATCH.
var (
	idleJobRoot = regexp.MustCompile(`^/idle-\d+`)
	latchNode   = regexp.MustCompile(`_c_[0-9a-f-]+-latch-\d*`)
)

// BenchmarkStartupOnZooKeeper: one scheduler registers 1,000 idle jobs (1
// item, a cron that next fires in 2099) on a real ZooKeeper, a first
// start on an empty namespace (issue 16's "1,000 idle jobs on ZooKeeper:
// start to host started", without the host's own work). setup-s is the
// time from Run to Ready, requests/job the registry requests made until
// then (regcount: a Multi or MultiRead counts once). With -v it prints the
// requests per job by method and path.
func BenchmarkStartupOnZooKeeper(b *testing.B) {
	if testing.Short() {
		b.Skip("real ZooKeeper benchmarks skipped in -short mode")
	}
	const njobs = 1_000
	srv := zktest.Start(b, zktest.Options{})
	var setup time.Duration
	var perJob float64
	it := 0
	for b.Loop() {
		it++
		c := zkConnect(b, srv, "startup"+strconv.Itoa(it), 20*time.Second, nil)
		var mu sync.Mutex
		byPath := map[string]int{}
		cc := regcount.New(c, regcount.WithObserver(func(call regcount.Call) {
			k := call.Method + " " + latchNode.ReplaceAllString(idleJobRoot.ReplaceAllString(call.Path, "/J"), "LATCH")
			mu.Lock()
			byPath[k]++
			mu.Unlock()
		}))
		s := newIdleScheduler(b, cc, benchLogLevel(), njobs)
		start := time.Now()
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- s.Run(ctx) }()
		if err := s.Ready(ctx); err != nil {
			b.Fatal(err)
		}
		setup = time.Since(start)
		perJob = float64(cc.Counts().Total()) / njobs
		if testing.Verbose() {
			mu.Lock()
			keys := make([]string, 0, len(byPath))
			for k := range byPath {
				keys = append(keys, k)
			}
			sort.Slice(keys, func(i, j int) bool { return byPath[keys[i]] > byPath[keys[j]] })
			for _, k := range keys {
				fmt.Fprintf(os.Stderr, "%8.3f  %s\n", float64(byPath[k])/njobs, k)
			}
			mu.Unlock()
		}
		cancel()
		if err := <-done; err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(setup.Seconds(), "setup-s")
	b.ReportMetric(perJob, "requests/job")
}
