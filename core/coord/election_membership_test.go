package coord_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/ejob-io/ejob/core/node"
	"github.com/ejob-io/ejob/core/reg"
	"github.com/ejob-io/ejob/core/reg/regcount"
	"github.com/ejob-io/ejob/internal/testkit"
)

// TestInstanceLostBeforeTheWinIsResharded: a passive election reads the
// instances and servers once, before its campaign, for its check of this
// server and the new leader's check of the assignment. An instance that
// holds an item and is lost between that read and the win is in the read,
// so the check finds nothing stale; its deletion, an event the job's queue
// holds until the election is over, flags the resharding that gives its
// item to a live instance.
func TestInstanceLostBeforeTheWinIsResharded(t *testing.T) {
	cl := newEmbeddedCluster(t)
	p := node.New(testJob)
	other := "10.0.0.2@-@2"
	var armed atomic.Bool
	lose := func() {
		if err := cl.admin.Delete(context.Background(), p.Instance(other), reg.AnyVersion); err != nil {
			t.Errorf("delete %s's instance node: %v", other, err)
		}
	}
	// The campaign's first request, once armed: the other instance is
	// lost then, after the election's read.
	c := regcount.New(cl.connect(t), regcount.WithObserver(func(call regcount.Call) {
		if (call.Method == "Create" || call.Method == "Multi") && strings.Contains(call.Path, "/leader/election/") && armed.CompareAndSwap(true, false) {
			lose()
		}
	}))
	a := cl.startAsync("10.0.0.1", 1, testConfig(2), c)
	testkit.Eventually(t, waitFor, "a registered", func() bool {
		select {
		case <-a.job.Ready():
			return true
		default:
			return false
		}
	})
	ctx := ctxT(t)
	if _, err := a.run(ctx); err != nil { // the first sharding
		t.Fatal(err)
	}
	// Another instance, on another server: its own session's nodes.
	o := cl.connect(t)
	if _, err := reg.Persist(ctx, o, p.Server("10.0.0.2"), []byte(node.ServerEnabled)); err != nil {
		t.Fatal(err)
	}
	if _, err := o.Create(ctx, p.Instance(other), node.InstanceValue(other, "10.0.0.2"), reg.Ephemeral); err != nil {
		t.Fatal(err)
	}
	assignedTo := func(item int) string {
		v, _, err := cl.admin.Get(ctx, p.ShardingInstance(item))
		if err != nil {
			t.Fatal(err)
		}
		return string(v)
	}
	flagged := func() bool {
		_, ok, err := cl.admin.Exists(ctx, p.ShardingNecessary())
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	testkit.Eventually(t, waitFor, "the resharding flag for the new instance", flagged)
	if _, err := a.run(ctx); err != nil { // reshards: one item each
		t.Fatal(err)
	}
	if flagged() || (assignedTo(0) != other && assignedTo(1) != other) {
		t.Fatalf("after the resharding: flag %v, items on %q and %q", flagged(), assignedTo(0), assignedTo(1))
	}
	// The leader node goes: a's passive election reads the instances
	// (the other one among them), and the other is lost as it campaigns.
	armed.Store(true)
	if err := cl.admin.Delete(ctx, p.LeaderInstance(), reg.AnyVersion); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, waitFor, "a elected again", func() bool {
		v, _, err := cl.admin.Get(ctx, p.LeaderInstance())
		return err == nil && string(v) == a.id
	})
	if armed.Load() {
		t.Fatal("the election made no campaign request")
	}
	if _, _, err := cl.admin.Get(ctx, p.Instance(other)); !errors.Is(err, reg.ErrNoNode) {
		t.Fatalf("the other instance's node: %v", err)
	}
	testkit.Eventually(t, waitFor, "the resharding flag for the lost instance", flagged)
	if _, err := a.run(ctx); err != nil {
		t.Fatal(err)
	}
	if assignedTo(0) != a.id || assignedTo(1) != a.id {
		t.Fatalf("after the resharding, items on %q and %q; want both on %s", assignedTo(0), assignedTo(1), a.id)
	}
}
