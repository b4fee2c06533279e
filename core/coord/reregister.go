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
	flagged, err := j.failover().recoverIfIdle(ctx)
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
