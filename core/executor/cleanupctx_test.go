package executor

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

type cleanupKey struct{}

// The completion's context behaves as
// context.WithTimeout(context.WithoutCancel(parent), d): the parent's
// values, not its cancellation; ended at the deadline (Err, Done, derived
// contexts, context.AfterFunc, context.Cause) or by cancel.
func TestCleanupCtxIsWithTimeoutWithoutCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		parent, cancelParent := context.WithCancel(context.WithValue(context.Background(), cleanupKey{}, "v"))
		ctx := newCleanupCtx(parent, time.Second)
		defer ctx.cancel()
		cancelParent()
		if err := ctx.Err(); err != nil {
			t.Fatalf("Err after the parent's cancellation = %v, want nil", err)
		}
		if err := context.Cause(ctx); err != nil {
			t.Fatalf("Cause after the parent's cancellation = %v, want nil", err)
		}
		if v := ctx.Value(cleanupKey{}); v != "v" {
			t.Errorf("Value = %v, want the parent's", v)
		}
		if dl, ok := ctx.Deadline(); !ok || !dl.Equal(time.Now().Add(time.Second)) {
			t.Errorf("Deadline = %v, %v", dl, ok)
		}
		child, cancelChild := context.WithCancel(ctx)
		defer cancelChild()
		fired := make(chan struct{})
		context.AfterFunc(ctx, func() { close(fired) })
		stopped := context.AfterFunc(ctx, func() { t.Error("a stopped AfterFunc ran") })
		if !stopped() {
			t.Error("stop of an AfterFunc not run yet reported false")
		}
		time.Sleep(999 * time.Millisecond)
		synctest.Wait()
		select {
		case <-ctx.Done():
			t.Fatal("done before the deadline")
		case <-fired:
			t.Fatal("AfterFunc ran before the deadline")
		default:
		}
		time.Sleep(time.Millisecond)
		synctest.Wait()
		<-ctx.Done()
		<-child.Done()
		<-fired
		if err := ctx.Err(); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Err at the deadline = %v", err)
		}
		if err := context.Cause(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Cause at the deadline = %v", err)
		}
		if err := child.Err(); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("derived context's Err = %v", err)
		}
	})
}

// Err reports the deadline without Done having been asked for (no timer
// armed), and cancel ends the context with context.Canceled.
func TestCleanupCtxErrWithoutTimerAndCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := newCleanupCtx(context.Background(), time.Second)
		time.Sleep(2 * time.Second)
		if err := ctx.Err(); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Err past the deadline = %v", err)
		}
		select {
		case <-ctx.Done():
		default:
			t.Error("Done not closed after Err reported the deadline")
		}
		ctx.cancel()
		if err := ctx.Err(); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Err after cancel of an expired context = %v", err)
		}

		ctx = newCleanupCtx(context.Background(), time.Hour)
		done := ctx.Done()
		ctx.cancel()
		<-done
		if err := ctx.Err(); !errors.Is(err, context.Canceled) {
			t.Errorf("Err after cancel = %v", err)
		}
		ran := make(chan struct{})
		if ctx.AfterFunc(func() { close(ran) })() {
			t.Error("stop of an AfterFunc on an ended context reported true")
		}
		<-ran // an AfterFunc on an ended context runs at once
	})
}
