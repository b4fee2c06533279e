package trigger

import (
	"container/heap"
	"context"
	"time"
)

// MaxLead bounds how far ahead of its scheduled time a fire is dispatched
// (AddAhead).
const MaxLead = 50 * time.Millisecond

// LeadFunc returns how far ahead of a scheduled fire time the job's next
// fire should be dispatched; the loop calls it, on its own goroutine, each
// time it plans the job's next fire, so it must be cheap and not block.
// Values <= 0 dispatch at the scheduled time; values above MaxLead are
// capped.
type LeadFunc func() time.Duration

// AddAhead is Add for a job whose schedule fires may be dispatched a lead
// ahead of their scheduled time (a fire-ahead, as Quartz acquires triggers
// ahead of their fire time): the job's function receives the fire with
// Fire.Ahead set and does what it can before the scheduled time, then
// waits for it with Fire.AwaitScheduled. Only schedule fires of a job that
// is idle when the lead starts are dispatched ahead; TriggerNow,
// TriggerSoon and fires deferred to the end of an execution never are.
//
// What stays as for Add:
//   - Misfires are decided at the scheduled time: when the job is still
//     running when its lead starts, the fire is dispatched at its scheduled
//     time exactly as without a lead (skipped, deferred or started, as the
//     execution then is).
//   - A fire dispatched ahead counts as running from its dispatch: no other
//     execution of the job starts until it returns.
//   - Pause, Remove, Reschedule or Add of the job before the scheduled time
//     abandon the fire: AwaitScheduled reports false, the fire counts as
//     not having happened (after Pause it is the job's next fire again, so
//     Resume treats it as any fire that came due while paused), and a
//     schedule fire that comes due before the abandoned execution returns
//     starts right after it instead of being skipped.
func (s *Loop) AddAhead(id string, sched Schedule, fn Func, misfired MisfireFunc, lead LeadFunc) {
	s.enqueue(command{op: opAdd, id: id, sched: sched, fn: fn, mf: misfired, lead: lead})
}

// Ahead reports whether the loop dispatched this fire ahead of its
// scheduled time (AddAhead); the execution must then call AwaitScheduled
// before it does anything that must not happen before Scheduled.
func (f Fire) Ahead() bool { return f.exec != nil && f.exec.ahead.abandoned != nil }

