package coord_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ejob-io/ejob/core/config"
	"github.com/ejob-io/ejob/core/reg"
	"github.com/ejob-io/ejob/core/reg/zktest"
	"github.com/ejob-io/ejob/core/reg/zookeeper"
)

// The resharding commit of a job at every bound that sizes it (a
// namespace of MaxNamespaceBytes, a job name of MaxJobNameBytes,
// MaxShardingTotalCount new items, an instance id of 64 bytes) is one
// multi that a ZooKeeper with the default jute.maxbuffer accepts: the
// arithmetic behind config.MaxShardingTotalCount, checked on the server.
func TestMaxShardingTotalCountFitsOneCommit(t *testing.T) {
	if testing.Short() {
		t.Skip("real ZooKeeper skipped in -short mode")
	}
	srv := zktest.Start(t, zktest.Options{})
	ns := strings.Repeat("n", config.MaxNamespaceBytes)
	cl := newCluster(t, func(t *testing.T) reg.Client {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		c, err := zookeeper.Connect(ctx, zookeeper.DefaultConfig(srv.Addr(), ns))
		if err != nil {
			t.Fatalf("connect: %v", err)
		}
		t.Cleanup(func() { _ = c.Close() })
		return c
	})
	cfg := config.New(strings.Repeat("j", config.MaxJobNameBytes), config.MaxShardingTotalCount)
	cfg.Cron = "0/5 * * * * ?"
	if err := cfg.Validate(config.ValidateOptions{}); err != nil {
		t.Fatal(err)
	}
	id := "192.0.2.1@-@" + strings.Repeat("9", 64-len("192.0.2.1@-@"))
	in := cl.startWith("192.0.2.1", 1, cfg, nil, func(o *optsT) { o.InstanceID = id })
	select {
	case <-in.job.Ready():
	case err := <-in.done:
		t.Fatalf("stopped during startup: %v", err)
	case <-time.After(waitFor):
		t.Fatal("not ready")
	}
	items, err := in.run(ctxT(t))
	if err != nil || len(items) != config.MaxShardingTotalCount {
		t.Fatalf("the first run at the bounds ran %d items, %v; want %d in one resharding commit", len(items), err, config.MaxShardingTotalCount)
	}
}
