package coord

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/ejob-io/ejob/core/executor"
	"github.com/ejob-io/ejob/core/reg"
)

// ExecuteMisfired implements executor.Facade.
func (j *Job) ExecuteMisfired(ctx context.Context, items []int) (bool, error) {
	cfg, err := j.config(ctx)
	if err != nil || !cfg.Misfire {
		return false, err
	}
	if cache := j.treeCache(); cache != nil && j.cr.own(cache, items) {
		if items = j.misfireCandidates(cache, items); len(items) == 0 {
			return false, nil
		}
	}
	if need, err := j.NeedSharding(ctx); err != nil || need {
		return false, err
	}
	if cfg.Failover && j.claimsBesides(items) {
		// Items this instance claimed for failover run first: their
		// trigger starts right after this execution. A catch-up here
		// would put a cut-off item's re-run behind it, and behind every
		// catch-up after it (a 3.5 s item fired every 4 s keeps one
		// going: chaos seed 3 held two claimed items 10.6 s). The flags
		// stay; the pump serves them once the claimed items have run.
		return false, nil
	}
	mis, err := j.s.itemsWith(ctx, items, "misfire")
	if err == nil {
		j.mis.Load().forget(without(items, mis))
	}
	return len(mis) > 0, err
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
	cfg, err := j.config(ctx)
	if err != nil || !cfg.Misfire {
		return sc, err
	}
	own, err := j.localShardingItems(ctx)
	if err != nil {
		return sc, wrap("join catch-up", err)
	}
	waiting, err := j.s.itemsWith(ctx, without(own, sc.Items), "misfire")
	if err != nil || len(waiting) == 0 {
		return sc, wrap("join catch-up", err)
	}
	held, err := j.s.itemsWith(ctx, waiting, "disabled")
	if err != nil {
		return sc, wrap("join catch-up", err)
	}
	if cfg.Failover {
		claimed, err := j.s.itemsWith(ctx, waiting, "failover")
		if err != nil {
			return sc, wrap("join catch-up", err)
		}
		held = append(held, claimed...)
	}
	if waiting = without(waiting, held); len(waiting) == 0 {
		return sc, nil
	}
	items := slices.Sorted(slices.Values(append(slices.Clone(sc.Items), waiting...)))
	out, running, err := j.contexts(ctx, j.treeCache(), items)
	if err != nil {
		return sc, wrap("join catch-up", err)
	}
	if len(out.Items) == len(sc.Items) || slices.ContainsFunc(sc.Items, func(i int) bool { return slices.Contains(running, i) }) {
		return sc, nil
	}
	out.Failover = sc.Failover
	j.misfire().setJoined(out.TaskID, without(out.Items, sc.Items))
	j.log.Info("a catch-up run of an execution's items also runs this instance's own items whose missed fires wait",
		"items", sc.Items, "joined", without(out.Items, sc.Items))
	return out, nil
}

// restoreJoined sets again the flags of the own items JoinCatchUp added to
// the catch-up run sc, whose running-node transaction failed on an item
// running elsewhere (the owner of a failover item started it as the chain
// paused): the misfire loop cleared their flags, and they did not run.
func (j *Job) restoreJoined(ctx context.Context, sc executor.ShardingContexts) {
	items := j.mis.Load().takeJoined(sc.TaskID)
	if len(items) == 0 {
		return
	}
	j.log.Info("a catch-up run did not begin; flagging again the own items it had joined", "items", items)
	if err := j.setMisfire(ctx, items); err != nil {
		j.log.Warn("cannot flag again the own items of a catch-up run that did not begin", "items", items, "error", err)
	}
}

// ClearMisfire implements executor.Facade.
func (j *Job) ClearMisfire(ctx context.Context, items []int) error {
	for _, i := range items {
		if err := j.s.c.Delete(ctx, j.s.p.Misfire(i), reg.AnyVersion); err != nil && !errors.Is(err, reg.ErrNoNode) {
			return wrap("clear misfire", err)
		}
	}
	j.mis.Load().forget(items)
	return nil
}

// SetMisfire implements executor.Facade: it sets the misfire flags of this
// instance's items (ExecutionService.setMisfire). While a resharding is pending,
// the fire that was missed would have run the items this instance owns once it
// commits: the items it gains then are flagged too (the event loop sees the
// resharding flag go; misfireAfterResharding). Upstream flags the items owned
// when the busy thread frees.
func (j *Job) SetMisfire(ctx context.Context) error { return j.SetMisfireExcept(ctx, nil) }

