package scheduler_test

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

// BenchmarkZooKeeperFloor measures what a trigger's requests cost the
// server alone, on the ZooKeeper the other benchmarks use (scripts/zk.sh:
// standalone, its data on this machine's disk, every write fsynced before
// it is answered): the round trip of a read (Exists), of a running-node
// transaction (a check and a create in one multi, the node deleted after
// each op), of both sent together on one session (a steady trigger's two
// requests before its first item), and of three such transactions sent at
// once on three sessions (three instances firing the same second). Each
// op is one sample of each; p50 and p99 in ms. No scheduler runs: this is
// the floor under BenchmarkTriggerJitter's ZooKeeper figures.
func BenchmarkZooKeeperFloor(b *testing.B) {
	if testing.Short() {
		b.Skip("real ZooKeeper benchmarks skipped in -short mode")
	}
	srv := zktest.Start(b, zktest.Options{})
	var cs [3]reg.Client
	for i := range cs {
		cs[i] = zkConnect(b, srv, "floor", 4*time.Second, nil)
	}
	ctx := context.Background()
	inst := "/instance"
	if _, err := cs[0].Create(ctx, inst, nil, reg.Persistent); err != nil {
		b.Fatal(err)
	}
	begin := func(c reg.Client, node string) time.Duration {
		t := time.Now()
		if _, err := c.Multi(ctx, reg.CheckOp(inst, 0), reg.CreateOp(node, []byte("x"), reg.Persistent)); err != nil {
			b.Fatal(err)
		}
		return time.Since(t)
	}
	var read, write, pair, three []float64
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	for b.Loop() {
		t := time.Now()
		if _, _, err := cs[0].Exists(ctx, inst); err != nil {
			b.Fatal(err)
		}
		read = append(read, ms(time.Since(t)))

		write = append(write, ms(begin(cs[0], "/running")))
		if err := cs[0].Delete(ctx, "/running", reg.AnyVersion); err != nil {
			b.Fatal(err)
		}

		t = time.Now()
		done := make(chan error, 1)
		go func() { _, _, err := cs[0].Exists(ctx, inst); done <- err }()
		begin(cs[0], "/running")
		if err := <-done; err != nil {
			b.Fatal(err)
		}
		pair = append(pair, ms(time.Since(t)))
		if err := cs[0].Delete(ctx, "/running", reg.AnyVersion); err != nil {
			b.Fatal(err)
		}

		var wg sync.WaitGroup
		lat := make([]time.Duration, len(cs))
		for i, c := range cs {
			wg.Go(func() { lat[i] = begin(c, fmt.Sprintf("/running%d", i)) })
		}
		wg.Wait()
		for i, c := range cs {
			three = append(three, ms(lat[i]))
			if err := c.Delete(ctx, fmt.Sprintf("/running%d", i), reg.AnyVersion); err != nil {
				b.Fatal(err)
			}
		}
	}
	for _, m := range []struct {
		name string
		v    []float64
	}{{"read", read}, {"write", write}, {"pair", pair}, {"3writes", three}} {
		sort.Float64s(m.v)
		b.ReportMetric(percentile(m.v, 50), m.name+"-p50-ms")
		b.ReportMetric(percentile(m.v, 99), m.name+"-p99-ms")
	}
}
