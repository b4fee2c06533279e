package coord_test

import (
	"sync"
	"testing"
	"time"

	"github.com/ejob-io/ejob/core/trigger"
	"github.com/ejob-io/ejob/internal/testkit"
)

// manualClock is a trigger.Clock that moves only when the test sets it.
type manualClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*manualTimer
}

func newManualClock(now time.Time) *manualClock { return &manualClock{now: now} }

func (c *manualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *manualClock) NewTimer(d time.Duration) trigger.Timer {
	t := &manualTimer{c: c, ch: make(chan time.Time, 1)}
	t.Reset(d)
	c.mu.Lock()
	c.timers = append(c.timers, t)
	c.mu.Unlock()
	return t
}

// advance waits until a timer is armed for now or earlier (a timer is armed
// relative to the clock's time when Reset is called: moving the clock
// before the trigger loop re-arms its timer would delay the fire by a
// period), then moves the clock to now and fires the timers due.
func (c *manualClock) advance(t *testing.T, now time.Time) {
	t.Helper()
	testkit.Eventually(t, waitFor, "a timer armed for "+now.Format(time.TimeOnly), func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		for _, tm := range c.timers {
			if tm.active && !tm.at.After(now) {
				return true
			}
		}
		return false
	})
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = now
	for _, tm := range c.timers {
		tm.fireIfDueLocked()
	}
}

// awaitArmed waits until the armed timer is set for at, or for a lead
// before it (a pre-armed fire is dispatched up to trigger.MaxLead ahead),
// and none for earlier: the trigger loop has taken in a schedule whose
// next fire is at.
func (c *manualClock) awaitArmed(t *testing.T, at time.Time) {
	t.Helper()
	earliest := at.Add(-trigger.MaxLead)
	testkit.Eventually(t, waitFor, "a timer armed for "+at.Format(time.TimeOnly), func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		found := false
		for _, tm := range c.timers {
			if tm.active && tm.at.Before(earliest) {
				return false
			}
			found = found || (tm.active && !tm.at.After(at))
		}
		return found
	})
}

type manualTimer struct {
	c      *manualClock
	ch     chan time.Time
	at     time.Time
	active bool
}

func (t *manualTimer) C() <-chan time.Time { return t.ch }

func (t *manualTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	was := t.active
	t.active = false
	t.drain()
	return was
}

func (t *manualTimer) Reset(d time.Duration) bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	was := t.active
	t.drain()
	t.at, t.active = t.c.now.Add(d), true
	t.fireIfDueLocked()
	return was
}

func (t *manualTimer) drain() {
	select {
	case <-t.ch:
	default:
	}
}

func (t *manualTimer) fireIfDueLocked() {
	if t.active && !t.at.After(t.c.now) {
		t.active = false
		t.ch <- t.c.now
	}
}
