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

// ReRegisterSlots is how many jobs of a namespace re-register at once
// (tests).
const ReRegisterSlots = reRegisterSlots

// FreeReRegisterSlots is how many of ns's re-registration slots are free
// (tests).
func FreeReRegisterSlots(ns *Namespace) int {
	ns.reRegs.mu.Lock()
	defer ns.reRegs.mu.Unlock()
	return ns.reRegs.free
}

// BusyUntilStopped keeps j's queue busy until its Stop has closed the
// queue, then asks for a re-registration, which the gate admits and
// queues behind the closure, so that the closed queue drops it (tests).
func BusyUntilStopped(j *Job) {
	q := j.loop.q
	running := make(chan struct{})
	q.post(func() {
		close(running)
		for {
			q.mu.Lock()
			closed := q.closed
			q.mu.Unlock()
			if closed {
				return
			}
			time.Sleep(time.Millisecond)
		}
	})
	<-running
	j.loop.askReRegister()
}
