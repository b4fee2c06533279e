package coord_test

import (
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/ejob-io/ejob/core/coord"
	"github.com/ejob-io/ejob/core/executor"
	"github.com/ejob-io/ejob/core/reg/regcount"
	"github.com/ejob-io/ejob/internal/testkit"
)

// callLog records the requests of one instance while on.
type callLog struct {
	on  atomic.Bool
	rec regcount.Recorder
	// before, if set, runs before a recorded request is sent.
	before func(regcount.Call)
}

func (l *callLog) observe(c regcount.Call) {
	if !l.on.Load() {
		return
	}
	if l.before != nil {
		l.before(c)
	}
	l.rec.Observe(c)
}

func (l *callLog) take() []regcount.Call { return l.rec.Take() }

// settledInstance starts one instance of a 2-item job on a counted
// client, lets it reshard and run once, and waits until its tree cache
// shows the result: its next trigger is a steady one.
func settledInstance(t *testing.T) (*cluster, *instance, *callLog) {
	t.Helper()
	cl := newEmbeddedCluster(t)
	log := &callLog{}
	c := regcount.New(cl.connect(t), regcount.WithObserver(log.observe))
	in := cl.startAsync("192.168.1.1", 100, testConfig(2), c)
	testkit.Eventually(t, waitFor, "instance ready", func() bool {
		select {
		case <-in.job.Ready():
			return true
		default:
			return false
		}
	})
	cl.waitNecessary()
	runAll(t, in)
	expectAssign(t, cl, 2, map[string][]int{in.id: {0, 1}})
	cl.sync()
	return cl, in, log
}

// ownRequests drops the tree cache's requests from calls: watch re-arms
// (one-shot watches) and MultiReads (the shared cache's rounds of reads,
// in recursive mode). The steady trigger path itself makes no MultiRead
// (only the fresh path's getEach does).
func ownRequests(calls []regcount.Call) []regcount.Call {
	return slices.DeleteFunc(calls, func(c regcount.Call) bool {
		return c.Kind == regcount.Watch || c.Method == "MultiRead"
	})
}

func runningNodes(cl *cluster, items ...int) []int {
	var out []int
	for _, i := range items {
		if _, ok := cl.get(jp("sharding", strconv.Itoa(i), "running")); ok {
			out = append(out, i)
		}
	}
	return out
}

// A steady trigger sends its two requests before the first item, the
// stat of leader/sharding and the running-node transaction, together:
// the running nodes exist once ShardingContexts returns, MisfireIfRunning
// does not take them for another execution, and RegisterBegin adopts them
// without a request.
func TestSteadyTriggerBeginsWithItsReshardingCheck(t *testing.T) {
	cl, in, log := settledInstance(t)
	f := executor.Facade(in.job)
	ctx := ctxT(t)
	log.on.Store(true)
	sc, err := f.ShardingContexts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	calls := ownRequests(log.take())
	if !slices.Equal(sc.Items, []int{0, 1}) {
		t.Fatalf("items = %v, want [0 1]", sc.Items)
	}
	if got := runningNodes(cl, 0, 1); !slices.Equal(got, []int{0, 1}) {
		t.Fatalf("running nodes after ShardingContexts: %v, want [0 1] (calls %v)", got, calls)
	}
	if len(calls) != 2 {
		t.Fatalf("ShardingContexts made %d requests, want 2 (the stat and the transaction): %v", len(calls), calls)
	}
	if mis, err := f.MisfireIfRunning(ctx, sc.Items); err != nil || mis {
		t.Fatalf("MisfireIfRunning = %v, %v: took this execution's own running nodes for another's", mis, err)
	}
	if err := f.RegisterBegin(ctx, sc); err != nil {
		t.Fatal(err)
	}
	if calls := ownRequests(log.take()); len(calls) != 0 {
		t.Fatalf("RegisterBegin made requests: %v", calls)
	}
	if !in.job.IsRunning() {
		t.Fatal("not running after RegisterBegin")
	}
	if err := f.RegisterCompleted(ctx, sc, nil); err != nil {
		t.Fatal(err)
	}
	if got := runningNodes(cl, 0, 1); len(got) != 0 {
		t.Fatalf("running nodes after RegisterCompleted: %v", got)
	}
}

