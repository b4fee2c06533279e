package coord_test

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ejob-io/ejob/core/config"
	"github.com/ejob-io/ejob/core/reg"
	"github.com/ejob-io/ejob/core/reg/regcount"
	"github.com/ejob-io/ejob/internal/testkit"
)

func failoverConfig(total int) *config.JobConfiguration {
	cfg := testConfig(total)
	cfg.Failover = true
	return cfg
}

// startHeldRun starts a run of in that blocks in execution, and waits
// until its running nodes exist.
func startHeldRun(t *testing.T, cl *cluster, in *instance, items []int) (release func(), done <-chan error) {
	release, _, done = startHeldRunCtx(t, cl, in, items)
	return release, done
}

// startHeldRunCtx also returns interrupt, which cancels the run's ctx.
func startHeldRunCtx(t *testing.T, cl *cluster, in *instance, items []int) (release, interrupt func(), done <-chan error) {
	t.Helper()
	release = in.setHold()
	held := in.holding.Load()
	ctx, interrupt := context.WithCancel(context.Background())
	t.Cleanup(interrupt)
	ch := make(chan error, 1)
	go func() {
		_, err := in.run(ctx)
		ch <- err
	}()
	testkit.Eventually(t, waitFor, in.id+" running nodes", func() bool {
		for _, i := range items {
			v, _ := cl.get(jp("sharding", strconv.Itoa(i), "running"))
			if v != in.id {
				return false
			}
		}
		return in.holding.Load() > held // the items started
	})
	return release, interrupt, ch
}

// twoRunning starts a and b with failover, shards 4 items (b=[0,1],
// a=[2,3]) and leaves b executing its items.
func twoRunning(t *testing.T) (cl *cluster, a, b *instance, interrupt func(), done <-chan error) {
	cl = newEmbeddedCluster(t)
	a = cl.start("192.168.1.1", 100, failoverConfig(4))
	b = cl.start("192.168.1.2", 200, failoverConfig(4))
	cl.waitNecessary()
	runAll(t, a, b)
	release, interrupt, done := startHeldRunCtx(t, cl, b, []int{0, 1})
	t.Cleanup(release)
	st, _ := cl.stat(jp("sharding", "0", "running"))
	if st.EphemeralOwner != 0 {
		t.Error("running node must be persistent with failover on")
	}
	return cl, a, b, interrupt, done
}

func checkFailedOver(t *testing.T, cl *cluster, a *instance, gone string) {
	t.Helper()
	testkit.Eventually(t, waitFor, "items 0 and 1 failed over to a", func() bool { return a.ranItem(0) && a.ranItem(1) })
	testkit.Eventually(t, waitFor, "failover nodes cleaned", func() bool {
		for i := 0; i < 4; i++ {
			for _, n := range []string{"failover", "failovering"} {
				if _, ok := cl.get(jp("sharding", strconv.Itoa(i), n)); ok {
					return false
				}
			}
		}
		names, _ := cl.admin.Children(context.Background(), jp("leader", "failover", "items"))
		return len(names) == 0
	})
	for i := 0; i < 4; i++ {
		if v, ok := cl.get(jp("sharding", strconv.Itoa(i), "running")); ok && v == gone {
			t.Errorf("running node of the departed instance left on item %d", i)
		}
	}
}

func TestFailoverOnCleanShutdown(t *testing.T) {
	cl, a, b, release, _ := twoRunning(t)
	defer release()
	a.autorun(t)
	stopped := make(chan struct{})
	go func() { b.stop(); close(stopped) }()
	// Shutdown interrupts the execution; the instance node goes after it.
	testkit.Eventually(t, waitFor, "b shutting down", b.job.ShuttingDown)
	if _, ok := cl.get(jp("instances", b.id)); !ok {
		t.Error("instance node deleted before the execution ended")
	}
	release()
	<-stopped
	checkFailedOver(t, cl, a, b.id)
	// The departed instance's items are resharded at the next run (which
	// may already have happened on a's second failover trigger).
	cl.sync()
	if items, err := a.run(ctxT(t)); err != nil || !equalInts(items, []int{0, 1, 2, 3}) {
		t.Errorf("run after failover = %v, %v", items, err)
	}
	expectAssign(t, cl, 4, map[string][]int{a.id: {0, 1, 2, 3}})
}

