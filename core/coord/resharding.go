package coord

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync/atomic"

	"github.com/ejob-io/ejob/core/config"
	"github.com/ejob-io/ejob/core/node"
	"github.com/ejob-io/ejob/core/reg"
	"github.com/ejob-io/ejob/core/reg/recipe"
	"github.com/ejob-io/ejob/core/sharding"
	"github.com/ejob-io/ejob/spi"
)

// resharding is the leader's lazy resharding protocol (upstream's
// ShardingService): raising the flag, waiting for running items, and
// committing the assignment fenced on the leader node; a non-leader's
// wait for it. It keeps no state but the last strategy type reported as
// not served; what a trigger reads of the assignment is the assignment's.
type resharding struct {
	*jobBase
	strat func(string) (spi.ShardingStrategy, error)
	// beforeCommit, if set (tests), runs between taking the leader fence
	// and committing a resharding.
	beforeCommit func()
	// unknownStrategy is the last sharding strategy type reported as not
	// served (see strategy), so that each is reported once. Swapped on
	// the goroutine of whichever trigger reshards (the trigger loop hands
	// fires to reused goroutines): atomic.
	unknownStrategy atomic.Pointer[string]
}

// eventMarks number a job's tree events for serversChangedSince: posted
// counts those posted to the job's queue, checked is that count as the
// last check of serversChanged that ended without an error began. The
// counts wrap; they are compared as serial numbers (a job's queue never
// holds 2^31 events).
type eventMarks struct {
	posted, checked atomic.Uint32
}

// covered reports whether the seq-th event was posted before the last
// check that ended began.
func (m *eventMarks) covered(seq uint32) bool { return int32(seq-m.checked.Load()) <= 0 }

// checkedFrom records a check that began when began events were posted
// and ended, unless a later-begun one is recorded already.
func (m *eventMarks) checkedFrom(began uint32) {
	for {
		c := m.checked.Load()
		if int32(began-c) <= 0 || m.checked.CompareAndSwap(c, began) {
			return
		}
	}
}

// setReshardingFlag creates leader/sharding/necessary, on the leader only
// (ShardingService.setReshardingFlag).
//
// The create is fenced on this session's leader node (better than
// upstream): a deposed leader cannot raise the flag.
func (r *resharding) setReshardingFlag(ctx context.Context) error {
	leader, err := r.job.ldr.isLeaderUntilBlock(ctx)
	if err != nil || !leader {
		return err
	}
	// The flag, the job's root and the flag's parent, read together
	// (upstream reads them one after another: the flag, the root, then
	// the root and the parent again to create the parent if needed).
	flag := r.s.p.ShardingNecessary()
	found, err := r.s.existsMany(ctx, []string{flag, r.s.p.Root(), reg.Parent(flag)})
	if err != nil || found[0] || !found[1] {
		return err
	}
	err = r.job.ldr.e.Fenced(ctx, func(fence recipe.Fence) error {
		if !found[2] {
			// Under leader, which holds the leader node while this
			// instance leads: a job deleted meanwhile is not made again.
			_, err := r.s.c.Create(ctx, reg.Parent(flag), nil, reg.Persistent)
			if err != nil && !errors.Is(err, reg.ErrNodeExists) {
				return err
			}
		}
		_, err := recipe.FencedMulti(ctx, r.s.c, fence, reg.CreateOp(flag, nil, reg.Persistent))
		return err
	})
	if errors.Is(err, recipe.ErrNotLeader) || errors.Is(err, reg.ErrNodeExists) {
		return nil
	}
	return err
}

// hasRunningItems: with monitorExecution, any of items 0..N-1 (N from the
// cached config) has a running node. The N nodes are read from the server
// together (existsMany), not one Exists after another.
func (r *resharding) hasRunningItems(ctx context.Context) (bool, error) {
	cfg, err := r.job.conf.get(ctx)
	if err != nil || !cfg.MonitorExecution {
		return false, err
	}
	paths := make([]string, cfg.ShardingTotalCount)
	for i := range paths {
		paths[i] = r.s.p.Running(i)
	}
	running, err := r.s.existsMany(ctx, paths)
	return slices.Contains(running, true), err
}

