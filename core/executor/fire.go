package executor

import (
	"context"
	"time"

	"github.com/ejob-io/ejob/core/trigger"
)

// Fire is one fire of the job as Execute receives it. core/trigger's Fire
// satisfies it, and the kernel hands the trigger loop's fire to Execute as
// it is. A nil Fire is a trigger no loop dispatched (tests, benchmarks):
// it is due now, from the schedule, and no fire is skipped while it runs.
type Fire interface {
	// Scheduled is the fire time the schedule asked for; for a manual
	// fire, the time of the request.
	Scheduled() time.Time
	// Manual reports a fire asked for by hand or by the coordination
	// layer (TriggerNow, TriggerSoon: a failover claim, a catch-up), not
	// one of the job's schedule.
	Manual() bool
	// Ahead reports a fire dispatched ahead of its scheduled time: Execute
	// then does the registry part ahead (Facade.PreArm) and waits for the
	// time with AwaitScheduled (ahead.go).
	Ahead() bool
	// AwaitScheduled waits until the scheduled time and reports whether
	// the trigger goes on: false when it was abandoned first (the job
	// paused, removed or rescheduled, the loop stopping, ctx ended).
	AwaitScheduled(ctx context.Context) bool
	// TakeMissed returns how many fires of the job's schedule the loop
	// skipped since the last call because this trigger runs, and forgets
	// them: the trigger serves them (misfire.go). With final set, the loop
	// skips no fire afterwards: one that comes due before Execute returns
	// starts right after it. It is the one way the loop reports skipped
	// fires to a running trigger; what is not taken when Execute returns
	// goes to Executor.Misfired.
	TakeMissed(final bool) int
	// OnSkip calls fn on a goroutine of its own when TakeMissed has fires
	// to take (at once if fires were skipped and not taken), never two
	// calls at once: a fire skipped during a call makes fn run once more.
	// stop ends this and waits for a running call; it may be called more
	// than once.
	OnSkip(fn func()) (stop func())
}

// fired tells Options.OnFired that fire starts now.
func (e *Executor) fired(fire Fire) {
	if e.opts.OnFired != nil && fire != nil {
		e.opts.OnFired(max(time.Since(fire.Scheduled()), 0))
	}
}

// The trigger loop's fire and misfire report are this package's seam.
var (
	_ Fire                = trigger.Fire{}
	_ trigger.MisfireFunc = (*Executor)(nil).Misfired
)
