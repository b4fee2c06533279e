package coord

import (
	"context"
	"errors"

	"github.com/ejob-io/ejob/core/reg"
)

// cleanStale removes the per-item nodes that instances which no longer
// exist left behind (better than upstream, where such nodes can stop a job
// forever, #2429): a running node of a dead instance blocks resharding and
// hides the item from its owner, a failovering node keeps the item out of
// failover, a failover node takes the item off its owner. Crash handling
// (spec §10.1) misses them when the dead instance's server was disabled,
// when the crash happened while nobody watched (whole-cluster restart with
// several instances), or when Java instances of 3.0.0/3.0.1 wrote them.
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
// are not judged. The leader runs it at startup, on reconcile ticks and
// after an instance crash.
func (j *Job) cleanStale(ctx context.Context) error {
	cfg, err := j.config(ctx)
	if err != nil {
		return err
	}
	names, err := j.s.children(ctx, j.p.Sharding())
	if err != nil {
		return err
	}
	alive := map[string]bool{j.id: true}
	isDead := func(id string) (bool, error) {
		if id == "" || alive[id] {
			return false, nil
		}
		ok, err := j.s.exists(ctx, j.p.Instance(id))
		if err != nil || ok {
			alive[id] = ok
			return false, err
		}
		return true, nil
	}
	flagged := false
	var errs []error
	for _, i := range itemNumbers(names) {
		for _, name := range []string{"failover", "failovering", "running"} {
			v, ok, err := j.s.get(ctx, j.p.ItemNode(i, name))
			if err != nil {
				return err
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
			j.log.Warn("removing a node left by an instance that is gone", "item", i, "node", name, "instance", v)
			switch name {
			case "failover":
				_, err = j.s.deleteIfValue(ctx, j.p.ItemNode(i, name), v)
			case "failovering":
				if cfg.Failover {
					var queued bool
					if queued, err = j.queueIfNames(ctx, i, name, v); err != nil {
						break
					}
					flagged = flagged || queued
				}
				if _, err = j.s.deleteIfValue(ctx, j.p.ItemNode(i, name), v); err != nil {
					break
				}
				_, err = j.s.deleteIfValue(ctx, j.p.Running(i), v)
			case "running":
				if cfg.Failover {
					if err = j.setCrashedFailoverFlag(ctx, i, v); err != nil {
						break
					}
					flagged = true
				}
				_, err = j.s.deleteIfValue(ctx, j.p.ItemNode(i, name), v)
			}
			errs = append(errs, err)
		}
		if ok, err := j.s.exists(ctx, j.p.Misfire(i)); err != nil {
			return err
		} else if ok {
			owner, _, err := j.s.get(ctx, j.p.ShardingInstance(i))
			if err != nil {
				return err
			}
			dead, err := isDead(owner)
			switch {
			case err != nil:
				return err
			case dead && cfg.Failover:
				q, err := j.queueMisfire(ctx, i, owner)
				flagged = flagged || q
				errs = append(errs, err)
			case dead || owner == "":
				j.log.Info("removing the misfire flag of an item whose owner is gone", "item", i, "owner", owner)
				if err := j.c.Delete(ctx, j.p.Misfire(i), reg.AnyVersion); err != nil && !errors.Is(err, reg.ErrNoNode) {
					errs = append(errs, err)
				}
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if flagged {
		return j.failoverIfNecessary(ctx)
	}
	return nil
}

// cleanStaleIfLeader runs cleanStale on the leader only.
func (j *Job) cleanStaleIfLeader(ctx context.Context) error {
	if ok, err := j.isLeader(ctx); err != nil || !ok {
		return err
	}
	return j.cleanStale(ctx)
}
