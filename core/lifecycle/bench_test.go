package lifecycle_test

import (
	"context"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"golang.org/x/sync/errgroup"

	"github.com/ejob-io/ejob/core/lifecycle"
	"github.com/ejob-io/ejob/core/lifecycle/lifecycletest"
	"github.com/ejob-io/ejob/core/node"
	"github.com/ejob-io/ejob/core/reg"
	"github.com/ejob-io/ejob/core/reg/embedded"
	"github.com/ejob-io/ejob/core/reg/zookeeper"
)

// benchJobs is the size of the namespace `ejob jobs` is measured on.
const benchJobs = 1000

// BenchmarkJobs measures `ejob jobs` (lifecycle.Jobs, the console's
// getAllJobsBriefInfo) on a namespace of 1,000 jobs: the shipped call
// (jobs read Parallelism at a time, requests pipelined on one
// connection), upstream's way (one job after the other), and the whole
// command's registry part (connect, Jobs, close).
func BenchmarkJobs(b *testing.B) {
	run := func(b *testing.B, c reg.Client, connect func() reg.Client) {
		lifecycletest.FillJobs(b, c, benchJobs)
		ctx := context.Background()
		b.Run("parallel", func(b *testing.B) {
			for b.Loop() {
				briefs, err := lifecycle.Jobs(ctx, c)
				if err != nil || len(briefs) != benchJobs || briefs[0].Status != lifecycle.StatusOK {
					b.Fatalf("Jobs: %d briefs, %v", len(briefs), err)
				}
			}
		})
		b.Run("sequential", func(b *testing.B) {
			for b.Loop() {
				names, err := c.Children(ctx, "/")
				if err != nil {
					b.Fatal(err)
				}
				for _, n := range names {
					if _, err := lifecycle.Job(ctx, c, n); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
		// The floor: as many plain reads as Jobs makes (8 per job), 32 at
		// a time.
		b.Run("8000-gets", func(b *testing.B) {
			path := node.New("job0000").Config()
			for b.Loop() {
				g, ctx := errgroup.WithContext(ctx)
				g.SetLimit(lifecycle.Parallelism)
				for range 8 * benchJobs {
					g.Go(func() error { _, _, err := c.Get(ctx, path); return err })
				}
				if err := g.Wait(); err != nil {
					b.Fatal(err)
				}
			}
		})
		if connect != nil {
			b.Run("connect+jobs", func(b *testing.B) {
				for b.Loop() {
					c := connect()
					if _, err := lifecycle.Jobs(ctx, c); err != nil {
						b.Fatal(err)
					}
					_ = c.Close()
				}
			})
		}
	}
	b.Run("embedded", func(b *testing.B) {
		c, err := embedded.NewServer().Connect("bench")
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		run(b, c, nil)
	})
	b.Run("zookeeper", func(b *testing.B) {
		if zk == nil {
			b.Skip("real ZooKeeper skipped in -short mode")
		}
		connect := func() reg.Client {
			cfg := zookeeper.DefaultConfig(zk.Addr(), "bench-jobs")
			cfg.Logger = hclog.NewNullLogger()
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			c, err := zookeeper.Connect(ctx, cfg)
			if err != nil {
				b.Fatal(err)
			}
			return c
		}
		c := connect()
		defer c.Close()
		run(b, c, connect)
	})
}
