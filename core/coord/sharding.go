package coord

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/ejob-io/ejob/core/config"
	"github.com/ejob-io/ejob/core/node"
	"github.com/ejob-io/ejob/core/reg"
	"github.com/ejob-io/ejob/core/reg/recipe"
	"github.com/ejob-io/ejob/core/sharding"
	"github.com/ejob-io/ejob/spi"
)

// setReshardingFlag creates leader/sharding/necessary, on the leader only
// (ShardingService.setReshardingFlag).
//
// The create is fenced on this session's leader node (better than
// upstream): a deposed leader cannot raise the flag.
func (j *Job) setReshardingFlag(ctx context.Context) error {
	leader, err := j.isLeaderUntilBlock(ctx)
	if err != nil || !leader {
		return err
	}
	if ok, err := j.s.exists(ctx, j.s.p.ShardingNecessary()); err != nil || ok {
		return err
	}
	if ok, err := j.s.exists(ctx, j.s.p.Root()); err != nil || !ok {
		return err
	}
	err = j.elect.Fenced(ctx, func(fence recipe.Fence) error {
		if err := j.s.createIfNeeded(ctx, reg.Parent(j.s.p.ShardingNecessary())); err != nil {
			return err
		}
		_, err := recipe.FencedMulti(ctx, j.s.c, fence, reg.CreateOp(j.s.p.ShardingNecessary(), nil, reg.Persistent))
		return err
	})
	if errors.Is(err, recipe.ErrNotLeader) || errors.Is(err, reg.ErrNodeExists) {
		return nil
	}
	return err
}

// availableInstances lists instance ids (descending) whose server is
// ENABLED, skipping nodes without data
// (InstanceService.getAvailableJobInstances). The instance nodes are read
// together, then the servers of their IPs (getMany): a few round trips instead
// of two reads per instance. A server node found missing or empty is read again
// as upstream does (isEnableServer).
func (j *Job) availableInstances(ctx context.Context) ([]string, error) {
	ids, err := j.s.children(ctx, j.s.p.Instances())
	if err != nil {
		return nil, err
	}
	paths := make([]string, len(ids))
	for i, id := range ids {
		paths[i] = j.s.p.Instance(id)
	}
	data, ok, err := j.s.getMany(ctx, paths)
	if err != nil {
		return nil, err
	}
	ips := make([]string, len(ids))
	var servers []string // distinct IPs, in the order first seen
	for i, id := range ids {
		if !ok[i] || data[i] == "" {
			continue
		}
		ips[i] = node.InstanceServerIP(id, []byte(data[i]))
		if !slices.Contains(servers, ips[i]) {
			servers = append(servers, ips[i])
		}
	}
	paths = paths[:0]
	for _, ip := range servers {
		paths = append(paths, j.s.p.Server(ip))
	}
	status, found, err := j.s.getMany(ctx, paths)
	if err != nil {
		return nil, err
	}
	enabled := make(map[string]bool, len(servers))
	for i, ip := range servers {
		if found[i] && status[i] != "" {
			enabled[ip] = status[i] == node.ServerEnabled
		} else if enabled[ip], err = j.isEnableServer(ctx, ip); err != nil {
			return nil, err
		}
	}
	var out []string
	for i, id := range ids {
		if ips[i] != "" && enabled[ips[i]] {
			out = append(out, id)
		}
	}
	return out, nil
}

// hasRunningItems: with monitorExecution, any of items 0..N-1 (N from the
// cached config) has a running node. The N nodes are read from the server
// together (existsMany), not one Exists after another.
func (j *Job) hasRunningItems(ctx context.Context) (bool, error) {
	cfg, err := j.config(ctx)
	if err != nil || !cfg.MonitorExecution {
		return false, err
	}
	paths := make([]string, cfg.ShardingTotalCount)
	for i := range paths {
		paths[i] = j.s.p.Running(i)
	}
	running, err := j.s.existsMany(ctx, paths)
	return slices.Contains(running, true), err
}

// shardingIfNecessary is upstream's lazy resharding
// (ShardingService.shardingIfNecessary): the leader waits until nothing runs,
// then commits the new assignment, the reset of old assignments and the deletion
// of the flags in one transaction fenced on its leader node; others wait until
// it is done.
//
// It first reads the stat of leader/sharding (assignment.settled): when
// neither flag exists, nothing is pending and it returns settled with the
// zxid of the flags' last change, for the caller's cached read of the
// assignment (assignment.cached). Otherwise it reads as upstream does.
func (j *Job) shardingIfNecessary(ctx context.Context) (settled bool, pzxid int64, err error) {
	pending, pzxid, err := j.asg.settled(ctx)
	if err != nil || !pending {
		return err == nil, pzxid, err
	}
	return false, 0, j.reshardIfNecessary(ctx)
}