func TestFailoverOnLostSession(t *testing.T) {
	cl, a, b, release, done := twoRunning(t)
	defer release()
	b.autorun(t)
	if err := b.c.(reg.Expirer).Expire(context.Background()); err != nil {
		t.Fatal(err)
	}
	// a runs what it claims only now that b knows its session is gone
	// (Expire returns once b's client noticed; a's triggers queue until
	// then). A forced expiry ends the session on the server before b can
	// know; a real one comes only after the session timeout without
	// contact, and b's ExpiryMargin has cancelled its items by then
	// (TestPresumedExpiryCancelsBeforeServerExpiry). Started before, a's claimed run could
	// overtake b's reconnection under load and trip the harness's
	// exclusion invariant on a premise production never has.
	a.autorun(t)
	if err := <-done; err == nil {
		t.Error("b's cut-off execution completed without error")
	}
	// Someone (a, or b once re-registered) re-runs items 0 and 1.
	testkit.Eventually(t, waitFor, "items 0 and 1 re-run", func() bool {
		return (a.ranItem(0) || b.ranItem(0)) && (a.ranItem(1) || b.ranItem(1))
	})
	testkit.Eventually(t, waitFor, "b re-registered", func() bool {
		st, ok := cl.stat(jp("instances", b.id))
		return ok && st.EphemeralOwner == b.c.Session().ID()
	})
	// The instance node is written before b resumes (re-registration then
	// clears leftovers and elects), so resuming may follow a moment later.
	testkit.Eventually(t, waitFor, "b resumed after re-registration", func() bool { p, _ := b.job.Paused(); return !p })
	// b's return flags resharding; a run triggered by the failover claims
	// may already have consumed the flag, giving b its items back.
	testkit.Eventually(t, waitFor, "resharding flagged or done", func() bool {
		if _, ok := cl.get(jp("leader", "sharding", "necessary")); ok {
			return true
		}
		v, ok := cl.get(jp("sharding", "0", "instance"))
		return ok && string(v) == b.id
	})
	cl.sync()
	runAll(t, a, b)
	expectAssign(t, cl, 4, map[string][]int{b.id: {0, 1}, a.id: {2, 3}})
}

// The leader dies while it waits to reshard (items still running): the
// survivor becomes leader and reshards at its next run; the dead leader's
// processing flag is ephemeral and goes with it.
func TestLeaderLeavesDuringResharding(t *testing.T) {
	cl := newEmbeddedCluster(t)
	a := cl.start("192.168.1.1", 100, testConfig(4)) // leader
	b := cl.start("192.168.1.2", 200, testConfig(4))
	cl.waitNecessary()
	runAll(t, a, b)
	release, bdone := startHeldRun(t, cl, b, []int{0, 1})
	c := cl.start("192.168.1.3", 300, testConfig(4)) // join: flag set
	cl.waitNecessary()
	adone := make(chan error, 1)
	go func() { _, err := a.run(context.Background()); adone <- err }()
	// a is now waiting for b's items; simulate its processing flag too.
	if _, err := a.c.Create(context.Background(), jp("leader", "sharding", "processing"), nil, reg.Ephemeral); err != nil {
		t.Fatal(err)
	}
	a.cancel()
	_ = a.c.Close() // the leader crashes
	<-adone
	testkit.Eventually(t, waitFor, "new leader", func() bool {
		v, _ := cl.get(jp("leader", "election", "instance"))
		return v == b.id || v == c.id
	})
	if _, ok := cl.get(jp("leader", "sharding", "processing")); ok {
		t.Error("processing flag survived its leader")
	}
	release()
	if err := <-bdone; err != nil {
		t.Fatal(err)
	}
	cl.waitNecessary()
	runAll(t, b, c)
	expectAssign(t, cl, 4, map[string][]int{c.id: {0, 1}, b.id: {2, 3}})
}

// LegacyCrashedRunningItemListener: a whole-cluster restart leaves
// persistent running/failovering nodes; the first instance back re-runs
// them.
func TestLegacyCrashedRunningItems(t *testing.T) {
	cl := newEmbeddedCluster(t)
	data := mustMarshal(t, failoverConfig(3))
	cl.persist(jp(), testClass)
	cl.persist(jp("config"), data)
	for i := 0; i < 3; i++ {
		cl.persist(jp("sharding", strconv.Itoa(i), "instance"), "10.0.0.9@-@1")
	}
	cl.persist(jp("sharding", "0", "running"), "10.0.0.9@-@1")
	cl.persist(jp("sharding", "1", "failovering"), "10.0.0.8@-@1")
	cl.persist(jp("sharding", "1", "running"), "10.0.0.8@-@1")
	in := cl.startWith("192.168.1.1", 100, failoverConfig(3), nil, nil)
	in.autorun(t)
	testkit.Eventually(t, waitFor, "items 0 and 1 re-run", func() bool { return in.ranItem(0) && in.ranItem(1) })
	for _, p := range []string{jp("sharding", "0", "running"), jp("sharding", "1", "running"), jp("sharding", "1", "failovering")} {
		testkit.Eventually(t, waitFor, p+" removed", func() bool { _, ok := cl.get(p); return !ok })
	}
}

