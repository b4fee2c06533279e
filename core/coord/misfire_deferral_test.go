package coord_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/ejob-io/ejob/core/executor"
	"github.com/ejob-io/ejob/internal/testkit"
)

// An instance that owns no item yet, while a resharding is pending, runs
// a failover execution through a fire of the schedule, and the resharding
// then gives it the item that execution ran: the item runs again right
// after the commit, for the fire missed during the run. Here a (the
// leader), b and d own one item each of 3; a and b are busy with theirs,
// d dies, and c joins, so a resharding is pending until a's next
// execution. c's fire of the schedule waits for it, claims d's item 0
// (queued for failover) meanwhile and runs it instead: that fire owes
// item 0 nothing. While item 0 runs, the next fire of the schedule comes
// and is skipped; the misfire loop waits for the pending resharding. a's
// run ends, a reshards and gives item 0 to c, and c runs it. (Chaos seed
// 7: the first fire's exemption of the claimed item covered the skipped
// fire too, and the gained item waited 7.7 s for a later fire.) The whole
// executor runs on c (core/executor).
func scenarioFailoverRunThroughFireGainsItem(t *testing.T, cl *cluster) {
	a := cl.start("192.168.1.1", 100, failoverConfig(3)) // the leader
	b := cl.start("192.168.1.2", 200, failoverConfig(3))
	d := cl.start("192.168.1.3", 400, failoverConfig(3))
	cl.waitNecessary()
	runAll(t, a, b, d)
	expectAssign(t, cl, 3, map[string][]int{d.id: {0}, b.id: {1}, a.id: {2}})
	releaseA, doneA := startHeldRun(t, cl, a, []int{2})
	releaseB, doneB := startHeldRun(t, cl, b, []int{1})
	defer func() {
		releaseA()
		releaseB()
	}()
	_ = d.c.Close() // d dies, its item 0 not running
	d.cancel()
	c := cl.start("192.168.1.9", 300, failoverConfig(3)) // first in the instances' order
	cl.waitNecessary()

	fire := &skippingFire{}
	var (
		mu  sync.Mutex
		ran []int
	)
	exec := itemExecutor(t, c.id, c.job, func(item int) {
		mu.Lock()
		ran = append(ran, item)
		mu.Unlock()
		if item == 0 {
			fire.skip() // the next fire of the schedule, while item 0 runs
		}
	})
	done := make(chan error, 1)
	go func() { done <- exec.Execute(ctxT(t), executor.NormalTrigger, fire) }()
	cl.persist(jp("leader", "failover", "items", "0"), "") // d's item, queued for failover
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("c's execution: %v", err)
		}
	case <-time.After(waitFor):
		t.Fatal("c's execution still waits for the resharding though it claimed item 0")
	}
	mu.Lock()
	if !equalInts(ran, []int{0}) {
		t.Fatalf("c's execution ran %v; want the claimed item [0]", ran)
	}
	mu.Unlock()
	if fire.skipped() != 1 {
		t.Fatal("no fire was skipped during the run; the test shows nothing")
	}
	if _, ok := cl.get(jp("leader", "sharding", "necessary")); !ok {
		t.Fatal("the resharding was done meanwhile; the test shows nothing")
	}
	for len(c.triggers) > 0 { // the claim's trigger, served above
		<-c.triggers
	}
	c.autorun(t)
	releaseA()
	releaseB()
	for _, done := range []<-chan error{doneA, doneB} {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	if _, err := a.run(ctxT(t)); err != nil { // the leader reshards
		t.Fatal(err)
	}
	expectAssign(t, cl, 3, map[string][]int{c.id: {0}, b.id: {1}, a.id: {2}})
	testkit.Eventually(t, waitFor, "c ran item 0, which the resharding gave it, for the fire skipped while it ran item 0 for failover", func() bool {
		return countRuns(c, 0) > 0
	})
}

// skippingFire is a fire of the job's schedule during whose execution the
// trigger loop skips a fire each time skip is called: TakeMissed counts
// it, and the execution's OnSkip callback is told, as core/trigger's Fire
// does.
type skippingFire struct {
	mu     sync.Mutex
	fn     func()
	missed int
	total  int
}

func (*skippingFire) Scheduled() time.Time                { return time.Now() }
func (*skippingFire) Manual() bool                        { return false }
func (*skippingFire) Ahead() bool                         { return false }
func (*skippingFire) AwaitScheduled(context.Context) bool { return true }

func (f *skippingFire) OnSkip(fn func()) (stop func()) {
	f.mu.Lock()
	f.fn = fn
	f.mu.Unlock()
	return func() {
		f.mu.Lock()
		f.fn = nil
		f.mu.Unlock()
	}
}

func (f *skippingFire) TakeMissed(bool) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := f.missed
	f.missed = 0
	return n
}

// skip is a fire of the schedule that comes due and is skipped; the
// execution's callback records it before skip returns.
func (f *skippingFire) skip() {
	f.mu.Lock()
	f.missed++
	f.total++
	fn := f.fn
	f.mu.Unlock()
	if fn != nil {
		fn()
	}
}

// skipped counts the fires skipped so far.
func (f *skippingFire) skipped() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.total
}