// reshardIfNecessary is shardingIfNecessary once a flag was seen.
func (j *Job) reshardIfNecessary(ctx context.Context) error {
	instances, err := j.availableInstances(ctx)
	if err != nil {
		return err
	}
	need, err := j.s.exists(ctx, j.s.p.ShardingNecessary())
	if err != nil || !need || len(instances) == 0 {
		return err
	}
	leader, err := j.isLeaderUntilBlock(ctx)
	if err != nil {
		return err
	}
	if !leader {
		return j.waitShardingCompleted(ctx)
	}
	for {
		running, err := j.hasRunningItems(ctx)
		if err != nil {
			return err
		}
		if !running {
			break
		}
		if err := j.sleep(ctx); err != nil {
			return err
		}
	}
	// Membership is read again after the wait (upstream uses the list read
	// before it): instances that joined or left meanwhile are part of this
	// assignment.
	if instances, err = j.availableInstances(ctx); err != nil || len(instances) == 0 {
		return err
	}
	cfg, err := j.conf.load(ctx)
	if err != nil {
		return err
	}
	committed, err := j.commitReshard(ctx, cfg, instances)
	if err != nil || !committed {
		return err
	}
	return j.reshardAgainIfChanged(ctx, cfg, instances)
}

// commitReshard writes the processing flag and commits the assignment of
// cfg's items to instances, fenced on the leader node (and ordered before
// any deletion of it by this instance, see recipe.Election.Fenced). It
// reports whether the assignment was committed.
func (j *Job) commitReshard(ctx context.Context, cfg *config.JobConfiguration, instances []string) (bool, error) {
	err := j.elect.Fenced(ctx, func(fence recipe.Fence) error {
		j.log.Info("resharding", "shardingTotalCount", cfg.ShardingTotalCount, "instances", instances)
		if err := j.s.persistEphemeral(ctx, j.s.p.ShardingProcessing(), nil); err != nil {
			return wrap("write sharding processing flag", err)
		}
		if j.beforeCommit != nil {
			j.beforeCommit()
		}
		err := j.commitSharding(ctx, fence, cfg, instances)
		if err != nil {
			// Fenced too: a deposed leader leaves the flag to its successor
			// (the node is this session's ephemeral and goes with it).
			if _, derr := recipe.FencedMulti(ctx, j.s.c, fence, reg.DeleteOp(j.s.p.ShardingProcessing(), reg.AnyVersion)); derr != nil &&
				!errors.Is(derr, reg.ErrNoNode) && !errors.Is(derr, recipe.ErrFenced) {
				j.log.Warn("remove sharding processing flag failed", "error", derr)
			}
			if errors.Is(err, recipe.ErrFenced) {
				j.log.Warn("resharding rejected: leadership lost before the commit", "error", err)
			}
			return wrap("resharding", err)
		}
		return nil
	})
	if errors.Is(err, recipe.ErrNotLeader) {
		j.log.Info("lost leadership before resharding")
		return false, nil
	}
	if err != nil {
		return false, err
	}
	j.hooks.Resharded()
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
func (j *Job) reshardAgainIfChanged(ctx context.Context, cfg *config.JobConfiguration, instances []string) error {
	now, err := j.availableInstances(ctx)
	if err != nil {
		return err
	}
	cur, err := j.conf.load(ctx)
	if err != nil {
		return err
	}
	if slices.Equal(now, instances) && cur.ShardingTotalCount == cfg.ShardingTotalCount {
		return nil
	}
	j.log.Info("membership or sharding total count changed during resharding; resharding again at the next trigger",
		"committed_instances", instances, "instances", now,
		"committed_total", cfg.ShardingTotalCount, "total", cur.ShardingTotalCount)
	return j.setReshardingFlag(ctx)
}

// waitShardingCompleted is the non-leader's busy wait.
func (j *Job) waitShardingCompleted(ctx context.Context) error {
	for {
		leader, err := j.isLeaderUntilBlock(ctx)
		if err != nil || leader {
			return err
		}
		if j.foState().hasClaims() {
			return errClaimedWhileWaiting
		}
		need, err := j.s.exists(ctx, j.s.p.ShardingNecessary())
		if err != nil {
			return err
		}
		proc, err := j.s.exists(ctx, j.s.p.ShardingProcessing())
		if err != nil {
			return err
		}
		if !need && !proc {
			return nil
		}
		if err := j.sleep(ctx); err != nil {
			return err
		}
	}
}

func (j *Job) commitSharding(ctx context.Context, fence recipe.Fence, cfg *config.JobConfiguration, instances []string) error {
	n := cfg.ShardingTotalCount
	if err := j.s.createIfNeeded(ctx, j.s.p.Sharding()); err != nil {
		return err
	}
	var ops []reg.Op
	names, err := j.s.children(ctx, j.s.p.Sharding())
	if err != nil {
		return err
	}
	for _, name := range names {
		i, err := strconv.Atoi(name)
		if err != nil || i < n {
			continue
		}
		sub, err := j.subtreeDeletes(ctx, j.s.p.Full(node.ShardingNode+"/"+name))
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
			paths = append(paths, j.s.p.ShardingInstance(i))
		}
	}
	has, err := j.s.existsMany(ctx, paths)
	if err != nil {
		return err
	}
	k := 0
	for i := 0; i < n; i++ {
		if !existing[strconv.Itoa(i)] {
			ops = append(ops, reg.CreateOp(j.s.p.ShardingItem(i), nil, reg.Persistent))
			continue
		}
		if has[k] {
			ops = append(ops, reg.DeleteOp(paths[k], reg.AnyVersion))
		}
		k++
	}
	strategy, err := j.strategy(cfg)
	if err != nil {
		return err
	}
	result, err := sharding.Shard(ctx, strategy, cfg.JobName, n, instances)
	if err != nil {
		return err
	}
	for _, a := range result {
		for _, item := range a.Items {
			ops = append(ops, reg.CreateOp(j.s.p.ShardingInstance(item), []byte(a.InstanceID), reg.Persistent))
		}
	}
	ops = append(ops,
		reg.DeleteOp(j.s.p.ShardingNecessary(), reg.AnyVersion),
		reg.DeleteOp(j.s.p.ShardingProcessing(), reg.AnyVersion))
	if _, err := recipe.FencedMulti(ctx, j.s.c, fence, ops...); err != nil {
		return err
	}
	j.log.Info("resharding committed", "assignments", fmt.Sprint(result))
	j.asg.noteCommit(ctx, result)
	return nil
}

