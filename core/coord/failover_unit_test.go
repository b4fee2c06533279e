package coord_test

import (
	"testing"
	"time"

	"github.com/ejob-io/ejob/core/executor"
	"github.com/ejob-io/ejob/internal/testkit"
)

// FailoverServiceTest.assertFailoverLeaderExecutionCallbackIfNecessary and
// the DESC claim order ("9" before "10"), one item per acquisition.
func TestFailoverClaimNodes(t *testing.T) {
	cl := newEmbeddedCluster(t)
	a := cl.start("192.168.1.1", 100, failoverConfig(11))
	cl.waitNecessary()
	ctx := ctxT(t)
	a.run(ctx)
	f := executor.Facade(a.job)
	// No items root: nothing happens.
	if err := f.FailoverIfNecessary(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-a.triggers:
		t.Fatal("triggered without failover items")
	default:
	}
	cl.persist(jp("leader", "failover", "items", "10"), "")
	cl.persist(jp("leader", "failover", "items", "9"), "")
	cl.sync()
	if err := f.FailoverIfNecessary(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-a.triggers:
	case <-time.After(waitFor):
		t.Fatal("no trigger after claim")
	}
	if v, _ := cl.get(jp("sharding", "9", "failover")); v != a.id {
		t.Errorf("sharding/9/failover = %q", v)
	}
	if st, _ := cl.stat(jp("sharding", "9", "failover")); st.EphemeralOwner == 0 {
		t.Error("failover node not ephemeral")
	}
	if v, _ := cl.get(jp("sharding", "9", "failovering")); v != a.id {
		t.Errorf("sharding/9/failovering = %q", v)
	}
	if st, _ := cl.stat(jp("sharding", "9", "failovering")); st.EphemeralOwner != 0 {
		t.Error("failovering node not persistent")
	}
	if _, ok := cl.get(jp("leader", "failover", "items", "9")); ok {
		t.Error("claimed item still queued")
	}
	if _, ok := cl.get(jp("leader", "failover", "items", "10")); !ok {
		t.Error("one acquisition claimed two items")
	}
	// The triggered run executes only the failover items, then claims 10.
	sc, err := f.ShardingContexts(ctx)
	if err != nil || !equalInts(sc.Items, []int{9}) {
		t.Fatalf("failover contexts = %v, %v", sc.Items, err)
	}
	if sc.TaskID != "test_job@-@9@-@READY@-@192.168.1.1@-@100" {
		t.Errorf("taskId = %q", sc.TaskID)
	}
	items, err := a.run(ctx)
	if err != nil || !equalInts(items, []int{9}) {
		t.Fatalf("failover run = %v, %v", items, err)
	}
	for _, n := range []string{"failover", "failovering", "running"} {
		if _, ok := cl.get(jp("sharding", "9", n)); ok {
			t.Errorf("sharding/9/%s left after completion", n)
		}
	}
	if v, _ := cl.get(jp("sharding", "10", "failover")); v != a.id {
		t.Errorf("enquiry after the run did not claim item 10: %q", v)
	}
}

// An item being failed over by another instance is taken off its owner.
func TestTakeOffItems(t *testing.T) {
	cl := newEmbeddedCluster(t)
	a := cl.start("192.168.1.1", 100, failoverConfig(3))
	cl.waitNecessary()
	a.run(ctxT(t))
	cl.persist(jp("sharding", "1", "failover"), "10.9.9.9@-@1")
	cl.sync() // the trigger reads the flag from a's tree cache
	if items, err := a.run(ctxT(t)); err != nil || !equalInts(items, []int{0, 2}) {
		t.Errorf("ran %v, %v", items, err)
	}
}

// JobCrashedJobListener, failovering branch: the instance that was
// executing an item by failover dies; the item is queued again.
func TestCrashDuringFailover(t *testing.T) {
	cl := newEmbeddedCluster(t)
	a := cl.start("192.168.1.1", 100, failoverConfig(4))
	b := cl.start("192.168.1.2", 200, failoverConfig(4))
	cl.waitNecessary()
	runAll(t, a, b)
	a.autorun(t)
	// b was executing a's item 3 by failover.
	cl.persist(jp("sharding", "3", "failovering"), b.id)
	cl.persist(jp("sharding", "3", "running"), b.id)
	b.stop()
	testkit.Eventually(t, waitFor, "item 3 re-run by a", func() bool { return a.ranItem(3) })
	testkit.Eventually(t, waitFor, "failover state cleaned", func() bool {
		_, f1 := cl.get(jp("sharding", "3", "failovering"))
		_, f2 := cl.get(jp("sharding", "3", "running"))
		return !f1 && !f2
	})
}
