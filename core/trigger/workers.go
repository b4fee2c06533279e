package trigger

import "time"

// pool counts the loop's workers, so that one timer retires the idle ones
// rather than a timer per worker: 100 jobs firing each second keep about
// 100 workers, and a timer each made as many wake-ups of the process a
// period at scattered times, each a thread woken for a goroutine that
// found nothing to do. Run owns it.
//
// A worker is busy from spawn until the loop takes its execution's return
// (running counts those), else idle. Once per WorkerIdle period (real time,
// not the Clock: how long a goroutine is kept is no fire time) the loop
// retires as many workers as stayed idle through the whole period, so a
// worker is kept between WorkerIdle and twice that after its last
// execution, as the fewest idle workers of a period says. The timer runs
// only while workers exist: an idle loop keeps neither workers nor timer.
type pool struct {
	workers int // started and not retired
	// idleLow is the fewest idle workers seen in the current period.
	idleLow int
	reap    *time.Timer
	armed   bool // reap is armed
}

// start returns the stopped timer of the pool (Run's).
func (p *pool) start() *time.Timer {
	p.reap = time.NewTimer(time.Hour)
	p.reap.Stop()
	return p.reap
}

// started counts a new worker and arms the timer if it was not.
func (p *pool) started(period time.Duration) {
	p.workers++
	if !p.armed {
		p.armed = true
		p.idleLow = p.workers // lowered by busy
		p.reap.Reset(period)
	}
}

// busy notes that running executions occupy workers now.
func (p *pool) busy(running int) {
	p.idleLow = min(p.idleLow, max(p.workers-running, 0))
}

// retireIdle retires the workers that stayed idle through the period that
// ended (a nil execution to each, taken by a waiting worker; one that is
// not waiting yet is retired at a later period), and starts the next
// period while workers remain.
func (s *Loop) retireIdle() {
	p := &s.pool
	for range p.idleLow {
		if !s.retireOne() {
			break
		}
	}
	p.armed = p.workers > 0
	if p.armed {
		p.idleLow = max(p.workers-s.running, 0)
		p.reap.Reset(s.workerIdle)
	}
}

// retireOne hands a nil execution to a waiting worker, if one waits.
func (s *Loop) retireOne() bool {
	select {
	case s.work <- nil:
		s.pool.workers--
		return true
	default:
		return false
	}
}