// shardingIfNecessary is upstream's lazy resharding
// (ShardingService.shardingIfNecessary): the leader waits until nothing runs,
// then commits the new assignment, the reset of old assignments and the deletion
// of the flags in one transaction fenced on its leader node; others wait until
// it is done.
//
// It first reads the stat of leader/sharding with bt (assignment.settled): when
// neither flag exists, nothing is pending and it returns settled with the
// zxid of the flags' last change, for the caller's cached read of the
// assignment (assignment.cached). Otherwise it reads as upstream does.
func (r *resharding) shardingIfNecessary(ctx context.Context, bt batched) (settled bool, pzxid int64, err error) {
	pending, pzxid, err := r.job.asg.settled(ctx, bt)
	if err != nil || !pending {
		return err == nil, pzxid, err
	}
	return false, 0, r.reshardIfNecessary(ctx)
}

// reshardIfNecessary is shardingIfNecessary once a flag was seen.
func (r *resharding) reshardIfNecessary(ctx context.Context) error {
	instances, err := r.job.asg.availableInstances(ctx)
	if err != nil {
		return err
	}
	need, err := r.s.exists(ctx, r.s.p.ShardingNecessary())
	if err != nil || !need || len(instances) == 0 {
		return err
	}
	leader, err := r.job.ldr.isLeaderUntilBlock(ctx)
	if err != nil {
		return err
	}
	if !leader {
		return r.waitShardingCompleted(ctx)
	}
	for {
		running, err := r.hasRunningItems(ctx)
		if err != nil {
			return err
		}
		if !running {
			break
		}
		if err := sleep(ctx, r.poll); err != nil {
			return err
		}
	}
	// Membership is read again after the wait (upstream uses the list read
	// before it): instances that joined or left meanwhile are part of this
	// assignment.
	if instances, err = r.job.asg.availableInstances(ctx); err != nil || len(instances) == 0 {
		return err
	}
	cfg, err := r.job.conf.load(ctx)
	if err != nil {
		return err
	}
	committed, err := r.commitReshard(ctx, cfg, instances)
	if err != nil || !committed {
		return err
	}
	return r.reshardAgainIfChanged(ctx, cfg, instances)
}

// commitReshard writes the processing flag and commits the assignment of
// cfg's items to instances, fenced on the leader node (and ordered before
// any deletion of it by this instance, see recipe.Election.Fenced). It
// reports whether the assignment was committed.
func (r *resharding) commitReshard(ctx context.Context, cfg *config.JobConfiguration, instances []string) (bool, error) {
	err := r.job.ldr.e.Fenced(ctx, func(fence recipe.Fence) error {
		r.log.Info("resharding", "shardingTotalCount", cfg.ShardingTotalCount, "instances", instances)
		if err := r.s.persistEphemeral(ctx, r.s.p.ShardingProcessing(), nil); err != nil {
			return wrap("write sharding processing flag", err)
		}
		if r.beforeCommit != nil {
			r.beforeCommit()
		}
		err := r.commitSharding(ctx, fence, cfg, instances)
		if err != nil {
			// Fenced too: a deposed leader leaves the flag to its successor
			// (the node is this session's ephemeral and goes with it).
			if _, derr := recipe.FencedMulti(ctx, r.s.c, fence, reg.DeleteOp(r.s.p.ShardingProcessing(), reg.AnyVersion)); derr != nil &&
				!errors.Is(derr, reg.ErrNoNode) && !errors.Is(derr, recipe.ErrFenced) {
				r.log.Warn("remove sharding processing flag failed", "error", derr)
			}
			if errors.Is(err, recipe.ErrFenced) {
				r.log.Warn("resharding rejected: leadership lost before the commit", "error", err)
			}
			return wrap("resharding", err)
		}
		return nil
	})
	if errors.Is(err, recipe.ErrNotLeader) {
		r.log.Info("lost leadership before resharding")
		return false, nil
	}
	if err != nil {
		return false, err
	}
	r.hooks.Resharded()
	return true, nil
}

