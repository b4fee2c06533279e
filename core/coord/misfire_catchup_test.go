package coord_test

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/ejob-io/ejob/core/coord"
	"github.com/ejob-io/ejob/core/executor"
	"github.com/ejob-io/ejob/core/reg"
	"github.com/ejob-io/ejob/internal/testkit"
	"github.com/ejob-io/ejob/spi"
)

// An instance that holds claimed failover items when its run ends runs
// them before its own items' catch-up: the catch-up (and every one after
// it, when long items keep missing fires) would hold a cut-off item's
// re-run back (chaos seed 3: two claimed items waited 10.6 s behind a
// chain of catch-ups of 3.5 s items fired every 4 s). The flags stay, and
// the own items run right after the claimed one.
func scenarioClaimedItemRunsBeforeCatchUp(t *testing.T, cl *cluster) {
	a, b := twoSharded(t, cl)
	a.autorun(t)
	release, done := startHeldRun(t, cl, b, []int{0, 1})
	defer release()
	// A fire found b's items running, and b claimed a's item 2 meanwhile.
	cl.persist(jp("sharding", "0", "misfire"), "")
	cl.persist(jp("sharding", "1", "misfire"), "")
	cl.persist(jp("sharding", "2", "failover"), b.id)
	cl.persist(jp("sharding", "2", "failovering"), b.id)
	cl.sync()
	before := countRuns(b, 0)
	release()
	if err := <-done; err != nil {
		t.Fatalf("b's run: %v", err)
	}
	if got := countRuns(b, 0) - before; got != 1 {
		t.Fatalf("b ran item 0 %d times before its claimed item; want once (the catch-up waits)", got)
	}
	for _, i := range []string{"0", "1"} {
		if _, ok := cl.get(jp("sharding", i, "misfire")); !ok {
			t.Fatalf("the misfire flag of item %s was cleared before the claimed item ran", i)
		}
	}
	b.autorun(t)
	testkit.Eventually(t, waitFor, "b ran the claimed item, then the catch-up of items 0 and 1", func() bool {
		return countRuns(b, 2) > 0 && countRuns(b, 0) > before+1 && countRuns(b, 1) > before+1
	})
	runs := b.runs()
	claimed := slices.IndexFunc(runs, func(r []int) bool { return slices.Contains(r, 2) })
	catchUp := slices.IndexFunc(runs[claimed+1:], func(r []int) bool { return slices.Contains(r, 0) })
	if catchUp < 0 {
		t.Errorf("b's runs %v: the catch-up of item 0 did not follow the claimed item", runs)
	}
}

