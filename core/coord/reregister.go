package coord

import (
	"context"

	"github.com/ejob-io/ejob/core/node"
	"github.com/ejob-io/ejob/core/reg"
)

// reRegister re-creates what the lost session took
// (RegistryCenterConnectionStateListener, better than upstream): server status,
// instance node, clears this instance's stale running nodes (before resuming, so
// no new execution's nodes are taken for stale ones), elects if there is no
// leader, then resumes. After a presumed expiry that the session survived it
// only does the clearing and renews the lease.
func (j *Job) reRegister(ctx context.Context) error {
	if j.shutdown.Load() {
		return nil
	}
	sess := j.s.c.Session()
	if sess.Err() != nil {
		return ErrSessionLost
	}
	already, intact := j.rg.standing(sess)
	if intact {
		j.setPaused(false)
		return nil
	}
	if !already {
		status := node.ServerDisabled
		if v, ok, err := j.s.get(ctx, j.s.p.Server(j.ip)); err != nil {
			return err
		} else if ok && v == node.ServerEnabled {
			status = node.ServerEnabled
		}
		if _, err := reg.Persist(ctx, j.s.c, j.s.p.Server(j.ip), []byte(status)); err != nil {
			return wrap("re-register server", err)
		}
		if err := j.s.persistEphemeral(ctx, j.s.p.Instance(j.id), node.InstanceValue(j.id, j.ip)); err != nil {
			return wrap("re-register instance", err)
		}
		if sess != j.s.c.Session() || sess.Err() != nil {
			return ErrSessionLost
		}
	}
	j.setNeedRecover()
	flagged, err := j.recoverIfIdle(ctx)
	if err != nil {
		j.log.Warn("recover running items after the session interruption failed", "error", err)
	}
	j.rg.registered(sess)
	if !already {
		if has, err := j.ldr.e.HasLeader(ctx); err == nil && !has {
			if ok, err := j.ldr.isAvailableServer(ctx, j.ip); err == nil && ok {
				if err := j.ldr.electAndCheck(ctx); err != nil {
					j.log.Warn("election after new session failed", "error", err)
				}
			}
		}
		j.log.Info("re-registered in a new registry session; resuming", "session", sess)
	} else {
		j.log.Info("registry connection back with the same session after a presumed expiry; resuming", "session", sess)
	}
	j.setPaused(false)
	if flagged {
		if err := j.failover().failoverIfNecessary(ctx); err != nil {
			j.log.Warn("failover after the session interruption failed", "error", err)
		}
	}
	return nil
}

// recoverIfIdle clears this instance's leftover running nodes when
// needRecover is set and no execution runs here; it reports whether items
// were queued for failover.
func (j *Job) recoverIfIdle(ctx context.Context) (bool, error) {
	if !j.foState().recovering() || j.att.running.Load() {
		return false, nil
	}
	flagged, err := j.recoverOwnRunning(ctx, nil)
	if err == nil {
		j.failover().needRecover.Store(false)
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
func (j *Job) recoverOwnRunning(ctx context.Context, items []int) (bool, error) {
	cfg, err := j.config(ctx)
	if err != nil {
		return false, err
	}
	if items == nil {
		names, err := j.s.children(ctx, j.s.p.Sharding())
		if err != nil {
			return false, err
		}
		items = itemNumbers(names)
	}
	flagged := false
	for _, i := range items {
		v, ok, err := j.s.get(ctx, j.s.p.Running(i))
		if err != nil {
			return flagged, err
		}
		if !ok || v != j.id {
			continue
		}
		if cfg.Failover {
			fo, _, err := j.s.get(ctx, j.s.p.Failover(i))
			if err != nil {
				return flagged, err
			}
			if fo != j.id {
				j.log.Info("item was running when the session was interrupted; queuing it for failover", "item", i)
				if err := j.failover().setCrashedFailoverFlag(ctx, i, j.id); err != nil {
					return flagged, err
				}
				flagged = true
			}
		}
		if _, err := j.s.deleteIfValue(ctx, j.s.p.Running(i), j.id); err != nil {
			return flagged, err
		}
	}
	return flagged, nil
}
