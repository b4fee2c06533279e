package coord

import (
	"context"
	"time"
)

// SetBeforeCommit installs a hook run between taking the leader fence and
// committing a resharding (tests: depose the leader in between).
func SetBeforeCommit(j *Job, f func()) { j.rsh.beforeCommit = f }

// CleanStale runs the stale-node sweep once (tests).
func CleanStale(j *Job, ctx context.Context) error { return j.sw.stale().sweep(ctx) }

// PreArmLeadOf is the lead armLead computes from these round trips, in
// order (tests).
func PreArmLeadOf(rtts ...time.Duration) time.Duration {
	var a armLead
	for _, d := range rtts {
		a.record(d)
	}
	return a.get()
}

// SetPaused marks the job paused or not, as a suspension of its
// registry connection does (tests).
func SetPaused(j *Job, p bool) { j.rg.setPaused(p) }

// SetCatchUp records items as cleared for a catch-up run, as
// misfires.runPending does (tests).
func SetCatchUp(j *Job, items []int) { j.mf.made().setCatchUp(items) }

// UndoBegin undoes a begin of items as a trigger whose running-node
// transaction was not kept does (tests).
func UndoBegin(j *Job, ctx context.Context, items []int) error {
	a := j.att.start(nil, nil, nil)
	a.items = items
	return a.undo(ctx)
}

// PumpArmed reports whether the job's pump has a tick armed or queued
// (tests).
func PumpArmed(j *Job) bool {
	j.loop.pumpMu.Lock()
	defer j.loop.pumpMu.Unlock()
	return j.loop.pumpArmed
}
