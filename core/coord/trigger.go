package coord

import (
	"context"
	"errors"
	"slices"

	"github.com/ejob-io/ejob/core/reg"
)

// The trigger path (ShardingContexts, MisfireIfRunning, RegisterBegin,
// RegisterCompleted, ExecuteMisfired, FailoverIfNecessary) reads the job's
// tree cache, which watches every node it needs, and goes to the server
// only where the protocol needs a fresh answer (issue 16). A steady
// trigger makes one read before its running-node transaction: the stat of
// leader/sharding (see settledAssignment). Where a cached value could be
// stale in a way that matters, the comment at its use says why it cannot
// cause a duplicate run: a fence in the transaction, a fresh read, or a
// fallback to the fresh path when the cache disagrees with the server.
//
// Upstream (ElasticJob-Lite 3.0.x) reads node data through its tree cache
// too (ZookeeperRegistryCenter.get prefers the cache): the assignment
// (sharding/{i}/instance), the server status (servers/{ip}) and the config.
// Its existence checks (running, disabled, failover, misfire, necessary)
// go to the server.

// treeCache returns the job's tree cache once its initial load is done,
// else nil (callers then read the registry).
func (j *Job) treeCache() *reg.CacheView {
	c := j.liveCache.Load()
	if c == nil {
		return nil
	}
	select {
	case <-c.Initialized():
		return c
	default:
		return nil
	}
}

// settledAssignment reads the stat of leader/sharding (the parent of the
// necessary and processing flags) from the server: one request, the only
// read a steady trigger makes before its running-node transaction. It
// reports whether a resharding may be pending (either flag exists: the
// caller then takes upstream's path, fresh reads) and the zxid of the last
// creation or deletion of a flag (0 when leader/sharding does not exist:
// no resharding ever committed, and the assignment is read from the
// server).
func (j *Job) settledAssignment(ctx context.Context) (pending bool, pzxid int64, err error) {
	st, ok, err := j.c.Exists(ctx, reg.Parent(j.p.of(nodeNecessary)))
	if err != nil {
		return false, 0, wrap("read resharding flags", err)
	}
	if !ok {
		return false, 0, nil
	}
	return st.NumChildren > 0, st.Pzxid, nil
}

// cachedAssignment returns this instance's items (ascending) from the tree
// cache, when the cache is known to show the assignment committed last,
// whose flags' deletion the server reported at zxid pzxid (see
// settledAssignment); ok is false otherwise, and the caller reads the
// registry (localShardingItems).
//
// Why this is as fresh as a read from the server: a resharding commit, by
// ejob or by a Java leader, creates every item's instance node in the
// transaction that deletes the necessary and processing flags, so those
// nodes have Czxid == pzxid. A cache that shows every item's instance node
// with a Czxid of at least pzxid has therefore applied that commit, and no
// later one exists (a later one would have moved pzxid, and the flag it
// needed would exist until it committed). A pzxid from some other change
// of the flags (a failed commit's clean-up, a leader's lost session)
// makes the check fail until a fresh read finds the cache in agreement
// with the server at that pzxid (verifiedPzxid, set by readAssignment).
// The verification holds while pzxid stays: the instance nodes change
// only in a resharding, which moves pzxid (a Java leader deletes the old
// ones outside its commit, but after creating the processing flag).
func (j *Job) cachedAssignment(cache *reg.CacheView, total int, pzxid int64) ([]int, bool) {
	if cache == nil || j.shutdown.Load() || pzxid == 0 {
		return nil, false
	}
	verified := j.verifiedPzxid.Load() == pzxid
	var items []int
	for i := range total {
		v, st, ok := cache.Get(j.p.itemNode(i, "instance"))
		if !ok || (!verified && st.Czxid < pzxid) {
			return nil, false
		}
		if string(v) == j.id {
			items = append(items, i)
		}
	}
	return items, true
}

