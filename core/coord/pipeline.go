package coord

import (
	"context"
	"errors"
	"github.com/ejob-io/ejob/core/instance"
	"slices"
	"time"

	"github.com/ejob-io/ejob/core/config"
	"github.com/ejob-io/ejob/core/executor"
	"github.com/ejob-io/ejob/core/reg"
)

// A steady trigger's two requests before its first item, the stat of
// leader/sharding (assignment.settled) and the running-node transaction
// (attempt.begin's), are sent together: pipelinedContexts computes the
// whole trigger from the tree cache, and its attempt sends both
// (beginChecked) and keeps the running nodes only when the stat confirms
// what the cache showed (no resharding pending, the assignment the cache
// showed is the one committed last). Otherwise it deletes them again
// (attempt.undo) and the trigger takes the sequential path, which reads
// the stat afresh and, with a resharding pending, waits for it as
// upstream does. RegisterBegin then adopts the attempt instead of writing
// the running nodes (attempts.adopt).
//
// Why this keeps every guarantee of docs/guarantees.md:
//
//   - No item starts before the stat has confirmed the assignment: the
//     running nodes are kept only then, and the items run after
//     ShardingContexts returns. The confirmation is the one the sequential
//     path makes (assignment.cached's argument) on a cache read before the
//     stat was sent rather than after its answer: the assignment the
//     cache showed is no newer than the state the stat describes, and a
//     commit after it would have moved pzxid past the Czxid of the
//     instance nodes it showed.
//   - Never two instances running one item at once: the transaction is
//     the same one, fenced on this instance's node in its current session
//     (the fence from the cache, checked by the server), and creating a
//     node fails on another instance's node. On a remote registry it may
//     reach the server in one Multi with other jobs' transactions
//     (batched): it still commits all its ops or none; when that Multi
//     fails on an op, nothing was applied, the transaction of that op
//     fails and the others are sent again; when its outcome is unknown
//     (the connection lost) it is not sent again, and is undone as a lone
//     transaction would be.
//   - The server answers one session's requests in the order it received
//     them, and go-zookeeper writes the requests of one connection in the
//     order they were queued (one send loop over one channel), but this
//     client queues each call from a goroutine of its own, so either may
//     come first. Nothing relies on the order: when the stat confirms the
//     cache, no flag existed from the commit the cache showed until the
//     stat; a transaction applied before the stat applied in that
//     interval, one applied after it is the sequential path's order.
//   - What others can observe in between, when the stat shows a
//     resharding pending (or the cache out of date): this instance's
//     running nodes of the items the cache assigned it appear and vanish
//     within a round trip, their items never having started. A Java peer
//     or the console cannot tell them from an execution of items that
//     return at once. A leader that read the running nodes while they
//     existed waits one more poll before committing; one that read before
//     they appeared may commit while they exist, and then they vanish
//     without a run. Upstream already does more in that race: an
//     instance whose check of the flag came just before the flag was set
//     goes on to create its running nodes and run its old items while the
//     leader reshards. A resharding commit never conflicts with the nodes
//     (it does not touch running nodes), and the undo deletes only the
//     nodes that name this instance (attempt.undo), so it never deletes
//     another instance's node, whatever became of the session meanwhile.
//   - Between ShardingContexts and RegisterBegin the executor posts the
//     staging event, asks MisfireIfRunning (the pre-begun items are this
//     execution's: false) and runs the before-listeners; the running
//     nodes exist during those, where upstream creates them after the
//     before-listeners: to an observer the execution's nodes appear
//     earlier by that time, and a crash in that window leaves them to
//     failover as a crash right after RegisterBegin does. An execution
//     abandoned in that window (a listener's error propagated) has them
//     deleted after preBeginTimeout. From just before the transaction this instance
//     counts as running (attempts.running), so the pump, a console trigger and
//     the recovery of its running nodes leave them alone, as they leave
//     a run's; it stops counting when they are deleted again. When the
//     deletion fails (the connection is lost), the nodes are left to that
//     recovery (needRecover), as a cut-off run's are.

