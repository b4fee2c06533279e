package coord_test

import (
	"context"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ejob-io/ejob/core/config"
	"github.com/ejob-io/ejob/core/coord"
	"github.com/ejob-io/ejob/core/executor"
	"github.com/ejob-io/ejob/core/kernel"
	"github.com/ejob-io/ejob/core/reg"
	"github.com/ejob-io/ejob/internal/testkit"
	"github.com/ejob-io/ejob/plugins/builtin"
	"github.com/ejob-io/ejob/spi"
)

// A fire that finds its item still running (misfire on, monitorExecution
// on) sets the item's misfire flag while the run goes on, and the item runs
// again as soon as that run ends, before any later fire: the trigger's
// misfire loop serves it. Flags written only once the run returned would
// miss that loop: the catch-up would wait for the next fire, and be lost
// when the instance dies first (a 4 min chaos run with seed 150817456
// then reports the fire lost). The whole pipeline runs:
// trigger loop (on a clock the test moves), executor, coordination. The
// same holds for every kind of cron: missedFireScenario returns the
// scenario for a cron whose first two fires after the clock's start
// (2030-01-01T00:00:00.5Z) are first and second.
func missedFireScenario(cron string, first, second time.Time) func(*testing.T, *cluster) {
	return func(t *testing.T, cl *cluster) {
		cfg := config.New(testJob, 1)
		cfg.Cron = cron
		cfg.Misfire, cfg.MonitorExecution = true, true
		clk := newManualClock(time.Date(2030, 1, 1, 0, 0, 0, 500_000_000, time.UTC))
		rec := &sourceRecorder{}
		release := make(chan struct{})
		var once sync.Once
		defer once.Do(func() { close(release) }) // before the scheduler stops
		held := make(chan struct{}, 1)
		runner := executor.SimpleFunc(func(ctx context.Context, sc spi.ShardingContext) error {
			if len(rec.sources()) == 1 { // the first run is held
				held <- struct{}{}
				select {
				case <-release:
				case <-ctx.Done():
				}
			}
			return nil
		})
		startOnClock(t, cl, cfg, clk, rec, runner)
		clk.advance(t, first)
		select {
		case <-held:
		case <-time.After(waitFor):
			t.Fatal("the first run did not start")
		}
		clk.advance(t, second) // finds item 0 running
		testkit.Eventually(t, waitFor, "the misfire flag set while item 0 runs", func() bool {
			_, ok := cl.get(jp("sharding", "0", "misfire"))
			return ok
		})
		once.Do(func() { close(release) })
		// The clock stays at the second fire: no later fire comes.
		testkit.Eventually(t, waitFor, "item 0 run again right after", func() bool { return len(rec.sources()) == 2 })
		if got := rec.sources(); !slices.Equal(got, []executor.Source{executor.NormalTrigger, executor.Misfire}) {
			t.Errorf("runs of item 0 by source = %v, want the fire then its catch-up", got)
		}
		testkit.Eventually(t, waitFor, "the misfire flag cleared", func() bool {
			_, ok := cl.get(jp("sharding", "0", "misfire"))
			return !ok
		})
	}
}

// startOnClock runs a scheduler with the job (cfg, runner) on the cluster's
// registry and the clock clk until the test ends, and returns once its
// event loop has handled the events of the startup (its own registration
// flags resharding: a resharding still pending after a first run would
// rightly hold a catch-up back, upstream semantics).
func startOnClock(t *testing.T, cl *cluster, cfg *config.JobConfiguration, clk *manualClock, events executor.Events, runner executor.ItemRunner) *kernel.Kernel {
	t.Helper()
	var seen sync.Map // paths the job's event loop handled
	set := builtin.New(builtin.Options{Logger: hclog.NewNullLogger()})
	s, err := kernel.New(kernel.Options{
		Client: cl.connect(t), InstanceID: "192.168.1.1@-@100", ServerIP: "192.168.1.1",
		Plugins: set,
		Logger:  testLogger(t, "scheduler"), Events: events, Clock: clk, DrainTimeout: time.Second,
		Coord: coord.Options{PollInterval: fastPoll, OnEvent: func(p string) { seen.Store(p, true) }},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Add(ctxT(t), kernel.Job{Config: cfg, Runner: runner}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("scheduler Run: %v", err)
		}
	})
	if err := s.Ready(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	barrier := jp("zz-test-barrier")
	if _, err := cl.admin.Create(ctxT(t), barrier, nil, reg.Ephemeral); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, waitFor, "the event loop idle", func() bool { _, ok := seen.Load(barrier); return ok })
	return s
}