// When the stat sent with the running-node transaction finds a resharding
// pending that the tree cache did not show yet (a flag set a moment
// before), the running nodes are deleted again and the trigger takes the
// sequential path: the leader (this instance) reshards, which it could
// not while its own running nodes stood, then runs its items.
func TestPipelinedBeginUndoneWhenReshardingPending(t *testing.T) {
	cl, in, log := settledInstance(t)
	var commits atomic.Int32
	coord.SetBeforeCommit(in.job, func() { commits.Add(1) })
	var armed atomic.Bool
	armed.Store(true)
	log.before = func(c regcount.Call) {
		// The flag appears after the trigger read its cache, just
		// before its stat reaches the registry.
		if c.Method == "Exists" && c.Path == jp("leader", "sharding") && armed.CompareAndSwap(true, false) {
			cl.persist(jp("leader", "sharding", "necessary"), "")
		}
	}
	log.on.Store(true)
	items, err := in.run(ctxT(t))
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	log.on.Store(false)
	if armed.Load() {
		t.Fatal("the trigger did not stat leader/sharding")
	}
	if !slices.Equal(items, []int{0, 1}) {
		t.Fatalf("ran %v, want [0 1]", items)
	}
	if n := commits.Load(); n != 1 {
		t.Fatalf("resharding commits = %d, want 1", n)
	}
	if _, ok := cl.get(jp("leader", "sharding", "necessary")); ok {
		t.Fatal("necessary flag still set")
	}
	// The transaction sent with the stat and the begin after the
	// resharding: two transactions on the instance node (a third, the
	// completion, when it deletes nodes the cache has not seen yet). The
	// undo between the first two deletes each node that names this
	// instance (undoBegin).
	var txns, undone int
	for _, c := range log.take() {
		switch {
		case c.Method == "Multi" && c.Path == jp("instances", in.id):
			txns++
		case c.Method == "Delete" && strings.HasSuffix(c.Path, "/running") && txns == 1:
			undone++ // between the two begins
		}
	}
	if txns < 2 || txns > 3 || undone != 2 {
		t.Fatalf("%d transactions fenced on the instance node and %d running nodes deleted between the first two, want 2 or 3 (begin, begin, completion) and 2 (the undo)", txns, undone)
	}
	if got := runningNodes(cl, 0, 1); len(got) != 0 {
		t.Fatalf("running nodes after the run: %v", got)
	}
}

// Running nodes created with the resharding check whose execution never
// begins (the executor gave up before RegisterBegin: a before-listener's
// error propagated) are deleted after a while, and the instance is idle
// again. The job's undo timer is re-armed by each trigger: an abandoned
// trigger after runs that began is undone too.
func TestPipelinedBeginAbandonedIsUndone(t *testing.T) {
	cl, in, _ := settledInstance(t)
	for round := range 2 {
		sc, err := executor.Facade(in.job).ShardingContexts(ctxT(t))
		if err != nil {
			t.Fatal(err)
		}
		if got := runningNodes(cl, sc.Items...); !slices.Equal(got, sc.Items) || len(got) == 0 {
			t.Fatalf("round %d: running nodes after ShardingContexts: %v, want %v", round, got, sc.Items)
		}
		testkit.Eventually(t, waitFor, "the abandoned running nodes deleted", func() bool {
			return len(runningNodes(cl, sc.Items...)) == 0 && !in.job.IsRunning()
		})
		for range 2 {
			items, err := in.run(ctxT(t))
			if err != nil || !slices.Equal(items, []int{0, 1}) {
				t.Fatalf("round %d: next run: %v, %v", round, items, err)
			}
		}
	}
}
