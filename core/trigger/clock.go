package trigger

import "time"

// Clock is the loop's source of time. The zero Options use the real
// clock; tests may inject their own or run the real one inside a
// testing/synctest bubble.
type Clock interface {
	Now() time.Time
	NewTimer(d time.Duration) Timer
}

// Timer is the part of *time.Timer the loop uses. Reset and Stop must
// have Go 1.23+ time.Timer semantics: no stale value is received after
// either returns.
type Timer interface {
	C() <-chan time.Time
	Stop() bool
	Reset(d time.Duration) bool
}

// RealClock is the wall clock of package time.
type RealClock struct{}

var _ Clock = RealClock{}

// Now returns time.Now().
func (RealClock) Now() time.Time { return time.Now() }

// NewTimer returns a time.Timer wrapped as a Timer.
func (RealClock) NewTimer(d time.Duration) Timer { return realTimer{time.NewTimer(d)} }

type realTimer struct{ t *time.Timer }

func (r realTimer) C() <-chan time.Time        { return r.t.C }
func (r realTimer) Stop() bool                 { return r.t.Stop() }
func (r realTimer) Reset(d time.Duration) bool { return r.t.Reset(d) }

// PreciseClock is RealClock whose fires dispatched ahead (AddAhead) go on
// at their scheduled time within the kernel's timer slack (tens of
// microseconds) rather than the runtime's timer resolution: an idle Go
// process on Linux wakes for a timer in whole milliseconds (its poller's
// epoll_wait takes a timeout in ms, and a wait under 1 ms sleeps a whole
// one), so with RealClock such a fire goes on up to 1 ms after its time,
// half of it on average. On Linux the loop's alarm (alarm.go, one timerfd
// the runtime's poller watches) wakes such fires; elsewhere, and should
// the timerfd fail, they wait as with RealClock. Outside a
// testing/synctest bubble only: the bubble's time does not move a
// timerfd.
type PreciseClock struct{ RealClock }

var _ Clock = PreciseClock{}
