package coord

import (
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

// misfireCandidates are the items among items that may have a misfire
// flag: the tree cache shows one, or this process set one. With no
// candidate, ExecuteMisfired answers without a request. It is used for
// this instance's own items only (cacheReads.own): their flags are set by this
// process (a fire skipped while they ran). The flags of a failover run's
// items are set by their owner, whose fire found them running here
// (ShardingContexts), possibly a moment before the run ends: those are
// read from the server, so that the run catches the fire up at once.
// A flag on an own item that another instance set a moment ago (its
// assignment was stale) is served by the pump (runPendingMisfires), as a
// flag that arrives just after a fresh read would be.
func (j *Job) misfireCandidates(cache *reg.CacheView, items []int) []int {
	return j.mis.Load().withSet(j.cr.itemsWith(cache, items, "misfire"), items)
}
