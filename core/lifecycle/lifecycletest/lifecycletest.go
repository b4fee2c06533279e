// Package lifecycletest builds namespaces for tests and benchmarks of the
// operations surface (core/lifecycle, the REST API).
package lifecycletest

import (
	"context"
	"fmt"
	"testing"

	"golang.org/x/sync/errgroup"

	"github.com/ejob-io/ejob/core/config"
	"github.com/ejob-io/ejob/core/node"
	"github.com/ejob-io/ejob/core/reg"
)

// FillJobs writes jobs job0000, job0001, ... as running hosts leave them:
// config (3 items, a cron), 2 ENABLED servers, 2 live instances (ephemeral
// nodes of c's session: keep c open) and the 3 items with owners, 14 nodes
// per job, 32 jobs at a time. Every job's status is then OK.
func FillJobs(tb testing.TB, c reg.Client, jobs int) {
	tb.Helper()
	cfg := config.New("x", 3)
	cfg.Cron = "0 0/5 * * * ?"
	data, err := config.Marshal(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	g, ctx := errgroup.WithContext(context.Background())
	g.SetLimit(32)
	for i := range jobs {
		g.Go(func() error {
			j := node.New(fmt.Sprintf("job%04d", i))
			ids := []string{"10.0.0.1@-@1", "10.0.0.2@-@2"}
			for _, n := range []struct{ path, v string }{
				{j.Config(), string(data)}, {j.Server("10.0.0.1"), "ENABLED"}, {j.Server("10.0.0.2"), "ENABLED"},
				{j.ShardingInstance(0), ids[0]}, {j.ShardingInstance(1), ids[1]}, {j.ShardingInstance(2), ids[0]},
			} {
				if _, err := reg.Persist(ctx, c, n.path, []byte(n.v)); err != nil {
					return err
				}
			}
			for _, id := range ids {
				if _, err := c.Create(ctx, j.Instance(id), []byte("jobInstanceId: "+id+"\n"), reg.Ephemeral, reg.WithParents()); err != nil {
					return err
				}
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		tb.Fatal(err)
	}
}
