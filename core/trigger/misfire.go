package trigger

import (
	"context"
	"time"
)

// Misfire handling, the trigger loop's part. A schedule fire that comes due
// while the job's previous execution still runs is skipped, not queued (as
// Quartz does with ElasticJob's settings: one worker thread per job,
// misfireThreshold 1 ms, policy "do nothing"). The loop reports skipped
// fires one way, as a count the running execution takes (Fire.TakeMissed);
// Fire.OnSkip only wakes the execution when there is something to take.
// What the execution does not take goes, once it returns, to the job's
// MisfireFunc: core/executor's Executor.Misfired (core/executor misfire.go),
// which sets the items' misfire flags through its Facade (core/coord
// misfire.go) so that the next execution catches them up.

// Misfire reports fires a job skipped because its previous execution was
// still running (or because the loop fell behind by more than one period,
// or because they came due while the job was paused). Several skipped fires
// are reported together, after the execution that caused them returns,
// except those the execution took itself (Fire.TakeMissed).
type Misfire struct {
	// Scheduled counts skipped schedule fires; First and Last are the
	// scheduled times of the first and last of them.
	Scheduled   int
	First, Last time.Time
	// Manual counts TriggerNow requests dropped because the job was
	// running (upstream drops them too, without a misfire flag).
	Manual int
}

func (m *Misfire) addScheduled(at time.Time) {
	if m.Scheduled == 0 {
		m.First = at
	}
	m.Scheduled++
	m.Last = at
}

func (m Misfire) empty() bool { return m.Scheduled == 0 && m.Manual == 0 }

// merge adds o's fires to m (o's come after m's).
func (m *Misfire) merge(o Misfire) {
	if o.Scheduled > 0 {
		if m.Scheduled == 0 {
			m.First = o.First
		}
		m.Scheduled += o.Scheduled
		m.Last = o.Last
	}
	m.Manual += o.Manual
}

// MisfireFunc receives the misfires of one job (Add). It runs as the job's
// execution: no fire of that job runs while it does.
type MisfireFunc func(ctx context.Context, m Misfire)

// OnSkip arranges for fn to be called, on a goroutine started for it, when
// a schedule fire of the job comes due while this execution runs and is
// skipped (at once when fires were skipped and not taken yet): fn would
// typically TakeMissed and record them. Calls are serial and coalesced: a
// fire skipped while fn runs makes fn run once more after it returns. The
// returned stop ends this and waits for a running fn to return; no call
// starts after it, and a second call does nothing more. A second OnSkip
// replaces the first. It does nothing for a Fire the loop did not
// dispatch.
func (f Fire) OnSkip(fn func()) (stop func()) {
	e := f.exec
	if e == nil {
		return func() {}
	}
	e.mu.Lock()
	e.onSkip = fn
	if e.missed.Scheduled > 0 {
		e.skipped()
	}
	e.mu.Unlock()
	return func() {
		e.mu.Lock()
		e.onSkip = nil
		running, done := e.skipRunning, e.skipDone
		e.mu.Unlock()
		if running {
			<-done
		}
	}
}

// TakeMissed returns how many schedule fires were skipped so far because
// this execution runs, and forgets them: they are the execution's to serve
// (a catch-up run before it returns, ElasticJob's misfire loop), so they
// are not reported to the job's MisfireFunc. Fires not taken are reported
// once the execution returns.
//
// With final set, no fire is skipped from then on: the first schedule fire
// that comes due before the execution returns starts as soon as it
// returns (later ones in that span are skipped into it). An execution calls
// it with final once it will not look at missed fires again, so that none
// is left waiting for the next fire.
func (f Fire) TakeMissed(final bool) int {
	e := f.exec
	if e == nil {
		return 0
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	n := e.missed.Scheduled
	e.missed = Misfire{}
	if final {
		e.final = true
	}
	return n
}

// skip records a schedule fire at that came due while the execution runs.
// It reports false when the execution asked for no more skips (the fire is
// then deferred until it returns).
func (e *execution) skip(at time.Time) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.final {
		return false
	}
	e.missed.addScheduled(at)
	e.skipped()
	return true
}

// skipped calls onSkip, if set, on a goroutine of its own, or asks its
// running goroutine to call it again. Caller holds e.mu.
func (e *execution) skipped() {
	switch {
	case e.onSkip == nil:
	case e.skipRunning:
		e.skipAgain = true
	default:
		e.skipRunning, e.skipDone = true, make(chan struct{})
		go e.callOnSkip(e.onSkip, e.skipDone)
	}
}

func (e *execution) callOnSkip(fn func(), done chan struct{}) {
	defer close(done)
	for {
		fn()
		e.mu.Lock()
		if !e.skipAgain || e.onSkip == nil {
			e.skipRunning, e.skipAgain = false, false
			e.mu.Unlock()
			return
		}
		fn, e.skipAgain = e.onSkip, false
		e.mu.Unlock()
	}
}

// leftover returns the skipped fires the execution did not take.
func (e *execution) leftover() Misfire {
	e.mu.Lock()
	defer e.mu.Unlock()
	m := e.missed
	e.missed = Misfire{}
	return m
}

// reportMisfire hands j's pending misfires to its MisfireFunc as j's next
// execution; j must not be running.
func (s *Loop) reportMisfire(ctx context.Context, j *job) {
	if j.missed == nil || j.missed.misfire.empty() {
		return
	}
	m := j.missed.misfire
	j.missed.misfire = Misfire{}
	if j.misfired == nil {
		s.log.Debug("misfire dropped: the job has no misfire callback", "job", j.id,
			"scheduled", m.Scheduled, "manual", m.Manual)
		return
	}
	s.spawn(ctx, j, &execution{misfire: m})
}
