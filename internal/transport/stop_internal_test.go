package transport

import (
	"context"
	"errors"
	"testing"
	"time"
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