// An instance that runs another instance's item for failover catches that
// item up after each run for the fires its owner missed meanwhile (the
// owner flags them, as upstream's misfire loop does), and a long item that
// misses a fire in every run keeps such a chain going. The instance's own
// items whose missed fires wait run in the chain's first catch-up run, not
// after the chain: otherwise an own item waits behind back-to-back runs of
// the claimed item for as long as its owner keeps flagging it (20 s in an
// ensemble chaos run with seed 1795844410342395729, five catch-ups of a
// 3.5 s item fired every 4 s). Here b runs
// a's item 2 for failover; during each of its first three runs a's fire
// flags item 2, and during the first b's fire flags b's own item 0. The
// whole executor runs (core/executor).
func scenarioOwnCatchUpJoinsFailoverChain(t *testing.T, cl *cluster) {
	_, b := claimedByB(t, cl)
	var (
		mu    sync.Mutex
		seq   []int // the items, in the order their runs started
		runs2 int
		errs  []error
		flag  = func(i int) {
			if _, err := reg.Persist(context.Background(), cl.admin, jp("sharding", strconv.Itoa(i), "misfire"), nil); err != nil {
				errs = append(errs, err)
			}
		}
	)
	exec := itemExecutor(t, b.id, b.job, func(item int) {
		mu.Lock()
		defer mu.Unlock()
		seq = append(seq, item)
		if item != 2 {
			return
		}
		if runs2++; runs2 <= 3 {
			flag(2) // a's fire, a busy elsewhere: the run here serves it
		}
		if runs2 == 1 {
			flag(0) // b's own fire, skipped while it runs item 2
		}
	})
	// The claim's trigger: item 2, then its catch-ups.
	if err := exec.Execute(ctxT(t), executor.NormalTrigger, oneFire{}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if runs2 != 4 {
		t.Fatalf("item 2 ran %d times in b's execution (%v); want 4 (its run and a catch-up of each of a's three fires)", runs2, seq)
	}
	first0 := slices.Index(seq, 0)
	if first0 < 0 {
		t.Fatalf("b's execution ran %v: its own item 0, flagged during the first run, waited behind every catch-up of item 2", seq)
	}
	// Before it: item 2's run, and the first catch-up's item 2 (the items
	// of one run may start in any order).
	if n := countOf(seq[:first0], 2); n > 2 {
		t.Errorf("b's execution ran %v: item 0 ran after %d runs of item 2, not in the first catch-up run", seq, n)
	}
	if _, ok := cl.get(jp("sharding", "0", "misfire")); ok {
		t.Error("the misfire flag of item 0 is left after its catch-up")
	}
}

// countOf counts v in s.
func countOf(s []int, v int) int {
	n := 0
	for _, x := range s {
		if x == v {
			n++
		}
	}
	return n
}

// A catch-up run that joined own items (scenarioOwnCatchUpJoinsFailoverChain)
// and then cannot begin, because the failover item's owner started that
// item as the chain paused, leaves the joined items' flags set: the loop
// had cleared them, and they did not run.
func scenarioJoinedCatchUpKeepsFlagsWhenItDoesNotBegin(t *testing.T, cl *cluster) {
	a, b := claimedByB(t, cl)
	p := &persister{cl: cl}
	f := &ownerStartsInGap{Job: b.job, start: func() { p.persist(jp("sharding", "2", "running"), a.id) }}
	exec := itemExecutor(t, b.id, f, func(int) {
		p.persist(jp("sharding", "2", "misfire"), "") // a's fire
		p.persist(jp("sharding", "0", "misfire"), "") // b's own fire, skipped
	})
	err := exec.Execute(ctxT(t), executor.NormalTrigger, oneFire{})
	if !errors.Is(err, coord.ErrItemRunning) {
		t.Fatalf("the catch-up run began (%v); want it to meet a's run of item 2", err)
	}
	p.check(t)
	if !f.joined {
		t.Fatal("the catch-up run did not join item 0; the test shows nothing")
	}
	if _, ok := cl.get(jp("sharding", "0", "misfire")); !ok {
		t.Error("the flag of item 0, joined to a catch-up run that did not begin, is lost")
	}
}

// A catch-up run that joined an own item that turns out to run elsewhere
// (the cache showed it idle) cannot begin; the execution's own items, whose
// flags the loop had cleared, then run alone, and the joined item keeps its
// flag. Without that the run's item lost its catch-up: in a standalone chaos
// run with seed 40401 a catch-up of item 0 joined item 3, which was running
// on another instance, and the fire of item 0 never ran. Here b runs a's
// item 2 for failover; its run flags item 2 (a's fire) and b's own item 0,
// and item 0 starts on a just as the loop clears the flags of the catch-up
// run of items 0 and 2.
func scenarioJoinedItemRunningElsewhereCatchesUp(t *testing.T, cl *cluster) {
	a, b := claimedByB(t, cl)
	var runs2 atomic.Int32
	p := &persister{cl: cl}
	f := &ownerStartsInGap{Job: b.job, start: func() { p.persist(jp("sharding", "0", "running"), a.id) }}
	exec := itemExecutor(t, b.id, f, func(item int) {
		if item == 2 && runs2.Add(1) == 1 {
			p.persist(jp("sharding", "2", "misfire"), "") // a's fire
			p.persist(jp("sharding", "0", "misfire"), "") // b's own fire, skipped
		}
	})
	if err := exec.Execute(ctxT(t), executor.NormalTrigger, oneFire{}); err != nil {
		t.Fatalf("b's execution: %v; want item 2's catch-up to run without the joined item", err)
	}
	p.check(t)
	if !f.joined {
		t.Fatal("the catch-up run did not join item 0; the test shows nothing")
	}
	if n := runs2.Load(); n != 2 {
		t.Errorf("item 2 ran %d times; want 2 (its run and the catch-up of a's fire, without the joined item)", n)
	}
	if _, ok := cl.get(jp("sharding", "2", "misfire")); ok {
		t.Error("the misfire flag of item 2 is left after its catch-up")
	}
	if _, ok := cl.get(jp("sharding", "0", "misfire")); !ok {
		t.Error("the flag of item 0, joined to a catch-up run that did not begin, is lost")
	}
}

// persister persists nodes with the cluster's admin client, from any
// goroutine, and keeps the errors for check.
type persister struct {
	cl   *cluster
	mu   sync.Mutex
	errs []error
}

func (p *persister) persist(path, value string) {
	if _, err := reg.Persist(context.Background(), p.cl.admin, path, []byte(value)); err != nil {
		p.mu.Lock()
		defer p.mu.Unlock()
		p.errs = append(p.errs, err)
	}
}

// check fails t with the errors of persist so far.
func (p *persister) check(t *testing.T) {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.errs) > 0 {
		t.Fatal(p.errs)
	}
}

// ownerStartsInGap is b's Facade where the owner of the failover item
// starts it (start) just after the misfire loop cleared the flags of a
// catch-up run that joined own items.
type ownerStartsInGap struct {
	*coord.Job
	start  func()
	joined bool
}

func (f *ownerStartsInGap) ClearMisfire(ctx context.Context, items []int) error {
	err := f.Job.ClearMisfire(ctx, items)
	if !f.joined && slices.Contains(items, 0) && slices.Contains(items, 2) {
		f.joined = true
		f.start()
	}
	return err
}

// claimedByB is twoSharded with a's item 2 claimed by b for failover (as
// after a cut-off run of a), its claim's trigger not run yet.
func claimedByB(t *testing.T, cl *cluster) (a, b *instance) {
	t.Helper()
	a, b = twoSharded(t, cl)
	cl.persist(jp("sharding", "2", "failover"), b.id)
	cl.persist(jp("sharding", "2", "failovering"), b.id)
	cl.sync()
	return a, b
}

// itemExecutor is the whole executor of the test job on instance id with
// facade f, whose items call run.
func itemExecutor(t *testing.T, id string, f executor.Facade, run func(item int)) *executor.Executor {
	t.Helper()
	exec, err := executor.New(testJob, executor.Options{
		InstanceID: id, Facade: f, Logger: testLogger(t, "executor"),
		Runner: executor.SimpleFunc(func(_ context.Context, sc spi.ShardingContext) error {
			run(sc.ShardingItem)
			return nil
		}),
	})
	if err != nil {
		t.Fatal(err)
	}
	return exec
}
