package coord

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ejob-io/ejob/core/config"
	"github.com/ejob-io/ejob/core/executor"
	"github.com/ejob-io/ejob/core/reg"
	"github.com/ejob-io/ejob/core/reg/recipe"
)

// An attempt is one fire's hold on its items on this instance: the tree
// cache it was decided on, the session and lease it begins under, its
// items, and their running nodes from the running-node transaction
// (begin) to their deletion (complete, or undo when the execution does
// not start). Every fire makes one, in one of three ways:
//
//   - a trigger whose contexts ShardingContexts computed with reads of the
//     server starts its attempt in RegisterBegin (begin);
//   - a steady trigger, whose contexts the tree cache shows, begins it in
//     ShardingContexts together with the stat of leader/sharding
//     (beginChecked, pipeline.go) and keeps it only when the stat confirms
//     what the cache showed; RegisterBegin then adopts it (adopt);
//   - a pre-armed fire (prearm.go) begins it that way ahead of the
//     scheduled time; at that time ConfirmArmed checks it (confirm) and
//     RegisterBegin adopts it, or Disarm undoes it.
//
// attempts owns the job's attempts: the one begun ahead of RegisterBegin
// (pending, until adopted or undone) and the one of the execution that
// runs (cur, from RegisterBegin to RegisterCompleted), and the run flag
// that says an execution is between the two.
type attempt struct {
	t       *attempts
	cache   *reg.CacheView // the tree cache it was decided on (nil: none)
	sess    *reg.Session   // the session it begins in
	lease   *lease         // the lease its execution runs under
	batched batched        // how beginChecked sends the stat and its transaction
	items   []int          // ascending; never modified
	// czxids are the Czxids of the running nodes its begin created, in
	// the order of items (the fencing tokens; nil: none created).
	czxids []int64
	// deadline is a pending attempt's: its running nodes are deleted
	// unless RegisterBegin adopts it by then (attempts.expire).
	deadline time.Time
}

// preBeginTimeout bounds how long running nodes sent with a trigger's
// resharding check wait for RegisterBegin to adopt them.
const preBeginTimeout = time.Second

// attempts is the job's attempts, their one owner (see attempt).
type attempts struct {
	*jobBase
	inProcess bool // reg.IsInProcess: beginChecked sends its two requests in turn
	// What a trigger's contexts and begin read (through job, but for
	// the tree cache's reads): the tree cache and its reads, the config,
	// the session and lease, the assignment, the misfire and failover
	// state, the shutdown.
	cr cacheReads
	// arm estimates the lead of a pre-armed fire (prearm.go); made at the
	// first steady trigger (lead), read by the trigger loop (PreArmLead)
	// on its own goroutine: atomic.
	arm atomic.Pointer[armLead]

	// running: an execution is between its begin and its completion (or
	// an attempt's running nodes exist ahead of RegisterBegin).
	running runFlag

	mu      sync.Mutex // held across an undo: adoption and undo never overlap
	pending *attempt   // begun ahead of RegisterBegin, not yet adopted
	cur     *attempt   // the running execution's (RegisterBegin to RegisterCompleted)
	// timer calls expire preBeginTimeout after the last pending attempt;
	// made at the job's first, re-armed by the next ones.
	timer *time.Timer
}

// start returns an attempt of sess and l decided on cache, for items set
// later (the contexts are computed once the fence is known to hold). It
// sends its stat and transaction as plain requests unless the caller sets
// its batched.
func (t *attempts) start(cache *reg.CacheView, sess *reg.Session, l *lease) *attempt {
	return &attempt{t: t, cache: cache, sess: sess, lease: l, batched: batched{c: t.s.c}}
}

// fence is the check of this instance's node at the version the tree
// cache shows, provided the cache shows it owned by the attempt's
// session, the current one; ok is false otherwise.
func (a *attempt) fence() (reg.Op, bool) {
	if a.cache == nil || a.sess == nil {
		return reg.Op{}, false
	}
	_, st, ok := a.cache.Peek(a.t.paths.instance())
	if !ok || st.EphemeralOwner != a.sess.ID() || a.sess.Err() != nil || a.t.s.c.Session() != a.sess {
		return reg.Op{}, false
	}
	return reg.CheckOp(a.t.paths.instance(), st.Version), true
}