func TestFailoverOffWithoutRunningItems(t *testing.T) {
	// Items that were not running at crash time are not failed over;
	// they wait for resharding.
	cl := newEmbeddedCluster(t)
	a := cl.start("192.168.1.1", 100, failoverConfig(4))
	b := cl.start("192.168.1.2", 200, failoverConfig(4))
	cl.waitNecessary()
	runAll(t, a, b)
	b.stop()
	cl.sync()
	names, _ := cl.admin.Children(context.Background(), jp("leader", "failover", "items"))
	if len(names) != 0 {
		t.Errorf("idle items queued for failover: %v", names)
	}
	select {
	case <-a.triggers:
		t.Error("a triggered without failover work")
	default:
	}
}

// hookedClient calls hook (once) when the n-th listing of path starts.
type hookedClient struct {
	reg.Client
	path  string
	n     int32
	calls atomic.Int32
	once  sync.Once
	hook  func()
}

func (h *hookedClient) Children(ctx context.Context, path string) ([]string, error) {
	if path == h.path && h.calls.Add(1) == h.n {
		h.once.Do(h.hook)
	}
	return h.Client.Children(ctx, path)
}

// The legacy crashed-item listener (this instance's own registration, seen
// while it is the only available instance) fails over only items whose
// instance is gone when their node is read: an instance that registered
// after the check of the available instances, and runs its item, keeps it
// (its running node was deleted and the item run a second time at once:
// the flaky TestClaimDuringAnExecutionRunsRightAfterIt).
func TestLegacyListenerLeavesAnInstanceThatJustRegistered(t *testing.T) {
	cl := newEmbeddedCluster(t)
	const other = "192.168.1.2@-@200"
	cl.persist(jp("sharding", "0", "instance"), other)
	// The first listing of sharding/ is the startup sweep, the second the
	// listener's, after it found itself the only available instance:
	// there, the other instance registers and starts its item.
	c := &hookedClient{Client: cl.connect(t), path: jp("sharding"), n: 2, hook: func() {
		if _, err := cl.admin.Create(context.Background(), jp("instances", other),
			[]byte("jobInstanceId: "+other+"\nserverIp: 192.168.1.2\n"), reg.Ephemeral); err != nil {
			t.Error(err)
		}
		cl.persist(jp("sharding", "0", "running"), other)
	}}
	cl.startWith("192.168.1.1", 100, failoverConfig(1), c, nil)
	testkit.Eventually(t, waitFor, "the listener's listing", func() bool { return c.calls.Load() >= 2 })
	cl.sync()
	if v, _ := cl.get(jp("sharding", "0", "running")); v != other {
		t.Errorf("the running node of an instance that is alive was removed (now %q)", v)
	}
	if _, ok := cl.get(jp("leader", "failover", "items", "0")); ok {
		t.Error("the item of an instance that is alive was queued for failover")
	}
	if v, _ := cl.get(jp("sharding", "0", "failover")); v != "" {
		t.Errorf("the item of an instance that is alive was claimed by %q", v)
	}
}

// Every survivor handles an instance's crash, and the leader's sweep too.
// One that read "x was failing item k over" before another survivor
// claimed k must not queue k again once that claim deleted the queued
// item: a second instance would claim k and run it once more after the
// first (chaos seed 3: two claims of one item 13 ms apart; the second
// claimer's run met its own next fire, or was cut off by the next fault).
// Here a's claim waits until b's crash handling has read the failovering
// node, and b's goes on only once a has run k; once b has handled the
// crash, k's failover state is gone and b holds no claim.
func scenarioCrashDuringFailoverItemClaimedOnce(t *testing.T, cl *cluster) {
	const k = 2
	var (
		armed, read, claiming atomic.Bool
		released              = make(chan struct{})
		ran                   atomic.Int64 // a's runs of k before the crash
	)
	waitUntil := func(what string, cond func() bool) {
		for deadline := time.Now().Add(waitFor); !cond(); time.Sleep(fastPoll) {
			if time.Now().After(deadline) {
				t.Errorf("timed out waiting for %s", what)
				return
			}
		}
	}
	var a *instance
	latch := jp("leader", "failover", "latch")
	logA := &callLog{before: func(c regcount.Call) {
		if armed.Load() && c.Method == "Multi" && strings.HasPrefix(c.Path, latch) && claiming.CompareAndSwap(false, true) {
			waitUntil("b's crash handling to read the failovering node", read.Load)
		}
	}}
	failovering := jp("sharding", strconv.Itoa(k), "failovering")
	logB := &callLog{before: func(c regcount.Call) {
		switch {
		case !armed.Load() || c.Kind == regcount.Watch || c.Method == "MultiRead": // the tree cache's
			return
		case c.Method == "Get" && strings.HasSuffix(c.Path, "/failovering"):
			read.Store(read.Load() || c.Path == failovering)
			return
		case !read.Load() || !armed.CompareAndSwap(true, false):
			return
		}
		defer close(released)
		waitUntil("a to run the item", func() bool { return int64(countRuns(a, k)) > ran.Load() })
	}}
	a = startObserved(t, cl, "192.168.1.1", 100, logA) // the leader
	b := startObserved(t, cl, "192.168.1.2", 200, logB)
	x := cl.start("192.168.1.3", 300, failoverConfig(4))
	cl.waitNecessary()
	runAll(t, a, b, x)
	// x was executing item k by failover.
	cl.persist(failovering, x.id)
	cl.persist(jp("sharding", strconv.Itoa(k), "running"), x.id)
	cl.sync()
	ran.Store(int64(countRuns(a, k)))
	a.autorun(t)
	armed.Store(true)
	x.stop()
	select {
	case <-released:
	case <-time.After(2 * waitFor):
		t.Fatal("b's crash handling did not go on after reading the failovering node; the test shows nothing")
	}
	cl.sync() // b's event loop has handled the crash
	for _, n := range []string{"failover", "failovering", "running"} {
		if v, ok := cl.get(jp("sharding", strconv.Itoa(k), n)); ok {
			t.Errorf("sharding/%d/%s = %q after a ran the item", k, n, v)
		}
	}
	if _, ok := cl.get(jp("leader", "failover", "items", strconv.Itoa(k))); ok {
		t.Error("the item was queued again after a claimed and ran it")
	}
}

