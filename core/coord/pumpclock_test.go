package coord

import (
	"testing"
	"testing/synctest"
	"time"
)

// TestPumpClockCancelDropsStoppedJobsTicks: a stopped job's armed ticks
// (its pump's and its reconcile check's) leave the namespace's clock at
// once, and with no tick left the timer
// is stopped, so no fire of the clock runs after the last job stopped
// (TestIdleJobsHaveNoGoroutine caught one that did: the tick of a job
// stopped a moment before it fell due).
func TestPumpClockCancelDropsStoppedJobsTicks(t *testing.T) {
	var c pumpClock
	a, b := &jobLoop{}, &jobLoop{}
	c.after(a, time.Hour)
	c.after(b, 2*time.Hour)
	c.afterReconcile(a, 3*time.Hour)
	c.cancel(a)
	if len(c.due) != 1 || c.due[0].l != b {
		t.Fatalf("after cancel(a): %d ticks armed, want b's only", len(c.due))
	}
	if c.at.IsZero() {
		t.Fatal("timer disarmed while b's tick is armed")
	}
	c.cancel(b)
	if len(c.due) != 0 {
		t.Fatalf("after cancel(b): %d ticks armed", len(c.due))
	}
	if !c.at.IsZero() || c.timer.Stop() {
		t.Fatal("timer still armed with no tick")
	}
	if c.due[:1][0].l != nil {
		t.Fatal("the heap keeps a stopped job's reference")
	}
}

// TestPumpClockCancelWaitsForAStartedFire: cancel returns only once a
// fire that took its ticks has ended. In a synctest bubble, so cancel is
// seen waiting once the bubble is idle rather than given a window.
func TestPumpClockCancelWaitsForAStartedFire(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var c pumpClock
		c.mu.Lock()
		c.firing = 1 // a fire between taking its ticks and running them
		c.mu.Unlock()
		done := make(chan struct{})
		go func() { c.cancel(&jobLoop{}); close(done) }()
		synctest.Wait()
		select {
		case <-done:
			t.Fatal("cancel returned while a fire runs")
		default:
		}
		c.mu.Lock()
		c.firing--
		c.ended.Broadcast() // cancel waits on it
		c.mu.Unlock()
		select {
		case <-done:
		case <-time.After(time.Minute): // fake time
			t.Fatal("cancel did not return after the fire ended")
		}
	})
}