// ops are first, then the creations of the items' running nodes
// (persistent with failover, so that a crash leaves them for the
// survivors).
func (a *attempt) ops(cfg *config.JobConfiguration, first ...reg.Op) []reg.Op {
	mode := reg.Ephemeral
	if cfg.Failover {
		mode = reg.Persistent
	}
	ops := make([]reg.Op, len(first), len(first)+len(a.items))
	copy(ops, first)
	id := a.t.paths.idData()
	for _, i := range a.items {
		ops = append(ops, reg.CreateOp(a.t.paths.item(i, "running"), id, mode))
	}
	return ops
}

// begin is RegisterBegin's: with monitorExecution it creates every
// item's running node in one transaction fenced on this instance's node
// in the attempt's session, and the attempt becomes the running
// execution's. It writes nothing when the session is gone
// (ErrSessionLost) or an item already runs elsewhere (ErrItemRunning). A
// stale running node of this instance is replaced.
func (a *attempt) begin(ctx context.Context, cfg *config.JobConfiguration) error {
	if !cfg.MonitorExecution || len(a.items) == 0 {
		a.t.run(a)
		return nil
	}
	ops := a.ops(cfg)
	// The fast path: the transaction is the trigger's first request since
	// the resharding check, fenced on the instance node's version as the
	// tree cache shows it. Should it fail (a stale running node of this
	// instance, one of another instance, a changed or gone instance node),
	// the path below reads what it needs and reports the failure exactly.
	if fence, ok := a.fence(); ok {
		if res, err := a.t.s.c.Multi(ctx, append([]reg.Op{fence}, ops...)...); err == nil {
			a.noteCreated(res)
			a.t.run(a)
			return nil
		}
	}
	s := a.t.s
	for _, i := range a.items {
		if _, err := s.deleteIfValue(ctx, s.p.Running(i), a.t.id); err != nil {
			return err
		}
	}
	fence, err := recipe.NewFence(ctx, s.c, s.p.Instance(a.t.id))
	if err != nil {
		return fmt.Errorf("register begin: %w (%w)", ErrSessionLost, err)
	}
	res, err := recipe.FencedMulti(ctx, s.c, fence, ops...)
	if err != nil {
		var me *reg.MultiError
		switch {
		case errors.Is(err, recipe.ErrFenced):
			return fmt.Errorf("register begin: %w (%w)", ErrSessionLost, err)
		case errors.As(err, &me) && errors.Is(err, reg.ErrNodeExists):
			return fmt.Errorf("register begin: %w: %s", ErrItemRunning, me.Op.Path)
		}
		return wrap("register begin", err)
	}
	a.noteCreated(res)
	a.t.run(a)
	return nil
}

// noteCreated keeps the Czxids of the running nodes the attempt's begin
// created: res are the results of its transaction, whose last ops create
// the running nodes of a.items in that order (ops).
func (a *attempt) noteCreated(res []reg.OpResult) {
	if len(res) < len(a.items) {
		return
	}
	a.czxids = make([]int64, len(a.items))
	for k, r := range res[len(res)-len(a.items):] {
		a.czxids[k] = r.Czxid
	}
}

// putFencingTokens puts each item's fencing token into sc (shared by its
// copies): the Czxid of the running node the attempt created for it, no
// request of its own; none without monitorExecution (no running node).
func (a *attempt) putFencingTokens(sc executor.ShardingContexts) {
	if sc.FencingTokens == nil || len(a.czxids) != len(a.items) {
		return
	}
	for k, i := range a.items {
		sc.FencingTokens[i] = a.czxids[k]
	}
}

// run makes a the running execution's attempt.
func (t *attempts) run(a *attempt) {
	t.mu.Lock()
	t.cur = a
	t.mu.Unlock()
	t.running.Store(true)
}

// finish returns the running execution's attempt (nil: none began) and
// forgets it; RegisterCompleted then completes it. The run flag goes off
// with done.
func (t *attempts) finish() *attempt {
	t.mu.Lock()
	defer t.mu.Unlock()
	a := t.cur
	t.cur = nil
	return a
}

// done ends the run flag: no execution runs.
func (t *attempts) done() { t.running.Store(false) }