// SetMisfireExcept implements executor.Facade: a fire of the
// schedule whose execution runs the failover items except instead of this
// instance's items flags those as SetMisfire does (upstream loses that
// fire for them); the pump runs them once the execution ends
// (runPendingMisfires). The items in except are not flagged, nor, with a
// resharding pending, taken for gained when it gives them to this
// instance: the run starting now serves the fire for them.
func (j *Job) SetMisfireExcept(ctx context.Context, except []int) error {
	// The pending resharding is looked at first, and the deferral
	// registered before the items are read: a commit in between then gives
	// either the items after it, or all of them once it is seen.
	need, err := j.NeedSharding(ctx)
	if err != nil {
		return wrap("set misfire", err)
	}
	if need {
		j.misfire().deferToResharding()
		j.wakePump()
	}
	items, err := j.LocalItems(ctx)
	if err != nil {
		return wrap("set misfire", err)
	}
	if need {
		j.misfire().addBefore(items)
		j.misfire().addBefore(except)
	}
	if items = without(items, except); len(except) > 0 && len(items) > 0 {
		j.log.Info("a fire of the schedule runs failover items instead of this instance's items; they run right after it",
			"failover_items", except, "items", items, "resharding_pending", need)
	}
	return j.setMisfire(ctx, items)
}

// claimsBesides reports whether this instance holds claims of failover
// items other than items: recorded by this process (rememberClaim), or a
// failover node naming it in the tree cache.
func (j *Job) claimsBesides(items []int) bool {
	if j.foState().claimedBesides(items) {
		return true
	}
	if j.cache == nil {
		return false
	}
	names, _ := j.cache.Children(j.s.p.Sharding())
	for _, i := range itemNumbers(names) {
		if v, _, ok := j.cache.Get(j.s.p.Failover(i)); ok && string(v) == j.id && !slices.Contains(items, i) {
			return true
		}
	}
	return false
}

// misfireAfterResharding flags the items gained by the resharding that was
// pending when a fire was missed (see SetMisfire), once it is no longer
// pending.
func (j *Job) misfireAfterResharding(ctx context.Context) error {
	before := j.mis.Load().takeBefore()
	if before == nil {
		return nil
	}
	if need, err := j.NeedSharding(ctx); err != nil || need {
		j.misfire().restoreBefore(before) // pending again: wait for that one
		return err
	}
	items, err := j.LocalItems(ctx)
	if err != nil {
		return err
	}
	gained := without(items, before)
	if len(gained) == 0 {
		return nil
	}
	j.log.Info("a fire missed while a resharding was pending; flagging the items it gave this instance", "items", gained)
	return j.setMisfire(ctx, gained)
}

// setMisfire creates the misfire flags of items.
func (j *Job) setMisfire(ctx context.Context, items []int) error {
	for _, i := range items {
		if err := j.s.createIfNeeded(ctx, j.s.p.Misfire(i)); err != nil {
			return wrap("set misfire", err)
		}
	}
	j.misfire().note(items)
	return nil
}

// runPendingMisfires serves own items with a misfire flag that no
// execution serves: the trigger's misfire loop re-runs only that trigger's
// items, so flags wait for the next fire (upstream semantics), and are lost
// if the instance dies meanwhile (found by the chaos suite), when they were
// set on this instance's items during an execution of failover items, when
// a resharding gave this instance items flagged by their previous owner, or
// when a fire found them running on another instance as it ended. Flags
// seen on two idle ticks in a row, on items no instance runs, are cleared
// and the scheduler is asked to run once; the run is the catch-up. Should
// a pending resharding move some of them away first, that run sets their
// flags again for their new owner (handOverCatchUp).
func (j *Job) runPendingMisfires(ctx context.Context) error {
	items := j.cr.misfired(j.cache)
	if len(items) == 0 {
		j.mis.Load().clearSighting()
		return nil
	}
	if !j.misfire().sighted(time.Now(), j.failoverTick()) || j.att.running.Load() {
		return nil
	}
	j.mis.Load().clearSighting()
	own, err := j.localShardingItems(ctx)
	if err != nil {
		return err
	}
	pending, err := j.s.itemsWith(ctx, own, "misfire")
	if err != nil || len(pending) == 0 {
		return err
	}
	if running, err := j.s.itemsWith(ctx, pending, "running"); err != nil || len(running) > 0 {
		return err
	}
	j.misfire().setCatchUp(pending)
	if err := j.ClearMisfire(ctx, pending); err != nil {
		return err
	}
	j.log.Info("fire missed and not yet caught up; running the items now", "items", pending)
	j.failover().trigger()
	return nil
}

// handOverCatchUp is called by the next execution once it knows its items
// (after any resharding): the items runPendingMisfires cleared the flags of
// and that are no longer this instance's get their flags back, for their
// new owner to serve.
// Items the job no longer has (its shardingTotalCount dropped meanwhile)
// get no flag: nobody runs them, and the flag would recreate their
// sharding node after the resharding deleted it.
func (j *Job) handOverCatchUp(ctx context.Context, own []int) error {
	items := j.mis.Load().takeCatchUp()
	moved := without(items, own)
	if cfg := j.conf.cur.Load(); cfg != nil {
		moved = slices.DeleteFunc(moved, func(i int) bool { return i >= cfg.ShardingTotalCount })
	}
	if len(moved) == 0 {
		return nil
	}
	j.log.Info("items whose missed fire was to be caught up here moved away; flagging them for their new owner", "items", moved)
	return j.setMisfire(ctx, moved)
}
