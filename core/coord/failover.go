package coord

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"time"

	"github.com/ejob-io/ejob/core/reg"
	"github.com/ejob-io/ejob/core/reg/recipe"
)

// failover is the failover protocol of one job on one instance (upstream's
// FailoverService and FailoverListenerManager): the crash listeners, the claim
// of queued items under the failover latch, and the hand-over of a gone owner's
// misfires. It owns the failover state (failoverState); what it reads of the
// rest of the job are the owners in failoverDeps. The job makes it at its first
// use (failoverSlot).
type failover struct {
	failoverState
	*failoverDeps
}

// failoverDeps are the owners the failover protocol reads: the config,
// the servers and instances as resharding sees them (assignment,
// leadership), and whether an execution may start here (the pause, the
// run flag, the shutdown). jobBase's hooks: FailedOver reports a claimed
// item, Trigger asks the scheduler to run.
type failoverDeps struct {
	*jobBase
}

// onInstanceCrashed is JobCrashedJobListener: instance x's
// node was deleted.
func (f *failover) onInstanceCrashed(ctx context.Context, x string) error {
	cfg, err := f.job.conf.get(ctx)
	if err != nil || !cfg.Failover {
		return err
	}
	// The deletion event may be stale: an instance that re-registered has
	// its node back, and must not have its running items taken away.
	if _, back, err := f.s.c.Exists(ctx, f.s.p.Instance(x)); err != nil || back {
		if back {
			f.log.Info("instance node was deleted and is back; not failing its items over", "instance", x)
		}
		return err
	}
	if err := f.failOverCrashedRunning(ctx, x); err != nil {
		return err
	}
	queued, err := f.queueMisfiresOf(ctx, x)
	if err != nil || !queued {
		return err
	}
	return f.failoverIfNecessary(ctx)
}

// failOverCrashedRunning is upstream's JobCrashedJobListener action: the
// items x was failing over, else the items x was running, are queued for
// failover.
func (f *failover) failOverCrashedRunning(ctx context.Context, x string) error {
	fo, err := f.itemsWithValue(ctx, "failovering", x)
	if err != nil {
		return err
	}
	if len(fo) > 0 {
		for _, i := range fo {
			queued, err := f.queueIfNames(ctx, i, "failovering", x)
			if err != nil {
				return err
			}
			if queued {
				f.log.Info("instance crashed during failover; re-flagging item", "crashed", x, "item", i)
			} else {
				f.log.Info("instance crashed during failover; its item was claimed again since, not re-flagged", "crashed", x, "item", i)
			}
			if _, err := f.deleteIfValueOrEmpty(ctx, f.s.p.Running(i), x); err != nil {
				return err
			}
			if err := f.failoverIfNecessary(ctx); err != nil {
				return err
			}
		}
		return nil
	}
	crashed, err := f.crashedItems(ctx, x)
	if err != nil {
		return err
	}
	for _, i := range crashed {
		f.log.Info("instance crashed while running; flagging item for failover", "crashed", x, "item", i)
		if err := f.setCrashedFailoverFlag(ctx, i, x); err != nil {
			return err
		}
		if err := f.failoverIfNecessary(ctx); err != nil {
			return err
		}
	}
	return nil
}

// queueMisfiresOf hands the pending misfires of the items assigned to x,
// an instance that is gone, to failover (better than upstream, where the
// flag waits for the item's next owner to run its next fire first, and is
// lost if the next owner's misfire loop never sees it): a fire that found
// such an item running set its flag, and x died before its catch-up run.
// It reports whether an item was queued.
func (f *failover) queueMisfiresOf(ctx context.Context, x string) (bool, error) {
	cfg, err := f.job.conf.get(ctx)
	if err != nil {
		return false, err
	}
	queued := false
	for i := 0; i < cfg.ShardingTotalCount; i++ {
		owner, _, err := f.s.get(ctx, f.s.p.ShardingInstance(i))
		if err != nil {
			return queued, err
		}
		if owner != x {
			continue
		}
		q, err := f.queueMisfire(ctx, i, x)
		if err != nil {
			return queued, err
		}
		queued = queued || q
	}
	return queued, nil
}