// strategy resolves cfg's sharding strategy. A type this host does not
// serve can only come from a config written elsewhere (a Java instance or
// the console; the local one is validated): the leader then shards with
// AVG_ALLOCATION, as a Java 3.0.5 leader does, and says so once per type,
// rather than leave the job without an assignment while it leads.
func (j *Job) strategy(cfg *config.JobConfiguration) (spi.ShardingStrategy, error) {
	typ := cfg.ShardingStrategyType()
	s, err := j.strat(typ)
	if errors.Is(err, spi.ErrUnknownType) && spi.NormalizeType(typ) != config.DefaultShardingStrategyType {
		if prev := j.unknownStrategy.Swap(&typ); prev == nil || *prev != typ {
			j.log.Warn("the job's configuration (written elsewhere: a Java instance, the console) names a type this host "+
				"does not serve; sharding with "+config.DefaultShardingStrategyType+" instead",
				"kind", "sharding strategy", "type", typ, "error", err)
		}
		s, err = j.strat(config.DefaultShardingStrategyType)
	}
	if err != nil {
		return nil, fmt.Errorf("sharding strategy %q: %w", typ, err)
	}
	return s, nil
}

// subtreeDeletes returns delete ops for path and everything under it,
// children first.
func (j *Job) subtreeDeletes(ctx context.Context, path string) ([]reg.Op, error) {
	names, err := j.s.children(ctx, path)
	if err != nil {
		return nil, err
	}
	var ops []reg.Op
	for _, n := range names {
		sub, err := j.subtreeDeletes(ctx, reg.Join(path, n))
		if err != nil {
			return nil, err
		}
		ops = append(ops, sub...)
	}
	return append(ops, reg.DeleteOp(path, reg.AnyVersion)), nil
}

// localShardingItems are the items assigned to this instance, ascending
// (ShardingService.getLocalShardingItems); none when this server is not
// available.
func (j *Job) localShardingItems(ctx context.Context) ([]int, error) {
	if j.shutdown.Load() {
		return nil, nil
	}
	if ok, err := j.isAvailableServer(ctx, j.ip); err != nil || !ok {
		return nil, err
	}
	cfg, err := j.config(ctx)
	if err != nil {
		return nil, err
	}
	var items []int
	for i := 0; i < cfg.ShardingTotalCount; i++ {
		v, _, err := j.s.get(ctx, j.s.p.ShardingInstance(i))
		if err != nil {
			return nil, err
		}
		if v == j.id {
			items = append(items, i)
		}
	}
	return items, nil
}

// itemsWith returns the items among items whose node name exists.
func (j *Job) itemsWith(ctx context.Context, items []int, name string) ([]int, error) {
	var out []int
	for _, i := range items {
		ok, err := j.s.exists(ctx, j.s.p.ItemNode(i, name))
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, i)
		}
	}
	return out, nil
}

func without(items, drop []int) []int {
	if len(drop) == 0 {
		return items
	}
	out := items[:0:0]
	for _, i := range items {
		if !slices.Contains(drop, i) {
			out = append(out, i)
		}
	}
	return out
}
