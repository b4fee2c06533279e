package ejob_test

import (
	"context"
	"testing"
	"time"

	"github.com/ejob-io/ejob"
	"github.com/ejob-io/ejob/core/reg/zktest"
	"github.com/ejob-io/ejob/internal/testkit"
)

// TestSimpleJobOnZooKeeper runs the library on a real ZooKeeper and checks
// the job left ElasticJob's nodes behind it.
func TestSimpleJobOnZooKeeper(t *testing.T) {
	zk := zktest.Start(t, zktest.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	reg, err := ejob.ZooKeeper(ctx, zk.Addr(), "lib-zk-test")
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Close()
	s, err := ejob.NewScheduler(reg, ejob.WithDrainTimeout(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	cfg := ejob.NewJobConfig("zkSimple", 2)
	cfg.Cron = "* * * * * ?"
	var got seen
	if err := s.Simple(ctxOf(t), cfg, func(ctx context.Context, sc ejob.ShardingContext) error {
		got.add(sc.ShardingItem)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 20*time.Second, "two items run", func() bool { return len(got.get()) >= 2 })
	owner, _, err := reg.Get(ctx, "/zkSimple/sharding/0/instance")
	if err != nil || string(owner) != s.InstanceID() {
		t.Fatalf("sharding/0/instance = %q, %v; want %s", owner, err, s.InstanceID())
	}
	if err := s.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := reg.Exists(ctx, "/zkSimple/instances/"+s.InstanceID()); err != nil || ok {
		t.Fatalf("instance node left after shutdown: exists=%v err=%v", ok, err)
	}
}
