package coord

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ejob-io/ejob/core/reg"
)

// registration is this instance's standing in the registry's session: the
// session it is registered under, the lease executions start under, the
// pause, and the handling of connection events that moves them (upstream's
// RegistryCenterConnectionStateListener). It is the one owner of that state.
// Connection events and the presumed-expiry timer run one at a time on its own
// queue (cq), apart from the job's queue: a suspension pauses at once and a
// presumed expiry cuts the lease on time even while the job's queue is busy (a
// handler waiting on the registry). The re-registration itself, which writes to
// the registry, runs on the job's queue (askReRegister).
type registration struct {
	*jobBase
	margin time.Duration // see Options.ExpiryMargin
	// Through job: the attempts' run flag (for the logs), the job's
	// event loop, which runs the re-registration (askReRegister,
	// reRegister), the election it makes (ldr) and the recovery of what
	// a cut-off execution left (fo).
	// cq runs onConn and the presumed-expiry timer's closure; the fields
	// below it are owned by its closures.
	cq         *serialQueue
	presume    *time.Timer
	presumeGen uint64       // counts disarms: a timer's closure of an older one does nothing
	suspended  *reg.Session // the session of the last suspension, while its timer is armed

	// exec is the context sessionContext hands out last, shared by the
	// executions under the same parent and lease. Read and written by
	// every fire (Job.SessionContext), each on the worker goroutine the
	// trigger loop hands it to, which changes from fire to fire: atomic.
	exec atomic.Pointer[execContext]

	mu    sync.Mutex
	sess  *reg.Session // session the instance is registered under (nil while paused after loss)
	lease *lease       // lifetime of executions under sess (see lease.go)
	// paused: connection suspended or session lost, not yet re-registered.
	// owed: a fire was skipped while paused (misfire on): one catch-up run
	// is asked for when the pause ends (setPaused). Next to each other, the
	// two bools cost an idle job nothing (the padding before resumeCh).
	paused, owed bool
	resumeCh     chan struct{} // while paused: closed when paused goes false; nil when not paused
}

// isPaused reports whether executions must not start now, and a channel
// closed when the pause ends (already closed when not paused).
func (r *registration) isPaused() (bool, <-chan struct{}) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.resumeCh == nil {
		return r.paused, closedChan
	}
	return r.paused, r.resumeCh
}

// closedChan is closed before any use and never written to, so it is not
// mutable state: the resume channel of every job never paused (one a job
// was ~0.1 KB of an idle job).
var closedChan = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

// setPaused pauses or resumes executions. The end of a pause asks for the
// catch-up run it owes, if any (catchUp).
func (r *registration) setPaused(p bool) {
	r.mu.Lock()
	if p == r.paused {
		r.mu.Unlock()
		return
	}
	r.paused = p
	owed := false
	if p {
		r.resumeCh = make(chan struct{})
	} else {
		if r.resumeCh != nil {
			close(r.resumeCh)
			r.resumeCh = nil // isPaused gives closedChan: a pause's channel is not kept after it
		}
		owed, r.owed = r.owed, false
	}
	r.mu.Unlock()
	if owed {
		r.catchUp()
	}
}

// skipPaused reports whether executions are paused, so that a fire due
// now is skipped; with owe set, a fire it skips is owed the catch-up run
// the end of the pause asks for (any number of them, one run).
func (r *registration) skipPaused(owe bool) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.paused {
		return false
	}
	if owe {
		r.owed = true
	}
	return true
}

// owe records a fire that could not begin because the registry connection
// failed under it: the end of the pause runs it, or, when executions are
// not paused (the pause ended meanwhile, or the client has not reported
// the failure yet), it is asked for now: the run then begins, or meets the
// pause and is owed again.
func (r *registration) owe() {
	r.mu.Lock()
	if r.paused {
		r.owed = true
		r.mu.Unlock()
		return
	}
	r.mu.Unlock()
	r.catchUp()
}

