package coord

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"time"

	"github.com/ejob-io/ejob/core/executor"
	"github.com/ejob-io/ejob/core/reg"
)

// misfires is the job's misfire protocol: the flags it reads and writes in
// the registry (misfire/), the catch-up runs it joins and hands over, and
// the pump's service of flags no execution serves. Its state is one
// misfireState (misfirestate.go), made at its first use so that an idle
// job carries none. What it reads of the rest of the job are the owners
// below, and the tree cache and failover state passed in.
type misfires struct {
	*jobBase
	cr cacheReads
	// asg reads this instance's items; att computes a catch-up's contexts;
	// loop's pump serves what no execution does (wakePump: armPump).

	// st is made at the first record, by an execution (or the goroutine
	// that records its skipped fires) or the job's queue (tree events, the
	// pump), whichever comes first, and read by those and by the pump's
	// clock (jobLoop.pumpFired) on its timer goroutine: atomic.
	st atomic.Pointer[misfireState]
}

// state returns the misfire state, or nil while none is made
// (misfireState's reads work on nil).
func (m *misfires) state() *misfireState { return m.st.Load() }

// made returns the misfire state, made now if need be.
func (m *misfires) made() *misfireState {
	if st := m.st.Load(); st != nil {
		return st
	}
	m.st.CompareAndSwap(nil, &misfireState{})
	return m.st.Load()
}

// needSharding reports whether a resharding is pending.
func (m *misfires) needSharding(ctx context.Context) (bool, error) {
	return m.s.exists(ctx, m.s.p.ShardingNecessary())
}

// executeMisfired is Job.ExecuteMisfired: cache is the trigger's tree cache
// (nil: none loaded), tree the job's, fo its failover state.
func (m *misfires) executeMisfired(ctx context.Context, cache, tree *reg.CacheView, fo *failoverState, items []int) (bool, error) {
	cfg, err := m.job.conf.get(ctx)
	if err != nil || !cfg.Misfire {
		return false, err
	}
	if cache != nil && m.cr.own(cache, items) {
		if items = m.candidates(cache, items); len(items) == 0 {
			return false, nil
		}
	}
	if need, err := m.needSharding(ctx); err != nil || need {
		return false, err
	}
	if cfg.Failover && m.claimsBesides(tree, fo, items) {
		// Items this instance claimed for failover run first: their
		// trigger starts right after this execution. A catch-up here
		// would put a cut-off item's re-run behind it, and behind every
		// catch-up after it (a 3.5 s item fired every 4 s keeps one
		// going, and the claimed items wait for seconds). The flags
		// stay; the pump serves them once the claimed items have run.
		return false, nil
	}
	mis, err := m.s.itemsWith(ctx, items, "misfire")
	if err == nil {
		m.state().forget(without(items, mis))
	}
	return len(mis) > 0, err
}

// candidates are the items among items that may have a misfire flag: the
// tree cache shows one, or this process set one. With no candidate,
// ExecuteMisfired answers without a request. It is used for this
// instance's own items only (cacheReads.own): their flags are set by this
// process (a fire skipped while they ran). The flags of a failover run's
// items are set by their owner, whose fire found them running here
// (ShardingContexts), possibly a moment before the run ends: those are
// read from the server, so that the run catches the fire up at once.
// A flag on an own item that another instance set a moment ago (its
// assignment was stale) is served by the pump (runPending), as a flag
// that arrives just after a fresh read would be.
func (m *misfires) candidates(cache *reg.CacheView, items []int) []int {
	return m.state().withSet(m.cr.itemsWith(cache, items, "misfire"), items)
}

// joinCatchUp is Job.JoinCatchUp; cache is the trigger's tree cache.
func (m *misfires) joinCatchUp(ctx context.Context, cache *reg.CacheView, sc executor.ShardingContexts) (executor.ShardingContexts, error) {
	cfg, err := m.job.conf.get(ctx)
	if err != nil || !cfg.Misfire {
		return sc, err
	}
	own, err := m.job.asg.localItems(ctx)
	if err != nil {
		return sc, wrap("join catch-up", err)
	}
	waiting, err := m.s.itemsWith(ctx, without(own, sc.Items), "misfire")
	if err != nil || len(waiting) == 0 {
		return sc, wrap("join catch-up", err)
	}
	held, err := m.s.itemsWith(ctx, waiting, "disabled")
	if err != nil {
		return sc, wrap("join catch-up", err)
	}
	if cfg.Failover {
		claimed, err := m.s.itemsWith(ctx, waiting, "failover")
		if err != nil {
			return sc, wrap("join catch-up", err)
		}
		held = append(held, claimed...)
	}
	if waiting = without(waiting, held); len(waiting) == 0 {
		return sc, nil
	}
	items := slices.Sorted(slices.Values(append(slices.Clone(sc.Items), waiting...)))
	out, running, err := m.job.att.contexts(ctx, cache, items)
	if err != nil {
		return sc, wrap("join catch-up", err)
	}
	if len(out.Items) == len(sc.Items) || slices.ContainsFunc(sc.Items, func(i int) bool { return slices.Contains(running, i) }) {
		return sc, nil
	}
	out.Failover = sc.Failover
	m.made().setJoined(out.TaskID, without(out.Items, sc.Items))
	m.log.Info("a catch-up run of an execution's items also runs this instance's own items whose missed fires wait",
		"items", sc.Items, "joined", without(out.Items, sc.Items))
	return out, nil
}

