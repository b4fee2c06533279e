package trigger

import (
	"context"
	"sync"
	"time"
)

// Fire is one execution handed to a job's function. It satisfies
// core/executor's Fire: the execution pipeline reads it directly. It is
// the execution's pointer and nothing else, so that it converts to an
// interface (core/executor's Fire) without an allocation. The zero Fire
// is no execution: due at the zero time, not manual, not ahead.
type Fire struct {
	exec *execution
}

// fireAt is when and why a fire goes on (its execution's).
type fireAt struct {
	scheduled, actual time.Time
	manual            bool
}

// at returns the fire's times (zero for the zero Fire).
func (f Fire) at() fireAt {
	if f.exec == nil {
		return fireAt{}
	}
	return f.exec.at
}

// Scheduled is the fire time the schedule asked for; for a TriggerNow or
// a TriggerSoon it is the time of the request.
func (f Fire) Scheduled() time.Time { return f.at().scheduled }

// Actual is when the loop dispatched the fire: before Scheduled for a fire
// dispatched ahead (Ahead).
func (f Fire) Actual() time.Time { return f.at().actual }

// Manual reports whether the fire is a TriggerNow or a TriggerSoon rather
// than one of the job's schedule.
func (f Fire) Manual() bool { return f.at().manual }

// execution is one execution of a job: what it runs, and what the loop
// shares with it while it runs. One allocation per fire.
type execution struct {
	job *job
	ctx context.Context // the job's (job.ctx)
	fn  Func            // the job's function, called with Fire{e}; nil for a misfire report
	at  fireAt          // the fire's times
	// misfire is what a misfire report (fn nil) hands to the job's
	// MisfireFunc.
	misfire Misfire
	// ahead is the state of a fire dispatched ahead of its time
	// (ahead.go); its abandoned channel is nil for any other fire.
	ahead ahead

	mu     sync.Mutex
	missed Misfire // skipped schedule fires not yet taken (misfire.go)
	final  bool    // TakeMissed(true) was called: fires are deferred, not skipped
	// onSkip is OnSkip's fn; skipRunning is true while a goroutine calls
	// it (skipDone is closed when that goroutine returns), skipAgain when
	// a fire was skipped meanwhile.
	onSkip      func()
	skipRunning bool
	skipAgain   bool
	skipDone    chan struct{}
}
