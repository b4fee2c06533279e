package coord_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/ejob-io/ejob/core/coord"
	"github.com/ejob-io/ejob/core/executor"
	"github.com/ejob-io/ejob/core/reg"
	"github.com/ejob-io/ejob/core/reg/embedded"
	"github.com/ejob-io/ejob/core/reg/recipe"
	"github.com/ejob-io/ejob/internal/testkit"
)

func newTimeoutCluster(t *testing.T, timeout time.Duration) *cluster {
	srv := embedded.NewServer(embedded.WithSessionTimeout(timeout))
	return newCluster(t, func(t *testing.T) reg.Client {
		c, err := srv.Connect("ns")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		return c
	})
}

func suspender(in *instance) *embedded.Client { return in.c.(*embedded.Client) }

func countRuns(in *instance, item int) int {
	n := 0
	for _, r := range in.runs() {
		for _, i := range r {
			if i == item {
				n++
			}
		}
	}
	return n
}

// Suspended: no new execution starts, running items continue; the same
// session back: executions resume and the running one completes normally.
func TestSuspendedPausesNewRunsButRunningItemsContinue(t *testing.T) {
	cl := newEmbeddedCluster(t)
	a := cl.start("192.168.1.1", 100, failoverConfig(2))
	cl.waitNecessary()
	runAll(t, a)
	release, done := startHeldRun(t, cl, a, []int{0, 1})
	suspender(a).Suspend()
	testkit.Eventually(t, waitFor, "paused", func() bool { p, _ := a.job.Paused(); return p })
	if _, err := a.job.ShardingContexts(ctxT(t)); !errors.Is(err, coord.ErrPaused) {
		t.Errorf("ShardingContexts while suspended = %v, want ErrPaused", err)
	}
	select {
	case err := <-done:
		t.Fatalf("running execution ended while merely suspended: %v", err)
	default:
	}
	suspender(a).Resume()
	testkit.Eventually(t, waitFor, "resumed", func() bool { p, _ := a.job.Paused(); return !p })
	release()
	if err := <-done; err != nil {
		t.Fatalf("execution after resume: %v", err)
	}
	for _, i := range []string{"0", "1"} {
		if _, ok := cl.get(jp("sharding", i, "running")); ok {
			t.Errorf("running node of item %s left after completion", i)
		}
	}
}

// Disconnected for nearly the session timeout: the running items' ctx is
// cancelled (ErrSessionPresumedLost) before the server expires the session,
// so when the survivor takes the items over the old run has stopped; the
// instance rejoins by itself in a new session.
func TestPresumedExpiryCancelsBeforeServerExpiry(t *testing.T) {
	const timeout = 600 * time.Millisecond
	cl := newTimeoutCluster(t, timeout)
	a := cl.start("192.168.1.1", 100, failoverConfig(4))
	b := cl.start("192.168.1.2", 200, failoverConfig(4))
	cl.waitNecessary()
	runAll(t, a, b)
	_, done := startHeldRun(t, cl, b, []int{0, 1})
	a.autorun(t)
	before0, before1 := countRuns(a, 0), countRuns(a, 1)
	sess := b.c.Session()
	suspender(b).Suspend()
	err := <-done
	if !errors.Is(err, coord.ErrSessionPresumedLost) || !errors.Is(err, coord.ErrSessionLost) {
		t.Fatalf("cut-off run error = %v, want ErrSessionPresumedLost", err)
	}
	if sess.Err() != nil {
		t.Fatalf("the run was cancelled only after the server expired the session (%v)", sess.Err())
	}
	if dl, _ := sess.ExpiryDeadline(); time.Until(dl) <= 0 {
		t.Errorf("cancelled %v after the expiry deadline", -time.Until(dl))
	}
	<-sess.Done() // the server expires it meanwhile
	testkit.Eventually(t, waitFor, "a took items 0 and 1 over", func() bool {
		return countRuns(a, 0) > before0 && countRuns(a, 1) > before1
	})
	suspender(b).Resume()
	testkit.Eventually(t, waitFor, "b re-registered in its new session", func() bool {
		st, ok := cl.stat(jp("instances", b.id))
		p, _ := b.job.Paused()
		return ok && st.EphemeralOwner == b.c.Session().ID() && !p
	})
}

// presumedExpiryPair starts a and b on a 2-item failover job with a 5 s
// session timeout and a presumed-expiry margin that cancels executions
// ~100 ms after a suspension, shards, and returns b's items.
func presumedExpiryPair(t *testing.T) (cl *cluster, a, b *instance, items []int) {
	t.Helper()
	cl = newTimeoutCluster(t, 5*time.Second)
	margin := func(o *optsT) { o.ExpiryMargin = 4900 * time.Millisecond }
	a = cl.startAsyncOpts("192.168.1.1", 100, failoverConfig(2), margin)
	b = cl.startAsyncOpts("192.168.1.2", 200, failoverConfig(2), margin)
	cl.waitNecessary()
	runAll(t, a, b)
	for i, owner := range cl.assignments(2) {
		if owner == b.id {
			items = append(items, i)
		}
	}
	return cl, a, b, items
}

