package coord

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"time"

	"github.com/ejob-io/ejob/core/node"
	"github.com/ejob-io/ejob/core/reg"
	"github.com/ejob-io/ejob/core/reg/recipe"
)

// onInstanceCrashed is JobCrashedJobListener (spec §10.1): instance x's
// node was deleted.
func (j *Job) onInstanceCrashed(ctx context.Context, x string) error {
	cfg, err := j.config(ctx)
	if err != nil || !cfg.Failover {
		return err
	}
	// The deletion event may be stale: an instance that re-registered has
	// its node back, and must not have its running items taken away.
	if _, back, err := j.c.Exists(ctx, j.p.Instance(x)); err != nil || back {
		if back {
			j.log.Info("instance node was deleted and is back; not failing its items over", "instance", x)
		}
		return err
	}
	if err := j.failOverCrashedRunning(ctx, x); err != nil {
		return err
	}
	queued, err := j.queueMisfiresOf(ctx, x)
	if err != nil || !queued {
		return err
	}
	return j.failoverIfNecessary(ctx)
}

// failOverCrashedRunning is upstream's JobCrashedJobListener action: the
// items x was failing over, else the items x was running, are queued for
// failover.
func (j *Job) failOverCrashedRunning(ctx context.Context, x string) error {
	fo, err := j.itemsWithValue(ctx, "failovering", x)
	if err != nil {
		return err
	}
	if len(fo) > 0 {
		for _, i := range fo {
			queued, err := j.queueIfNames(ctx, i, "failovering", x)
			if err != nil {
				return err
			}
			if queued {
				j.log.Info("instance crashed during failover; re-flagging item", "crashed", x, "item", i)
			} else {
				j.log.Info("instance crashed during failover; its item was claimed again since, not re-flagged", "crashed", x, "item", i)
			}
			if _, err := j.deleteIfValueOrEmpty(ctx, j.p.Running(i), x); err != nil {
				return err
			}
			if err := j.failoverIfNecessary(ctx); err != nil {
				return err
			}
		}
		return nil
	}
	crashed, err := j.crashedItems(ctx, x)
	if err != nil {
		return err
	}
	for _, i := range crashed {
		j.log.Info("instance crashed while running; flagging item for failover", "crashed", x, "item", i)
		if err := j.setCrashedFailoverFlag(ctx, i, x); err != nil {
			return err
		}
		if err := j.failoverIfNecessary(ctx); err != nil {
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
func (j *Job) queueMisfiresOf(ctx context.Context, x string) (bool, error) {
	cfg, err := j.config(ctx)
	if err != nil {
		return false, err
	}
	queued := false
	for i := 0; i < cfg.ShardingTotalCount; i++ {
		owner, _, err := j.s.get(ctx, j.p.ShardingInstance(i))
		if err != nil {
			return queued, err
		}
		if owner != x {
			continue
		}
		q, err := j.queueMisfire(ctx, i, x)
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
func (j *Job) queueMisfire(ctx context.Context, i int, x string) (bool, error) {
	for _, n := range []string{"running", "failover"} {
		if ok, err := j.s.exists(ctx, j.p.ItemNode(i, n)); err != nil || ok {
			return false, err
		}
	}
	if ok, err := j.s.exists(ctx, j.p.Misfire(i)); err != nil || !ok {
		return false, err
	}
	if err := j.s.createIfNeeded(ctx, j.p.FailoverItems()); err != nil {
		return false, err
	}
	_, err := j.c.Multi(ctx,
		reg.CreateOp(j.p.FailoverItem(i), nil, reg.Persistent),
		reg.DeleteOp(j.p.Misfire(i), reg.AnyVersion))
	var me *reg.MultiError
	switch {
	case err == nil:
		j.log.Info("owner of an item with a missed fire is gone; queuing the item for failover", "item", i, "owner", x)
		return true, nil
	case errors.As(err, &me) && me.Index == 0 && errors.Is(err, reg.ErrNodeExists):
		// Already queued: that run serves the missed fire too.
		if err := j.c.Delete(ctx, j.p.Misfire(i), reg.AnyVersion); err != nil && !errors.Is(err, reg.ErrNoNode) {
			return false, wrap("clear misfire", err)
		}
		return false, nil
	case errors.As(err, &me) && me.Index == 1 && errors.Is(err, reg.ErrNoNode):
		return false, nil // another instance handed it over first
	}
	return false, wrap("queue misfired item", err)
}

// crashedItems: items assigned to x that x was running; none when x's
// server is not enabled.
func (j *Job) crashedItems(ctx context.Context, x string) ([]int, error) {
	if ok, err := j.isEnableServer(ctx, ipPrefix(x)); err != nil || !ok {
		return nil, err
	}
	cfg, err := j.config(ctx)
	if err != nil {
		return nil, err
	}
	var out []int
	for i := 0; i < cfg.ShardingTotalCount; i++ {
		owner, _, err := j.s.get(ctx, j.p.ShardingInstance(i))
		if err != nil {
			return nil, err
		}
		if owner != x {
			continue
		}
		if ok, err := j.s.exists(ctx, j.p.Running(i)); err != nil {
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
func (j *Job) setCrashedFailoverFlag(ctx context.Context, i int, x string) error {
	if ok, err := j.s.exists(ctx, j.p.Failover(i)); err != nil || ok {
		return err
	}
	_, err := j.queueIfNames(ctx, i, "running", x)
	return err
}

// queueIfNames queues item i for failover (leader/failover/items/i) in
// one transaction with a check that its node name still names x (or is
// empty, as 3.0.0 and 3.0.1 wrote it) at the version read; for a running
// node the same transaction deletes it. Every survivor handles a crash,
// and the leader's sweep too: one that read the node before another
// instance claimed the item (the claim sets failovering, deletes the
// queued item; the claimer's run replaces the running node) would queue
// it again after the claim, and a second instance would claim and run it
// once more (chaos seed 3: two claims of one item 13 ms apart, and the
// second one's run took its instance's next fire). It reports whether
// the item is queued (by this call, or already).
func (j *Job) queueIfNames(ctx context.Context, i int, name, x string) (bool, error) {
	path := j.p.ItemNode(i, name)
	v, st, err := j.c.Get(ctx, path)
	if errors.Is(err, reg.ErrNoNode) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if string(v) != x && (name != "running" || len(v) > 0) {
		return false, nil
	}
	if err := j.s.createIfNeeded(ctx, j.p.FailoverItems()); err != nil {
		return false, err
	}
	ops := []reg.Op{reg.CheckOp(path, st.Version), reg.CreateOp(j.p.FailoverItem(i), nil, reg.Persistent)}
	if name == "running" {
		ops = append(ops, reg.DeleteOp(path, st.Version))
	}
	_, err = j.c.Multi(ctx, ops...)
	var me *reg.MultiError
	switch {
	case err == nil:
		return true, nil
	case errors.As(err, &me) && me.Index == 0 && (errors.Is(err, reg.ErrBadVersion) || errors.Is(err, reg.ErrNoNode)):
		return false, nil // claimed or cleared since it was read
	case errors.As(err, &me) && me.Index == 1 && errors.Is(err, reg.ErrNodeExists):
		if name == "running" { // queued already: the node still goes
			_, err := j.deleteIfValueOrEmpty(ctx, path, x)
			return true, err
		}
		return true, nil
	}
	return false, wrap("queue failover item", err)
}

// deleteIfValueOrEmpty deletes path when it names x ("" is what 3.0.0 and
// 3.0.1 wrote).
func (j *Job) deleteIfValueOrEmpty(ctx context.Context, path, x string) (bool, error) {
	ok, err := j.s.deleteIfValue(ctx, path, x)
	if err != nil || ok {
		return ok, err
	}
	return j.s.deleteIfValue(ctx, path, "")
}

// itemsWithValue lists items (children of sharding/, ascending) whose
// node name holds value.
func (j *Job) itemsWithValue(ctx context.Context, name, value string) ([]int, error) {
	names, err := j.s.children(ctx, j.p.Sharding())
	if err != nil {
		return nil, err
	}
	var out []int
	for _, i := range itemNumbers(names) {
		v, ok, err := j.s.get(ctx, j.p.ItemNode(i, name))
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
// then asks the scheduler to run once (spec §10.2).
func (j *Job) failoverIfNecessary(ctx context.Context) error {
	need, err := j.needFailover(ctx)
	if err != nil || !need {
		return err
	}
	latch := recipe.NewLatch(j.c, j.p.FailoverLatch(), "")
	if err := latch.Acquire(ctx); err != nil {
		return wrap("acquire failover latch", err)
	}
	defer func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), j.poll*50)
		defer cancel()
		if err := latch.Release(rctx); err != nil {
			j.log.Warn("release failover latch failed", "error", err)
		}
	}()
	if j.shutdown.Load() {
		return nil
	}
	if need, err = j.needFailover(ctx); err != nil || !need {
		return err
	}
	names, err := j.s.children(ctx, j.p.FailoverItems())
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
	if err := j.s.createIfNeeded(ctx, j.p.ShardingItem(item)); err != nil {
		return err
	}
	var ops []reg.Op
	if ok, err := j.s.exists(ctx, j.p.Failover(item)); err != nil {
		return err
	} else if ok {
		ops = append(ops, reg.DeleteOp(j.p.Failover(item), reg.AnyVersion))
	}
	ops = append(ops, reg.CreateOp(j.p.Failover(item), []byte(j.id), reg.Ephemeral))
	if ok, err := j.s.exists(ctx, j.p.Failovering(item)); err != nil {
		return err
	} else if ok {
		ops = append(ops, reg.SetOp(j.p.Failovering(item), []byte(j.id), reg.AnyVersion))
	} else {
		ops = append(ops, reg.CreateOp(j.p.Failovering(item), []byte(j.id), reg.Persistent))
	}
	ops = append(ops, reg.DeleteOp(j.p.FailoverItem(item), reg.AnyVersion))
	if _, err := recipe.FencedMulti(ctx, j.c, fence, ops...); err != nil {
		return wrap("claim failover item "+names[0], err)
	}
	j.rememberClaim(item)
	j.onFailover(item)
	j.log.Info("claimed failover item; triggering", "item", item)
	j.trigger()
	return nil
}

// trigger asks the scheduler to run once now, or right after the
// execution of the job in progress (the enquiry claims from inside one).
// That is a claim's only path to its run: the pump asks again only when the
// run did not happen (a fire skipped while the connection was suspended,
// an execution that failed before its items ran, or a scheduler that
// dropped the request), a failover tick later.
func (j *Job) trigger() {
	j.lastTrig.Store(time.Now().UnixNano())
	j.onTrig()
}

// failoverTick is the period of pump.
func (j *Job) failoverTick() time.Duration { return j.poll * 5 }

// wakePump asks the job's queue to run the pump a failoverTick from now,
// for a change of state the tree cache does not show (needRecover,
// misfireBefore). Tree events wake it by themselves.
func (j *Job) wakePump() { j.armPump() }

// setNeedRecover notes that running nodes of a cut-off execution may
// remain, for the pump to clear.
func (j *Job) setNeedRecover() {
	j.needRecover.Store(true)
	j.wakePump()
}

// pumpWanted reports whether the pump may still have something to do, so
// its timer must keep running: each case pump acts on, read from local
// state and the tree cache. It errs on the side of ticking (a paused or
// running instance whose case holds keeps ticking, as the pump then only
// waits). When it reports false, only a tree event or wakePump ticks the
// pump again.
func (j *Job) pumpWanted() bool {
	if j.cache == nil || j.shutdown.Load() {
		return false
	}
	cfg := j.cfg.Load()
	failover, misfire := cfg == nil || cfg.Failover, cfg == nil || cfg.Misfire
	if failover {
		if j.needRecover.Load() || j.claimedInCache() {
			return true
		}
		if names, _ := j.cache.Children(j.p.FailoverItems()); len(names) > 0 {
			return true
		}
	}
	j.misfireMu.Lock()
	deferred := j.misfireBefore != nil
	j.misfireMu.Unlock()
	if deferred {
		return true
	}
	// misfireSeen set: the next tick clears it or acts on it.
	return misfire && (j.misfireSeen.Load() != 0 || len(j.misfiredInCache()) > 0)
}

// pump runs on the event loop a failoverTick after a tree event or a
// wakePump, and every failoverTick while pumpWanted (better than
// upstream, whose claims happen only on a crash event and after an
// execution, so a queued item can wait for a cron fire or forever). While
// this instance is idle and registered, it
//   - with failover on, clears the running nodes an execution cut off by a
//     (presumed) session loss left, queuing them for failover
//     (recoverIfIdle);
//   - with failover on, asks the scheduler again to run the items it has
//     claimed (sharding/i/failover = me) when the claim's trigger did not
//     run them (see trigger), or else claims one queued item
//     (leader/failover/items non-empty);
//   - otherwise, with misfire on, runs its own items whose missed fire no
//     execution served (runPendingMisfires).
//
// It reads the tree cache first, so an idle tick costs no registry call.
func (j *Job) pump(ctx context.Context) error {
	if j.cache == nil || j.shutdown.Load() {
		return nil
	}
	if j.running.Load() {
		j.misfireSeen.Store(0)
		return nil
	}
	if _, err := j.session(); err != nil {
		return nil // paused or not registered: reRegister resumes first
	}
	cfg, err := j.config(ctx)
	if err != nil {
		return err
	}
	if cfg.Failover {
		if j.needRecover.Load() {
			if _, err := j.recoverIfIdle(ctx); err != nil {
				return err
			}
		}
		if j.claimedInCache() {
			if time.Since(time.Unix(0, j.lastTrig.Load())) < j.failoverTick() {
				return nil
			}
			fi, err := j.localFailoverItems(ctx)
			if err != nil || len(fi) == 0 || j.running.Load() {
				return err
			}
			j.log.Info("claimed failover items have not run yet; triggering again", "items", fi)
			j.trigger()
			return nil
		}
		if names, _ := j.cache.Children(j.p.FailoverItems()); len(names) > 0 {
			return j.failoverIfNecessary(ctx)
		}
	}
	j.misfireMu.Lock()
	deferred := j.misfireBefore != nil
	j.misfireMu.Unlock()
	if deferred {
		// The flag's deletion event may have been missed (coalesced).
		if _, _, pending := j.cache.Get(j.p.ShardingNecessary()); !pending {
			if err := j.misfireAfterResharding(ctx); err != nil {
				return err
			}
		}
	}
	if cfg.Misfire {
		return j.runPendingMisfires(ctx)
	}
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
	items := j.misfiredInCache()
	if len(items) == 0 {
		j.misfireSeen.Store(0)
		return nil
	}
	now := time.Now().UnixNano()
	seen := j.misfireSeen.Load()
	if seen == 0 {
		j.misfireSeen.Store(now)
		return nil
	}
	if time.Duration(now-seen) < j.failoverTick() || j.running.Load() {
		return nil
	}
	j.misfireSeen.Store(0)
	own, err := j.localShardingItems(ctx)
	if err != nil {
		return err
	}
	pending, err := j.itemsWith(ctx, own, "misfire")
	if err != nil || len(pending) == 0 {
		return err
	}
	if running, err := j.itemsWith(ctx, pending, "running"); err != nil || len(running) > 0 {
		return err
	}
	j.catchUpMu.Lock()
	j.catchUp = pending
	j.catchUpMu.Unlock()
	if err := j.ClearMisfire(ctx, pending); err != nil {
		return err
	}
	j.log.Info("fire missed and not yet caught up; running the items now", "items", pending)
	j.trigger()
	return nil
}

// handOverCatchUp is called by the next execution once it knows its items
// (after any resharding): the items runPendingMisfires cleared the flags of
// and that are no longer this instance's get their flags back, for their
// new owner to serve.
func (j *Job) handOverCatchUp(ctx context.Context, own []int) error {
	j.catchUpMu.Lock()
	items := j.catchUp
	j.catchUp = nil
	j.catchUpMu.Unlock()
	moved := without(items, own)
	if len(moved) == 0 {
		return nil
	}
	j.log.Info("items whose missed fire was to be caught up here moved away; flagging them for their new owner", "items", moved)
	return j.setMisfire(ctx, moved)
}

// misfiredInCache: the tree cache shows this instance's own items
// (sharding/i/instance = me) with a misfire flag and no running node.
func (j *Job) misfiredInCache() []int {
	names, _ := j.cache.Children(j.p.Sharding())
	var out []int
	for _, i := range itemNumbers(names) {
		n := strconv.Itoa(i)
		if v, _, ok := j.cache.Get(j.p.Full(node.ShardingNode + "/" + n + "/" + node.ItemInstance)); !ok || string(v) != j.id {
			continue
		}
		_, _, mis := j.cache.Get(j.p.Full(node.ShardingNode + "/" + n + "/" + node.ItemMisfire))
		_, _, run := j.cache.Get(j.p.Full(node.ShardingNode + "/" + n + "/" + node.ItemRunning))
		if mis && !run {
			out = append(out, i)
		}
	}
	return out
}

// claimedInCache: the tree cache shows an item whose failover node names
// this instance.
func (j *Job) claimedInCache() bool {
	names, _ := j.cache.Children(j.p.Sharding())
	for _, n := range names {
		if v, _, ok := j.cache.Get(j.p.Full(node.ShardingNode + "/" + n + "/" + node.ItemFailover)); ok && string(v) == j.id {
			return true
		}
	}
	return false
}

func (j *Job) needFailover(ctx context.Context) (bool, error) {
	if paused, _ := j.Paused(); paused || j.running.Load() || j.shutdown.Load() {
		return false, nil
	}
	names, err := j.s.children(ctx, j.p.FailoverItems())
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
// by the available instances alone, as before.
func (j *Job) vanished(ctx context.Context, id string) (bool, error) {
	if id == "" {
		return true, nil
	}
	ok, err := j.s.exists(ctx, j.p.Instance(id))
	return !ok, err
}

// onOwnInstanceAdded is LegacyCrashedRunningItemListener (spec §10.4): when
// this instance is the only available one, items left running or in
// failover by instances that are gone are queued for failover.
func (j *Job) onOwnInstanceAdded(ctx context.Context) error {
	cfg, err := j.config(ctx)
	if err != nil || !cfg.Failover || j.shutdown.Load() {
		return err
	}
	avail, err := j.availableInstances(ctx)
	if err != nil || len(avail) != 1 || avail[0] != j.id {
		return err
	}
	names, err := j.s.children(ctx, j.p.Sharding())
	if err != nil {
		return err
	}
	items := itemNumbers(names)
	slices.Sort(items)
	done := map[int]bool{}
	for _, i := range items {
		v, ok, err := j.s.get(ctx, j.p.Failovering(i))
		if err != nil {
			return err
		}
		if !ok || v == j.id {
			continue
		}
		if gone, err := j.vanished(ctx, v); err != nil || !gone {
			if err != nil {
				return err
			}
			continue
		}
		j.log.Info("item was in failover by a vanished instance; re-flagging", "item", i, "instance", v)
		done[i] = true
		if err := j.s.createIfNeeded(ctx, j.p.FailoverItem(i)); err != nil {
			return err
		}
		if err := reg.DeleteRecursive(ctx, j.c, j.p.Failovering(i)); err != nil {
			return err
		}
		if err := reg.DeleteRecursive(ctx, j.c, j.p.Running(i)); err != nil {
			return err
		}
	}
	for _, i := range items {
		if done[i] {
			continue
		}
		v, ok, err := j.s.get(ctx, j.p.Running(i))
		if err != nil {
			return err
		}
		if !ok || v == j.id {
			continue
		}
		if gone, err := j.vanished(ctx, v); err != nil || !gone {
			if err != nil {
				return err
			}
			continue
		}
		j.log.Info("item was left running by a vanished instance; flagging for failover", "item", i, "instance", v)
		if err := j.setCrashedFailoverFlag(ctx, i, v); err != nil {
			return err
		}
		if err := reg.DeleteRecursive(ctx, j.c, j.p.Running(i)); err != nil && !errors.Is(err, reg.ErrNoNode) {
			return err
		}
	}
	return j.failoverIfNecessary(ctx)
}
