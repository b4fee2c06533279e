package coord

import (
	"context"
	"errors"

	"github.com/hashicorp/go-hclog"

	"github.com/ejob-io/ejob/core/config"
	"github.com/ejob-io/ejob/core/node"
	"github.com/ejob-io/ejob/core/reg"
)

// staleSweeper is the stale-node sweep of one job on one instance (see
// sweep). It keeps no state between sweeps; what it needs of the job is
// staleJob.
type staleSweeper struct {
	s   store  // the registry client and the job's paths
	id  string // this instance's id
	log hclog.Logger
	job staleJob
	fo  staleFailover
}

// staleJob is what the sweep asks of the job (sweeps implements it): the
// config and the leadership.
type staleJob interface {
	config(ctx context.Context) (*config.JobConfiguration, error)
	isLeader(ctx context.Context) (bool, error)
}

// staleFailover is the failover protocol's hand-over of a gone instance's
// items (failover implements it).
type staleFailover interface {
	setCrashedFailoverFlag(ctx context.Context, i int, x string) error
	queueIfNames(ctx context.Context, i int, name, x string) (bool, error)
	queueMisfire(ctx context.Context, i int, x string) (bool, error)
	failoverIfNecessary(ctx context.Context) error
}

// sweep removes the per-item nodes that gone instances left behind
// (better than upstream, where such nodes can stop a job forever,
// ElasticJob issue #2429): a running node of a dead instance blocks
// resharding and hides the item from its owner, a failovering node keeps
// the item out of failover, a failover node takes the item off its owner.
// Crash handling (JobCrashedJobListener) misses them when the dead
// instance's server was disabled, when the crash happened while nobody
// watched (whole-cluster restart with several instances), or when Java
// instances of 3.0.0/3.0.1 wrote them.
//
// A node is stale when the instance it names has no instances/ node after
// the node was read: running nodes are only created fenced on the creator's
// instance node, so the creator's session has ended since. Items of failed
// running or failovering nodes are queued for failover when failover is on.
// The misfire flag of an item whose owner is gone (a fire found the item
// running and the owner died before its catch-up run) queues the item for
// failover when failover is on (queueMisfire), and is dropped otherwise, as
// is the flag of an unassigned item. Nodes naming
// this instance are left to recoverOwnRunning, and empty values (3.0.0-1)
// are not judged. The leader runs it at startup, after an instance crash,
// and on a reconcile tick when the tree cache shows a node it would act on
// (suspects).
func (w *staleSweeper) sweep(ctx context.Context) error {
	names, err := w.s.children(ctx, w.s.p.Sharding())
	if err != nil {
		return err
	}
	return w.sweepItems(ctx, names)
}