// A presumed expiry the session survives (connection back in the margin):
// the cut-off items are queued for failover and run again (at least once),
// and the instance resumes in the same session.
func TestPresumedExpirySessionSurvives(t *testing.T) {
	cl, a, b, items := presumedExpiryPair(t)
	_, done := startHeldRun(t, cl, b, items)
	a.autorun(t)
	b.autorun(t)
	sess := b.c.Session()
	suspender(b).Suspend()
	if err := <-done; !errors.Is(err, coord.ErrSessionPresumedLost) {
		t.Fatalf("cut-off run error = %v", err)
	}
	suspender(b).Resume()
	if b.c.Session() != sess || sess.Err() != nil {
		t.Fatal("session did not survive")
	}
	testkit.Eventually(t, waitFor, "cut-off items re-run", func() bool {
		for _, i := range items {
			if countRuns(a, i)+countRuns(b, i) < 2 { // the first run plus a re-run
				return false
			}
		}
		return true
	})
	testkit.Eventually(t, waitFor, "b resumed", func() bool { p, _ := b.job.Paused(); return !p })
	testkit.Eventually(t, waitFor, "no running nodes left", func() bool {
		for _, i := range items {
			if _, ok := cl.get(jp("sharding", strconv.Itoa(i), "running")); ok {
				return false
			}
		}
		return true
	})
}

// An instance whose instance node is gone (its session expired on the
// server, or it was partitioned away) cannot create running nodes.
func TestRegisterBeginFencedOnInstanceNode(t *testing.T) {
	cl := newEmbeddedCluster(t)
	a := cl.start("192.168.1.1", 100, failoverConfig(2))
	cl.waitNecessary()
	runAll(t, a)
	sc := executor.ShardingContexts{JobName: testJob, ShardingTotalCount: 2, Items: []int{0, 1}}
	cl.remove(jp("instances", a.id))
	err := a.job.RegisterBegin(ctxT(t), sc)
	if !errors.Is(err, coord.ErrSessionLost) {
		t.Fatalf("RegisterBegin without an instance node = %v, want ErrSessionLost", err)
	}
	for _, i := range []string{"0", "1"} {
		if _, ok := cl.get(jp("sharding", i, "running")); ok {
			t.Errorf("running node of item %s created", i)
		}
	}
}

// While suspended, RegisterBegin writes nothing.
func TestRegisterBeginRefusedWhileSuspended(t *testing.T) {
	cl := newEmbeddedCluster(t)
	a := cl.start("192.168.1.1", 100, failoverConfig(2))
	cl.waitNecessary()
	runAll(t, a)
	suspender(a).Suspend()
	testkit.Eventually(t, waitFor, "paused", func() bool { p, _ := a.job.Paused(); return p })
	sc := executor.ShardingContexts{JobName: testJob, ShardingTotalCount: 2, Items: []int{0, 1}}
	if err := a.job.RegisterBegin(ctxT(t), sc); !errors.Is(err, coord.ErrSessionLost) {
		t.Fatalf("RegisterBegin while suspended = %v", err)
	}
	suspender(a).Resume()
}

// leaderAndOther starts a (the leader) and b on a 4-item job, with
// resharding pending.
func leaderAndOther(t *testing.T) (*cluster, *instance, *instance) {
	t.Helper()
	cl := newEmbeddedCluster(t)
	a := cl.start("192.168.1.1", 100, testConfig(4))
	b := cl.start("192.168.1.2", 200, testConfig(4))
	cl.waitNecessary()
	if v, _ := cl.get(jp("leader", "election", "instance")); v != a.id {
		t.Fatalf("leader = %q, want %s", v, a.id)
	}
	return cl, a, b
}

// A leader whose session expires between taking its fence and committing
// a resharding has its commit rejected; the survivor reshards.
func TestDeposedLeaderReshardingRejected(t *testing.T) {
	cl, a, b := leaderAndOther(t)
	coord.SetBeforeCommit(a.job, func() {
		if err := a.c.(reg.Expirer).Expire(context.Background()); err != nil {
			t.Error(err)
		}
	})
	_, err := a.run(ctxT(t))
	// Rejected by the fence, or stopped earlier because the run's ctx ended
	// with the session.
	if !errors.Is(err, recipe.ErrFenced) && !errors.Is(err, context.Canceled) {
		t.Fatalf("deposed leader's resharding = %v, want ErrFenced", err)
	}
	if got := cl.assignments(4); len(got) != 0 {
		t.Fatalf("deposed leader wrote assignments %v", got)
	}
	coord.SetBeforeCommit(a.job, nil)
	// The new leader (b, or a in its new session) reshards.
	testkit.Eventually(t, waitFor, "a new leader", func() bool { v, _ := cl.get(jp("leader", "election", "instance")); return v != "" })
	testkit.Eventually(t, waitFor, "a re-registered", func() bool { p, _ := a.job.Paused(); return !p })
	cl.waitNecessary()
	runAll(t, a, b)
	expectAssign(t, cl, 4, map[string][]int{b.id: {0, 1}, a.id: {2, 3}})
}

