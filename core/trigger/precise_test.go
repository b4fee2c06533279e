package trigger_test

import (
	"context"
	"testing"
	"time"

	"github.com/ejob-io/ejob/core/trigger"
)

// With PreciseClock (real time, no bubble), a fire dispatched ahead goes
// on at its scheduled time, never before; a pause while it waits, or the
// end of the ctx it waits under, ends the wait at once with false.
func TestPreciseClockAheadFire(t *testing.T) {
	type result struct {
		fire    trigger.Fire
		went    bool
		resumed time.Time
	}
	// run adds a job firing every period with the longest lead; each
	// execution calls wait (AwaitScheduled, or a variant) and reports.
	run := func(t *testing.T, wait func(context.Context, trigger.Fire) bool) (*trigger.Loop, <-chan result) {
		s := trigger.New(trigger.Options{Clock: trigger.PreciseClock{}})
		start(t, s)
		results := make(chan result, 16)
		fn := func(ctx context.Context, f trigger.Fire) {
			went := wait(ctx, f)
			results <- result{f, went, time.Now()}
		}
		s.AddAhead("j", every{time.Now(), 200 * time.Millisecond}, fn, func(context.Context, trigger.Misfire) {}, lead(trigger.MaxLead))
		return s, results
	}
	next := func(t *testing.T, results <-chan result) result {
		t.Helper()
		select {
		case r := <-results:
			return r
		case <-time.After(5 * time.Second):
			t.Fatal("no execution within 5 s")
		}
		return result{}
	}

	t.Run("on time", func(t *testing.T) {
		_, results := run(t, func(ctx context.Context, f trigger.Fire) bool { return f.AwaitScheduled(ctx) })
		for range 3 {
			r := next(t, results)
			if !r.fire.Ahead() || !r.went {
				t.Fatalf("ahead %v, went %v; want a fire dispatched ahead that goes on", r.fire.Ahead(), r.went)
			}
			if r.resumed.Before(r.fire.Scheduled()) {
				t.Fatalf("went on at %v, %v before its scheduled time", r.resumed, r.fire.Scheduled().Sub(r.resumed))
			}
		}
	})

	t.Run("paused while waiting", func(t *testing.T) {
		dispatched := make(chan struct{}, 16)
		s, results := run(t, func(ctx context.Context, f trigger.Fire) bool {
			dispatched <- struct{}{}
			return f.AwaitScheduled(ctx)
		})
		select {
		case <-dispatched:
		case <-time.After(5 * time.Second):
			t.Fatal("no dispatch within 5 s")
		}
		s.Pause("j")
		if r := next(t, results); r.went || !r.resumed.Before(r.fire.Scheduled()) {
			t.Fatalf("went %v at %v (scheduled %v); want abandoned before its time", r.went, r.resumed, r.fire.Scheduled())
		}
	})

	t.Run("ctx ended while waiting", func(t *testing.T) {
		_, results := run(t, func(ctx context.Context, f trigger.Fire) bool {
			ctx, cancel := context.WithCancel(ctx)
			time.AfterFunc(time.Millisecond, cancel)
			return f.AwaitScheduled(ctx)
		})
		if r := next(t, results); r.went || !r.resumed.Before(r.fire.Scheduled()) {
			t.Fatalf("went %v at %v (scheduled %v); want abandoned before its time", r.went, r.resumed, r.fire.Scheduled())
		}
	})
}
