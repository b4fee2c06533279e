package reg

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// Session is one registry session: the lifetime of the ephemeral nodes and
// watches created through it. Done closes when it is lost (expired by the
// server, declared lost after a disconnection longer than the session
// timeout, or closed with its client). A Client opens a new Session by itself
// after a loss; callers learn of it through Client.Session or
// WatchConnection and re-create their ephemeral nodes and watches.
type Session struct {
	id     int64
	ctx    context.Context
	cancel context.CancelCauseFunc
	once   sync.Once

	// base is the session's creation time (with its monotonic reading);
	// heard is the last contact with the server as nanoseconds after base,
	// so LastHeard stays on the monotonic clock.
	base    time.Time
	heard   atomic.Int64
	timeout atomic.Int64 // negotiated timeout in nanoseconds; 0: unknown
}

// NewSession returns a live session with the server-assigned id. It is meant
// for Client implementations; callers get sessions from Client.Session.
func NewSession(id int64) *Session {
	// The session's own context is a lifetime, not a request: it has no parent
	// because it ends only with the session.
	ctx, cancel := context.WithCancelCause(context.Background())
	return &Session{id: id, ctx: ctx, cancel: cancel, base: time.Now()}
}

// SetTimeout records the session timeout the server negotiated. For
// implementations.
func (s *Session) SetTimeout(d time.Duration) { s.timeout.Store(int64(d)) }

// Timeout returns the negotiated session timeout: how long the server keeps
// the session without hearing from this client. 0 means the registry has
// none (an embedded registry without a timeout).
func (s *Session) Timeout() time.Duration { return time.Duration(s.timeout.Load()) }

// Touch records that the client heard from the server in this session at
// t (a reply, a ping answer, or a connect response renewing it). Earlier
// times than the last one are ignored. For implementations.
func (s *Session) Touch(t time.Time) {
	d := int64(t.Sub(s.base))
	for {
		old := s.heard.Load()
		if d <= old || s.heard.CompareAndSwap(old, d) {
			return
		}
	}
}

// LastHeard returns when the client last heard from the server in this
// session (the session's start until then), on the monotonic clock.
func (s *Session) LastHeard() time.Time { return s.base.Add(time.Duration(s.heard.Load())) }

// ExpiryDeadline returns LastHeard plus Timeout, and false when the timeout
// is unknown. The server expires a session only after it has heard nothing
// from the client for the timeout, and it last heard from the client at
// most one round trip before the client last heard from it, so while the
// connection is down the server may expire the session from this moment
// less one round trip on: a client still disconnected then must presume the
// session expired. Work that must not overlap with a
// takeover by another instance has to stop before it (see coord's
// presumed-expiry margin).
func (s *Session) ExpiryDeadline() (time.Time, bool) {
	t := s.Timeout()
	if t <= 0 {
		return time.Time{}, false
	}
	return s.LastHeard().Add(t), true
}

// ID returns the server's session id (the EphemeralOwner of its ephemerals).
func (s *Session) ID() int64 { return s.id }

// Done is closed when the session is lost.
func (s *Session) Done() <-chan struct{} { return s.ctx.Done() }

// Err is nil while the session lives, then an error wrapping ErrSessionLost
// (expired or declared lost) or ErrClosed (its client closed).
func (s *Session) Err() error {
	if s.ctx.Err() == nil {
		return nil
	}
	return context.Cause(s.ctx)
}

// End marks the session lost with cause (which should wrap ErrSessionLost or
// ErrClosed). Only the first call has an effect. For implementations.
func (s *Session) End(cause error) {
	s.once.Do(func() { s.cancel(cause) })
}

// Context derives a context from parent that is also cancelled, with the
// session's error as cause, when the session is lost: work that must not
// outlive the session (a leader's duties, a fenced write) runs under it.
func (s *Session) Context(parent context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := s.CauseContext(parent)
	return ctx, func() { cancel(context.Canceled) }
}

// CauseContext is Context whose cancel takes a cause (the first cause
// wins, the session's loss included). Calling cancel also detaches the
// context from the session.
func (s *Session) CauseContext(parent context.Context) (context.Context, context.CancelCauseFunc) {
	ctx, cancel := context.WithCancelCause(parent)
	if s.ctx.Err() != nil {
		cancel(context.Cause(s.ctx))
		return ctx, cancel
	}
	stop := context.AfterFunc(s.ctx, func() { cancel(context.Cause(s.ctx)) })
	return ctx, func(cause error) {
		cancel(cause)
		stop()
	}
}

func (s *Session) String() string { return fmt.Sprintf("session 0x%x", s.id) }

// ConnState is a connection-state change, in Curator's terms.
type ConnState int

const (
	// StateConnected: the first session of the client is established.
	StateConnected ConnState = iota + 1
	// StateSuspended: the connection dropped; the session may survive.
	// Upstream ElasticJob pauses its jobs here (UNAVAILABLE).
	StateSuspended
	// StateReconnected: the connection is back with the same session;
	// ephemerals and watches are intact.
	StateReconnected
	// StateLost: the session is gone (expired by the server, or the client
	// has heard nothing from the server for the session timeout, i.e. its
	// ExpiryDeadline passed while disconnected); Session().Done() is closed.
	StateLost
	// StateNewSession: a new session replaced a lost one; Event.Session is
	// it. Curator reports this as RECONNECTED too; callers re-create
	// ephemeral nodes and watches.
	StateNewSession
)

func (s ConnState) String() string {
	switch s {
	case StateConnected:
		return "connected"
	case StateSuspended:
		return "suspended"
	case StateReconnected:
		return "reconnected"
	case StateLost:
		return "lost"
	case StateNewSession:
		return "new-session"
	}
	return fmt.Sprintf("ConnState(%d)", int(s))
}

// ConnEvent is one connection-state change and the session it concerns (the
// lost one for StateLost, the new one for StateNewSession).
type ConnEvent struct {
	State   ConnState
	Session *Session
}
