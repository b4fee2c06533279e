package coord

import (
	"context"
	"fmt"

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
	cancel context.CancelCauseFunc // also detaches from the session
}

func newLease(sess *reg.Session) *lease {
	ctx, cancel := sess.CauseContext(context.Background())
	return &lease{sess: sess, ctx: ctx, cancel: cancel}
}

// end ends the lease with cause (first cause wins).
func (l *lease) end(cause error) { l.cancel(cause) }

// live reports whether executions may still run under the lease.
func (l *lease) live() bool { return l != nil && l.ctx.Err() == nil }