// reshardAgainIfChanged raises the resharding flag again when membership
// or the total count changed between the reads behind a committed
// assignment and its commit. Such a change's event found the flag still
// up, so it set nothing, and the commit has just deleted the flag: without
// this the change would wait for some later event (upstream loses it the
// same way; found by the chaos suite: an instance that died while the
// leader waited for running items kept its items, so they were not run,
// until the next membership change).
func (r *resharding) reshardAgainIfChanged(ctx context.Context, cfg *config.JobConfiguration, instances []string) error {
	now, err := r.job.asg.availableInstances(ctx)
	if err != nil {
		return err
	}
	cur, err := r.job.conf.load(ctx)
	if err != nil {
		return err
	}
	if slices.Equal(now, instances) && cur.ShardingTotalCount == cfg.ShardingTotalCount {
		return nil
	}
	r.log.Info("membership or sharding total count changed during resharding; resharding again at the next trigger",
		"committed_instances", instances, "instances", now,
		"committed_total", cfg.ShardingTotalCount, "total", cur.ShardingTotalCount)
	return r.setReshardingFlag(ctx)
}

// waitShardingCompleted is the non-leader's busy wait.
func (r *resharding) waitShardingCompleted(ctx context.Context) error {
	for {
		leader, err := r.job.ldr.isLeaderUntilBlock(ctx)
		if err != nil || leader {
			return err
		}
		if r.job.fo.state().hasClaims() {
			return errClaimedWhileWaiting
		}
		need, err := r.s.exists(ctx, r.s.p.ShardingNecessary())
		if err != nil {
			return err
		}
		proc, err := r.s.exists(ctx, r.s.p.ShardingProcessing())
		if err != nil {
			return err
		}
		if !need && !proc {
			return nil
		}
		if err := sleep(ctx, r.poll); err != nil {
			return err
		}
	}
}

// commitSharding builds and commits, fenced by fence, the assignment of
// cfg's items to instances: the items beyond the total count deleted, the
// old instance nodes replaced, the flags deleted, in one transaction; it
// then records the commit's zxid (assignment.noteCommit).
func (r *resharding) commitSharding(ctx context.Context, fence recipe.Fence, cfg *config.JobConfiguration, instances []string) error {
	n := cfg.ShardingTotalCount
	if err := r.s.createIfNeeded(ctx, r.s.p.Sharding()); err != nil {
		return err
	}
	var ops []reg.Op
	names, err := r.s.children(ctx, r.s.p.Sharding())
	if err != nil {
		return err
	}
	for _, name := range names {
		i, err := strconv.Atoi(name)
		if err != nil || i < n {
			continue
		}
		sub, err := r.subtreeDeletes(ctx, r.s.p.Full(node.ShardingNode+"/"+name))
		if err != nil {
			return err
		}
		ops = append(ops, sub...)
	}
	// Which items exist comes from the listing above (one read, not one
	// per item).
	existing := make(map[string]bool, len(names))
	for _, name := range names {
		existing[name] = true
	}
	// Whose instance node exists: the existing items' nodes read together
	// (existsMany), then the ops in item order.
	var paths []string
	for i := 0; i < n; i++ {
		if existing[strconv.Itoa(i)] {
			paths = append(paths, r.s.p.ShardingInstance(i))
		}
	}
	has, err := r.s.existsMany(ctx, paths)
	if err != nil {
		return err
	}
	k := 0
	for i := 0; i < n; i++ {
		if !existing[strconv.Itoa(i)] {
			ops = append(ops, reg.CreateOp(r.s.p.ShardingItem(i), nil, reg.Persistent))
			continue
		}
		if has[k] {
			ops = append(ops, reg.DeleteOp(paths[k], reg.AnyVersion))
		}
		k++
	}
	strategy, err := r.strategy(cfg)
	if err != nil {
		return err
	}
	result, err := sharding.Shard(ctx, strategy, cfg.JobName, n, instances)
	if err != nil {
		return err
	}
	for _, a := range result {
		for _, item := range a.Items {
			ops = append(ops, reg.CreateOp(r.s.p.ShardingInstance(item), []byte(a.InstanceID), reg.Persistent))
		}
	}
	ops = append(ops,
		reg.DeleteOp(r.s.p.ShardingNecessary(), reg.AnyVersion),
		reg.DeleteOp(r.s.p.ShardingProcessing(), reg.AnyVersion))
	if _, err := recipe.FencedMulti(ctx, r.s.c, fence, ops...); err != nil {
		return err
	}
	r.log.Info("resharding committed", "assignments", fmt.Sprint(result))
	r.job.asg.noteCommit(ctx, result)
	return nil
}

