package coord

import (
	"sync/atomic"

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

// treeCache is the job's view of the shared tree cache. view is set by
// Start before anything reads it and stays after the job's end. live is
// view while the job runs: written by Start and the job's end (finish),
// read by every trigger (loaded) and by the console's dump (Job.Cache)
// on their own goroutines: atomic.
type treeCache struct {
	view *reg.CacheView
	live atomic.Pointer[reg.CacheView]
}

// loaded returns the job's tree cache once its initial load is done,
// else nil (callers then read the registry).
func (t *treeCache) loaded() *reg.CacheView {
	c := t.live.Load()
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
