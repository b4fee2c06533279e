package coord

import (
	"context"
	"errors"
	"math"

	"github.com/ejob-io/ejob/core/node"
	"github.com/ejob-io/ejob/core/reg"
)

// The trigger path (ShardingContexts, MisfireIfRunning, RegisterBegin,
// RegisterCompleted, ExecuteMisfired, FailoverIfNecessary) reads the job's
// tree cache, which watches every node it needs, and goes to the server
// only where the protocol needs a fresh answer. A steady
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
	st, ok, err := j.s.c.Exists(ctx, j.paths.flags())
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
	if cache == nil || j.shutdown.Load() {
		return nil, false
	}
	items, minCzxid, ok := j.assignmentInCache(cache, total)
	if !ok || !j.assignmentSettledAt(minCzxid, pzxid) {
		return nil, false
	}
	return items, true
}

// assignmentInCache returns this instance's items (ascending) as the tree
// cache shows the assignment, and the oldest Czxid among the items'
// instance nodes; ok is false when the cache lacks one of them.
func (j *Job) assignmentInCache(cache *reg.CacheView, total int) (items []int, minCzxid int64, ok bool) {
	minCzxid = math.MaxInt64 // no item: nothing to be stale
	for i := range total {
		v, st, found := cache.Peek(j.paths.item(i, "instance"))
		if !found {
			return nil, 0, false
		}
		minCzxid = min(minCzxid, st.Czxid)
		if string(v) == j.id {
			items = append(items, i)
		}
	}
	return items, minCzxid, true
}

// assignmentSettledAt reports whether a cache whose oldest instance node
// has Czxid minCzxid shows the assignment committed last, given the pzxid
// of leader/sharding read from the server (settledAssignment) after the
// cache was read: see cachedAssignment.
func (j *Job) assignmentSettledAt(minCzxid, pzxid int64) bool {
	return pzxid != 0 && (minCzxid >= pzxid || j.verifiedPzxid.Load() == pzxid)
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
		v, st, err := j.s.c.Get(ctx, j.paths.item(i, "instance"))
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
			cv, cst, ok := cache.Peek(j.paths.item(i, "instance"))
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
	v, _, found := cache.Peek(j.paths.server())
	if !found || len(v) == 0 {
		return false, false
	}
	if string(v) != node.ServerEnabled {
		return false, true
	}
	on := false
	cache.EachChild(j.paths.instances(), func(id string) bool {
		on = ipPrefix(id) == j.ip
		return !on
	})
	return on, true
}

// cachedItemsWith returns the items among items whose node name exists in
// the tree cache.
func (j *Job) cachedItemsWith(cache *reg.CacheView, items []int, name string) []int {
	var out []int
	for _, i := range items {
		if _, _, ok := cache.Peek(j.paths.item(i, name)); ok {
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
		v, _, ok := cache.Peek(j.paths.item(i, "running"))
		if ok && (string(v) != j.id || j.att.running.Load()) {
			out = append(out, i)
		}
	}
	return out
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
	return j.mis.Load().withSet(j.cachedItemsWith(cache, items, "misfire"), items)
}

// ownInCache reports whether the tree cache shows every item of items
// assigned to this instance.
func (j *Job) ownInCache(cache *reg.CacheView, items []int) bool {
	for _, i := range items {
		if v, _, ok := cache.Peek(j.paths.item(i, "instance")); !ok || string(v) != j.id {
			return false
		}
	}
	return true
}

// failoverQueuedInCache reports whether the tree cache shows queued
// failover items (leader/failover/items has children).
func (j *Job) failoverQueuedInCache(cache *reg.CacheView) bool {
	names, _ := cache.Children(j.s.p.FailoverItems())
	return len(names) > 0
}
