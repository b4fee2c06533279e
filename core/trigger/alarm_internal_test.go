//go:build linux

package trigger

import (
	"errors"
	"testing"
	"time"
)

// The alarm on its timerfd rings each time waited for, never before it:
// waits for one time share its channel, waits for several times ring in
// turn, a wait given up does not keep the others waiting, and a closed
// alarm takes no wait (the runtime timer then wakes the fire).
func TestAlarmRings(t *testing.T) {
	a := newAlarm()
	if a == nil {
		t.Fatal("no timerfd alarm on Linux")
	}
	defer a.close()
	rung := func(t *testing.T, c <-chan struct{}, at time.Time) {
		t.Helper()
		select {
		case <-c:
			if now := time.Now(); now.Before(at) {
				t.Fatalf("rang %v before its time", at.Sub(now))
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("no ring within 5 s of a wait for %v", at)
		}
	}

	now := time.Now()
	at1, at2 := now.Add(20*time.Millisecond), now.Add(40*time.Millisecond)
	// Armed for the later time first: the earlier wait re-arms it.
	c2, forget2 := a.wait(at2)
	c1, forget1 := a.wait(at1)
	c1b, forget1b := a.wait(at1)
	gone, forgetGone := a.wait(now.Add(30 * time.Millisecond))
	if c1 == nil || c2 == nil || c1b != c1 || gone == nil {
		t.Fatalf("channels %v %v %v %v: want one per time", c1, c2, c1b, gone)
	}
	forgetGone.forget()
	rung(t, c1, at1)
	rung(t, c2, at2)
	forget1.forget()
	forget1b.forget()
	forget2.forget()
	select {
	case <-gone:
		t.Fatal("a wait given up was rung")
	default:
	}

	// After the run ended (nothing waited), a new wait starts it again.
	at3 := time.Now().Add(10 * time.Millisecond)
	c3, forget3 := a.wait(at3)
	rung(t, c3, at3)
	forget3.forget()

	a.close()
	if c, forget := a.wait(time.Now().Add(time.Millisecond)); c != nil {
		forget.forget()
		t.Fatal("a closed alarm took a wait")
	}
}

// silentTimer is a kernel timer that never expires (as a timerfd armed
// for a wall-clock time the clock was set back from): wait blocks until
// close.
type silentTimer struct{ closed chan struct{} }

func (silentTimer) arm(int64) error { return nil }

func (t silentTimer) wait() error {
	<-t.closed
	return errors.New("closed")
}

func (t silentTimer) close() { close(t.closed) }

// A wait whose kernel timer does not ring is woken by the backstop of its
// time, alarmBackstop after it and not before; a wait given up is not.
func TestAlarmBackstop(t *testing.T) {
	a := newAlarmOn(silentTimer{closed: make(chan struct{})})
	defer a.close()
	at := time.Now().Add(10 * time.Millisecond)
	c, ticket := a.wait(at)
	gone, goneTicket := a.wait(at.Add(time.Millisecond))
	goneTicket.forget()
	select {
	case <-c:
		if late := time.Since(at); late < alarmBackstop {
			t.Fatalf("the backstop rang %v after the time, want at least %v", late, alarmBackstop)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the backstop never rang")
	}
	ticket.forget()
	time.Sleep(2 * alarmBackstop) // the given-up wait's backstop would have rung by now
	select {
	case <-gone:
		t.Fatal("the backstop of a wait given up rang")
	default:
	}
}