// catchUp asks the scheduler for the catch-up run of the fires skipped
// while paused, unless the job is shutting down.
func (r *registration) catchUp() {
	if r.job.life.shutdown.Load() {
		return
	}
	r.log.Info("one run catches up the fires the registry connection kept from running")
	r.hooks.CatchUp()
}

// sessionLease returns the live session this instance is registered under
// and the live lease executions start under, or ErrSessionLost.
func (r *registration) sessionLease() (*reg.Session, *lease, error) {
	r.mu.Lock()
	s, l, paused := r.sess, r.lease, r.paused
	r.mu.Unlock()
	if s == nil || s.Err() != nil || paused || s != r.s.c.Session() || !l.live() || l.sess != s {
		return nil, nil, ErrSessionLost
	}
	return s, l, nil
}

// registered notes that the instance is registered under sess, with a
// fresh lease unless the current one is of sess and live.
func (r *registration) registered(sess *reg.Session) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.setLeaseLocked(sess)
}

// setLeaseLocked registers sess as the session this instance is registered
// under, with a fresh lease. Caller holds r.mu.
func (r *registration) setLeaseLocked(sess *reg.Session) {
	if r.lease != nil && r.lease.sess != sess {
		r.lease.end(ErrSessionLost)
	}
	if r.lease == nil || !r.lease.live() || r.lease.sess != sess {
		r.lease = newLease(sess)
	}
	r.sess = sess
}

// standing reports whether the instance is registered under sess
// (already) and whether, moreover, the lease of sess is live (intact).
func (r *registration) standing(sess *reg.Session) (already, intact bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	already = r.sess != nil && r.sess == sess
	return already, already && r.lease.live() && r.lease.sess == sess
}

// registeredSession is the session the instance is registered under (nil
// before registration and after its loss).
func (r *registration) registeredSession() *reg.Session {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.sess
}

// currentLease returns the lease, live or not (nil before registration).
func (r *registration) currentLease() *lease {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lease
}

// execContext is a context sessionContext made for parent under lease.
type execContext struct {
	parent context.Context
	lease  *lease
	ctx    context.Context
}

// sessionContext is Job.SessionContext. The context it made last is
// handed out again while its parent and the lease are the same and it is
// not done: a context per execution (a cancel context and an AfterFunc on
// the lease) was about 4% of the CPU of a no-op execution
// (BenchmarkFire100Jobs).
func (r *registration) sessionContext(parent context.Context) (context.Context, context.CancelFunc) {
	l := r.currentLease()
	if e := r.exec.Load(); e != nil && e.parent == parent && e.lease == l && e.ctx.Err() == nil {
		return e.ctx, func() {}
	}
	ctx, cancel := context.WithCancelCause(parent)
	if l == nil {
		cancel(ErrSessionLost)
		return ctx, func() {}
	}
	lctx := l.context()
	if lctx.Err() != nil {
		cancel(context.Cause(lctx))
		return ctx, func() {}
	}
	stop := context.AfterFunc(lctx, func() { cancel(context.Cause(lctx)) })
	// Ended with its parent (a job removed): nothing stays registered on
	// the lease.
	context.AfterFunc(ctx, func() { stop() })
	r.exec.Store(&execContext{parent: parent, lease: l, ctx: ctx})
	return ctx, func() {}
}

// executionLease is Job.ExecutionLease.
func (r *registration) executionLease() func() time.Time {
	l := r.currentLease()
	if l == nil || l.sess == nil {
		return func() time.Time { return time.Time{} }
	}
	sess := l.sess
	return func() time.Time {
		dl, ok := sess.ExpiryDeadline()
		if !ok {
			return time.Time{}
		}
		return dl.Add(-r.expiryMargin(sess))
	}
}

// expiryMargin is how long before sess's ExpiryDeadline executions are
// cancelled while disconnected.
func (r *registration) expiryMargin(sess *reg.Session) time.Duration {
	if r.margin > 0 {
		return r.margin
	}
	return sess.Timeout() / 3
}

