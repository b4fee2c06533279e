package coord_test

import (
	"context"
	"github.com/ejob-io/ejob/internal/testkit"
	"testing"
)

// A scheduler that drops an OnTrigger arriving while the job is still
// executing (core/kernel's own starts it right after the execution: its
// TestClaimDuringAnExecutionRunsRightAfterIt), and a failover enquiry at
// the end of an execution (executor step 8) that claims an item and
// triggers from inside that very execution: the claimed item still runs
// soon, not only at the claimer's next cron fire, because the pump asks
// again. Without the pump a cut-off item restarts only ~15 s later (chaos
// seed 1795262795368076946).
func TestClaimedFailoverItemRunsAfterDroppedTrigger(t *testing.T) {
	cl, a, b, releaseB, _ := twoRunning(t) // b runs [0,1]
	defer releaseB()
	a.dropBusy.Store(true)
	a.autorun(t)
	releaseA, doneA := startHeldRun(t, cl, a, []int{2, 3}) // a busy too
	defer releaseA()
	stopped := make(chan struct{})
	go func() { b.stop(); close(stopped) }()
	testkit.Eventually(t, waitFor, "b shutting down", b.job.ShuttingDown)
	releaseB()
	<-stopped
	// b's items are queued; a, busy, cannot claim them yet.
	testkit.Eventually(t, waitFor, "b's items queued for failover", func() bool {
		names, _ := cl.admin.Children(context.Background(), jp("leader", "failover", "items"))
		return len(names) == 2
	})
	releaseA()
	if err := <-doneA; err != nil {
		t.Fatalf("a's run: %v", err)
	}
	// a's enquiry claimed one item; its trigger was dropped (a was still
	// in its run). No cron fire comes in this test.
	testkit.Eventually(t, waitFor, "items 0 and 1 failed over to a", func() bool { return a.ranItem(0) && a.ranItem(1) })
}

// An execution cut off by a presumed expiry that outlives the instance's
// re-registration (its script takes long to stop) queues its items for
// failover only when it finally ends, and returns an error, so no enquiry
// follows it. Idle instances (the other one, and the instance itself) must
// still claim and re-run the items promptly (chaos seed
// 1795262795368076946, zk-outage-long: never re-run before the end).
func TestCutOffItemsQueuedAfterReRegistrationAreClaimed(t *testing.T) {
	cl, a, b, items := presumedExpiryPair(t)
	b.stubborn.Store(true)
	release, done := startHeldRun(t, cl, b, items)
	defer release()
	a.autorun(t)
	b.autorun(t)
	suspender(b).Suspend()
	testkit.Eventually(t, waitFor, "b's lease cut (presumed expiry)", func() bool {
		ctx, cancel := b.job.SessionContext(context.Background())
		defer cancel()
		return ctx.Err() != nil
	})
	suspender(b).Resume()
	testkit.Eventually(t, waitFor, "b resumed in the same session", func() bool { p, _ := b.job.Paused(); return !p })
	cl.sync()
	// Counted before the release: once the cut-off execution has queued
	// its items, an idle instance may claim and re-run them before this
	// goroutine reads done (it did under load, so counting afterwards
	// missed the re-run). The harness records the cut-off execution
	// itself as a run when it is released, hence +2.
	before := map[int]int{}
	for _, i := range items {
		before[i] = countRuns(a, i) + countRuns(b, i)
	}
	release() // the cut-off execution ends only now
	if err := <-done; err == nil {
		t.Fatal("cut-off execution completed without error")
	}
	testkit.Eventually(t, waitFor, "cut-off items re-run", func() bool {
		for _, i := range items {
			if countRuns(a, i)+countRuns(b, i) < before[i]+2 {
				return false
			}
		}
		return true
	})
}

// A fire that comes while this instance runs failover items sets the
// misfire flags of its own items, but that execution's catch-up re-runs
// only the failover items (upstream semantics). The own items run right
// after it, not at the next fire: an instance killed before its next fire
// would lose that fire (the chaos suite's ensemble run with seed 42 sees
// it as a coverage violation).
func TestOwnItemsMisfiredDuringFailoverRunRunAfterIt(t *testing.T) {
	cl, a, b, releaseB, _ := twoRunning(t) // b runs [0,1]; a owns [2,3]
	defer releaseB()
	stopped := make(chan struct{})
	go func() { b.stop(); close(stopped) }()
	testkit.Eventually(t, waitFor, "b shutting down", b.job.ShuttingDown)
	releaseB()
	<-stopped
	testkit.Eventually(t, waitFor, "a claimed b's items", func() bool {
		v0, _ := cl.get(jp("sharding", "0", "failover"))
		v1, _ := cl.get(jp("sharding", "1", "failover"))
		return v0 == a.id && v1 == a.id
	})
	// The first claim's trigger starts the failover execution; the trigger
	// loop drops the others while it runs.
	releaseA, doneA := startHeldRun(t, cl, a, []int{0, 1})
	defer releaseA()
	for len(a.triggers) > 0 {
		<-a.triggers
	}
	a.dropBusy.Store(true)
	a.autorun(t)
	before2, before3 := countRuns(a, 2), countRuns(a, 3)
	// A fire of a's own items arrives while it runs the failover items.
	if err := a.job.SetMisfire(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	releaseA()
	if err := <-doneA; err != nil {
		t.Fatalf("a's failover execution: %v", err)
	}
	testkit.Eventually(t, waitFor, "a's own items run after the failover execution", func() bool {
		return countRuns(a, 2) > before2 && countRuns(a, 3) > before3
	})
	for _, i := range []string{"2", "3"} {
		if _, ok := cl.get(jp("sharding", i, "misfire")); ok {
			t.Errorf("misfire flag of item %s still set after its catch-up run", i)
		}
	}
}
