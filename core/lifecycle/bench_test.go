package lifecycle_test

import (
	"context"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

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
// getAllJobsBriefInfo) on a namespace of 1,000 jobs: the shipped call (two
// rounds of reg.ReadMany: multiRead requests on ZooKeeper), the same call
// on plain reads (reg.ReadEach, ReadParallelism pipelined on the
// connection: how Jobs read before multiRead), 8,000 plain gets pipelined
// the same way (a floor for single reads; Jobs makes 13,000), and the
// whole command's registry part (connect, Jobs, close). jobs-ms is one
// Jobs call in milliseconds.
func BenchmarkJobs(b *testing.B) {
	run := func(b *testing.B, c reg.Client, connect func() reg.Client) {
		lifecycletest.FillJobs(b, c, benchJobs)
		ctx := context.Background()
		jobs := func(b *testing.B, r lifecycle.Reader) {
			start := time.Now()
			for b.Loop() {
				briefs, err := lifecycle.Jobs(ctx, r)
				if err != nil || len(briefs) != benchJobs || briefs[0].Status != lifecycle.StatusOK {
					b.Fatalf("Jobs: %d briefs, %v", len(briefs), err)
				}
			}
			b.ReportMetric(float64(time.Since(start).Microseconds())/1000/float64(b.N), "jobs-ms")
		}
		b.Run("multiread", func(b *testing.B) { jobs(b, c) })
		b.Run("plain-reads", func(b *testing.B) { jobs(b, plainReader{c}) })
		b.Run("8000-gets", func(b *testing.B) {
			path := node.New("job0000").Config()
			ops := make([]reg.ReadOp, 8*benchJobs)
			for i := range ops {
				ops[i] = reg.GetOp(path)
			}
			for b.Loop() {
				if _, err := reg.ReadEach(ctx, c, ops...); err != nil {
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

// plainReader hides a client's MultiRead: reg.ReadMany then reads node by
// node.
type plainReader struct{ c reg.Client }

func (p plainReader) Get(ctx context.Context, path string) ([]byte, reg.Stat, error) {
	return p.c.Get(ctx, path)
}

func (p plainReader) Exists(ctx context.Context, path string) (reg.Stat, bool, error) {
	return p.c.Exists(ctx, path)
}

func (p plainReader) Children(ctx context.Context, path string) ([]string, error) {
	return p.c.Children(ctx, path)
}

func (p plainReader) Namespace() string { return p.c.Namespace() }