// onConn handles one connection event (on cq, in the order the client
// reported them): it pauses at once on Suspended/Lost (no new
// executions), arms the presumed-expiry timer on a suspension (cancelling
// running items when the connection stays down until the session's
// ExpiryDeadline less the margin), and asks the job to re-register after a
// new session or after a presumed expiry the session survived.
func (r *registration) onConn(ce reg.ConnEvent) {
	r.log.Debug("connection state", "state", ce.State, "session", ce.Session)
	switch ce.State {
	case reg.StateSuspended:
		r.log.Warn("registry connection suspended; pausing executions (running items continue)")
		r.setPaused(true)
		r.disarm()
		if ce.Session != nil {
			r.suspended = ce.Session
			r.armPresume(ce.Session)
		}
	case reg.StateLost:
		r.disarm()
		r.log.Warn("registry session lost; pausing executions and cancelling running items")
		r.mu.Lock()
		if r.sess == ce.Session {
			r.sess = nil
		}
		if r.lease != nil && r.lease.sess == ce.Session {
			r.lease.end(fmt.Errorf("%w: %w", ErrSessionLost, ce.Session.Err()))
		}
		r.mu.Unlock()
		r.setPaused(true)
	case reg.StateConnected, reg.StateReconnected:
		r.disarm()
		already, intact := r.standing(ce.Session)
		if intact && ce.Session.Err() == nil {
			if paused, _ := r.isPaused(); paused {
				r.log.Info("registry connection back with the same session; resuming")
			}
			r.setPaused(false)
			return
		}
		same := already && ce.Session.Err() == nil
		if ce.State == reg.StateConnected && !same {
			return
		}
		// A new session, or the same one after its lease was cut by a
		// presumed expiry: the job clears what the cut-off execution
		// left and renews the lease before resuming.
		r.job.loop.askReRegister()
	case reg.StateNewSession:
		r.disarm()
		r.job.loop.askReRegister()
	}
}

// armPresume arms the presumed-expiry timer of a suspended session (none
// when the session has no known timeout); it posts to cq.
func (r *registration) armPresume(sess *reg.Session) {
	dl, ok := sess.ExpiryDeadline()
	if !ok {
		return
	}
	gen := r.presumeGen
	r.presume = time.AfterFunc(max(time.Until(dl.Add(-r.expiryMargin(sess))), 0), func() {
		r.cq.post(func() {
			if r.presumeGen != gen {
				return // disarmed meanwhile
			}
			r.presume = nil
			r.presumeExpired(r.suspended)
		})
	})
}

// disarm stops the presumed-expiry timer (on cq, or once cq is closed).
func (r *registration) disarm() {
	if r.presume != nil {
		r.presume.Stop()
	}
	r.presume, r.suspended = nil, nil
	r.presumeGen++
}

// presumeExpired ends the lease of sess because, by the client's clock,
// the server may expire the session now: running items are cancelled
// (ErrSessionPresumedLost) and no execution starts until the connection is
// back.
func (r *registration) presumeExpired(sess *reg.Session) {
	r.mu.Lock()
	l := r.lease
	cut := l != nil && l.sess == sess && l.live()
	if cut {
		l.end(ErrSessionPresumedLost)
	}
	r.mu.Unlock()
	if cut {
		dl, _ := sess.ExpiryDeadline()
		r.log.Warn("registry unreachable for nearly the session timeout: presuming the session expired; cancelling running items and leader duties",
			"session", sess, "last_heard_ago", time.Since(sess.LastHeard()).Round(time.Millisecond),
			"session_timeout", sess.Timeout(), "server_may_expire_in", time.Until(dl).Round(time.Millisecond),
			"running", r.job.att.running.Load())
	}
}

// stop ends the connection handling: no onConn runs after it returns.
func (r *registration) stop() {
	r.cq.close()
	r.disarm()
}
