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
func (r *registration) reRegister(ctx context.Context, ns *Namespace) error {
	if r.job.life.shutdown.Load() {
		return nil
	}
	sess := r.s.c.Session()
	if sess.Err() != nil {
		return ErrSessionLost
	}
	already, intact := r.standing(sess)
	if intact {
		r.setPaused(false)
		return nil
	}
	if !already {
		status := node.ServerDisabled
		if v, ok, err := r.s.get(ctx, r.s.p.Server(r.ip)); err != nil {
			return err
		} else if ok && v == node.ServerEnabled {
			status = node.ServerEnabled
		}
		if _, err := reg.Persist(ctx, r.s.c, r.s.p.Server(r.ip), ns.values.of(status)); err != nil {
			return wrap("re-register server", err)
		}
		if err := r.s.persistEphemeral(ctx, r.s.p.Instance(r.id), ns.values.instance(r.id, r.ip)); err != nil {
			return wrap("re-register instance", err)
		}
		if sess != r.s.c.Session() || sess.Err() != nil {
			return ErrSessionLost
		}
	}
	r.job.fo.leaveToRecovery()
	r.job.loop.armPump()
	flagged, err := r.job.fo.get().recoverIfIdle(ctx)
	if err != nil {
		r.log.Warn("recover running items after the session interruption failed", "error", err)
	}
	r.registered(sess)
	if !already {
		if has, err := r.job.ldr.e.HasLeader(ctx); err == nil && !has {
			if err := r.job.ldr.electAvailable(ctx); err != nil {
				r.log.Warn("election after new session failed", "error", err)
			}
		}
		r.log.Info("re-registered in a new registry session; resuming", "session", sess)
	} else {
		r.log.Info("registry connection back with the same session after a presumed expiry; resuming", "session", sess)
	}
	r.setPaused(false)
	if flagged {
		if err := r.job.fo.get().failoverIfNecessary(ctx); err != nil {
			r.log.Warn("failover after the session interruption failed", "error", err)
		}
	}
	return nil
}
