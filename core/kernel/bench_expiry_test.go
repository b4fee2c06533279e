package kernel_test

import (
	"context"
	"os"
	"runtime"
	"runtime/pprof"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/ejob-io/ejob/core/reg"
	"github.com/ejob-io/ejob/core/reg/regcount"
	"github.com/ejob-io/ejob/core/reg/zktest"
)

// BenchmarkIdleAfterExpiry: one scheduler on ZooKeeper with 2,000 idle
// jobs; its session is expired 3 times, and after each, once every job's
// instance node is back, the live heap is measured again. What the jobs
// of a lost session held is garbage once they are registered again, so
// live-B/job grows once (what a job's re-registration leaves: its
// contexts' child maps, its tree cache's re-read nodes, the goroutine
// descriptors the runtime keeps of the re-registrations run at once),
// not with each expiry; reregister-s is how long after an expiry every
// job's instance node was back (a mean), with the scheduler's requests
// until then. EJOB_HEAPDIR=DIR writes the heap profiles
// (before.heap, after1.heap, ...) to compare with pprof -base.
func BenchmarkIdleAfterExpiry(b *testing.B) {
	if testing.Short() {
		b.Skip("real ZooKeeper benchmarks skipped in -short mode")
	}
	const njobs, expiries = 2_000, 3
	srv := zktest.Start(b, zktest.Options{})
	var before float64
	var back time.Duration // from the expiries to every job registered again, summed
	var requests int64     // the scheduler's requests meanwhile, summed
	byPath := map[string]int{}
	after := make([]float64, expiries)
	it := 0
	for b.Loop() {
		it++
		ns := "expiry-" + strconv.Itoa(it)
		c := zkConnect(b, srv, ns, 10*time.Second, nil)
		runtime.GC()
		var m0 runtime.MemStats
		runtime.ReadMemStats(&m0)
		var mu sync.Mutex
		counting := false
		cc := regcount.New(c, regcount.WithObserver(func(call regcount.Call) {
			k := call.Method + " " + latchNode.ReplaceAllString(idleJobRoot.ReplaceAllString(call.Path, "/J"), "LATCH")
			mu.Lock()
			if counting {
				byPath[k]++
			}
			mu.Unlock()
		}))
		s := newIdleSchedulerAs(b, cc, benchLogLevel(), "10.0.2.1@-@1", njobs)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- s.Run(ctx) }()
		if err := s.Ready(ctx); err != nil {
			b.Fatal(err)
		}
		live := func() float64 {
			time.Sleep(2 * time.Second) // start-up's timers and caches settle
			runtime.GC()
			runtime.GC()
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			return float64(int64(m.HeapAlloc)-int64(m0.HeapAlloc)) / njobs
		}
		before = live()
		writeHeap(b, "before")
		for e := range expiries {
			mu.Lock()
			counting = true
			mu.Unlock()
			t0, n0 := time.Now(), cc.Counts().Total()
			if err := reg.Client(c).(reg.Expirer).Expire(ctx); err != nil {
				b.Fatal(err)
			}
			waitRegistered(b, c, njobs, "10.0.2.1@-@1")
			back += time.Since(t0)
			requests += cc.Counts().Total() - n0
			mu.Lock()
			counting = false
			mu.Unlock()
			after[e] = live()
			writeHeap(b, "after"+strconv.Itoa(e+1))
		}
		cancel()
		if err := <-done; err != nil {
			b.Fatal(err)
		}
	}
	if testing.Verbose() {
		keys := make([]string, 0, len(byPath))
		for k := range byPath {
			keys = append(keys, k)
		}
		sort.Slice(keys, func(i, j int) bool { return byPath[keys[i]] > byPath[keys[j]] })
		for _, k := range keys {
			b.Logf("%7.2f a job  %s", float64(byPath[k])/float64(expiries*it*njobs), k)
		}
	}
	b.ReportMetric(before, "live-B/job")
	b.ReportMetric(back.Seconds()/float64(expiries*it), "reregister-s")
	b.ReportMetric(float64(requests)/float64(expiries*it*njobs), "reregister-requests/job")
	for e, v := range after {
		b.ReportMetric(v, "after-"+strconv.Itoa(e+1)+"-live-B/job")
	}
}

// waitRegistered waits until every idle job's instance node of id exists.
func waitRegistered(b testing.TB, c reg.Client, njobs int, id string) {
	b.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	ctx := context.Background()
	for i := 0; i < njobs; {
		_, ok, err := c.Exists(ctx, "/idle-"+strconv.Itoa(i)+"/instances/"+id)
		if err == nil && ok {
			i++
			continue
		}
		if time.Now().After(deadline) {
			b.Fatalf("job idle-%d not registered again: err %v", i, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// writeHeap writes the heap profile NAME.heap to $EJOB_HEAPDIR, if set.
func writeHeap(b *testing.B, name string) {
	if d := os.Getenv("EJOB_HEAPDIR"); d != "" {
		w, err := os.Create(d + "/" + name + ".heap")
		if err != nil {
			b.Fatal(err)
		}
		_ = pprof.Lookup("heap").WriteTo(w, 0)
		_ = w.Close()
	}
}