// An instance whose items carry a misfire flag (a fire found them running;
// the run ended) and that dies before its catch-up run: with failover on,
// the items are queued for failover and run at once on a survivor, and the
// flags are consumed. A stale sweep that deleted the flags instead would
// lose the missed fire (the chaos suite's coverage check sees it when the
// owner dies between the fire and its catch-up).
func scenarioDeadOwnersMissedFireFailsOver(t *testing.T, cl *cluster) {
	a, b := twoSharded(t, cl)
	if err := b.job.SetMisfire(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	before0, before1 := countRuns(a, 0), countRuns(a, 1)
	a.autorun(t)
	// b dies: its session ends without a clean shutdown.
	_ = b.c.Close()
	b.cancel()
	testkit.Eventually(t, waitFor, "b's missed fire run on a", func() bool { return countRuns(a, 0) > before0 && countRuns(a, 1) > before1 })
	testkit.Eventually(t, waitFor, "misfire flags and failover nodes consumed", func() bool {
		for _, i := range []string{"0", "1"} {
			for _, n := range []string{"misfire", "failover", "failovering"} {
				if _, ok := cl.get(jp("sharding", i, n)); ok {
					return false
				}
			}
		}
		names, _ := cl.admin.Children(context.Background(), jp("leader", "failover", "items"))
		return len(names) == 0
	})
}

// sourceRecorder records the source of each item start (executor events).
type sourceRecorder struct {
	executor.NopEvents
	mu  sync.Mutex
	src []executor.Source
}

func (r *sourceRecorder) ItemStarted(_ context.Context, ev executor.ItemEvent) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.src = append(r.src, ev.Source)
}

func (r *sourceRecorder) sources() []executor.Source {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.src)
}

// A fire that finds an item of this instance running on another instance
// (here a failover run) sets the item's misfire flag, so that the instance
// running it runs it again right after (upstream skips the item silently,
// and the fire is lost for it).
func scenarioOwnItemRunningElsewhereCaughtUp(t *testing.T, cl *cluster) {
	a, b := twoSharded(t, cl)
	// b has taken a's item 2 over (as after a cut-off) and runs it.
	cl.persist(jp("sharding", "2", "failover"), b.id)
	cl.persist(jp("sharding", "2", "failovering"), b.id)
	cl.sync()
	release, done := startHeldRun(t, cl, b, []int{2})
	defer release()
	cl.sync() // a's trigger reads b's running node from its tree cache
	before := countRuns(b, 2)
	// a's fire: item 2 is b's to run now; a runs item 3 only.
	if items, err := a.run(ctxT(t)); err != nil || !equalInts(items, []int{3}) {
		t.Fatalf("a ran %v, %v; want [3]", items, err)
	}
	if _, ok := cl.get(jp("sharding", "2", "misfire")); !ok {
		t.Fatal("the fire that found item 2 running elsewhere set no misfire flag")
	}
	release()
	if err := <-done; err != nil {
		t.Fatalf("b's run: %v", err)
	}
	if got := countRuns(b, 2); got != before+2 {
		t.Errorf("b ran item 2 %d times, want 2 (its failover run, then the catch-up of a's fire)", got-before)
	}
	if _, ok := cl.get(jp("sharding", "2", "misfire")); ok {
		t.Error("misfire flag of item 2 not consumed")
	}
}

