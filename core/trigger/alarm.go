package trigger

import (
	"sync"
	"time"
)

// An alarm wakes the fires a loop dispatched ahead at their scheduled time
// (PreciseClock): one timer of the kernel's, armed for the earliest time
// waited for, whose expiry the runtime's poller sees as it sees a socket's
// data, so the process wakes when the kernel's timer fires (within its
// slack, tens of microseconds) and not in the runtime timers' whole
// milliseconds. Fires due at one time share one wake-up and one channel,
// and one runtime timer, the backstop, that closes the channel
// alarmBackstop after the time should the kernel's timer not ring (the
// wall clock set back, the timerfd failed): no timer per waiting fire.
// The loop makes it at its first fire dispatched ahead and closes it when
// Run returns; a nil alarm (no PreciseClock, or no such timer on this
// system) has the runtime timer alone wake the fires.
type alarm struct {
	k alarmTimer

	mu      sync.Mutex
	waits   map[int64]*alarmWait // by the Unix time in ns waited for
	armed   int64                // what k is armed for; 0: nothing
	running bool                 // run's goroutine
	closed  bool
}

// alarmTimer is the kernel's timer an alarm waits on.
type alarmTimer interface {
	// arm sets the timer to expire at the Unix time at (in ns), or at
	// once if that has passed.
	arm(at int64) error
	// wait returns when the timer expires, or with an error once the
	// timer is closed.
	wait() error
	close()
}

// alarmWait is the executions waiting for one time.
type alarmWait struct {
	c chan struct{} // closed at the time (by ring, or late by backstop)
	n int           // waiters that have not given up
	// backstop closes c alarmBackstop after the time unless ring did.
	backstop *time.Timer
}

func newAlarmOn(k alarmTimer) *alarm {
	return &alarm{k: k, waits: map[int64]*alarmWait{}}
}

// wait returns a channel that is closed at at, and the ticket whose
// forget the waiter calls, once, when it no longer waits. A nil channel
// means the alarm cannot wake it: the caller's runtime timer must. The
// ticket is a value, not a func, which would cost two allocations per
// waiter (200 a second for 100 jobs firing each second).
func (a *alarm) wait(at time.Time) (<-chan struct{}, alarmTicket) {
	if a == nil {
		return nil, alarmTicket{}
	}
	ns := at.UnixNano()
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return nil, alarmTicket{}
	}
	w := a.waits[ns]
	if w == nil {
		if a.armed == 0 || ns < a.armed {
			if a.k.arm(ns) != nil {
				return nil, alarmTicket{}
			}
			a.armed = ns
		}
		w = &alarmWait{c: make(chan struct{})}
		w.backstop = time.AfterFunc(time.Until(at)+alarmBackstop, func() { a.ringLate(ns, w) })
		a.waits[ns] = w
		if !a.running {
			a.running = true
			go a.run()
		}
	}
	w.n++
	return w.c, alarmTicket{a: a, ns: ns, w: w}
}

// alarmTicket is one waiter of an alarm's time (wait).
type alarmTicket struct {
	a  *alarm // nil: the waiter waits for no alarm
	ns int64
	w  *alarmWait
}

// forget drops the waiter; call it once.
func (t alarmTicket) forget() {
	if t.a != nil {
		t.a.forget(t.ns, t.w)
	}
}

// forget drops a waiter of the time ns; with no waiter left, the time's
// wake-up is not needed (run finds nothing to wake, if it comes).
func (a *alarm) forget(ns int64, w *alarmWait) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if w.n--; w.n == 0 && a.waits[ns] == w {
		delete(a.waits, ns)
		w.backstop.Stop()
	}
}

// ringLate is w's backstop: it closes w's channel unless ring did.
func (a *alarm) ringLate(ns int64, w *alarmWait) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.waits[ns] == w {
		delete(a.waits, ns)
		close(w.c)
	}
}

// run wakes the waiters each time the timer expires, while any wait.
func (a *alarm) run() {
	for {
		err := a.k.wait()
		if !a.ring(err != nil) {
			return
		}
	}
}

// ring closes the channels of the times that have come and arms the timer
// for the next; it reports whether run should wait again. stop (the timer
// is closed or failed) ends run: the waiters left are woken by their
// backstops.
func (a *alarm) ring(stop bool) bool {
	now := time.Now().UnixNano()
	a.mu.Lock()
	defer a.mu.Unlock()
	a.armed = 0
	var next int64
	for ns, w := range a.waits {
		if ns <= now {
			close(w.c)
			delete(a.waits, ns)
			w.backstop.Stop()
		} else if next == 0 || ns < next {
			next = ns
		}
	}
	if next != 0 && !stop && !a.closed && a.k.arm(next) == nil {
		a.armed = next
		return true
	}
	a.running = false
	return false
}

// close stops the alarm (Run returns).
func (a *alarm) close() {
	if a == nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.closed {
		a.closed = true
		a.k.close()
	}
}
