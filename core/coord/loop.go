package coord

import (
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ejob-io/ejob/core/reg"
)

// jobLoop is the job's event loop (upstream's ListenerNotify-{job} thread)
// without a goroutine of its own: the tree events, re-registrations, the
// failover pump's ticks and the reconcile ticks are closures run one at a
// time, in the order they come, on a serial queue, whose goroutine exists
// only while there is something to run. The handlers (listeners.handle,
// pump.run, listeners.reconcile, registration.reRegister) never run
// concurrently. The owners it runs are wired in by New.
type jobLoop struct {
	q *serialQueue
	// Owned by q's closures (after Start released q):
	st     loopState
	halted bool        // the console shut the instance down: handle nothing more
	reconT *time.Timer // the reconcile tick
	retry  *time.Timer // the re-registration retry

	// reRegPending: a re-registration is queued and has not started (asks
	// coalesce, as upstream's reconnect listener). Set by askReRegister on
	// the connection queue (registration.onConn) or the retry timer's
	// goroutine, cleared by reRegisterTick on the job's queue: atomic.
	reRegPending atomic.Bool

	// The pump ticks only while there may be something for it to do: a
	// tick after any tree event or wake-up, and then again for as long as
	// pump.wanted says so. The ticks run on the namespace's pumpClock; an
	// idle job has none armed. armPump may be called from any goroutine.
	pumpMu    sync.Mutex
	pumpArmed bool // a tick is armed on the clock, or queued
	pumpOff   bool // the job has stopped

	// What the loop runs and reads, set by New (cache by Start, before
	// the loop runs anything).
	*jobBase               // its poll: the re-registration retry is 5 of them
	recon    time.Duration // the reconcile tick (Options.ReconcileTick)
	onEv     func(string)  // Options.OnEvent (nil: none)
	life     *lifecycle    // the job's context, its start and its namespace
	cache    *reg.CacheView
	ev       *listeners
	pm       *pump
	rg       *registration
	sw       *sweeps
}

// post queues fn on the job's queue; it runs unless the job stops first.
func (l *jobLoop) post(fn func()) {
	l.q.post(func() {
		if l.halted || l.life.ctx.Err() != nil {
			return
		}
		fn()
	})
}

// onTreeEvent handles one event of the job's tree (after the initial
// load), on the queue.
func (l *jobLoop) onTreeEvent(ev reg.TreeEvent) {
	shut := l.ev.handle(l.life.ctx, ev, &l.st)
	if l.onEv != nil {
		l.onEv(ev.Path)
	}
	if shut {
		l.log.Info("instance shut down from the registry")
		l.halted = true
		l.hooks.Shutdown()
		go l.life.finish(false, nil)
		return
	}
	l.armPump()
}

// runningNodeEvent handles, on the tree cache's goroutine, an event of a
// running node (sharding/{item}/running: each trigger creates and deletes
// its items', this instance's own among them) and reports true; false for
// any other event, which goes to the job's queue. listeners.handle has nothing
// to do for a running node: such an event matters only to the pump (an
// execution's end may let a claimed item or a pending misfire run), so it
// arms the pump as onTreeEvent would, without waking the job's queue, but
// only when the pump has something to do (pumpDue, read on the cache that
// holds the event): a steady trigger's running nodes then arm nothing, and
// 100 jobs firing each second do not wake the process a failoverTick after
// each fire for ticks that all find nothing. What gives the pump work later
// arms it itself (a tree event, wakePump after the state change it
// reports), as pumpFired says. Until the startup is done (the queue holds
// events until then), every event goes through the queue.
func (l *jobLoop) runningNodeEvent(ev reg.TreeEvent) bool {
	if !l.life.up.Load() || !l.s.p.IsRunning(ev.Path) {
		return false
	}
	if l.pumpDue() {
		l.armPump()
	}
	if l.onEv != nil {
		l.onEv(ev.Path)
	}
	return true
}

// askReRegister queues a re-registration unless one is queued already.
func (l *jobLoop) askReRegister() {
	if l.reRegPending.CompareAndSwap(false, true) {
		l.post(l.reRegisterTick)
	}
}

