package coord

import (
	"github.com/ejob-io/ejob/core/node"
	"github.com/ejob-io/ejob/core/reg"
)

// The trigger path (ShardingContexts, MisfireIfRunning, RegisterBegin,
// RegisterCompleted, ExecuteMisfired, FailoverIfNecessary) reads the job's
// tree cache, which watches every node it needs, and goes to the server
// only where the protocol needs a fresh answer. A steady
// trigger makes one read before its running-node transaction: the stat of
// leader/sharding (see assignment.settled). Where a cached value could be
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

// availableInCache reports whether this server is available (ENABLED, and
// an instance lives on its IP) as the tree cache shows it; ok is false
// when the cache does not show servers/{ip} with a value (the registry is
// then read, with upstream's retries).
//
// The cache may lag a console's DISABLED by one watch delivery: upstream
// reads this node through its tree cache too. Disabling a server makes
// the leader flag a resharding, which assignment.settled reads fresh.
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
