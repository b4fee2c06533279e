package coord

import (
	"context"
	"slices"
	"strconv"

	"github.com/ejob-io/ejob/core/node"
	"github.com/ejob-io/ejob/core/reg"
)

// cacheReads are the trigger's reads of the job's tree cache: what the
// cache shows of this server, its items and their flags. They keep no
// state; the callers say why a stale answer is harmless where they use
// one (trigger.go).
type cacheReads struct {
	*jobBase
	run *runFlag // the attempts' run flag (running)
}

// available reports whether this server is available (ENABLED, and
// an instance lives on its IP) as the tree cache shows it; ok is false
// when the cache does not show servers/{ip} with a value (the registry is
// then read, with upstream's retries).
//
// The cache may lag a console's DISABLED by one watch delivery: upstream
// reads this node through its tree cache too. Disabling a server makes
// the leader flag a resharding, which assignment.settled reads fresh.
func (r cacheReads) available(cache *reg.CacheView) (available, ok bool) {
	if cache == nil {
		return false, false
	}
	v, _, found := cache.Peek(r.paths.server())
	if !found || len(v) == 0 {
		return false, false
	}
	if string(v) != node.ServerEnabled {
		return false, true
	}
	on := false
	cache.EachChild(r.paths.instances(), func(id string) bool {
		on = ipPrefix(id) == r.ip
		return !on
	})
	return on, true
}

// itemsWith returns the items among items whose node name exists in
// the tree cache.
func (r cacheReads) itemsWith(cache *reg.CacheView, items []int, name string) []int {
	var out []int
	for _, i := range items {
		if _, _, ok := cache.Peek(r.paths.item(i, name)); ok {
			out = append(out, i)
		}
	}
	return out
}

// running returns the items among items that the tree cache shows
// running. A running node naming this instance while no execution runs
// here is not counted: it is this instance's own, either just deleted (the
// cache has not seen the deletion yet) or left by a cut-off execution,
// which recoverIfIdle clears and RegisterBegin's fallback replaces.
//
// A running node another instance created a moment ago may be missing:
// the running-node transaction then fails on it (its create finds the
// node), so the item never runs twice at once (RegisterBegin). The
// callers confirm the items it returns on the server (runningItems).
func (r cacheReads) running(cache *reg.CacheView, items []int) []int {
	var out []int
	for _, i := range items {
		v, _, ok := cache.Peek(r.paths.item(i, "running"))
		if ok && (string(v) != r.id || r.run.Load()) {
			out = append(out, i)
		}
	}
	return out
}

// own reports whether the tree cache shows every item of items
// assigned to this instance.
func (r cacheReads) own(cache *reg.CacheView, items []int) bool {
	for _, i := range items {
		if v, _, ok := cache.Peek(r.paths.item(i, "instance")); !ok || string(v) != r.id {
			return false
		}
	}
	return true
}

// failoverQueued reports whether the tree cache shows queued
// failover items (leader/failover/items has children).
func (r cacheReads) failoverQueued(cache *reg.CacheView) bool {
	names, _ := cache.Children(r.s.p.FailoverItems())
	return len(names) > 0
}

// misfired: the tree cache shows this instance's own items
// (sharding/i/instance = me) with a misfire flag and no running node. The
// pump asks it a failoverTick after every trigger (pumpFired), so it reads
// without copying or building paths.
func (r cacheReads) misfired(cache *reg.CacheView) []int {
	var buf [8]int
	var out []int
	for _, i := range r.items(cache, buf[:0]) {
		if _, _, mis := cache.Peek(r.paths.item(i, node.ItemMisfire)); !mis {
			continue // the usual answer, so asked first
		}
		if v, _, ok := cache.Peek(r.paths.item(i, node.ItemInstance)); !ok || string(v) != r.id {
			continue
		}
		if _, _, run := cache.Peek(r.paths.item(i, node.ItemRunning)); !run {
			out = append(out, i)
		}
	}
	return out
}

// items appends to dst the items the tree cache shows under sharding
// (the numbers of its children), ascending.
func (r cacheReads) items(cache *reg.CacheView, dst []int) []int {
	cache.EachChild(r.paths.sharding(), func(name string) bool {
		if i, err := strconv.Atoi(name); err == nil && i >= 0 {
			dst = append(dst, i)
		}
		return true
	})
	slices.Sort(dst)
	return dst
}

// claimed: the tree cache shows an item whose failover node names
// this instance.
func (r cacheReads) claimed(cache *reg.CacheView) bool {
	var buf [8]int
	for _, i := range r.items(cache, buf[:0]) {
		if v, _, ok := cache.Peek(r.paths.item(i, node.ItemFailover)); ok && string(v) == r.id {
			return true
		}
	}
	return false
}

// itemsWithCached is itemsWith for the items the tree cache shows with
// the node: the cache's no is taken as is (the caller says why a stale
// no is harmless), its yes is confirmed on the server, since it makes the
// trigger skip or flag an item (the cache may not yet show a deletion,
// this instance's own included).
func (r cacheReads) itemsWithCached(ctx context.Context, cache *reg.CacheView, items []int, name string) ([]int, error) {
	if cache != nil {
		items = r.itemsWith(cache, items, name)
	}
	return r.s.itemsWith(ctx, items, name)
}

// runningItems are the items among items that run: those cacheReads.running
// shows running, confirmed on the server (or all read from the registry
// without a cache).
func (r cacheReads) runningItems(ctx context.Context, cache *reg.CacheView, items []int) ([]int, error) {
	if cache != nil {
		items = r.running(cache, items)
	}
	return r.s.itemsWith(ctx, items, "running")
}
