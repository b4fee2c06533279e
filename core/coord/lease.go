package coord

import (
	"context"
	"fmt"
	"time"

	"github.com/ejob-io/ejob/core/reg"
)

// ErrSessionPresumedLost: the connection has been down so long that, by the
// client's own clock, the server may expire the session any moment (its
// ExpiryDeadline less the presumed-expiry margin has passed). Executions
// are cancelled with it as the cause so job code stops before another
// instance can take its items over. It wraps ErrSessionLost.
var ErrSessionPresumedLost = fmt.Errorf("%w: presumed expired by the client's clock", ErrSessionLost)

// lease is the lifetime of the executions started under one registration
// of this instance in one session: it ends when that session is lost, when
// the session is presumed expired while disconnected, or when the
// registration is replaced. Its context is the parent of every execution's
// context (context tree: session -> lease -> execution).
type lease struct {
	sess   *reg.Session
	ctx    context.Context
	cancel context.CancelCauseFunc
	stop   context.CancelFunc // detaches from the session
}

func newLease(sess *reg.Session) *lease {
	sctx, stop := sess.Context(context.Background())
	ctx, cancel := context.WithCancelCause(sctx)
	return &lease{sess: sess, ctx: ctx, cancel: cancel, stop: stop}
}

// end ends the lease with cause (first cause wins).
func (l *lease) end(cause error) {
	l.cancel(cause)
	l.stop()
}

// live reports whether executions may still run under the lease.
func (l *lease) live() bool { return l != nil && l.ctx.Err() == nil }

// setLeaseLocked registers sess as the session this instance is registered
// under, with a fresh lease. Caller holds j.mu.
func (j *Job) setLeaseLocked(sess *reg.Session) {
	if j.lease != nil && j.lease.sess != sess {
		j.lease.end(ErrSessionLost)
	}
	if j.lease == nil || !j.lease.live() || j.lease.sess != sess {
		j.lease = newLease(sess)
	}
	j.sess = sess
}

// currentLease returns the live lease, or nil.
func (j *Job) currentLease() *lease {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.lease.live() {
		return j.lease
	}
	return nil
}

// presumeExpired ends the lease of sess because, by the client's clock,
// the server may expire the session now: running items are cancelled
// (ErrSessionPresumedLost) and no execution starts until the connection is
// back. Called by the connection goroutine.
func (j *Job) presumeExpired(sess *reg.Session) {
	j.mu.Lock()
	l := j.lease
	cut := l != nil && l.sess == sess && l.live()
	if cut {
		l.end(ErrSessionPresumedLost)
	}
	j.mu.Unlock()
	if cut {
		dl, _ := sess.ExpiryDeadline()
		j.log.Warn("registry unreachable for nearly the session timeout: presuming the session expired; cancelling running items and leader duties",
			"session", sess, "last_heard_ago", time.Since(sess.LastHeard()).Round(time.Millisecond),
			"session_timeout", sess.Timeout(), "server_may_expire_in", time.Until(dl).Round(time.Millisecond),
			"running", j.running.Load())
	}
}

// expiryMargin is how long before sess's ExpiryDeadline executions are
// cancelled while disconnected.
func (j *Job) expiryMargin(sess *reg.Session) time.Duration {
	if j.margin > 0 {
		return j.margin
	}
	return sess.Timeout() / 3
}

// presumeTimer arms the presumed-expiry timer for a suspended session; nil
// when the session has no known timeout.
func (j *Job) presumeTimer(sess *reg.Session) *time.Timer {
	dl, ok := sess.ExpiryDeadline()
	if !ok {
		return nil
	}
	return time.NewTimer(max(time.Until(dl.Add(-j.expiryMargin(sess))), 0))
}