// Flags on this instance's items that no execution serves (here set while
// it is idle) are served at once by a run the pump asks for, not at the
// next fire; should a resharding move some of those items away before that
// run, it hands their flags back to the new owner, which runs them.
func scenarioPendingMisfireRunAtOnceAndHandedOver(t *testing.T, cl *cluster) {
	a := cl.start("192.168.1.1", 100, testConfig(4)) // the leader; failover off
	b := cl.start("192.168.1.2", 200, testConfig(4))
	cl.waitNecessary()
	runAll(t, a, b)
	expectAssign(t, cl, 4, map[string][]int{b.id: {0, 1}, a.id: {2, 3}})
	for len(a.triggers) > 0 {
		<-a.triggers
	}
	if err := a.job.SetMisfire(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	select {
	case <-a.triggers: // the pump's catch-up; it cleared the flags
	case <-time.After(waitFor):
		t.Fatal("no catch-up asked for the pending misfire")
	}
	// c joins before that run starts: the run reshards, and item 3 moves.
	c := cl.start("192.168.1.3", 300, testConfig(4))
	cl.waitNecessary()
	b.autorun(t)
	c.autorun(t)
	before := countRuns(c, 3)
	if items, err := a.run(ctxT(t)); err != nil || !equalInts(items, []int{2}) {
		t.Fatalf("a's catch-up ran %v, %v; want [2] (item 3 moved to c)", items, err)
	}
	expectAssign(t, cl, 4, map[string][]int{c.id: {0, 3}, b.id: {1}, a.id: {2}})
	testkit.Eventually(t, waitFor, "c ran the missed fire of item 3", func() bool { return countRuns(c, 3) > before })
}

// A fire missed while a resharding is pending would have run the items the
// instance owns once it commits: the items that resharding gives it are
// flagged too, and run at once (chaos: the new owner was busy at the fire,
// the old one lost the item at the resharding, and the fire was lost).
func scenarioMissedFireDuringReshardingFlagsGainedItems(t *testing.T, cl *cluster) {
	a := cl.start("192.168.1.9", 100, testConfig(4)) // the leader
	b := cl.start("192.168.1.5", 200, testConfig(4))
	cl.waitNecessary()
	runAll(t, a, b)
	expectAssign(t, cl, 4, map[string][]int{a.id: {0, 1}, b.id: {2, 3}})
	c := cl.start("192.168.1.1", 300, testConfig(4))
	cl.waitNecessary()
	// b skipped a fire (it was busy) while the resharding was pending.
	if err := b.job.SetMisfire(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	b.autorun(t)
	if _, err := a.run(ctxT(t)); err != nil { // the leader reshards
		t.Fatal(err)
	}
	// b lost both items it flagged, and gained item 1.
	expectAssign(t, cl, 4, map[string][]int{a.id: {0, 3}, b.id: {1}, c.id: {2}})
	testkit.Eventually(t, waitFor, "b ran item 1, which the resharding gave it", func() bool { return countRuns(b, 1) > 0 })
}

// An execution that waits for the leader's resharding (the leader reshards
// at its next execution) runs the items its instance claims for failover
// meanwhile, instead of holding them back until the resharding (chaos seed
// 11: a claimed item waited 8 s for a busy leader's next fire).
func scenarioClaimWhileWaitingForReshardingRuns(t *testing.T, cl *cluster) {
	a, b := twoSharded(t, cl)
	releaseA, doneA := startHeldRun(t, cl, a, []int{2, 3}) // the leader is busy
	defer func() {
		releaseA()
		<-doneA
	}()
	cl.persist(jp("leader", "sharding", "necessary"), "") // pending until a's next execution
	cl.sync()
	res := runAsync(t, b) // waits for the resharding
	// An item queued for failover, which b claims meanwhile.
	cl.persist(jp("leader", "failover", "items", "1"), "")
	select {
	case r := <-res:
		if r.err != nil || !equalInts(r.items, []int{1}) {
			t.Fatalf("b's execution ran %v, %v; want the claimed item [1]", r.items, r.err)
		}
	case <-time.After(waitFor):
		t.Fatal("b's execution still waits for the resharding though it claimed item 1")
	}
	if _, ok := cl.get(jp("leader", "sharding", "necessary")); !ok {
		t.Error("the resharding was done meanwhile; the test shows nothing")
	}
}

// An execution that finds every item its instance claimed still running
// elsewhere runs the instance's own items; when it then waits for a
// pending resharding, the leader commits only once nothing runs, so the
// claimed item's run there has ended by then: the execution runs the
// claimed item, not its own items (chaos seed 40401: a claimed item waited
// behind the own items' runs and their catch-ups for 3.8 s, and its fire
// ran 1.9 s late). Here b holds a claim of a's item 2 while a, the leader,
// still runs it, and a resharding is pending; b's execution waits for it,
// a's run ends, and a reshards at its next execution.
func scenarioBusyClaimRunsAfterReshardingWait(t *testing.T, cl *cluster) {
	a, b := twoSharded(t, cl)
	releaseA, doneA := startHeldRun(t, cl, a, []int{2, 3})
	cl.persist(jp("sharding", "2", "failover"), b.id)
	cl.persist(jp("sharding", "2", "failovering"), b.id)
	cl.persist(jp("leader", "sharding", "necessary"), "") // pending until a's next execution
	cl.sync()
	res := runAsync(t, b) // item 2 runs on a: waits for the resharding
	testkit.Eventually(t, waitFor, "b's execution waiting for the resharding", func() bool {
		return b.inRun.Load()
	})
	releaseA()
	if err := <-doneA; err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-res:
		t.Fatalf("b's execution ran %v, %v before the resharding; the test shows nothing", r.items, r.err)
	default:
	}
	if _, err := a.run(ctxT(t)); err != nil { // the leader reshards
		t.Fatal(err)
	}
	select {
	case r := <-res:
		if r.err != nil || !equalInts(r.items, []int{2}) {
			t.Fatalf("b's execution ran %v, %v; want the claimed item [2], whose run on a had ended", r.items, r.err)
		}
	case <-time.After(waitFor):
		t.Fatal("b's execution still waits after the resharding")
	}
}

// runResult is what an execution of runAsync ran.
type runResult struct {
	items []int
	err   error
}

// runAsync runs one execution of in on a goroutine; its result comes on
// the channel.
func runAsync(t *testing.T, in *instance) <-chan runResult {
	res := make(chan runResult, 1)
	go func() {
		items, err := in.run(ctxT(t))
		res <- runResult{items, err}
	}()
	return res
}

// A fire of the schedule that finds its instance holding a failover claim
// runs the claimed item only (upstream's order: failover items first), and
// the instance's other items keep that fire: they run right after that
// execution, not at their next fire (chaos seed 3: h3 held a claim whose
// item still ran elsewhere when its fire came; the fire ran the claimed
// item, and h3's own item waited 4.5 s for the pump while a resharding
// and a ZooKeeper restart took its next fire too). A trigger the instance
// asked for itself (the claim's) owes its items nothing. The whole
// executor runs (core/executor); the fire is told apart as the scheduler
// tells it (trigger.Fire.Manual). Here b claims its own items back (as
// after a cut-off run): the claimed item's run serves the fire for it.
func scenarioScheduleFireTakenByClaimKeepsOwnItems(t *testing.T, cl *cluster) {
	a, b := twoSharded(t, cl)
	release, done := startHeldRun(t, cl, a, []int{2, 3}) // a claims nothing
	defer func() {
		release()
		<-done
	}()
	var mu sync.Mutex
	var ran []int
	exec := itemExecutor(t, b.id, b.job, func(item int) {
		mu.Lock()
		defer mu.Unlock()
		ran = append(ran, item)
	})
	// fire runs one trigger of b while its claim of item (queued for
	// failover) has not run yet, and returns the items it ran.
	fire := func(item int, schedule bool) []int {
		t.Helper()
		cl.persist(jp("leader", "failover", "items", strconv.Itoa(item)), "")
		testkit.Eventually(t, waitFor, "b claimed item "+strconv.Itoa(item), func() bool {
			v, _ := cl.get(jp("sharding", strconv.Itoa(item), "failover"))
			return v == b.id
		})
		cl.sync()
		mu.Lock()
		ran = nil
		mu.Unlock()
		if err := exec.Execute(ctxT(t), executor.NormalTrigger, oneFire{schedule: schedule}); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(ran)
	}
	// The claim's own trigger: the claimed item, and no flag.
	if got := fire(0, false); !equalInts(got, []int{0}) {
		t.Fatalf("the claim's trigger ran %v; want the claimed item [0]", got)
	}
	if _, ok := cl.get(jp("sharding", "1", "misfire")); ok {
		t.Error("the claim's trigger flagged b's item 1")
	}
	// A fire of the schedule meets the claim: it runs the claimed item,
	// then b's other item runs without any later fire.
	if got := fire(1, true); !equalInts(got, []int{1}) {
		t.Fatalf("the fire ran %v; want the claimed item [1]", got)
	}
	if _, ok := cl.get(jp("sharding", "1", "misfire")); ok {
		t.Error("the fire flagged the claimed item, whose run served it")
	}
	for len(b.triggers) > 0 { // the claims' triggers, served above
		<-b.triggers
	}
	before := countRuns(b, 0)
	b.autorun(t)
	testkit.Eventually(t, waitFor, "b's item 0 run right after the fire the claim took", func() bool {
		return countRuns(b, 0) > before
	})
}

// oneFire is an executor.Fire, due now, during which the trigger loop
// skips none: a fire of the job's schedule, or (schedule false) one asked
// for with TriggerSoon or TriggerNow (trigger.Fire.Manual).
type oneFire struct{ schedule bool }

func (oneFire) Scheduled() time.Time                { return time.Now() }
func (f oneFire) Manual() bool                      { return !f.schedule }
func (oneFire) Ahead() bool                         { return false }
func (oneFire) AwaitScheduled(context.Context) bool { return true }
func (oneFire) OnSkip(func()) (stop func())         { return func() {} }
func (oneFire) TakeMissed(bool) int                 { return 0 }

// twoSharded starts a (the leader) and b with failover on, and lets them
// shard 4 items: b runs [0, 1], a [2, 3].
func twoSharded(t *testing.T, cl *cluster) (a, b *instance) {
	t.Helper()
	a = cl.start("192.168.1.1", 100, failoverConfig(4))
	b = cl.start("192.168.1.2", 200, failoverConfig(4))
	cl.waitNecessary()
	runAll(t, a, b)
	expectAssign(t, cl, 4, map[string][]int{b.id: {0, 1}, a.id: {2, 3}})
	return a, b
}