// sweepItems is sweep on the children of sharding/ listed already.
func (w *staleSweeper) sweepItems(ctx context.Context, names []string) error {
	if len(names) == 0 {
		return nil
	}
	cfg, err := w.job.config(ctx)
	if err != nil {
		return err
	}
	alive := map[string]bool{w.id: true}
	isDead := func(id string) (bool, error) {
		if id == "" || alive[id] {
			return false, nil
		}
		ok, err := w.s.exists(ctx, w.s.p.Instance(id))
		if err != nil || ok {
			alive[id] = ok
			return false, err
		}
		return true, nil
	}
	// The items' nodes are read together first (getMany: one multiRead
	// instead of four reads an item); a running node the failovering
	// branch has acted on is read again.
	items := itemNumbers(names)
	kinds := []string{"failover", "failovering", "running"}
	paths := make([]string, 0, len(items)*(len(kinds)+1))
	for _, i := range items {
		for _, name := range kinds {
			paths = append(paths, w.s.p.ItemNode(i, name))
		}
		paths = append(paths, w.s.p.Misfire(i))
	}
	vals, found, err := w.s.getMany(ctx, paths)
	if err != nil {
		return err
	}
	flagged := false
	var errs []error
	for k, i := range items {
		base := k * (len(kinds) + 1)
		reread := false
		for n, name := range kinds {
			v, ok := vals[base+n], found[base+n]
			if name == "running" && reread {
				if v, ok, err = w.s.get(ctx, w.s.p.ItemNode(i, name)); err != nil {
					return err
				}
			}
			if !ok {
				continue
			}
			dead, err := isDead(v)
			if err != nil {
				return err
			}
			if !dead {
				continue
			}
			w.log.Warn("removing a node left by an instance that is gone", "item", i, "node", name, "instance", v)
			switch name {
			case "failover":
				_, err = w.s.deleteIfValue(ctx, w.s.p.ItemNode(i, name), v)
			case "failovering":
				if cfg.Failover {
					var queued bool
					if queued, err = w.fo.queueIfNames(ctx, i, name, v); err != nil {
						break
					}
					flagged = flagged || queued
				}
				if _, err = w.s.deleteIfValue(ctx, w.s.p.ItemNode(i, name), v); err != nil {
					break
				}
				reread = true
				_, err = w.s.deleteIfValue(ctx, w.s.p.Running(i), v)
			case "running":
				if cfg.Failover {
					if err = w.fo.setCrashedFailoverFlag(ctx, i, v); err != nil {
						break
					}
					flagged = true
				}
				_, err = w.s.deleteIfValue(ctx, w.s.p.ItemNode(i, name), v)
			}
			errs = append(errs, err)
		}
		if found[base+len(kinds)] {
			owner, _, err := w.s.get(ctx, w.s.p.ShardingInstance(i))
			if err != nil {
				return err
			}
			dead, err := isDead(owner)
			switch {
			case err != nil:
				return err
			case dead && cfg.Failover:
				q, err := w.fo.queueMisfire(ctx, i, owner)
				flagged = flagged || q
				errs = append(errs, err)
			case dead || owner == "":
				w.log.Info("removing the misfire flag of an item whose owner is gone", "item", i, "owner", owner)
				if err := w.s.c.Delete(ctx, w.s.p.Misfire(i), reg.AnyVersion); err != nil && !errors.Is(err, reg.ErrNoNode) {
					errs = append(errs, err)
				}
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if flagged {
		return w.fo.failoverIfNecessary(ctx)
	}
	return nil
}

// suspects reports whether the tree cache shows a node sweep would act
// on: a running, failover or failovering node naming an instance other
// than this one that the cache shows no instances/ node of, or a misfire
// flag of an item whose owner is such an instance or nobody. The reconcile
// tick sweeps only then, so an idle job's tick reads nothing from the
// registry. Every node the sweep judges lies in the job's subtree, which
// the cache mirrors (Java peers' nodes and instances as well as ejob's): a
// node the cache has not shown yet is seen at a later tick, and an
// instance whose deletion the cache has not shown yet is swept after that
// deletion's event (listeners.handle). It is true when there is no cache.
func (w *staleSweeper) suspects(cache *reg.CacheView) bool {
	if cache == nil {
		return true
	}
	names, ok := cache.Children(w.s.p.Sharding())
	if !ok {
		return false // no sharding/ node: nothing to sweep
	}
	gone := func(id string) bool {
		if id == w.id {
			return false
		}
		_, _, ok := cache.Peek(w.s.p.Instance(id))
		return !ok
	}
	for _, i := range itemNumbers(names) {
		for _, name := range [...]string{node.ItemFailover, node.ItemFailovering, node.ItemRunning} {
			if v, _, ok := cache.Peek(w.s.p.ItemNode(i, name)); ok && len(v) > 0 && gone(string(v)) {
				return true
			}
		}
		if _, _, ok := cache.Peek(w.s.p.Misfire(i)); ok {
			owner, _, _ := cache.Peek(w.s.p.ShardingInstance(i))
			if len(owner) == 0 || gone(string(owner)) {
				return true
			}
		}
	}
	return false
}

// sweepIfLeader runs sweep on the leader only.
func (w *staleSweeper) sweepIfLeader(ctx context.Context) error {
	if ok, err := w.job.isLeader(ctx); err != nil || !ok {
		return err
	}
	return w.sweep(ctx)
}
