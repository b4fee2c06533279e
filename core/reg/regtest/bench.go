package regtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/ejob-io/ejob/core/reg"
)

// jobOps creates a job-shaped subtree at root in one transaction: the nodes
// an idle ElasticJob job holds (as in test/golden's recorded tree): 15
// nodes, a ~700-byte config.
func jobOps(root string) []reg.Op {
	inst := "10.0.0.1@-@4242"
	cfg := "cron: 0/5 * * * * ?\ndescription: ''\ndisabled: false\nfailover: false\njobName: " + root[1:] +
		"\njobParameter: ''\nmaxTimeDiffSeconds: -1\nmisfire: true\nmonitorExecution: true\noverwrite: true\n" +
		"props:\n  script.command.line: echo hello\nreconcileIntervalMinutes: 10\nshardingItemParameters: 0=x,1=y\n" +
		"shardingTotalCount: 2\nstaticSharding: false\njobExtraConfigurations: []\n"
	cfg += strings.Repeat("#", max(0, 700-len(cfg)))
	var ops []reg.Op
	for _, n := range []struct{ path, data string }{
		{"", "SCRIPT"},
		{"/config", cfg},
		{"/instances", ""},
		{"/instances/" + inst, "jobInstanceId: " + inst + "\nserverIp: 10.0.0.1\n"},
		{"/servers", ""},
		{"/servers/10.0.0.1", "ENABLED"},
		{"/sharding", ""},
		{"/sharding/0", ""},
		{"/sharding/0/instance", inst},
		{"/sharding/1", ""},
		{"/sharding/1/instance", inst},
		{"/leader", ""},
		{"/leader/election", ""},
		{"/leader/election/instance", inst},
		{"/leader/sharding", ""},
	} {
		ops = append(ops, reg.CreateOp(root+n.path, []byte(n.data), reg.Persistent))
	}
	return ops
}

// BenchSharedCache measures a SharedCache tracking many job-shaped
// subtrees (jobOps), in the recursive mode (skipped when the client has
// none) and in the fallback (a TreeCache per subtree): the time to load
// them all (ns/op), and after a GC the heap bytes and goroutines per
// tracked subtree (the registry's own memory, an embedded one's included,
// is measured before the cache starts and left out), for each number of
// jobs (the fallback up to 1,000: a goroutine and ~25-50 KB per job).
func BenchSharedCache(b *testing.B, connect func(tb testing.TB, namespace string) reg.Client, jobCounts ...int) {
	for _, mode := range []string{"recursive", "fallback"} {
		for _, jobs := range jobCounts {
			if mode == "fallback" && jobs > 1000 {
				continue
			}
			b.Run(fmt.Sprintf("mode=%s/jobs=%d", mode, jobs), func(b *testing.B) {
				benchShared(b, connect, mode == "fallback", jobs)
			})
		}
	}
}

func benchShared(b *testing.B, connect func(tb testing.TB, namespace string) reg.Client, fallback bool, jobs int) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	var rnd [4]byte
	_, _ = rand.Read(rnd[:])
	ns := "bench-shared-" + hex.EncodeToString(rnd[:])
	w := connect(b, ns)
	defer func() { _ = w.Close() }()
	if !fallback {
		rw, ok := w.(reg.RecursiveWatcher)
		if !ok {
			b.Skip("client has no recursive watches")
		}
		wctx, wcancel := context.WithCancel(ctx)
		err := rw.WatchRecursive(wctx, "/", func(reg.WatchEvent) {})
		wcancel()
		if err != nil {
			b.Skipf("no recursive watch: %v", err)
		}
	}
	for j := range jobs {
		if _, err := w.Multi(ctx, jobOps(fmt.Sprintf("/job%05d", j))...); err != nil {
			b.Fatal(err)
		}
	}
	var heap, goroutines float64
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		c := connect(b, ns)
		var cc reg.Client = c
		if fallback {
			cc = noRecursive{c}
		}
		heap0, g0 := heapAfterGC()
		b.StartTimer()
		sc := reg.NewSharedCache(cc)
		runCtx, stop := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- sc.Run(runCtx) }()
		views := make([]*reg.CacheView, jobs)
		for j := range jobs {
			views[j] = sc.Track(fmt.Sprintf("/job%05d", j), func(reg.TreeEvent) {})
		}
		for _, v := range views {
			<-v.Initialized()
		}
		b.StopTimer()
		heap1, g1 := heapAfterGC()
		heap = float64(int64(heap1)-int64(heap0)) / float64(jobs)
		goroutines = float64(g1-g0) / float64(jobs)
		if _, _, ok := views[jobs-1].Get(fmt.Sprintf("/job%05d/config", jobs-1)); !ok {
			b.Fatal("config not cached")
		}
		for _, v := range views {
			v.Close()
		}
		stop()
		if err := <-done; err != nil {
			b.Fatal(err)
		}
		_ = c.Close()
		b.StartTimer()
	}
	b.ReportMetric(heap, "heap-B/job")
	b.ReportMetric(goroutines, "goroutines/job")
	b.ReportMetric(0, "ns/op") // the load time is reported per job instead
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*jobs), "load-ns/job")
}

// heapAfterGC returns the live heap and the goroutine count once the
// garbage is collected.
func heapAfterGC() (uint64, int) {
	var m runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m)
	return m.HeapAlloc, runtime.NumGoroutine()
}
