package kernel_test

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
// item, a cron that next fires in 2099) on a real ZooKeeper
// (host/daemon's BenchmarkHostIdleOnZooKeeper without the host's own
// work). first is a first start on an empty namespace; restart
// registers the jobs, stops that scheduler (its session ends: its
// ephemeral nodes go) and measures the start of a new one (another
// instance id, the same IP) on the same namespace, whose jobs are all in
// the registry already. setup-s is the time from Run to Ready of the
// measured start, requests/job the registry requests it made until then
// (regcount: a Multi or MultiRead counts once). With -v it prints the
// requests per job by method and path.
func BenchmarkStartupOnZooKeeper(b *testing.B) {
	if testing.Short() {
		b.Skip("real ZooKeeper benchmarks skipped in -short mode")
	}
	const njobs = 1_000
	srv := zktest.Start(b, zktest.Options{})
	for _, restart := range []bool{false, true} {
		name := "first"
		if restart {
			name = "restart"
		}
		b.Run(name, func(b *testing.B) {
			var st idleStart
			it := 0
			for b.Loop() {
				it++
				ns := "startup-" + name + strconv.Itoa(it)
				if restart {
					b.StopTimer()
					idleStartOnZooKeeper(b, srv, ns, 1, njobs).stop()
					b.StartTimer()
				}
				st = idleStartOnZooKeeper(b, srv, ns, 2, njobs)
				st.stop()
			}
			b.ReportMetric(st.setup.Seconds(), "setup-s")
			b.ReportMetric(float64(st.requests)/njobs, "requests/job")
			if testing.Verbose() {
				keys := make([]string, 0, len(st.byPath))
				for k := range st.byPath {
					keys = append(keys, k)
				}
				sort.Slice(keys, func(i, j int) bool { return st.byPath[keys[i]] > st.byPath[keys[j]] })
				for _, k := range keys {
					fmt.Fprintf(os.Stderr, "%8.3f  %s\n", float64(st.byPath[k])/njobs, k)
				}
			}
		})
	}
}

// idleStart is one start of newIdleScheduler's jobs on ZooKeeper, until
// Ready: its time, the requests made, and their count by method and path.
type idleStart struct {
	setup    time.Duration
	requests int64
	byPath   map[string]int
	stop     func() // stops the scheduler and closes its session
}

// idleStartOnZooKeeper starts a scheduler of njobs idle jobs (instance
// 10.0.2.1@-@pid) on namespace ns of srv, on a connection of its own, and
// returns once every job is registered.
func idleStartOnZooKeeper(b *testing.B, srv *zktest.Server, ns string, pid, njobs int) idleStart {
	b.Helper()
	c := zkConnect(b, srv, ns, 20*time.Second, nil)
	var mu sync.Mutex
	byPath := map[string]int{}
	cc := regcount.New(c, regcount.WithObserver(func(call regcount.Call) {
		k := call.Method + " " + latchNode.ReplaceAllString(idleJobRoot.ReplaceAllString(call.Path, "/J"), "LATCH")
		mu.Lock()
		byPath[k]++
		mu.Unlock()
	}))
	s := newIdleSchedulerAs(b, cc, benchLogLevel(), "10.0.2.1@-@"+strconv.Itoa(pid), njobs)
	start := time.Now()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	if err := s.Ready(ctx); err != nil {
		b.Fatal(err)
	}
	st := idleStart{setup: time.Since(start), requests: cc.Counts().Total()}
	mu.Lock()
	st.byPath = make(map[string]int, len(byPath))
	for k, n := range byPath {
		st.byPath[k] = n
	}
	mu.Unlock()
	st.stop = func() {
		cancel()
		if err := <-done; err != nil {
			b.Fatal(err)
		}
		if err := c.Close(); err != nil {
			b.Logf("close: %v", err)
		}
	}
	return st
}