// pipelinedContexts is ShardingContexts for a steady trigger: when the
// tree cache shows everything the trigger needs (no resharding flag, no
// failover work of this instance, its items with no failover, disabled or
// running flag), its attempt sends the stat of leader/sharding and the
// running-node transaction at once (beginChecked), and it returns the
// contexts with the running nodes created (ok). ok is false when the
// cache does not suffice or the stat did not confirm it (the running
// nodes are then deleted again); the caller takes the sequential path. An
// error is one of the undo, which left running nodes behind.
func (t *attempts) pipelinedContexts(ctx context.Context, cfg *config.JobConfiguration, cache *reg.CacheView, bt batched) (executor.ShardingContexts, bool, error) {
	var none executor.ShardingContexts
	items, minCzxid, ok := t.steadyItemsInCache(cfg, cache)
	if !ok {
		return none, false, nil
	}
	sess, l, err := t.job.rg.sessionLease()
	if err != nil {
		return none, false, nil
	}
	a := t.start(cache, sess, l)
	a.batched = bt
	fence, ok := a.fence()
	if !ok {
		return none, false, nil
	}
	sc, running, err := t.contexts(ctx, cache, items)
	if err != nil || len(running) > 0 || len(sc.Items) == 0 {
		return none, false, nil
	}
	a.items = slices.Clone(sc.Items)
	kept, rtt, err := a.beginChecked(ctx, cfg, fence, func(pzxid int64) bool { return t.job.asg.settledAt(minCzxid, pzxid) })
	t.lead().record(rtt) // the lead of a pre-arm (prearm.go)
	if !kept {
		return none, false, err
	}
	return sc, true, t.job.mf.handOver(ctx, sc.Items)
}

// beginChecked sends the attempt's running-node transaction, fenced by
// fence, with the stat of leader/sharding, and keeps the running nodes
// (pending, for RegisterBegin to adopt) only when the stat shows no flag
// and settledAt its pzxid (the assignment the cache showed is the one
// committed last); else it undoes them. It returns the round trip of the
// two requests (for the pre-arm's lead). An error is one of the undo,
// which left running nodes behind (to the recovery of this instance's
// running nodes, once this trigger has ended, as after a cut-off run).
func (a *attempt) beginChecked(ctx context.Context, cfg *config.JobConfiguration, fence reg.Op, settledAt func(pzxid int64) bool) (kept bool, rtt time.Duration, err error) {
	t := a.t
	// From here this instance counts as running (see above), before its
	// running nodes can be seen.
	t.running.Store(true)
	sent := time.Now()
	f, res, merr := a.statAndBegin(ctx, a.ops(cfg, fence))
	rtt = time.Since(sent)
	settled := f.err == nil && f.exists && f.st.NumChildren == 0 && settledAt(f.st.Pzxid)
	switch {
	case merr == nil && settled:
		a.noteCreated(res)
		t.hold(a)
		return true, rtt, nil
	case merr == nil || !isMultiError(merr):
		// Created, or maybe (the outcome of a transaction cut off by a
		// lost connection is unknown): delete them again.
		t.log.Debug("resharding pending or assignment unconfirmed at the trigger; running nodes undone", "items", a.items, "error", merr)
		if err := a.undo(ctx); err != nil {
			t.leaveToRecovery()
			t.running.Store(false)
			return false, rtt, wrap("undo running nodes", err)
		}
	}
	t.running.Store(false)
	return false, rtt, nil
}

// isMultiError reports whether err is a transaction's failure on one of
// its ops (the transaction was applied by none), as opposed to one whose
// outcome is unknown. Its target is its own: errors.As moves it to the
// heap, which the caller's successful trigger would pay for.
func isMultiError(err error) bool {
	var me *reg.MultiError
	return errors.As(err, &me)
}

// flagsStat is the answer to the stat of leader/sharding.
type flagsStat struct {
	st     reg.Stat
	exists bool
	err    error
}

