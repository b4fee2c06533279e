package coord

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/ejob-io/ejob/core/reg"
)

// jobLoop is the job's event loop (upstream's ListenerNotify-{job} thread)
// without a goroutine of its own: the tree events, re-registrations, the
// failover pump's ticks and the reconcile ticks are closures run one at a
// time, in the order they come, on a serial queue, whose goroutine exists
// only while there is something to run. The handlers (listeners.handle, pump.run,
// reconcile, reRegister) never run concurrently, as on today's loop.
type jobLoop struct {
	q *serialQueue
	// Owned by q's closures (after Start released q):
	st     loopState
	halted bool        // the console shut the instance down: handle nothing more
	recon  *time.Timer // the reconcile tick
	retry  *time.Timer // the re-registration retry

	// reRegPending: a re-registration is queued and has not started (asks
	// coalesce, as upstream's reconnect listener).
	reRegPending atomic.Bool

	// The pump ticks only while there may be something for it to do: a
	// tick after any tree event or wake-up, and then again for as long as
	// pump.wanted says so. The ticks run on the namespace's pumpClock; an
	// idle job has none armed. armPump may be called from any goroutine.
	pumpMu    sync.Mutex
	pumpArmed bool // a tick is armed on the clock, or queued
	pumpOff   bool // the job has stopped
}

// post queues fn on the job's queue; it runs unless the job stops first.
func (j *Job) post(fn func()) {
	j.loop.q.post(func() {
		if j.loop.halted || j.life.ctx.Err() != nil {
			return
		}
		fn()
	})
}

// onTreeEvent handles one event of the job's tree (after the initial
// load), on the queue.
func (j *Job) onTreeEvent(ev reg.TreeEvent) {
	shut := j.ev.handle(j.life.ctx, ev, &j.loop.st)
	if j.onEv != nil {
		j.onEv(ev.Path)
	}
	if shut {
		j.log.Info("instance shut down from the registry")
		j.loop.halted = true
		j.hooks.Shutdown()
		go j.finish(false, nil)
		return
	}
	j.armPump()
}

// runningNodeEvent handles, on the tree cache's goroutine, an event of a
// running node (sharding/{item}/running: each trigger creates and deletes
// its items', this instance's own among them) and reports true; false for
// any other event, which goes to the job's queue. listeners.handle has nothing
// to do for a running node: such an event matters only to the pump (an
// execution's end may let a claimed item or a pending misfire run), so it
// arms the pump as onTreeEvent would, without waking the job's queue. The
// pump ticks a failoverTick after every such event, as after any other,
// and decides then whether it has work (pumpFired), not at the event; a
// tick with nothing to do costs no queue wake-up. Until the startup is
// done (the queue holds events until then), every event goes through the
// queue.
func (j *Job) runningNodeEvent(ev reg.TreeEvent) bool {
	if !j.life.up.Load() || !j.s.p.IsRunning(ev.Path) {
		return false
	}
	j.armPump()
	if j.onEv != nil {
		j.onEv(ev.Path)
	}
	return true
}

// askReRegister queues a re-registration unless one is queued already.
func (j *Job) askReRegister() {
	if j.loop.reRegPending.CompareAndSwap(false, true) {
		j.post(j.reRegisterTick)
	}
}

func (j *Job) reRegisterTick() {
	j.loop.reRegPending.Store(false)
	ctx := j.life.ctx
	if err := j.reRegister(ctx); err != nil {
		if ctx.Err() != nil {
			return
		}
		j.log.Warn("re-registration failed; retrying", "error", err)
		if j.loop.retry == nil {
			j.loop.retry = time.AfterFunc(j.poll*5, j.askReRegister)
		} else {
			j.loop.retry.Reset(j.poll * 5)
		}
	}
	j.armPump()
}

// armPump arms the pump's tick a failoverTick from now unless one is
// armed (or queued).
func (j *Job) armPump() {
	l := &j.loop
	l.pumpMu.Lock()
	defer l.pumpMu.Unlock()
	if l.pumpArmed || l.pumpOff {
		return
	}
	l.pumpArmed = true
	j.life.ns.pumps.after(j, j.failoverTick())
}

// pumpFired is the pump's tick, on the namespace's pumpClock. The tick
// goes to the job's queue (pumpTick) only when the pump has something to
// do: pump.wanted reads every case the pump acts on, and the misfire sighting
// pump clears. Otherwise pump would do nothing, so the queue is not woken
// (most ticks: the one after each trigger's running-node events).
// Anything that gives the pump work after the second check below arms it
// anew (a tree event, or wakePump after the state change it reports);
// what came before is seen by that check. A stopped job's tick posts
// nothing (its queue is closed).
func (j *Job) pumpFired() {
	if j.pumpDue() {
		j.post(j.pumpTick)
		return
	}
	l := &j.loop
	l.pumpMu.Lock()
	l.pumpArmed = false
	l.pumpMu.Unlock()
	if j.pumpDue() {
		j.armPump()
	}
}

// pumpDue: pump would act on something now, or clear a misfire sighting.
func (j *Job) pumpDue() bool { return j.pm.wanted(j.cache) || j.mf.state().sighting() }

func (j *Job) pumpTick() {
	j.loop.pumpMu.Lock()
	j.loop.pumpArmed = false
	j.loop.pumpMu.Unlock()
	ctx := j.life.ctx
	if err := j.pm.run(ctx, j.cache); err != nil && ctx.Err() == nil {
		j.log.Warn("failover and misfire pump failed", "error", err)
	}
	if j.pm.wanted(j.cache) {
		j.armPump()
	}
}

// armReconcile arms the next reconcile tick.
func (j *Job) armReconcile() {
	if j.loop.recon == nil {
		j.loop.recon = time.AfterFunc(j.recon, func() { j.post(j.reconcileTick) })
	} else {
		j.loop.recon.Reset(j.recon)
	}
}

func (j *Job) reconcileTick() {
	ctx := j.life.ctx
	if err := j.ev.reconcile(ctx, &j.loop.st, time.Now()); err != nil && ctx.Err() == nil {
		j.log.Warn("reconcile failed", "error", err)
	}
	if paused, _ := j.Paused(); !paused {
		if err := j.stale().sweepIfLeader(ctx); err != nil && ctx.Err() == nil {
			j.log.Warn("stale node sweep failed", "error", err)
		}
	}
	j.armReconcile()
}

// stopLoop drops what is queued, waits for the closure running now, and
// stops the timers.
func (j *Job) stopLoop() {
	j.loop.q.close()
	j.loop.pumpMu.Lock()
	j.loop.pumpOff = true // an armed tick finds the queue closed
	j.loop.pumpMu.Unlock()
	if ns := j.life.ns; ns != nil { // nil: stopped before Start
		ns.pumps.cancel(j)
	}
	for _, t := range []*time.Timer{j.loop.recon, j.loop.retry} {
		if t != nil {
			t.Stop()
		}
	}
}