func (l *jobLoop) reRegisterTick() {
	l.reRegPending.Store(false)
	ctx := l.life.ctx
	if err := l.rg.reRegister(ctx); err != nil {
		if ctx.Err() != nil {
			return
		}
		l.log.Warn("re-registration failed; retrying", "error", err)
		if l.retry == nil {
			l.retry = time.AfterFunc(l.poll*5, l.askReRegister)
		} else {
			l.retry.Reset(l.poll * 5)
		}
	}
	l.armPump()
}

// armPump arms the pump's tick a failoverTick from now unless one is
// armed (or queued).
func (l *jobLoop) armPump() {
	l.pumpMu.Lock()
	defer l.pumpMu.Unlock()
	if l.pumpArmed || l.pumpOff {
		return
	}
	l.pumpArmed = true
	l.life.ns.pumps.after(l, l.tick)
}

// pumpFired is the pump's tick, on the namespace's pumpClock. The tick
// goes to the job's queue (pumpTick) only when the pump has something to
// do: pump.wanted reads every case the pump acts on, and the misfire sighting
// pump clears. Otherwise pump would do nothing, so the queue is not woken
// (a tick after a tree event that gave the pump nothing to do).
// Anything that gives the pump work after the second check below arms it
// anew (a tree event, or wakePump after the state change it reports);
// what came before is seen by that check. A stopped job's tick posts
// nothing (its queue is closed).
func (l *jobLoop) pumpFired() {
	if l.pumpDue() {
		l.post(l.pumpTick)
		return
	}
	l.pumpMu.Lock()
	l.pumpArmed = false
	l.pumpMu.Unlock()
	if l.pumpDue() {
		l.armPump()
	}
}

// pumpDue: pump would act on something now, or clear a misfire sighting.
func (l *jobLoop) pumpDue() bool { return l.pm.wanted(l.cache) || l.pm.mf.state().sighting() }

func (l *jobLoop) pumpTick() {
	l.pumpMu.Lock()
	l.pumpArmed = false
	l.pumpMu.Unlock()
	ctx := l.life.ctx
	if err := l.pm.run(ctx, l.cache); err != nil && ctx.Err() == nil {
		l.log.Warn("failover and misfire pump failed", "error", err)
	}
	if l.pm.wanted(l.cache) {
		l.armPump()
	}
}

// armReconcile arms the next reconcile tick. The first comes at a random
// point between half a tick and a tick and a half after the start, so the
// ticks of jobs a host starts together spread over the tick instead of
// coming in one wave.
func (l *jobLoop) armReconcile() {
	if l.reconT == nil {
		first := l.recon/2 + rand.N(l.recon+1)
		l.reconT = time.AfterFunc(first, func() { l.post(l.reconcileTick) })
	} else {
		l.reconT.Reset(l.recon)
	}
}

// reconcileTick is the reconcile tick: ReconcileService's check and the
// stale-node sweep. Both look at the tree cache first and read the
// registry only when the cache shows something to act on, so an idle
// job's tick makes no request.
func (l *jobLoop) reconcileTick() {
	ctx := l.life.ctx
	if err := l.ev.reconcile(ctx, &l.st, l.cache, time.Now()); err != nil && ctx.Err() == nil {
		l.log.Warn("reconcile failed", "error", err)
	}
	if paused, _ := l.rg.isPaused(); !paused {
		if sw := l.sw.stale(); sw.suspects(l.cache) {
			if err := sw.sweepIfLeader(ctx); err != nil && ctx.Err() == nil {
				l.log.Warn("stale node sweep failed", "error", err)
			}
		}
	}
	l.armReconcile()
}

// stopLoop drops what is queued, waits for the closure running now, and
// stops the timers.
func (l *jobLoop) stopLoop() {
	l.q.close()
	l.pumpMu.Lock()
	l.pumpOff = true // an armed tick finds the queue closed
	l.pumpMu.Unlock()
	if ns := l.life.ns; ns != nil { // nil: stopped before Start
		ns.pumps.cancel(l)
	}
	for _, t := range []*time.Timer{l.reconT, l.retry} {
		if t != nil {
			t.Stop()
		}
	}
}
