package transport

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ejob-io/ejob/spi"
)

func TestExecutionsEarlyCancel(t *testing.T) {
	t.Parallel()
	e := newExecutions()
	cause := cancelCause("why")
	if e.cancel("a", cause, false) {
		t.Fatal("cancel of an unknown id reported running")
	}
	ctx, cancel := context.WithCancelCause(t.Context())
	done := e.start("a", execution{cancel: cancel})
	if !errors.Is(context.Cause(ctx), context.Canceled) || context.Cause(ctx).Error() != "context canceled by the host: why" {
		t.Errorf("cause = %v, want the early Cancel's", context.Cause(ctx))
	}
	done()
	ctx, cancel = context.WithCancelCause(t.Context())
	done = e.start("b", execution{cancel: cancel})
	if !e.cancel("b", context.Canceled, false) || ctx.Err() == nil {
		t.Error("cancel of a running id did not cancel it")
	}
	done()
	// A Cancel for the deadline leaves it to the deadline, cancelling only
	// as a backstop once the deadline passed.
	ctx, cancel = context.WithCancelCause(t.Context())
	done = e.start("c", execution{cancel: cancel, deadline: time.Now()})
	e.cancel("c", context.DeadlineExceeded, true)
	if ctx.Err() != nil {
		t.Error("a Cancel for the deadline cancelled at once")
	}
	select {
	case <-ctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the deadline backstop did not cancel")
	}
	done()
	if len(e.running) != 0 || len(e.early) != 0 {
		t.Errorf("left behind: running %v early %v", e.running, e.early)
	}
}

func TestLeaseTimer(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancelCause(t.Context())
	lt := startLease(50*time.Millisecond, cancel)
	for range 5 {
		time.Sleep(20 * time.Millisecond)
		if !lt.renew(50 * time.Millisecond) {
			t.Fatal("renew of a live lease failed")
		}
	}
	if ctx.Err() != nil {
		t.Fatal("a renewed lease expired")
	}
	<-ctx.Done()
	if !errors.Is(context.Cause(ctx), spi.ErrLeaseExpired) {
		t.Errorf("cause = %v", context.Cause(ctx))
	}
	if lt.renew(time.Minute) {
		t.Error("renew of an expired lease succeeded")
	}
}