// restoreJoined sets again the flags of the own items JoinCatchUp added to
// the catch-up run sc, whose running-node transaction failed on an item
// running elsewhere (the owner of a failover item started it as the chain
// paused): the misfire loop cleared their flags, and they did not run.
func (m *misfires) restoreJoined(ctx context.Context, sc executor.ShardingContexts) {
	items := m.state().takeJoined(sc.TaskID)
	if len(items) == 0 {
		return
	}
	m.log.Info("a catch-up run did not begin; flagging again the own items it had joined", "items", items)
	if err := m.set(ctx, items); err != nil {
		m.log.Warn("cannot flag again the own items of a catch-up run that did not begin", "items", items, "error", err)
	}
}

// clear deletes the misfire flags of items (Job.ClearMisfire).
func (m *misfires) clear(ctx context.Context, items []int) error {
	for _, i := range items {
		if err := m.s.c.Delete(ctx, m.s.p.Misfire(i), reg.AnyVersion); err != nil && !errors.Is(err, reg.ErrNoNode) {
			return wrap("clear misfire", err)
		}
	}
	m.state().forget(items)
	return nil
}

// setExcept is Job.SetMisfireExcept.
func (m *misfires) setExcept(ctx context.Context, except []int) error {
	// The pending resharding is looked at first, and the deferral
	// registered before the items are read: a commit in between then gives
	// either the items after it, or all of them once it is seen. Each
	// missed fire owes nothing only to its own items and except: the
	// failover items one fire runs instead serve that fire, not a later
	// one missed during the same pending resharding.
	need, err := m.needSharding(ctx)
	if err != nil {
		return wrap("set misfire", err)
	}
	var fire deferredFire
	if need {
		fire = m.made().deferToResharding()
		m.job.loop.armPump()
	}
	items, err := m.job.asg.localItems(ctx)
	if err != nil {
		return wrap("set misfire", err)
	}
	if need {
		m.made().addBefore(fire, append(slices.Clone(items), except...))
	}
	if items = without(items, except); len(except) > 0 && len(items) > 0 {
		m.log.Info("a fire of the schedule runs failover items instead of this instance's items; they run right after it",
			"failover_items", except, "items", items, "resharding_pending", need)
	}
	return m.set(ctx, items)
}

// claimsBesides reports whether this instance holds claims of failover
// items other than items: recorded by this process in fo (rememberClaim),
// or a failover node naming it in the tree cache.
func (m *misfires) claimsBesides(cache *reg.CacheView, fo *failoverState, items []int) bool {
	if fo.claimedBesides(items) {
		return true
	}
	if cache == nil {
		return false
	}
	names, _ := cache.Children(m.s.p.Sharding())
	for _, i := range itemNumbers(names) {
		if v, _, ok := cache.Get(m.s.p.Failover(i)); ok && string(v) == m.id && !slices.Contains(items, i) {
			return true
		}
	}
	return false
}

// afterResharding flags the items gained by the resharding that was
// pending when fires were missed (see Job.SetMisfire), once it is not
// pending any more: the items it gave this instance that some missed fire
// owes a run (misfireState.takeBefore).
func (m *misfires) afterResharding(ctx context.Context) error {
	exempt := m.state().takeBefore()
	if exempt == nil {
		return nil
	}
	if need, err := m.needSharding(ctx); err != nil || need {
		m.made().restoreBefore(exempt) // pending again: wait for that one
		return err
	}
	items, err := m.job.asg.localItems(ctx)
	if err != nil {
		return err
	}
	gained := without(items, exempt)
	if len(gained) == 0 {
		return nil
	}
	m.log.Info("a fire missed while a resharding was pending; flagging the items it gave this instance", "items", gained)
	return m.set(ctx, gained)
}

// set creates the misfire flags of items.
func (m *misfires) set(ctx context.Context, items []int) error {
	for _, i := range items {
		if err := m.s.createIfNeeded(ctx, m.s.p.Misfire(i)); err != nil {
			return wrap("set misfire", err)
		}
	}
	m.made().note(items)
	return nil
}