// startObserved starts an instance of failoverConfig(4) whose registry
// requests log observes, and waits until it is ready.
func startObserved(t *testing.T, cl *cluster, ip string, pid int, log *callLog) *instance {
	t.Helper()
	log.on.Store(true)
	in := cl.startAsync(ip, pid, failoverConfig(4), regcount.New(cl.connect(t), regcount.WithObserver(log.observe)))
	testkit.Eventually(t, waitFor, in.id+" ready", func() bool {
		select {
		case <-in.job.Ready():
			return true
		default:
			return false
		}
	})
	return in
}

// A survivor hands the misfire flag of a dead owner's item to failover
// only while the item is neither running nor claimed; one that read it so
// while another survivor had it queued from the crash's running node, and
// sent its transaction after that survivor's claim had taken the queued
// item, queued it a second time: a second instance claimed it and waited
// for the first one's run, and the item's next fire ran late (a standalone
// chaos run with seed 40401: item 3 queued twice 1 ms apart, its fire
// 1.9 s late). Here b dies with its item 0 flagged; a's crash handling
// reads item 0 neither running nor claimed, and another survivor claims
// it (as after queuing it from the crash's running node) before a's
// transaction. The item stays claimed once, by that survivor, and its flag
// stays for the claimer's misfire loop.
func scenarioMisfireOfClaimedItemQueuedOnce(t *testing.T, cl *cluster) {
	var (
		armed, hooked atomic.Bool
		other         = "192.168.1.9@-@900" // the survivor that claims
		misfire       = jp("sharding", "0", "misfire")
		queued        = jp("leader", "failover", "items", "0")
	)
	log := &callLog{before: func(c regcount.Call) {
		if c.Method != "Exists" || c.Path != misfire || !armed.CompareAndSwap(true, false) {
			return
		}
		ctx := context.Background()
		if _, err := cl.admin.Create(ctx, jp("instances", other),
			[]byte("jobInstanceId: "+other+"\nserverIp: 192.168.1.9\n"), reg.Ephemeral); err != nil {
			t.Error(err)
		}
		if _, err := cl.admin.Multi(ctx,
			reg.CreateOp(jp("sharding", "0", "failover"), []byte(other), reg.Persistent),
			reg.CreateOp(jp("sharding", "0", "failovering"), []byte(other), reg.Persistent)); err != nil {
			t.Error(err)
		}
		hooked.Store(true)
	}}
	a := startObserved(t, cl, "192.168.1.1", 100, log)
	b := cl.start("192.168.1.2", 200, failoverConfig(4))
	cl.waitNecessary()
	runAll(t, a, b)
	expectAssign(t, cl, 4, map[string][]int{b.id: {0, 1}, a.id: {2, 3}})
	cl.persist(misfire, "")
	cl.sync()
	armed.Store(true)
	b.stop()
	testkit.Eventually(t, waitFor, "a's crash handling to read item 0's flag", hooked.Load)
	cl.sync() // a's event loop has handled the crash
	if _, ok := cl.get(queued); ok {
		t.Error("item 0 was queued again after another survivor had claimed it")
	}
	if v, _ := cl.get(jp("sharding", "0", "failover")); v != other {
		t.Errorf("item 0 is claimed by %q; want the survivor that claimed it first", v)
	}
	if _, ok := cl.get(misfire); !ok {
		t.Error("item 0's misfire flag went; the claimer's misfire loop serves it")
	}
}