// queueMisfire hands the misfire flag of item i, left by its owner x that
// is gone, to failover: leader/failover/items/i is created and the flag
// deleted in one transaction, so that one instance wins and the claimer's
// run serves the missed fire. When the item is already queued, only the
// flag goes (the queued run serves it); when it runs or is claimed, the
// flag stays for that execution's misfire loop. It reports whether the item
// was queued.
//
// The checks and the transaction run under the failover latch, fenced on
// it, as a claim does (failoverIfNecessary). Otherwise a crash handler
// could read the item neither running nor claimed while another survivor
// has it queued from the crash's running node, send the transaction after
// that survivor's claim has taken the queued item, and so queue it a
// second time: a second instance would claim it and wait for the first
// one's run.
func (f *failover) queueMisfire(ctx context.Context, i int, x string) (bool, error) {
	if ok, err := f.misfireToQueue(ctx, i); err != nil || !ok {
		return false, err
	}
	if err := f.s.createIfNeeded(ctx, f.s.p.FailoverItems()); err != nil {
		return false, err
	}
	queued := false
	err := f.underLatch(ctx, func(ctx context.Context, latch *recipe.Latch) error {
		if ok, err := f.misfireToQueue(ctx, i); err != nil || !ok {
			return err
		}
		fence, err := latch.Fence(ctx)
		if err != nil {
			return err
		}
		_, err = recipe.FencedMulti(ctx, f.s.c, fence,
			reg.CreateOp(f.s.p.FailoverItem(i), nil, reg.Persistent),
			reg.DeleteOp(f.s.p.Misfire(i), reg.AnyVersion))
		var me *reg.MultiError
		switch {
		case err == nil:
			f.log.Info("owner of an item with a missed fire is gone; queuing the item for failover", "item", i, "owner", x)
			queued = true
			return nil
		case errors.As(err, &me) && me.Index == 1 && errors.Is(err, reg.ErrNodeExists):
			// Already queued: that run serves the missed fire too.
			if err := f.s.c.Delete(ctx, f.s.p.Misfire(i), reg.AnyVersion); err != nil && !errors.Is(err, reg.ErrNoNode) {
				return wrap("clear misfire", err)
			}
			return nil
		case errors.As(err, &me) && me.Index == 2 && errors.Is(err, reg.ErrNoNode):
			return nil // another instance handed it over first
		}
		return wrap("queue misfired item", err)
	})
	return queued, err
}

// misfireToQueue reports whether item i has a misfire flag and neither
// runs nor is claimed for failover (queueMisfire).
func (f *failover) misfireToQueue(ctx context.Context, i int) (bool, error) {
	for _, n := range []string{"running", "failover"} {
		if ok, err := f.s.exists(ctx, f.s.p.ItemNode(i, n)); err != nil || ok {
			return false, err
		}
	}
	return f.s.exists(ctx, f.s.p.Misfire(i))
}

// underLatch runs fn holding the failover latch leader/failover/latch (the
// Curator latch upstream's failover claims hold), then releases it.
func (f *failover) underLatch(ctx context.Context, fn func(ctx context.Context, latch *recipe.Latch) error) error {
	latch := recipe.NewLatch(f.s.c, f.s.p.FailoverLatch(), "")
	if err := latch.Acquire(ctx); err != nil {
		return wrap("acquire failover latch", err)
	}
	defer func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), f.poll*50)
		defer cancel()
		if err := latch.Release(rctx); err != nil {
			f.log.Warn("release failover latch failed", "error", err)
		}
	}()
	return fn(ctx, latch)
}

// crashedItems: items assigned to x that x was running; none when x's
// server is not enabled.
func (f *failover) crashedItems(ctx context.Context, x string) ([]int, error) {
	if ok, err := f.job.ldr.isEnableServer(ctx, ipPrefix(x)); err != nil || !ok {
		return nil, err
	}
	cfg, err := f.job.conf.get(ctx)
	if err != nil {
		return nil, err
	}
	var out []int
	for i := 0; i < cfg.ShardingTotalCount; i++ {
		owner, _, err := f.s.get(ctx, f.s.p.ShardingInstance(i))
		if err != nil {
			return nil, err
		}
		if owner != x {
			continue
		}
		if ok, err := f.s.exists(ctx, f.s.p.Running(i)); err != nil {
			return nil, err
		} else if ok {
			out = append(out, i)
		}
	}
	return out, nil
}

// setCrashedFailoverFlag: unless the item is already taken over, queue it
// in leader/failover/items and drop the dead owner's running node, in one
// transaction while that node still names x (queueIfNames).
func (f *failover) setCrashedFailoverFlag(ctx context.Context, i int, x string) error {
	if ok, err := f.s.exists(ctx, f.s.p.Failover(i)); err != nil || ok {
		return err
	}
	_, err := f.queueIfNames(ctx, i, "running", x)
	return err
}

