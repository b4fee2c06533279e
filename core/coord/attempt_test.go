package coord

import (
	"context"
	"errors"
	"testing"

	"github.com/ejob-io/ejob/core/config"
	"github.com/ejob-io/ejob/core/node"
	"github.com/ejob-io/ejob/core/reg"
)

func aloneAttemptConfig() *config.JobConfiguration { return config.New("job", 4) }

// aloneAttempts is a job's attempts on their own registry, with this
// instance registered (its instance node is the begin's fence).
type aloneAttempts struct {
	t     *attempts
	c     reg.Client
	p     node.Job
	paths *jobPaths
	lease *lease
}

func newAloneAttempts(t *testing.T) *aloneAttempts {
	t.Helper()
	c := aloneClient(t)
	p := node.New("job")
	b := aloneBase(c, p, "10.0.0.1@-@1", nil)
	a := &aloneAttempts{c: c, p: p, paths: &b.paths}
	ctx := context.Background()
	for _, path := range []string{p.Instances(), reg.Parent(p.ShardingNecessary()), p.ShardingItem(0), p.ShardingItem(1), p.ShardingItem(2), p.ShardingItem(3)} {
		if _, err := reg.Persist(ctx, c, path, nil); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Create(ctx, p.Instance(a.paths.b.id), nil, reg.Ephemeral); err != nil {
		t.Fatal(err)
	}
	// No tree cache loaded and no failover state made: what an undo
	// leaves to recovery shows in the failover slot's state. No event
	// loop runs: nothing arms its pump.
	b.job = &Job{}
	b.job.loop.pumpOff = true
	a.t = &attempts{jobBase: b, inProcess: true}
	a.lease = newLease(c.Session())
	return a
}

// running returns the value of item i's running node, or "" without one.
func (a *aloneAttempts) running(t *testing.T, i int) string {
	t.Helper()
	v, _, err := a.c.Get(context.Background(), a.p.Running(i))
	if errors.Is(err, reg.ErrNoNode) {
		return ""
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(v)
}

func (a *aloneAttempts) start(items ...int) *attempt {
	at := a.t.start(nil, a.c.Session(), a.lease)
	at.items = items
	return at
}

// TestAttemptBeginThenComplete: an attempt begun in RegisterBegin creates
// its items' running nodes and is the running execution's; completing it
// deletes them.
func TestAttemptBeginThenComplete(t *testing.T) {
	a := newAloneAttempts(t)
	ctx := context.Background()
	cfg := aloneAttemptConfig()
	if err := a.start(0, 2).begin(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	if a.running(t, 0) != a.paths.b.id || a.running(t, 2) != a.paths.b.id || a.running(t, 1) != "" {
		t.Fatalf("running nodes after begin: %q %q %q", a.running(t, 0), a.running(t, 1), a.running(t, 2))
	}
	if !a.t.running.Load() {
		t.Fatal("run flag off after begin")
	}
	cur := a.t.finish()
	if cur == nil {
		t.Fatal("no running attempt after begin")
	}
	if _, cut := cur.cutOff(a.c.Session()); cut {
		t.Fatal("a live attempt reported cut off")
	}
	if err := cur.complete(ctx, cur.items, cfg); err != nil {
		t.Fatal(err)
	}
	a.t.done()
	if a.running(t, 0) != "" || a.running(t, 2) != "" {
		t.Fatal("running nodes left after complete")
	}
	if a.t.running.Load() {
		t.Fatal("run flag on after done")
	}
}

// TestAttemptBeginOnAnItemRunningElsewhere: the running-node transaction
// writes nothing when one item runs on another instance.
func TestAttemptBeginOnAnItemRunningElsewhere(t *testing.T) {
	a := newAloneAttempts(t)
	ctx := context.Background()
	if _, err := a.c.Create(ctx, a.p.Running(1), []byte("10.0.0.2@-@2"), reg.Ephemeral); err != nil {
		t.Fatal(err)
	}
	err := a.start(0, 1).begin(ctx, aloneAttemptConfig())
	if !errors.Is(err, ErrItemRunning) {
		t.Fatalf("begin = %v, want ErrItemRunning", err)
	}
	if a.running(t, 0) != "" || a.running(t, 1) != "10.0.0.2@-@2" {
		t.Fatalf("running nodes after a refused begin: %q %q", a.running(t, 0), a.running(t, 1))
	}
	if a.t.running.Load() || a.t.finish() != nil {
		t.Fatal("a refused begin counts as running")
	}
}

// TestAttemptBegunAheadIsAdoptedOrUndone: an attempt begun with the
// resharding check is kept when the check confirms it, and then adopted
// by the RegisterBegin of its items under its lease; the RegisterBegin of
// other items undoes it; an unconfirmed one is undone at once.
func TestAttemptBegunAheadIsAdoptedOrUndone(t *testing.T) {
	a := newAloneAttempts(t)
	ctx := context.Background()
	cfg := aloneAttemptConfig()
	fence := reg.CheckOp(a.p.Instance(a.paths.b.id), 0)
	settled := func(int64) bool { return true }

	at := a.start(0, 1)
	kept, _, err := at.beginChecked(ctx, cfg, fence, settled)
	if err != nil || !kept {
		t.Fatalf("beginChecked = %v, %v; want kept", kept, err)
	}
	if !a.t.pendingFor([]int{0, 1}) || !a.t.confirm(a.lease, []int{0, 1}) || a.t.confirm(a.lease, []int{0}) {
		t.Fatal("the kept attempt is not the one pending")
	}
	if a.t.adopt(ctx, a.lease, []int{0, 1}) != at {
		t.Fatal("the RegisterBegin of its items did not adopt the attempt")
	}
	if len(at.czxids) != 2 || at.czxids[0] == 0 || at.czxids[0] != at.czxids[1] {
		t.Fatalf("czxids of the kept attempt = %v, want the transaction's zxid for both items", at.czxids)
	}
	if a.t.finish() != at || a.running(t, 0) != a.paths.b.id {
		t.Fatal("the adopted attempt is not the running execution's")
	}
	a.t.done()
	if err := at.undo(ctx); err != nil {
		t.Fatal(err)
	}

	if kept, _, err := a.start(2, 3).beginChecked(ctx, cfg, fence, settled); err != nil || !kept {
		t.Fatalf("beginChecked = %v, %v; want kept", kept, err)
	}
	if a.t.adopt(ctx, a.lease, []int{2}) != nil {
		t.Fatal("the RegisterBegin of other items adopted the attempt")
	}
	if a.running(t, 2) != "" || a.running(t, 3) != "" || a.t.running.Load() || a.t.pendingFor([]int{2, 3}) {
		t.Fatal("an attempt of other items was not undone")
	}

	unsettled := func(int64) bool { return false }
	if kept, _, err := a.start(0).beginChecked(ctx, cfg, fence, unsettled); err != nil || kept {
		t.Fatalf("unconfirmed beginChecked = %v, %v; want undone", kept, err)
	}
	if a.running(t, 0) != "" || a.t.running.Load() || a.t.job.fo.state().recovering() {
		t.Fatal("an unconfirmed attempt was not undone")
	}
}