// strategy resolves cfg's sharding strategy. A type this host does not
// serve can only come from a config written elsewhere (a Java instance or
// the console; the local one is validated): the leader then shards with
// AVG_ALLOCATION, as a Java 3.0.5 leader does, and says so once per type,
// rather than leave the job without an assignment while it leads.
func (r *resharding) strategy(cfg *config.JobConfiguration) (spi.ShardingStrategy, error) {
	typ := cfg.ShardingStrategyType()
	s, err := r.strat(typ)
	if errors.Is(err, spi.ErrUnknownType) && spi.NormalizeType(typ) != config.DefaultShardingStrategyType {
		if prev := r.unknownStrategy.Swap(&typ); prev == nil || *prev != typ {
			r.log.Warn("the job's configuration (written elsewhere: a Java instance, the console) names a type this host "+
				"does not serve; sharding with "+config.DefaultShardingStrategyType+" instead",
				"kind", "sharding strategy", "type", typ, "error", err)
		}
		s, err = r.strat(config.DefaultShardingStrategyType)
	}
	if err != nil {
		return nil, fmt.Errorf("sharding strategy %q: %w", typ, err)
	}
	return s, nil
}

// subtreeDeletes returns delete ops for path and everything under it,
// children first.
func (r *resharding) subtreeDeletes(ctx context.Context, path string) ([]reg.Op, error) {
	names, err := r.s.children(ctx, path)
	if err != nil {
		return nil, err
	}
	var ops []reg.Op
	for _, n := range names {
		sub, err := r.subtreeDeletes(ctx, reg.Join(path, n))
		if err != nil {
			return nil, err
		}
		ops = append(ops, sub...)
	}
	return append(ops, reg.DeleteOp(path, reg.AnyVersion)), nil
}

// serversChangedSince is serversChanged for the seq-th tree event posted
// to the job's queue, a change of the servers or instances: nothing when
// a check that began once that event was posted has ended, since its
// fresh reads came after the event's change (the registry shows a
// client no older state than the events it has delivered). Upstream
// checks once for each event; the events of one burst (an instance's
// re-registration: its instance node gone and back, its server node
// written) are then checked once, as an instance that handled each at
// once would find them. Nothing is moved: the check that runs runs where
// it did, with the handlers of its event.
func (r *resharding) serversChangedSince(ctx context.Context, seq uint32) error {
	if r.marks.covered(seq) {
		return nil
	}
	return r.serversChanged(ctx)
}

// serversChanged is ListenServersChangedJobListener's action.
func (r *resharding) serversChanged(ctx context.Context) error {
	began := r.marks.posted.Load()
	if err := r.checkServersChanged(ctx); err != nil {
		return err
	}
	r.marks.checkedFrom(began)
	return nil
}

// checkServersChanged is serversChanged's check.
func (r *resharding) checkServersChanged(ctx context.Context) error {
	cfg, err := r.job.conf.get(ctx)
	if err != nil {
		return err
	}
	if cfg.StaticSharding {
		names, err := r.s.children(ctx, r.s.p.Sharding())
		if err != nil || len(names) > 0 {
			return err
		}
	}
	return r.setReshardingFlag(ctx)
}