// statAndBegin sends the stat of leader/sharding and the running-node
// transaction ops together (beginChecked), both batched with the host's
// other jobs' (a.batched): the stat from a goroutine of its own, so that
// both round trips overlap; on an in-process registry (reg.IsInProcess)
// the stat, then the transaction, from this goroutine.
func (a *attempt) statAndBegin(ctx context.Context, ops []reg.Op) (flagsStat, []reg.OpResult, error) {
	if a.t.inProcess {
		f := a.statFlags(ctx)
		res, err := a.t.s.c.Multi(ctx, ops...)
		return f, res, err
	}
	flags := make(chan flagsStat, 1)
	go func() { flags <- a.statFlags(ctx) }()
	res, err := a.batched.multi(ctx, ops)
	return <-flags, res, err
}

// statFlags is the stat of leader/sharding (a method, not a closure the
// in-process path would allocate for nothing).
func (a *attempt) statFlags(ctx context.Context) flagsStat {
	st, exists, err := a.batched.stat(ctx, a.t.paths.flags())
	return flagsStat{st, exists, err}
}

// steadyItemsInCache returns this instance's items for a steady trigger
// from the tree cache, and the oldest Czxid of the instance nodes the
// cache showed (for assignment.settledAt); ok is false when a step of
// ShardingContexts would need the server: a resharding flag, a recovery
// or failover work of this instance, an unavailable server, a catch-up
// moving away, a failover, disabled or running flag on an item, or no
// monitorExecution (no transaction to pipeline).
func (t *attempts) steadyItemsInCache(cfg *config.JobConfiguration, cache *reg.CacheView) (items []int, minCzxid int64, ok bool) {
	if cache == nil || !cfg.MonitorExecution || t.job.life.shutdown.Load() || t.job.fo.state().recovering() || t.running.Load() {
		return nil, 0, false
	}
	t.paths.warm(cfg.ShardingTotalCount)
	flagged := false
	if found := cache.EachChild(t.paths.flags(), func(string) bool { flagged = true; return false }); !found || flagged {
		return nil, 0, false
	}
	if cfg.Failover && (t.job.fo.state().hasClaims() || t.cr.claimed(cache)) {
		return nil, 0, false
	}
	if avail, found := t.cr.available(cache); !found || !avail {
		return nil, 0, false
	}
	items, minCzxid, ok = t.job.asg.inCache(cache, cfg.ShardingTotalCount)
	if !ok || len(items) == 0 {
		return nil, 0, false
	}
	if len(t.job.mf.state().catchUpMoved(items)) > 0 {
		return nil, 0, false
	}
	if cfg.Failover && len(t.cr.itemsWith(cache, items, "failover")) > 0 {
		return nil, 0, false
	}
	if len(t.cr.itemsWith(cache, items, "disabled")) > 0 || len(t.cr.running(cache, items)) > 0 {
		return nil, 0, false
	}
	return items, minCzxid, true
}

// contexts is ExecutionContextService.getJobShardingContext; it also
// returns the items it dropped because they run (monitorExecution).
//
// The config comes from the tree cache (upstream reads it from the
// server here): a change of the config made within one watch delivery of
// the trigger applies from the next one, as one made just after the read
// would. A change of shardingTotalCount takes effect through a resharding,
// whose flag shardingIfNecessary reads fresh.
func (t *attempts) contexts(ctx context.Context, cache *reg.CacheView, items []int) (executor.ShardingContexts, []int, error) {
	cfg, err := t.job.conf.get(ctx)
	if err != nil {
		return executor.ShardingContexts{}, nil, err
	}
	var running []int
	if cfg.MonitorExecution {
		running, err = t.cr.runningItems(ctx, cache, items)
		if err != nil {
			return executor.ShardingContexts{}, nil, err
		}
		items = without(items, running)
	}
	params, err := t.job.conf.itemParameters(cfg.ShardingItemParameters)
	if err != nil {
		return executor.ShardingContexts{}, nil, err
	}
	sc := executor.ShardingContexts{
		TaskID:                 instance.NewTaskID(cfg.JobName, items, t.id),
		JobName:                cfg.JobName,
		ShardingTotalCount:     cfg.ShardingTotalCount,
		JobParameter:           cfg.JobParameter,
		Items:                  append([]int{}, items...),
		ShardingItemParameters: map[int]string{},
		FencingTokens:          map[int]int64{},
	}
	for _, i := range items {
		if p, ok := params[i]; ok {
			sc.ShardingItemParameters[i] = p
		}
	}
	return sc, running, nil
}
