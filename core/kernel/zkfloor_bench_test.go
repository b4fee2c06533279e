package kernel_test

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/ejob-io/ejob/core/reg"
	"github.com/ejob-io/ejob/core/reg/zktest"
)

// BenchmarkZooKeeperFloor measures what BenchmarkTriggerJitter's requests
// cost on the ZooKeeper the benchmarks use (scripts/zk.sh: standalone, its
// data on this machine's disk, every write fsynced before it is answered),
// with no scheduler: the floor under the jitter's ZooKeeper figures. Like
// a cron firing every second, each request follows an idle pause (on a
// shared machine the first request after a pause costs more than one in a
// busy loop). Each op takes three seconds:
//
//   - 3pairs: at a second's start, three sessions each send the stat of a
//     node and a running-node transaction (a check and a create in one
//     multi) together, as three instances of BenchmarkTriggerJitter's job
//     do before their items start; each session follows the parents of
//     the created nodes with a tree cache (as a job does), so the creates
//     fire watches and the caches re-read while the writes happen. One
//     sample per session.
//   - 3pairs-nocache: the same at the next second's start, under parents
//     no cache follows.
//   - pair: the same on one session alone, at the next second's start.
//   - write, read: the transaction alone, then the stat alone, 300 ms and
//     600 ms into that second.
//
// Figures: p50 and p99 of each in ms.
func BenchmarkZooKeeperFloor(b *testing.B) {
	if testing.Short() {
		b.Skip("real ZooKeeper benchmarks skipped in -short mode")
	}
	srv := zktest.Start(b, zktest.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	var cs [3]reg.Client
	for i := range cs {
		cs[i] = zkConnect(b, srv, "floor", 4*time.Second, nil)
	}
	for _, p := range []string{"/instance", "/sharding", "/sharding/0", "/sharding/1", "/sharding/2",
		"/uncached", "/uncached/0", "/uncached/1", "/uncached/2"} {
		if _, err := cs[0].Create(ctx, p, nil, reg.Persistent); err != nil {
			b.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	for _, c := range cs {
		t := reg.NewTreeCache(c, "/sharding", reg.WithoutEvents(), reg.WithLeaves(func(p string) bool { return reg.Base(p) == "running" }))
		wg.Go(func() { _ = t.Run(ctx) })
		<-t.Initialized()
	}
	parent := "/sharding" // or "/uncached"
	running := func(i int) string { return fmt.Sprintf("%s/%d/running", parent, i) }
	begin := func(c reg.Client, i int) {
		if _, err := c.Multi(ctx, reg.CheckOp("/instance", 0), reg.CreateOp(running(i), []byte("x"), reg.Persistent)); err != nil {
			b.Fatal(err)
		}
	}
	stat := func(c reg.Client) {
		if _, _, err := c.Exists(ctx, "/sharding"); err != nil {
			b.Fatal(err)
		}
	}
	pair := func(c reg.Client, i int) time.Duration {
		t := time.Now()
		done := make(chan struct{})
		go func() { defer close(done); stat(c) }()
		begin(c, i)
		<-done
		return time.Since(t)
	}
	clear := func(i int) {
		if err := cs[i].Delete(ctx, running(i), reg.AnyVersion); err != nil {
			b.Fatal(err)
		}
	}
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	// at sleeps until offset into the next second that has it ahead.
	at := func(offset time.Duration) {
		now := time.Now()
		next := now.Truncate(time.Second).Add(offset)
		if !next.After(now) {
			next = next.Add(time.Second)
		}
		time.Sleep(next.Sub(now))
	}
	var three, uncached, one, write, read []float64
	pairs := func() []float64 {
		at(0)
		lat := make([]time.Duration, len(cs))
		var pw sync.WaitGroup
		for i, c := range cs {
			pw.Go(func() { lat[i] = pair(c, i) })
		}
		pw.Wait()
		out := make([]float64, len(cs))
		for i := range cs {
			out[i] = ms(lat[i])
			clear(i)
		}
		return out
	}
	for b.Loop() {
		parent = "/sharding"
		three = append(three, pairs()...)
		parent = "/uncached"
		uncached = append(uncached, pairs()...)
		parent = "/sharding"

		at(0)
		one = append(one, ms(pair(cs[0], 0)))
		clear(0)
		at(300 * time.Millisecond)
		t := time.Now()
		begin(cs[0], 0)
		write = append(write, ms(time.Since(t)))
		clear(0)
		at(600 * time.Millisecond)
		t = time.Now()
		stat(cs[0])
		read = append(read, ms(time.Since(t)))
	}
	for _, m := range []struct {
		name string
		v    []float64
	}{{"3pairs", three}, {"3pairs-nocache", uncached}, {"pair", one}, {"write", write}, {"read", read}} {
		sort.Float64s(m.v)
		b.ReportMetric(percentile(m.v, 50), m.name+"-p50-ms")
		b.ReportMetric(percentile(m.v, 99), m.name+"-p99-ms")
	}
}
