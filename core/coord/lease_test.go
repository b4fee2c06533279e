package coord

import (
	"context"
	"errors"
	"testing"

	"github.com/ejob-io/ejob/core/reg"
)

// A lease's context is made on first use; an end or a session loss before
// that still reaches it, with its cause, and only the first cause counts.
func TestLeaseContextMadeLate(t *testing.T) {
	t.Run("ended first", func(t *testing.T) {
		l := newLease(reg.NewSession(1))
		if !l.live() {
			t.Fatal("a new lease of a live session is not live")
		}
		l.end(ErrSessionPresumedLost)
		l.end(ErrSessionLost) // too late: the first cause wins
		if l.live() {
			t.Error("an ended lease is live")
		}
		ctx := l.context()
		if ctx.Err() == nil || !errors.Is(context.Cause(ctx), ErrSessionPresumedLost) {
			t.Errorf("context made after the end: err %v, cause %v; want the end's cause", ctx.Err(), context.Cause(ctx))
		}
	})
	t.Run("session lost first", func(t *testing.T) {
		sess := reg.NewSession(2)
		l := newLease(sess)
		sess.End(reg.ErrSessionLost)
		if l.live() || !errors.Is(l.cause(), reg.ErrSessionLost) {
			t.Errorf("lease of a lost session: live %v, cause %v", l.live(), l.cause())
		}
		ctx := l.context()
		<-ctx.Done()
		if !errors.Is(context.Cause(ctx), reg.ErrSessionLost) {
			t.Errorf("cause %v, want the session's", context.Cause(ctx))
		}
	})
	t.Run("ended after use", func(t *testing.T) {
		l := newLease(reg.NewSession(3))
		ctx := l.context()
		if ctx.Err() != nil {
			t.Fatal("the context of a live lease is done")
		}
		l.end(ErrSessionPresumedLost)
		if ctx.Err() == nil || !errors.Is(l.cause(), ErrSessionPresumedLost) {
			t.Errorf("after end: err %v, cause %v", ctx.Err(), l.cause())
		}
	})
}