// queueIfNames queues item i for failover (leader/failover/items/i) in
// one transaction with a check that its node name still names x (a
// running node also when empty, as 3.0.0 and 3.0.1 wrote it) at the
// version read; for a running
// node the same transaction deletes it. Every survivor handles a crash,
// and the leader's sweep too: one that read the node before another
// instance claimed the item (the claim sets failovering, deletes the
// queued item; the claimer's run replaces the running node) would queue
// it again after the claim, and a second instance would claim and run it
// once more (two claims of one item milliseconds apart, the second one's
// run taking its instance's next fire). It reports whether
// the item is queued (by this call, or already).
func (f *failover) queueIfNames(ctx context.Context, i int, name, x string) (bool, error) {
	path := f.s.p.ItemNode(i, name)
	v, st, err := f.s.c.Get(ctx, path)
	if errors.Is(err, reg.ErrNoNode) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if string(v) != x && (name != "running" || len(v) > 0) {
		return false, nil
	}
	if err := f.s.createIfNeeded(ctx, f.s.p.FailoverItems()); err != nil {
		return false, err
	}
	ops := []reg.Op{reg.CheckOp(path, st.Version), reg.CreateOp(f.s.p.FailoverItem(i), nil, reg.Persistent)}
	if name == "running" {
		ops = append(ops, reg.DeleteOp(path, st.Version))
	}
	_, err = f.s.c.Multi(ctx, ops...)
	var me *reg.MultiError
	switch {
	case err == nil:
		return true, nil
	case errors.As(err, &me) && me.Index == 0 && (errors.Is(err, reg.ErrBadVersion) || errors.Is(err, reg.ErrNoNode)):
		return false, nil // claimed or cleared since it was read
	case errors.As(err, &me) && me.Index == 1 && errors.Is(err, reg.ErrNodeExists):
		if name == "running" { // queued already: the node still goes
			_, err := f.deleteIfValueOrEmpty(ctx, path, x)
			return true, err
		}
		return true, nil
	}
	return false, wrap("queue failover item", err)
}

// deleteIfValueOrEmpty deletes path when it names x ("" is what 3.0.0 and
// 3.0.1 wrote).
func (f *failover) deleteIfValueOrEmpty(ctx context.Context, path, x string) (bool, error) {
	ok, err := f.s.deleteIfValue(ctx, path, x)
	if err != nil || ok {
		return ok, err
	}
	return f.s.deleteIfValue(ctx, path, "")
}

// itemsWithValue lists items (children of sharding/, ascending) whose
// node name holds value.
func (f *failover) itemsWithValue(ctx context.Context, name, value string) ([]int, error) {
	names, err := f.s.children(ctx, f.s.p.Sharding())
	if err != nil {
		return nil, err
	}
	var out []int
	for _, i := range itemNumbers(names) {
		v, ok, err := f.s.get(ctx, f.s.p.ItemNode(i, name))
		if err != nil {
			return nil, err
		}
		if ok && v == value {
			out = append(out, i)
		}
	}
	slices.Sort(out)
	return out, nil
}

// failoverIfNecessary claims ONE queued crashed item under the Curator
// latch leader/failover/latch, in a transaction fenced on the latch node,
// then asks the scheduler to run once (FailoverService.failoverIfNecessary).
func (f *failover) failoverIfNecessary(ctx context.Context) error {
	need, err := f.needFailover(ctx)
	if err != nil || !need {
		return err
	}
	return f.underLatch(ctx, f.claimOne)
}

// claimOne is failoverIfNecessary's claim, holding the latch.
func (f *failover) claimOne(ctx context.Context, latch *recipe.Latch) error {
	if f.job.life.shutdown.Load() {
		return nil
	}
	if need, err := f.needFailover(ctx); err != nil || !need {
		return err
	}
	names, err := f.s.children(ctx, f.s.p.FailoverItems())
	if err != nil || len(names) == 0 {
		return err
	}
	item, err := strconv.Atoi(names[0])
	if err != nil {
		return wrap("failover item "+names[0], err)
	}
	fence, err := latch.Fence(ctx)
	if err != nil {
		return err
	}
	if err := f.s.createIfNeeded(ctx, f.s.p.ShardingItem(item)); err != nil {
		return err
	}
	var ops []reg.Op
	if ok, err := f.s.exists(ctx, f.s.p.Failover(item)); err != nil {
		return err
	} else if ok {
		ops = append(ops, reg.DeleteOp(f.s.p.Failover(item), reg.AnyVersion))
	}
	ops = append(ops, reg.CreateOp(f.s.p.Failover(item), []byte(f.id), reg.Ephemeral))
	if ok, err := f.s.exists(ctx, f.s.p.Failovering(item)); err != nil {
		return err
	} else if ok {
		ops = append(ops, reg.SetOp(f.s.p.Failovering(item), []byte(f.id), reg.AnyVersion))
	} else {
		ops = append(ops, reg.CreateOp(f.s.p.Failovering(item), []byte(f.id), reg.Persistent))
	}
	ops = append(ops, reg.DeleteOp(f.s.p.FailoverItem(item), reg.AnyVersion))
	if _, err := recipe.FencedMulti(ctx, f.s.c, fence, ops...); err != nil {
		return wrap("claim failover item "+names[0], err)
	}
	f.rememberClaim(item)
	f.hooks.FailedOver(item)
	f.log.Info("claimed failover item; triggering", "item", item)
	f.trigger()
	return nil
}