// readAssignment reads this instance's items (ascending) from the
// registry, one Get per item (upstream's getLocalShardingItems, without the
// server check, which the caller made). When settledAssignment found no
// flag at pzxid and every node read agrees with the tree cache (data and
// Czxid), later triggers may use the cache while pzxid stays the same
// (verifiedPzxid, see cachedAssignment).
func (j *Job) readAssignment(ctx context.Context, cache *reg.CacheView, total int, pzxid int64) ([]int, error) {
	agree := cache != nil && pzxid != 0
	var items []int
	for i := range total {
		v, st, err := j.c.Get(ctx, j.p.itemNode(i, "instance"))
		if errors.Is(err, reg.ErrNoNode) {
			agree = false
			continue
		}
		if err != nil {
			return nil, err
		}
		if string(v) == j.id {
			items = append(items, i)
		}
		if agree {
			cv, cst, ok := cache.Get(j.p.itemNode(i, "instance"))
			agree = ok && string(cv) == string(v) && cst.Czxid == st.Czxid
		}
	}
	if agree {
		j.verifiedPzxid.Store(pzxid)
	}
	return items, nil
}

// availableInCache reports whether this server is available (ENABLED, and
// an instance lives on its IP) as the tree cache shows it; ok is false
// when the cache does not show servers/{ip} with a value (the registry is
// then read, with upstream's retries).
//
// The cache may lag a console's DISABLED by one watch delivery: upstream
// reads this node through its tree cache too. Disabling a server makes
// the leader flag a resharding, which settledAssignment reads fresh.
func (j *Job) availableInCache(cache *reg.CacheView) (available, ok bool) {
	if cache == nil {
		return false, false
	}
	v, _, found := cache.Get(j.p.server(j.ip))
	if !found || len(v) == 0 {
		return false, false
	}
	if string(v) != serverEnabled {
		return false, true
	}
	ids, _ := cache.Children(j.p.of(nodeInstances))
	for _, id := range ids {
		if ipPrefix(id) == j.ip {
			return true, true
		}
	}
	return false, true
}

// cachedItemsWith returns the items among items whose node name exists in
// the tree cache.
func cachedItemsWith(cache *reg.CacheView, p paths, items []int, name string) []int {
	var out []int
	for _, i := range items {
		if _, _, ok := cache.Get(p.itemNode(i, name)); ok {
			out = append(out, i)
		}
	}
	return out
}

// runningInCache returns the items among items that the tree cache shows
// running. A running node naming this instance while no execution runs
// here is not counted: it is this instance's own, either just deleted (the
// cache has not seen the deletion yet) or left by a cut-off execution,
// which recoverIfIdle clears and RegisterBegin's fallback replaces.
//
// A running node another instance created a moment ago may be missing:
// the running-node transaction then fails on it (its create finds the
// node), so the item never runs twice at once (RegisterBegin). The
// callers confirm the items it returns on the server (runningItems).
func (j *Job) runningInCache(cache *reg.CacheView, items []int) []int {
	var out []int
	for _, i := range items {
		v, _, ok := cache.Get(j.p.itemNode(i, "running"))
		if ok && (string(v) != j.id || j.running.Load()) {
			out = append(out, i)
		}
	}
	return out
}

// beginFast is RegisterBegin's transaction with the fence taken from the
// tree cache: the instance node's version as the cache shows it, provided
// the cache shows it owned by the current session. The check op makes the
// server verify it, so a stale cache can only make the transaction fail,
// never pass: the caller then takes the fresh path, which also reports
// any other failure (a lost connection: ErrSessionLost, as before). It
// reports whether it committed.
func (j *Job) beginFast(ctx context.Context, sess *reg.Session, ops []reg.Op) bool {
	cache := j.treeCache()
	if cache == nil {
		return false
	}
	_, st, ok := cache.Get(j.p.instance(j.id))
	if !ok || st.EphemeralOwner != sess.ID() || sess.Err() != nil || j.c.Session() != sess {
		return false
	}
	all := append([]reg.Op{reg.CheckOp(j.p.instance(j.id), st.Version)}, ops...)
	_, err := j.c.Multi(ctx, all...)
	return err == nil
}