// runPending serves own items with a misfire flag that no execution
// serves: the trigger's misfire loop re-runs only that trigger's items, so
// flags wait for the next fire (upstream semantics), and are lost if the
// instance dies meanwhile (found by the chaos suite), when they were set
// on this instance's items during an execution of failover items, when a
// resharding gave this instance items flagged by their previous owner, or
// when a fire found them running on another instance as it ended. Flags
// seen on two idle ticks in a row, on items no instance runs, are cleared
// and run reports true: the caller asks the scheduler to run once, and the
// run is the catch-up. Should a pending resharding move some of them away
// first, that run sets their flags again for their new owner (handOver).
// cache is the job's tree cache.
func (m *misfires) runPending(ctx context.Context, cache *reg.CacheView) (run bool, err error) {
	items := m.cr.misfired(cache)
	if len(items) == 0 {
		m.state().clearSighting()
		return false, nil
	}
	if !m.made().sighted(time.Now(), m.tick()) || m.cr.run.Load() {
		return false, nil
	}
	m.state().clearSighting()
	own, err := m.job.asg.localItems(ctx)
	if err != nil {
		return false, err
	}
	pending, err := m.s.itemsWith(ctx, own, "misfire")
	if err != nil || len(pending) == 0 {
		return false, err
	}
	if running, err := m.s.itemsWith(ctx, pending, "running"); err != nil || len(running) > 0 {
		return false, err
	}
	m.made().setCatchUp(pending)
	if err := m.clear(ctx, pending); err != nil {
		return false, err
	}
	m.log.Info("fire missed and not yet caught up; running the items now", "items", pending)
	return true, nil
}

// handOver is called by the next execution once it knows its items
// (after any resharding): the items runPending cleared the flags of and
// that are not this instance's any more get their flags back, for their
// new owner to serve.
// Items the job does not have (its shardingTotalCount dropped meanwhile)
// get no flag: nobody runs them, and the flag would recreate their
// sharding node after the resharding deleted it.
func (m *misfires) handOver(ctx context.Context, own []int) error {
	items := m.state().takeCatchUp()
	moved := without(items, own)
	if cfg := m.job.conf.cur.Load(); cfg != nil {
		moved = slices.DeleteFunc(moved, func(i int) bool { return i >= cfg.ShardingTotalCount })
	}
	if len(moved) == 0 {
		return nil
	}
	m.log.Info("items whose missed fire was to be caught up here moved away; flagging them for their new owner", "items", moved)
	return m.set(ctx, moved)
}

// ExecuteMisfired implements executor.Facade.
func (j *Job) ExecuteMisfired(ctx context.Context, items []int) (bool, error) {
	return j.mf.executeMisfired(ctx, j.tc.loaded(), j.tc.view, j.fo.state(), items)
}

// JoinCatchUp implements executor.Facade: the catch-up run that an
// execution's misfire loop is about to start also runs this instance's own
// items, besides sc's, whose misfire flag waits: set, and the item neither
// running, disabled nor claimed for failover (those are served where they
// run, or not at all). Without it they wait for the pump, which serves them
// only once this instance is idle, and a chain of catch-up runs can keep
// it busy for many periods: an instance that runs another instance's item
// for failover catches that item up run after run (its owner, itself busy,
// flags every fire it skips, and the failover run serves those, as
// upstream's misfire loop does) while its own item, flagged by its own
// skipped fires, waits (scenarioOwnCatchUpJoinsFailoverChain). ExecuteMisfired
// answered yes (no claims besides sc's items, no resharding pending), so the run
// starts now for sc's items anyway: the joined items run right after the run in
// progress too, as a catch-up, and never twice at once (RegisterBegin's
// transaction). sc is returned unchanged when nothing joins, or when one of sc's
// items runs elsewhere (RegisterBegin then reports it, as for any run).
func (j *Job) JoinCatchUp(ctx context.Context, sc executor.ShardingContexts) (executor.ShardingContexts, error) {
	return j.mf.joinCatchUp(ctx, j.tc.loaded(), sc)
}

// ClearMisfire implements executor.Facade.
func (j *Job) ClearMisfire(ctx context.Context, items []int) error { return j.mf.clear(ctx, items) }

// SetMisfire implements executor.Facade: it sets the misfire flags of this
// instance's items (ExecutionService.setMisfire). While a resharding is pending,
// the fire that was missed would have run the items this instance owns once it
// commits: the items it gains then are flagged too (the event loop sees the
// resharding flag go; misfires.afterResharding). Upstream flags the items owned
// when the busy thread frees.
func (j *Job) SetMisfire(ctx context.Context) error { return j.SetMisfireExcept(ctx, nil) }

// SetMisfireExcept implements executor.Facade: a fire of the
// schedule whose execution runs the failover items except instead of this
// instance's items flags those as SetMisfire does (upstream loses that
// fire for them); the pump runs them once the execution ends
// (misfires.runPending). The items in except are not flagged, nor, with a
// resharding pending, taken for gained when it gives them to this
// instance: the run starting now serves the fire for them. That fire only:
// another fire missed while the same resharding is pending (one skipped
// while they run) flags them once it gives them to this instance. A flag
// it cannot set because the registry connection failed is owed a catch-up
// run instead, as a fire SkipPaused skips.
func (j *Job) SetMisfireExcept(ctx context.Context, except []int) error {
	err := j.mf.setExcept(ctx, except)
	if err != nil {
		j.missedOn(ctx, err)
	}
	return err
}