func (f *failover) needFailover(ctx context.Context) (bool, error) {
	if paused, _ := f.job.rg.isPaused(); paused || f.job.att.running.Load() || f.job.life.shutdown.Load() {
		return false, nil
	}
	names, err := f.s.children(ctx, f.s.p.FailoverItems())
	return len(names) > 0, err
}

// vanished reports whether instance id, named by a node just read, has no
// instances/ node. The legacy listener below checks the available
// instances first and the items' nodes after: an instance that registered
// in between and started running its item (its running node is created
// fenced on its instance node, so after it) looked vanished, and its live
// item was failed over to run a second time at once (the flaky
// TestClaimDuringAnExecutionRunsRightAfterIt showed it). Each node's
// instance is therefore checked after the node was read, as the stale
// sweep does. A node without a value (3.0.0-1) names nobody: it is judged
// by the available instances alone.
func (f *failover) vanished(ctx context.Context, id string) (bool, error) {
	if id == "" {
		return true, nil
	}
	ok, err := f.s.exists(ctx, f.s.p.Instance(id))
	return !ok, err
}

// onOwnInstanceAdded is LegacyCrashedRunningItemListener: when
// this instance is the only available one, items left running or in
// failover by instances that are gone are queued for failover.
func (f *failover) onOwnInstanceAdded(ctx context.Context) error {
	cfg, err := f.job.conf.get(ctx)
	if err != nil || !cfg.Failover || f.job.life.shutdown.Load() {
		return err
	}
	avail, err := f.job.asg.availableInstances(ctx)
	if err != nil || len(avail) != 1 || avail[0] != f.id {
		return err
	}
	names, err := f.s.children(ctx, f.s.p.Sharding())
	if err != nil {
		return err
	}
	items := itemNumbers(names)
	slices.Sort(items)
	done := map[int]bool{}
	for _, i := range items {
		v, ok, err := f.s.get(ctx, f.s.p.Failovering(i))
		if err != nil {
			return err
		}
		if !ok || v == f.id {
			continue
		}
		if gone, err := f.vanished(ctx, v); err != nil || !gone {
			if err != nil {
				return err
			}
			continue
		}
		f.log.Info("item was in failover by a vanished instance; re-flagging", "item", i, "instance", v)
		done[i] = true
		if err := f.s.createIfNeeded(ctx, f.s.p.FailoverItem(i)); err != nil {
			return err
		}
		if err := reg.DeleteRecursive(ctx, f.s.c, f.s.p.Failovering(i)); err != nil {
			return err
		}
		if err := reg.DeleteRecursive(ctx, f.s.c, f.s.p.Running(i)); err != nil {
			return err
		}
	}
	for _, i := range items {
		if done[i] {
			continue
		}
		v, ok, err := f.s.get(ctx, f.s.p.Running(i))
		if err != nil {
			return err
		}
		if !ok || v == f.id {
			continue
		}
		if gone, err := f.vanished(ctx, v); err != nil || !gone {
			if err != nil {
				return err
			}
			continue
		}
		f.log.Info("item was left running by a vanished instance; flagging for failover", "item", i, "instance", v)
		if err := f.setCrashedFailoverFlag(ctx, i, v); err != nil {
			return err
		}
		if err := reg.DeleteRecursive(ctx, f.s.c, f.s.p.Running(i)); err != nil && !errors.Is(err, reg.ErrNoNode) {
			return err
		}
	}
	return f.failoverIfNecessary(ctx)
}

// trigger asks the scheduler to run once now, or right after the
// execution of the job in progress (the enquiry claims from inside one).
// That is a claim's only path to its run: the pump asks again only when the
// run did not happen (a fire skipped while the connection was suspended,
// an execution that failed before its items ran, or a scheduler that
// dropped the request), a failover tick later.
func (f *failover) trigger() {
	f.triggered(time.Now())
	f.hooks.Trigger()
}
