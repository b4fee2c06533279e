package coord

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ejob-io/ejob/core/config"
	"github.com/ejob-io/ejob/core/node"
	"github.com/ejob-io/ejob/core/reg"
	"github.com/ejob-io/ejob/core/reg/embedded"
)

// aloneClient is a client of an embedded registry of its own, closed at
// the end of the test.
func aloneClient(t *testing.T) reg.Client {
	t.Helper()
	c, err := embedded.NewServer().Connect("ns")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// aloneBase is the jobBase of a job's owner tested alone on client c:
// job p, instance id on server 10.0.0.1, polls of 10 ms, hooks h.
func aloneBase(c reg.Client, p node.Job, id string, h Hooks) *jobBase {
	b := &jobBase{s: store{c: c, p: p}, id: id, ip: "10.0.0.1", log: hclog.NewNullLogger(), poll: 10 * time.Millisecond, hooks: h}
	b.paths.b = b
	return b
}

// aloneFailover is a failover protocol on its own registry, with what it
// reports recorded. The owners it reads are real ones: a fixed config,
// the servers and instances it reads in the registry (servers 10.0.0.1
// to 10.0.0.3 ENABLED), and the pause, run flag and shutdown the test
// sets.
type aloneFailover struct {
	f        *failover
	c        reg.Client
	p        node.Job
	claimed  []int
	triggers int
}

func newAloneFailover(t *testing.T, id string) *aloneFailover {
	t.Helper()
	c := aloneClient(t)
	p := node.New("job")
	cfg := config.New("job", 4)
	cfg.Failover = true
	a := &aloneFailover{c: c, p: p}
	b := aloneBase(c, p, id, &funcHooks{failedOver: func(i int) { a.claimed = append(a.claimed, i) }, trigger: func() { a.triggers++ }})
	j := &Job{}
	b.job = j
	j.conf = configState{jobBase: b}
	j.conf.cur.Store(cfg)
	j.rg = registration{jobBase: b}
	j.ldr = leadership{jobBase: b}
	j.asg = assignment{jobBase: b}
	d := &failoverDeps{jobBase: b}
	a.f = &failover{failoverDeps: d}
	for _, ip := range []string{"10.0.0.1", "10.0.0.2", "10.0.0.3"} {
		a.put(t, p.Server(ip), node.ServerEnabled)
	}
	return a
}

// instance puts the instance node of id, on the server of its id's IP.
func (a *aloneFailover) instance(t *testing.T, id string) {
	t.Helper()
	a.put(t, a.p.Instance(id), string(node.InstanceValue(id, ipPrefix(id))))
}

func (a *aloneFailover) put(t *testing.T, path, v string) {
	t.Helper()
	if _, err := reg.Persist(context.Background(), a.c, path, []byte(v)); err != nil {
		t.Fatal(err)
	}
}

func (a *aloneFailover) get(t *testing.T, path string) (string, bool) {
	t.Helper()
	v, ok, err := a.f.s.get(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	return v, ok
}

// failoverIfNecessary claims one queued item per call, in the order of
// the queue's names (descending, as upstream), only while this instance is
// idle, registered and not shutting down; the claim is the failover and
// failovering nodes naming this instance and the queue entry gone, it is
// remembered, reported and asks the scheduler to run.
func TestFailoverClaimAlone(t *testing.T) {
	const me = "10.0.0.1@-@1"
	a := newAloneFailover(t, me)
	ctx := context.Background()
	if err := a.f.failoverIfNecessary(ctx); err != nil || a.triggers != 0 {
		t.Fatalf("without a queue: err %v, %d triggers", err, a.triggers)
	}
	a.put(t, a.p.FailoverItem(2), "")
	a.put(t, a.p.FailoverItem(3), "")
	for _, set := range []func(bool){a.f.job.rg.setPaused, a.f.job.att.running.Store, a.f.job.life.shutdown.Store} {
		set(true)
		if err := a.f.failoverIfNecessary(ctx); err != nil {
			t.Fatal(err)
		}
		set(false)
		if a.triggers != 0 || a.f.hasClaims() {
			t.Fatal("claimed while paused, running or shutting down")
		}
	}
	for n, want := range []int{3, 2} {
		if err := a.f.failoverIfNecessary(ctx); err != nil {
			t.Fatal(err)
		}
		if a.triggers != n+1 || !slices.Equal(a.claimed, []int{3, 2}[:n+1]) || !a.f.claimed(want) {
			t.Fatalf("after claim %d: %d triggers, reported %v, claimed(%d) %v", n+1, a.triggers, a.claimed, want, a.f.claimed(want))
		}
		if v, _ := a.get(t, a.p.Failover(want)); v != me {
			t.Fatalf("failover node of %d = %q, want %q", want, v, me)
		}
		if v, _ := a.get(t, a.p.Failovering(want)); v != me {
			t.Fatalf("failovering node of %d = %q, want %q", want, v, me)
		}
		if _, ok := a.get(t, a.p.FailoverItem(want)); ok {
			t.Fatalf("item %d still queued", want)
		}
	}
	if err := a.f.failoverIfNecessary(ctx); err != nil || a.triggers != 2 {
		t.Fatalf("with the queue empty: err %v, %d triggers", err, a.triggers)
	}
}

// An instance's crash queues the items it was running and, being idle,
// this instance claims one; an instance whose node is back keeps its
// items, and the misfire flag of a gone owner's idle item is handed over
// with the queue. The crash handler checks the instance node first because
// a live instance's node can vanish and come back: a crash handler that
// trusted the deletion event failed over the item of an instance that had
// re-registered after a ZooKeeper restart and was still running it (the
// chaos suite's exclusion check, short form, seed 2: one item ran twice
// for 3.2 s).
func TestFailoverCrashAlone(t *testing.T) {
	const me, back, gone = "10.0.0.1@-@1", "10.0.0.2@-@2", "10.0.0.3@-@3"
	a := newAloneFailover(t, me)
	ctx := context.Background()
	a.instance(t, me)
	a.instance(t, back)
	a.put(t, a.p.ShardingInstance(0), back)
	a.put(t, a.p.Running(0), back)
	a.put(t, a.p.ShardingInstance(1), gone)
	a.put(t, a.p.Running(1), gone)
	a.put(t, a.p.ShardingInstance(2), gone)
	a.put(t, a.p.Misfire(2), "")
	if err := a.f.onInstanceCrashed(ctx, back); err != nil {
		t.Fatal(err)
	}
	if v, _ := a.get(t, a.p.Running(0)); v != back || a.triggers != 0 {
		t.Fatal("a live instance's item was failed over")
	}
	a.f.job.att.running.Store(true) // the claim waits for the end of this execution
	if err := a.f.onInstanceCrashed(ctx, gone); err != nil {
		t.Fatal(err)
	}
	if _, ok := a.get(t, a.p.Running(1)); ok {
		t.Fatal("the gone instance's running node is left")
	}
	if _, ok := a.get(t, a.p.Misfire(2)); ok {
		t.Fatal("the gone owner's misfire flag is left")
	}
	for _, i := range []int{1, 2} {
		if _, ok := a.get(t, a.p.FailoverItem(i)); !ok {
			t.Fatalf("item %d not queued", i)
		}
	}
	if a.triggers != 0 {
		t.Fatal("claimed during an execution")
	}
	a.f.job.att.running.Store(false)
	if err := a.f.failoverIfNecessary(ctx); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(a.claimed, []int{2}) || a.triggers != 1 {
		t.Fatalf("claimed %v with %d triggers, want [2] and 1", a.claimed, a.triggers)
	}
}

// The legacy listener: this instance alone queues the items vanished
// instances left running or in failover, and claims one (the claim names
// this instance in the item's failovering node).
func TestFailoverLegacyAlone(t *testing.T) {
	const me, ghost = "10.0.0.1@-@1", "10.0.0.9@-@9"
	a := newAloneFailover(t, me)
	ctx := context.Background()
	a.instance(t, me)
	a.instance(t, "10.0.0.2@-@2")
	a.put(t, a.p.Running(0), ghost)
	a.put(t, a.p.Failovering(1), ghost)
	a.put(t, a.p.Running(3), me)
	if err := a.f.onOwnInstanceAdded(ctx); err != nil {
		t.Fatal(err)
	}
	if _, ok := a.get(t, a.p.Running(0)); !ok {
		t.Fatal("acted while another instance is available")
	}
	if err := a.c.Delete(ctx, a.p.Instance("10.0.0.2@-@2"), reg.AnyVersion); err != nil {
		t.Fatal(err)
	}
	if err := a.f.onOwnInstanceAdded(ctx); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{a.p.Running(0), a.p.Failovering(1)} {
		if v, _ := a.get(t, path); v == ghost {
			t.Fatalf("%s still names the vanished instance", path)
		}
	}
	if v, _ := a.get(t, a.p.Running(3)); v != me {
		t.Fatal("this instance's own running node was touched")
	}
	if !slices.Equal(a.claimed, []int{1}) || a.triggers != 1 {
		t.Fatalf("claimed %v with %d triggers, want [1] and 1", a.claimed, a.triggers)
	}
	if _, ok := a.get(t, a.p.FailoverItem(0)); !ok {
		t.Fatal("item 0 not queued")
	}
}