// AwaitScheduled waits until the fire's scheduled time when the fire was
// dispatched ahead of it, and reports whether the execution may go on:
// false when ctx ended or the loop abandoned the fire first (Pause, Remove,
// Reschedule, Add of the job); the execution should then undo what it did
// ahead and return. Once it has reported true, the fire can no longer be
// abandoned. For a fire not dispatched ahead it reports true at once.
// The execution calls it before it returns, from one goroutine at a time.
func (f Fire) AwaitScheduled(ctx context.Context) bool {
	e := f.exec
	if e == nil || e.ahead.abandoned == nil {
		return true
	}
	a := &e.ahead
	if d := e.at.scheduled.Sub(a.clock.Now()); d > 0 {
		// The alarm wakes the fire at its time (or, should the wall clock
		// have been set back, its backstop just after); the job's runtime
		// timer when there is no alarm.
		if rang, ticket := a.alarm.wait(e.at.scheduled); rang != nil {
			select {
			case <-ctx.Done():
			case <-a.abandoned:
			case <-rang:
			}
			ticket.forget()
		} else {
			t := e.job.awaitTimer(a.clock, d)
			select {
			case <-ctx.Done():
			case <-a.abandoned:
			case <-t.C():
			}
			t.Stop()
		}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if a.state == aheadWaiting {
		if ctx.Err() != nil {
			a.state = aheadAbandoned
			close(a.abandoned)
			e.final = true
		} else {
			a.state = aheadStarted
		}
	}
	return a.state == aheadStarted
}

// awaitTimer returns j's AwaitScheduled timer armed for d (see job.await).
func (j *job) awaitTimer(c Clock, d time.Duration) Timer {
	if j.await == nil {
		j.await = c.NewTimer(d)
	} else {
		j.await.Reset(d)
	}
	return j.await
}

// alarmBackstop is how long after its scheduled time a fire the alarm
// waits for goes on by the runtime timer of its wait time should the
// timerfd not ring (the wall clock set back meanwhile, the timerfd failed).
const alarmBackstop = 2 * time.Millisecond

// ahead is the state of a fire dispatched ahead of its scheduled time,
// part of its execution (the zero value, abandoned nil, for any other).
type ahead struct {
	clock     Clock
	alarm     *alarm        // the loop's (nil: none)
	state     aheadState    // guarded by the execution's mu
	abandoned chan struct{} // closed when state becomes aheadAbandoned
}

type aheadState int

const (
	aheadWaiting aheadState = iota
	aheadStarted
	aheadAbandoned
)

// due is when the loop dispatches j's next fire: next, less the lead.
func (j *job) due() time.Time { return j.next.Add(-j.lead) }

// setLead sets j's lead and dueNs, due as Unix nanoseconds, which the heap
// compares (two int64s rather than two time.Time sums a comparison).
func (j *job) setLead(lead time.Duration) {
	j.lead = lead
	j.dueNs = j.due().UnixNano()
}

// planLead sets the lead of j's next fire from its LeadFunc, rounded up
// (roundLead).
func (j *job) planLead() {
	var lead time.Duration
	if j.leadFn != nil {
		lead = roundLead(j.leadFn())
	}
	j.setLead(lead)
}

// leadStep is the smallest lead roundLead gives.
const leadStep = time.Millisecond

// roundLead rounds a lead up to leadStep times a power of two, at most
// MaxLead (<= 0: none). Jobs whose fires come due at one time (a cron on
// the whole second or minute) ask for leads that differ by microseconds;
// each distinct dispatch time is a wake-up of the loop and of the process.
// Rounded, they share one or two. A lead is a least advance: rounding it
// up keeps what was asked.
func roundLead(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	l := leadStep
	for l < d && l < MaxLead {
		l *= 2
	}
	return min(l, MaxLead)
}

// replanLead recomputes the lead of j's next fire when j's execution
// returns, so that the lead reflects that execution (core/coord measures
// its requests during it) rather than the one before. Not within the
// longest lead of the fire: a job that was running when its lead started
// fires at its scheduled time, as without a lead (fireAhead).
func (s *Loop) replanLead(j *job, now time.Time) {
	if j.leadFn == nil || j.index < 0 || !now.Before(j.next.Add(-MaxLead)) {
		return
	}
	j.planLead()
	heap.Fix(&s.heap, j.index)
}

// fireAhead handles j, first in the heap, whose lead has started before
// its scheduled time next. An idle job's fire is dispatched now, ahead. A
// running job's fire is dispatched at its scheduled time (lead 0), so that
// the misfire is decided then, as without a lead: a run that ends before
// it leaves the fire to start normally.
func (s *Loop) fireAhead(ctx context.Context, j *job, now time.Time) {
	if j.running {
		j.setLead(0)
		heap.Fix(&s.heap, j.index)
		return
	}
	at := j.next
	j.next = nextOf(j.sched, at)
	s.reposition(j)
	s.spawn(ctx, j, &execution{fn: j.fn, at: fireAt{scheduled: at, actual: now},
		ahead: ahead{clock: s.clock, alarm: s.alarmOnce(), abandoned: make(chan struct{})}})
}

// abandonAhead abandons j's execution when it is a fire dispatched ahead
// that has not reached its scheduled time; a schedule fire that comes due
// before it returns is deferred to its end (not skipped). It returns the
// abandoned fire's scheduled time, zero when nothing was abandoned.
func (s *Loop) abandonAhead(j *job) time.Time {
	if j == nil || j.exec == nil || j.exec.ahead.abandoned == nil {
		return time.Time{}
	}
	e := j.exec
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.ahead.state != aheadWaiting {
		return time.Time{}
	}
	e.ahead.state = aheadAbandoned
	close(e.ahead.abandoned)
	e.final = true
	return e.at.scheduled
}

// alarmOnce returns the loop's alarm, made at its first call when the
// clock is a PreciseClock (nil otherwise, or when the system has none).
func (s *Loop) alarmOnce() *alarm {
	if !s.alarmMade {
		s.alarmMade = true
		if _, ok := s.clock.(PreciseClock); ok {
			s.alarm = newAlarm()
		}
	}
	return s.alarm
}
