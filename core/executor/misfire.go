package executor

import (
	"context"
	"errors"
	"fmt"

	"github.com/ejob-io/ejob/core/trigger"
)

// Misfire handling, the execution pipeline's part. core/trigger
// (misfire.go) skips a fire of the schedule that comes due while the job
// runs and reports it to the running trigger (Fire.TakeMissed), or, when
// no trigger took it, to Misfired once the trigger returns. Either way the
// pipeline sets the misfire flags of this instance's items through its
// Facade (core/coord misfire.go, which keeps them in the registry, where
// they outlive this instance), and the misfire loop after a run (catchUp)
// serves the flags of its items with one catch-up run right away.

// Misfired sets the misfire flags of the local items for the fires of the
// schedule the trigger loop skipped while this job ran and that no trigger
// took (m.Scheduled; manual triggers dropped while the job ran set no
// flag, as upstream). It is the job's trigger.MisfireFunc: the loop calls
// it as the job's execution.
func (e *Executor) Misfired(ctx context.Context, m trigger.Misfire) {
	if m.Scheduled == 0 {
		return
	}
	if e.opts.OnMisfire != nil {
		e.opts.OnMisfire(m.Scheduled)
	}
	if err := e.setMisfire(ctx); err != nil {
		e.log.Warn("cannot record misfire", "skipped_fires", m.Scheduled, "error", err)
	}
}

// setMisfire sets the misfire flags of the local items, for a fire the
// trigger loop skipped while this job was running.
func (e *Executor) setMisfire(ctx context.Context) error {
	if err := e.opts.Facade.SetMisfire(ctx); err != nil {
		return fmt.Errorf("executor: job %q: set misfire: %w", e.jobName, err)
	}
	return nil
}

// recordSkips sets the misfire flags each time the trigger loop skips a
// fire (on a goroutine the loop starts then: none while no fire is
// skipped), until stopRecording. One recording at a time; its state is
// the run's (no closure and flag allocated per execution).
func (r *run) recordSkips(ctx context.Context, fire Fire) {
	r.skips.unrecorded.Store(false)
	if fire == nil {
		return
	}
	// A fire skipped once ctx has ended is still handed to the Facade: it
	// fails at once, and the Facade owes the fire a catch-up run when ctx
	// ended because the registry connection failed (the session lost, or
	// presumed lost, under a trigger held up by its registry requests).
	r.skips.end = fire.OnSkip(func() {
		if fire.TakeMissed(false) > 0 && !r.recordMisfire(ctx) {
			r.skips.unrecorded.Store(true)
		}
	})
}

// stopRecording ends recordSkips' recording and waits for a recording in
// progress, so no flag is written after the misfire loop has looked at
// them; it reports whether a skipped fire could not be recorded (the loop
// records it), and may be called again (it then does nothing more).
func (r *run) stopRecording() (unrecorded bool) {
	if end := r.skips.end; end != nil {
		r.skips.end = nil
		end()
	}
	return r.skips.unrecorded.Load()
}

// keepOwnItemsFire: a fire of the job's schedule whose ShardingContexts
// returned failover items runs only those (upstream's order), so it is
// lost for this instance's own items. With misfire on it is kept for them
// as a fire skipped while the job runs is (Facade.SetMisfireExcept): their
// flags make them run right after this execution. Without them the fire
// of an item whose owner holds a claim runs nothing of it until the
// owner's next fire, which a resharding can hold back. A manual fire (the
// claim's own trigger) owes the own items nothing.
func (r *run) keepOwnItemsFire(ctx context.Context, sc ShardingContexts, fire Fire) {
	if fire == nil || fire.Manual() || !r.cfg.Misfire {
		return
	}
	if err := r.opts.Facade.SetMisfireExcept(ctx, sc.Items); err != nil && ctx.Err() == nil {
		r.log.Warn("cannot keep the fire for this instance's items while it runs failover items", "failover_items", sc.Items, "error", err)
	}
}

// onceRecording is once while skipped fires are recorded (recordSkips).
func (r *run) onceRecording(ctx context.Context, sc ShardingContexts, src Source, fire Fire) (unrecorded bool, err error) {
	r.recordSkips(ctx, fire)
	err = r.once(ctx, sc, src)
	return r.stopRecording(), err
}

// recordMisfire sets the local items' misfire flags for skipped fires; it
// reports whether it did.
func (r *run) recordMisfire(ctx context.Context) bool {
	if err := r.setMisfire(ctx); err != nil {
		if ctx.Err() == nil {
			r.log.Warn("cannot record a fire skipped while the job ran", "error", err)
		}
		return false
	}
	return true
}

// catchUp is the misfire loop (the while loop of upstream's
// ElasticJobExecutor.execute): while misfire is on, no resharding is
// pending and one of the items has a misfire flag, the flags are cleared
// and the items run again with source Misfire, so fires missed while they
// ran collapse into one catch-up run right after. Each catch-up run also
// takes the instance's own items whose flags wait outside the execution's
// items (Facade.JoinCatchUp), which would otherwise wait until a chain of
// catch-up runs ends. Fires the trigger loop skipped and that were not yet
// recorded (one that came as a run ended, or whose recording failed) set
// the flags before each check. Once the loop ends, the trigger loop is told
// to skip no more fires of this trigger (a fire due before it returns
// starts right after), so no fire is left waiting for the next one; with
// misfire off the fires it skips stay misfires (recorded, never re-run).
func (r *run) catchUp(ctx context.Context, sc ShardingContexts, fire Fire, unrecorded bool) error {
	f := r.opts.Facade
	final := false
	for {
		if fire != nil && (fire.TakeMissed(false) > 0 || unrecorded) {
			r.recordMisfire(ctx)
		}
		again, err := f.ExecuteMisfired(ctx, sc.Items)
		if err != nil {
			return fmt.Errorf("executor: job %q: execute misfired: %w", r.jobName, err)
		}
		if !again && fire != nil && r.cfg.Misfire && !final {
			final = true
			if fire.TakeMissed(true) > 0 {
				r.recordMisfire(ctx)
				if again, err = f.ExecuteMisfired(ctx, sc.Items); err != nil {
					return fmt.Errorf("executor: job %q: execute misfired: %w", r.jobName, err)
				}
			}
		}
		if !again {
			return nil
		}
		base := sc
		if sc, err = f.JoinCatchUp(ctx, base); err != nil {
			return fmt.Errorf("executor: job %q: join catch-up: %w", r.jobName, err)
		}
		if err := f.ClearMisfire(ctx, sc.Items); err != nil {
			return fmt.Errorf("executor: job %q: clear misfire: %w", r.jobName, err)
		}
		unrecorded, err = r.onceRecording(ctx, sc, Misfire, fire)
		if err != nil && len(sc.Items) > len(base.Items) && errors.As(err, new(notBegun)) {
			// A joined item runs elsewhere (the cache showed it idle):
			// the Facade flags the joined items again, and the
			// execution's own items, whose flags were just cleared, run
			// alone rather than wait for a fire that may not come.
			r.log.Info("a catch-up run with joined items did not begin; running the execution's items alone",
				"items", base.Items, "with_joined", sc.Items, "error", err)
			sc = base
			unrecorded, err = r.onceRecording(ctx, sc, Misfire, fire)
		}
		if err != nil {
			return err
		}
	}
}