// completeFast deletes the items' running nodes (and, with failover,
// their failover and failovering nodes naming this instance) in one
// transaction, from what the tree cache and this process know. It reports
// whether it did; when it did not (the cache does not know enough, or the
// transaction failed because a node is gone or changed), the caller takes
// the fresh path, which reads each node and deletes only this instance's
// (and reports a failure that is not about the nodes).
//
// The running nodes were created by this execution's RegisterBegin at
// version 0; the cache may not have seen them yet. A node the cache shows
// naming another instance sends the caller to the fresh path: the cache
// may not have seen this execution replace it. Another instance can only replace this instance's running
// node after its instance node is gone (the stale sweep, crash handling),
// i.e. after its session ended; RegisterCompleted handles that case
// before (the execution's lease is dead).
func (j *Job) completeFast(ctx context.Context, items []int, monitor, failover bool) bool {
	cache := j.treeCache()
	if cache == nil {
		return false
	}
	var ops []reg.Op
	for _, i := range items {
		if monitor {
			v, st, ok := cache.Get(j.p.itemNode(i, "running"))
			switch {
			case !ok:
				ops = append(ops, reg.DeleteOp(j.p.itemNode(i, "running"), 0))
			case string(v) == j.id:
				ops = append(ops, reg.DeleteOp(j.p.itemNode(i, "running"), st.Version))
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
		if j.claimed(i) {
			return false // a claim the cache may not show yet
		}
		for _, n := range []string{"failover", "failovering"} {
			v, st, ok := cache.Get(j.p.itemNode(i, n))
			switch {
			case ok && string(v) == j.id:
				ops = append(ops, reg.DeleteOp(j.p.itemNode(i, n), st.Version))
			case ok:
				return false // possibly stale, as above
			}
		}
	}
	if len(ops) == 0 {
		return true
	}
	_, err := j.c.Multi(ctx, ops...)
	return err == nil
}

// claimed reports whether this process claimed item i for failover and
// has not seen it completed.
func (j *Job) claimed(i int) bool {
	j.claimsMu.Lock()
	defer j.claimsMu.Unlock()
	return j.claims[i]
}

// noteMisfire records items whose misfire flag this process set, which
// the tree cache may not show yet (misfireCandidates).
func (j *Job) noteMisfire(items []int) {
	j.misfireMu.Lock()
	defer j.misfireMu.Unlock()
	if j.misfireSet == nil {
		j.misfireSet = map[int]bool{}
	}
	for _, i := range items {
		j.misfireSet[i] = true
	}
}

// forgetMisfire drops items from the flags this process set.
func (j *Job) forgetMisfire(items []int) {
	j.misfireMu.Lock()
	defer j.misfireMu.Unlock()
	for _, i := range items {
		delete(j.misfireSet, i)
	}
}

// misfireCandidates are the items among items that may have a misfire
// flag: the tree cache shows one, or this process set one. With no
// candidate, ExecuteMisfired answers without a request. It is used for
// this instance's own items only (ownInCache): their flags are set by this
// process (a fire skipped while they ran). The flags of a failover run's
// items are set by their owner, whose fire found them running here
// (ShardingContexts), possibly a moment before the run ends: those are
// read from the server, so that the run catches the fire up at once.
// A flag on an own item that another instance set a moment ago (its
// assignment was stale) is served by the pump (runPendingMisfires), as a
// flag that arrives just after a fresh read would be.
func (j *Job) misfireCandidates(cache *reg.CacheView, items []int) []int {
	out := cachedItemsWith(cache, j.p, items, "misfire")
	j.misfireMu.Lock()
	defer j.misfireMu.Unlock()
	for _, i := range items {
		if j.misfireSet[i] && !slices.Contains(out, i) {
			out = append(out, i)
		}
	}
	slices.Sort(out)
	return out
}

// ownInCache reports whether the tree cache shows every item of items
// assigned to this instance.
func (j *Job) ownInCache(cache *reg.CacheView, items []int) bool {
	for _, i := range items {
		if v, _, ok := cache.Get(j.p.itemNode(i, "instance")); !ok || string(v) != j.id {
			return false
		}
	}
	return true
}

// failoverQueuedInCache reports whether the tree cache shows queued
// failover items (leader/failover/items has children).
func (j *Job) failoverQueuedInCache(cache *reg.CacheView) bool {
	names, _ := cache.Children(j.p.of(nodeFailoverItems))
	return len(names) > 0
}
