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
	st    loopState
	retry *time.Timer // the re-registration retry
	// halted: the console shut the instance down: handle nothing more.
	// reconArmed: the first reconcile tick was armed (by Start, before
	// the queue runs anything; later ones by the tick itself).
	halted, reconArmed bool
	// pumpArmed: a pump tick is armed on the clock, or queued; pumpOff:
	// the job has stopped: no tick is armed any more. Guarded by pumpMu
	// (see below; here, beside the other flags, the Job fits its size
	// class: TestJobSizeClass).
	pumpArmed, pumpOff bool

	// reRegPending: a re-registration is queued and has not started (asks
	// coalesce, as upstream's reconnect listener). Set by askReRegister on
	// the connection queue (registration.onConn) or the retry timer's
	// goroutine, cleared by reRegisterTick on the job's queue: atomic.
	reRegPending atomic.Bool

	// The pump ticks only while there may be something for it to do: a
	// tick after any tree event or wake-up, and then again for as long as
	// pump.wanted says so. The ticks run on the namespace's pumpClock; an
	// idle job has none armed. armPump may be called from any goroutine.
	// The reconcile ticks run on the same clock (armReconcile): an idle
	// job holds an entry of its heap rather than a runtime timer.
	pumpMu sync.Mutex
	// clockAt is where the job's pump and reconcile ticks are in the
	// clock's heap (index + 1; 0: not there), for cancel; guarded by the
	// clock's mu.
	clockAt [2]int32

	// What the loop runs and reads, set by New.
	*jobBase               // its poll: the re-registration retry is 5 of them
	recon    time.Duration // the reconcile tick (Options.ReconcileTick)
	onEv     func(string)  // Options.OnEvent (nil: none)
}

// post queues fn on the job's queue; it runs unless the job stops first.
func (l *jobLoop) post(fn func()) {
	l.q.post(func() {
		if l.halted || l.job.life.ctx.Err() != nil {
			return
		}
		fn()
	})
}

// onTreeEvent handles one event of the job's tree (after the initial
// load), on the queue.
func (l *jobLoop) onTreeEvent(ev reg.TreeEvent, seq uint32) {
	shut := l.job.ev.handle(l.job.life.ctx, ev, seq, &l.st)
	if l.onEv != nil {
		l.onEv(ev.Path)
	}
	if shut {
		l.log.Info("instance shut down from the registry")
		l.halted = true
		l.hooks.Shutdown()
		go l.job.life.finish(false, nil)
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
	if !l.job.life.up.Load() || !l.s.p.IsRunning(ev.Path) {
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
	ctx := l.job.life.ctx
	if err := l.job.rg.reRegister(ctx, l.job.life.ns); err != nil {
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
	l.job.life.ns.pumps.after(l, l.tick())
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
func (l *jobLoop) pumpDue() bool {
	return l.job.pm.wanted(l.job.tc.view) || l.job.mf.state().sighting()
}

func (l *jobLoop) pumpTick() {
	l.pumpMu.Lock()
	l.pumpArmed = false
	l.pumpMu.Unlock()
	ctx := l.job.life.ctx
	if err := l.job.pm.run(ctx, l.job.tc.view); err != nil && ctx.Err() == nil {
		l.log.Warn("failover and misfire pump failed", "error", err)
	}
	if l.job.pm.wanted(l.job.tc.view) {
		l.armPump()
	}
}

// armReconcile arms the next reconcile tick. The first comes at a random
// point between half a tick and a tick and a half after the start, so the
// ticks of jobs a host starts together spread over the tick instead of
// coming in one wave.
func (l *jobLoop) armReconcile() {
	d := l.recon
	if !l.reconArmed {
		l.reconArmed = true
		d = l.recon/2 + rand.N(l.recon+1)
	}
	l.pumpMu.Lock()
	defer l.pumpMu.Unlock()
	if !l.pumpOff {
		l.job.life.ns.pumps.afterReconcile(l, d)
	}
}

// reconcileFired is the reconcile tick's time, on the namespace's
// pumpClock: the tick runs on the job's queue.
func (l *jobLoop) reconcileFired() { l.post(l.reconcileTick) }

// reconcileTick is the reconcile tick: ReconcileService's check and the
// stale-node sweep. Both look at the tree cache first and read the
// registry only when the cache shows something to act on, so an idle
// job's tick makes no request.
func (l *jobLoop) reconcileTick() {
	ctx := l.job.life.ctx
	if err := l.job.ev.reconcile(ctx, &l.st, l.job.tc.view, time.Now()); err != nil && ctx.Err() == nil {
		l.log.Warn("reconcile failed", "error", err)
	}
	if paused, _ := l.job.rg.isPaused(); !paused {
		if sw := l.job.sw.stale(); sw.suspects(l.job.tc.view) {
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
	if ns := l.job.life.ns; ns != nil { // nil: stopped before Start
		ns.pumps.cancel(l)
	}
	if l.retry != nil {
		l.retry.Stop()
	}
}