// cutOff reports whether a, the attempt of an execution that ended, was
// cut off: it never began, or its lease ended, or the client's session
// is not the attempt's. cause is why.
func (a *attempt) cutOff(sess *reg.Session) (cause error, cut bool) {
	if a != nil && a.lease.live() && a.lease.sess == sess {
		return nil, false
	}
	cause = ErrSessionLost
	if a != nil && a.lease != nil && a.lease.cause() != nil {
		cause = a.lease.cause()
	}
	return cause, true
}

// complete deletes the running nodes of the items of an execution that
// ended, and with failover their failover and failovering nodes, only
// those that name this instance (3.0.5 semantics; failed is not used).
func (a *attempt) complete(ctx context.Context, items []int, cfg *config.JobConfiguration) error {
	if a.completeFast(ctx, items, cfg.MonitorExecution, cfg.Failover) {
		return nil
	}
	s := a.t.s
	id := a.t.id
	var errs []error
	for _, i := range items {
		if cfg.MonitorExecution {
			_, err := s.deleteIfValue(ctx, s.p.Running(i), id)
			errs = append(errs, err)
		}
		if cfg.Failover {
			_, err := s.deleteIfValue(ctx, s.p.Failover(i), id)
			if err == nil {
				a.t.job.fo.state().forgetClaims(i)
			}
			errs = append(errs, err)
			_, err = s.deleteIfValue(ctx, s.p.Failovering(i), id)
			errs = append(errs, err)
		}
	}
	return wrap("register completed", errors.Join(errs...))
}

// completeFast deletes the items' running nodes (and, with failover,
// their failover and failovering nodes naming this instance) in one
// transaction, from what the tree cache and this process know. It reports
// whether it did; when it did not (the cache does not know enough, or the
// transaction failed because a node is gone or changed), complete takes
// the fresh path, which reads each node and deletes only this instance's
// (and reports a failure that is not about the nodes).
//
// The running nodes were created by this attempt's begin at version 0;
// the cache may not have seen them yet. A node the cache shows naming
// another instance sends complete to the fresh path: the cache may not
// have seen this execution replace it. Another instance can only replace
// this instance's running node after its instance node is gone (the
// stale sweep, crash handling), i.e. after its session ended;
// RegisterCompleted handles that case before (the attempt was cut off).
func (a *attempt) completeFast(ctx context.Context, items []int, monitor, failover bool) bool {
	cache := a.t.job.tc.loaded()
	if cache == nil {
		return false
	}
	paths, id := &a.t.paths, a.t.id
	// Room for the fence and each item's deletions: one allocation.
	perItem := 1
	if failover {
		perItem = 3
	}
	ops := make([]reg.Op, 1, 1+perItem*len(items))
	blind := false // a running node deleted at version 0, unseen by the cache
	for _, i := range items {
		if monitor {
			v, st, ok := cache.Peek(paths.item(i, "running"))
			switch {
			case !ok:
				// Not in the cache yet (a run shorter than the cache's
				// round): deleted at version 0, fenced below.
				blind = true
				ops = append(ops, reg.DeleteOp(paths.item(i, "running"), 0))
			case string(v) == id:
				ops = append(ops, reg.DeleteOp(paths.item(i, "running"), st.Version))
			default:
				// Another instance's node in the cache may be stale: a
				// failover run's begin replaced the crashed owner's node
				// a moment ago and the cache has not caught up. Leaving
				// it would leave this run's node behind for good (a
				// stuck running node blocks resharding): read it fresh.
				return false
			}
		}
		if !failover {
			continue
		}
		if a.t.job.fo.state().claimed(i) {
			return false // a claim the cache may not show yet
		}
		for _, n := range []string{"failover", "failovering"} {
			v, st, ok := cache.Peek(paths.item(i, n))
			switch {
			case ok && string(v) == id:
				ops = append(ops, reg.DeleteOp(paths.item(i, n), st.Version))
			case ok:
				return false // possibly stale, as above
			}
		}
	}
	if len(ops) == 1 {
		return true
	}
	if blind {
		// A version-0 delete matches any node created at that path:
		// fenced on this instance's node of the current session as the
		// cache shows it, so that it cannot land after the session ended
		// and another instance's node replaced ours.
		sess := a.t.s.c.Session()
		if sess == nil {
			return false
		}
		check := attempt{t: a.t, cache: cache, sess: sess}
		fence, ok := check.fence()
		if !ok {
			return false
		}
		ops[0] = fence
	} else {
		ops = ops[1:]
	}
	_, err := a.t.s.c.Multi(ctx, ops...)
	return err == nil
}

