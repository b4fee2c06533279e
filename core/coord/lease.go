package coord

import (
	"context"
	"fmt"
	"sync"

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
//
// The context is made when an execution first needs it (context): an idle
// job's lease is a few words, not a context registered on the session's
// (about 0.35 KB a job).
type lease struct {
	sess *reg.Session

	mu     sync.Mutex
	ctx    context.Context         // nil until context is called
	cancel context.CancelCauseFunc // ctx's; also detaches from the session
	ended  error                   // end's cause while ctx is nil
}

func newLease(sess *reg.Session) *lease { return &lease{sess: sess} }

// context returns the lease's context: done with the cause of the lease's
// end, or of the session's.
func (l *lease) context() context.Context {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ctx == nil {
		l.ctx, l.cancel = l.sess.CauseContext(context.Background())
		if l.ended != nil {
			l.cancel(l.ended)
		}
	}
	return l.ctx
}

// end ends the lease with cause (first cause wins).
func (l *lease) end(cause error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.ctx != nil:
		l.cancel(cause)
	case l.ended == nil:
		if err := l.sess.Err(); err != nil {
			cause = err // ended with the session first, as a context made now says
		}
		l.ended = cause
	}
}

// cause is why the lease ended (nil while it is live).
func (l *lease) cause() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ctx != nil {
		return context.Cause(l.ctx)
	}
	if l.ended != nil {
		return l.ended
	}
	return l.sess.Err()
}

// live reports whether executions may still run under the lease.
func (l *lease) live() bool { return l != nil && l.cause() == nil }
