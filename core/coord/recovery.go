package coord

import (
	"context"
	"slices"
	"strconv"

	"github.com/ejob-io/ejob/core/node"
	"github.com/ejob-io/ejob/core/reg"
)

// The failover protocol's reads and clearing of this instance's own
// nodes: the failover items it claimed, and the running nodes a cut-off
// execution left.

// localFailoverItems: items whose failover node names this instance; cache
// is the job's tree cache (nil: none). Only
// candidates are read from the registry: the items whose failover node
// names this instance in the tree cache, plus the claims this process made
// (the cache may not show a claim made a moment ago). Reading every item's
// failover node at every trigger cost a 1,000-item job 1,000 reads per
// instance and fire (10 instances: ~12 s on ZooKeeper, 2 cores).
func (f *failover) localFailoverItems(ctx context.Context, cache *reg.CacheView) ([]int, error) {
	if f.job.life.shutdown.Load() {
		return nil, nil
	}
	if cache == nil {
		return f.itemsWithValue(ctx, "failover", f.id)
	}
	cand := map[int]bool{}
	names, _ := cache.Children(f.s.p.Sharding())
	for _, n := range names {
		if v, _, ok := cache.Get(f.s.p.Full(node.ShardingNode + "/" + n + "/" + node.ItemFailover)); ok && string(v) == f.id {
			if i, err := strconv.Atoi(n); err == nil {
				cand[i] = true
			}
		}
	}
	f.addClaims(cand)
	items := make([]int, 0, len(cand))
	for i := range cand {
		items = append(items, i)
	}
	slices.Sort(items)
	var out []int
	for _, i := range items {
		v, ok, err := f.s.get(ctx, f.s.p.Failover(i))
		if err != nil {
			return nil, err
		}
		if ok && v == f.id {
			out = append(out, i)
		} else {
			f.forgetClaims(i)
		}
	}
	return out, nil
}

// recoverIfIdle clears this instance's leftover running nodes when
// needRecover is set and no execution runs here; it reports whether items
// were queued for failover.
// It works on nil (a job without failover state has nothing to recover).
func (f *failover) recoverIfIdle(ctx context.Context) (bool, error) {
	if f == nil || !f.recovering() || f.job.att.running.Load() {
		return false, nil
	}
	flagged, err := f.recoverOwnRunning(ctx, nil)
	if err == nil {
		f.needRecover.Store(false)
	}
	return flagged, err
}

// recoverOwnRunning handles running nodes that name this instance (of the
// given items, or of all when items is nil): they belong to executions cut
// off by a session loss or a presumed one. Upstream deletes them on
// reconnect (losing the interrupted work); ejob queues them for failover
// when failover is on (unless another instance already did, or the item is
// still claimed by this instance's failover node, which re-runs it at its
// next fire), and deletes them, so they never block resharding. It reports
// whether items were queued; the caller runs failoverIfNecessary once
// executions may start.
func (f *failover) recoverOwnRunning(ctx context.Context, items []int) (bool, error) {
	cfg, err := f.job.conf.get(ctx)
	if err != nil {
		return false, err
	}
	if items == nil {
		names, err := f.s.children(ctx, f.s.p.Sharding())
		if err != nil {
			return false, err
		}
		items = itemNumbers(names)
	}
	flagged := false
	for _, i := range items {
		v, ok, err := f.s.get(ctx, f.s.p.Running(i))
		if err != nil {
			return flagged, err
		}
		if !ok || v != f.id {
			continue
		}
		if cfg.Failover {
			fo, _, err := f.s.get(ctx, f.s.p.Failover(i))
			if err != nil {
				return flagged, err
			}
			if fo != f.id {
				f.log.Info("item was running when the session was interrupted; queuing it for failover", "item", i)
				if err := f.setCrashedFailoverFlag(ctx, i, f.id); err != nil {
					return flagged, err
				}
				flagged = true
			}
		}
		if _, err := f.s.deleteIfValue(ctx, f.s.p.Running(i), f.id); err != nil {
			return flagged, err
		}
	}
	return flagged, nil
}