// undo deletes the attempt's running nodes that name this instance, one
// by one. A transaction deleting them at version 0, fenced on this
// instance's node at the version the begin saw, would prove nothing once
// the session the begin ran in has ended: the instance node of the next
// session has the same version (0), and a running node another instance
// created meanwhile has the same version as ours (0). Such an undo, made
// in the next session for a begin whose outcome a lost connection left
// unknown, deletes the node of the instance that took the item over, and
// the item then runs on both (TestUndoBeginInALaterSession).
func (a *attempt) undo(ctx context.Context) error {
	s := a.t.s
	for _, i := range a.items {
		if _, err := s.deleteIfValue(ctx, a.t.paths.item(i, "running"), a.t.id); err != nil {
			return err
		}
	}
	return nil
}

// hold keeps a, whose running nodes a trigger created ahead of
// RegisterBegin, for RegisterBegin to adopt, and arms its undo should
// RegisterBegin not come.
func (t *attempts) hold(a *attempt) {
	a.deadline = time.Now().Add(preBeginTimeout)
	t.mu.Lock()
	defer t.mu.Unlock()
	t.pending = a
	if t.timer == nil {
		t.timer = time.AfterFunc(preBeginTimeout, t.expire)
	} else {
		t.timer.Reset(preBeginTimeout)
	}
}

// expire deletes the running nodes of the pending attempt when
// RegisterBegin has not adopted it by its deadline. A call for an attempt
// adopted since (the timer's func may start just as it is stopped) finds
// the next one before its deadline, or none.
func (t *attempts) expire() {
	t.mu.Lock()
	a := t.pending
	t.mu.Unlock()
	if a == nil || time.Now().Before(a.deadline) {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), preBeginTimeout)
	defer cancel()
	if t.drop(ctx, a) {
		t.log.Warn("running nodes of a trigger whose execution did not begin were deleted", "items", a.items)
	}
}

// adopt returns the pending attempt when RegisterBegin of items under l,
// the live lease it would use, finds it of those items under that lease
// (nil otherwise); the attempt is then the running execution's. A pending attempt
// of other items, or of a lease that ended, is undone first (the caller
// then begins an attempt of its own).
func (t *attempts) adopt(ctx context.Context, l *lease, items []int) *attempt {
	t.mu.Lock()
	a := t.pending
	if a == nil {
		t.mu.Unlock()
		return nil
	}
	if l != nil && l == a.lease && slices.Equal(a.items, items) {
		t.timer.Stop()
		t.pending = nil
		t.cur = a
		t.mu.Unlock()
		return a
	}
	t.mu.Unlock()
	t.drop(ctx, a)
	return nil
}

// confirm reports whether the attempt pending is one of items under l,
// the live lease (ConfirmArmed: the tree checks are the caller's).
func (t *attempts) confirm(l *lease, items []int) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.pending != nil && t.pending.lease == l && slices.Equal(t.pending.items, items)
}

// pendingFor reports whether items are those of the attempt begun ahead
// of RegisterBegin and not adopted yet.
func (t *attempts) pendingFor(items []int) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.pending != nil && slices.Equal(t.pending.items, items)
}

// drop undoes a, or whatever attempt is pending when a is nil, unless
// RegisterBegin adopted it, and reports whether it did. A failed undo is
// left to the recovery of this instance's running nodes.
func (t *attempts) drop(ctx context.Context, a *attempt) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.pending == nil || (a != nil && t.pending != a) {
		return false
	}
	a, t.pending = t.pending, nil
	t.timer.Stop()
	if err := a.undo(ctx); err != nil {
		t.log.Warn("cannot delete the running nodes of a trigger that did not begin; left to recovery", "items", a.items, "error", err)
		t.leaveToRecovery()
	}
	t.running.Store(false)
	return true
}

// leaveToRecovery leaves running nodes an undo could not delete to the
// recovery of this instance's running nodes, and wakes the pump, which
// runs it: on a steady trigger the events of their creation arm no tick
// (jobLoop.runningNodeEvent).
func (t *attempts) leaveToRecovery() {
	t.job.fo.leaveToRecovery()
	// The job's event loop, whose pump recovers them.
	t.job.loop.armPump()
}