// Nodes left by an instance that is gone are cleared, and with failover the
// items they held are run again.
func TestStaleNodesOfGoneInstancesCleared(t *testing.T) {
	cl := newEmbeddedCluster(t)
	a := cl.start("192.168.1.1", 100, failoverConfig(3))
	cl.waitNecessary()
	runAll(t, a)
	a.autorun(t)
	ghost := "192.168.1.9@-@999"
	cl.persist(jp("sharding", "0", "running"), ghost)
	cl.persist(jp("sharding", "1", "failovering"), ghost)
	cl.persist(jp("sharding", "1", "running"), ghost)
	cl.persist(jp("sharding", "2", "failover"), ghost)
	cl.persist(jp("sharding", "2", "misfire"), "")
	cl.persist(jp("sharding", "2", "instance"), ghost)
	if err := coord.CleanStale(a.job, ctxT(t)); err != nil {
		t.Fatal(err)
	}
	for _, p := range [][]string{{"0", "running"}, {"1", "failovering"}, {"2", "failover"}, {"2", "misfire"}} {
		testkit.Eventually(t, waitFor, "stale "+p[0]+"/"+p[1]+" gone", func() bool {
			v, ok := cl.get(jp("sharding", p[0], p[1]))
			return !ok || v == a.id
		})
	}
	testkit.Eventually(t, waitFor, "items 0 and 1 re-run by a", func() bool { return countRuns(a, 0) >= 2 && countRuns(a, 1) >= 2 })
}

// A leader that gives up its leader node while its resharding is between
// fence and commit (here: its server is disabled, so it abdicates) deletes
// the node only after the commit. Otherwise another instance could elect
// and re-create the node with the same data version in the meantime, and
// the stale commit would pass the fence (ZooKeeper's multi checks only
// the version).
func TestAbdicationWaitsForFencedCommit(t *testing.T) {
	cl, a, b := leaderAndOther(t)
	coord.SetBeforeCommit(a.job, func() {
		cl.persist(jp("servers", a.ip), "DISABLED")
		// a's event loop sees the event and abdicates: its Resign waits
		// for this commit, or (wrongly) deletes the leader node at once.
		resigning := func() bool {
			return len(testkit.Goroutines([]string{"recipe.(*Election).Resign(", "sync.(*RWMutex).Lock("}, nil)) > 0
		}
		leader := func() string { v, _ := cl.get(jp("leader", "election", "instance")); return v }
		if !testkit.Poll(waitFor, func() bool { return resigning() || leader() != a.id }) {
			t.Errorf("a never abdicated after its server was disabled")
		}
		if v := leader(); v != a.id {
			t.Errorf("leader node changed to %q while a's resharding was between fence and commit", v)
		}
	})
	if _, err := a.run(ctxT(t)); err != nil {
		t.Fatalf("a's resharding while still the leader: %v", err)
	}
	coord.SetBeforeCommit(a.job, nil)
	if got := cl.assignments(4); len(got) != 4 {
		t.Fatalf("assignments after a's commit = %v", got)
	}
	testkit.Eventually(t, waitFor, "a abdicated after its commit and b leads", func() bool {
		v, _ := cl.get(jp("leader", "election", "instance"))
		return v == b.id
	})
}

// An instance that joins while the leader is resharding (its event finds
// the flag still up, so it raises nothing) is not lost when the commit
// deletes the flag: the leader compares membership after its commit and
// flags resharding again, so the newcomer gets items at the next trigger.
// A leader that read membership only before waiting for running items
// commits a list that names a dead instance and misses the restarted ones
// (the chaos suite's short form, seed 11: two items idle until the next
// membership event).
func TestMembershipChangeDuringReshardingFlagsAgain(t *testing.T) {
	cl, a, b := leaderAndOther(t)
	var c *instance
	coord.SetBeforeCommit(a.job, func() {
		c = cl.start("192.168.1.3", 300, testConfig(4))
		cl.sync() // a's event loop has seen c's instance node (flag still up)
	})
	if _, err := a.run(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	coord.SetBeforeCommit(a.job, nil)
	expectAssign(t, cl, 4, map[string][]int{b.id: {0, 1}, a.id: {2, 3}})
	if _, ok := cl.get(jp("leader", "sharding", "necessary")); !ok {
		t.Fatal("resharding not flagged again after an instance joined during the resharding")
	}
	runAll(t, a, b, c)
	expectAssign(t, cl, 4, map[string][]int{c.id: {0, 3}, b.id: {1}, a.id: {2}})
}
