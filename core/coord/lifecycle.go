package coord

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ejob-io/ejob/core/reg"
)

// lifecycle is the job's start and end (Start, Stop, Run): it starts the
// owners below in order, registers the instance, and ends them once. It
// owns the flags that say where the job is in its life.
type lifecycle struct {
	*jobBase
	ns    *Namespace    // Options.Namespace, or the job's own
	grace time.Duration // Options.ShutdownGrace
	// It starts and ends the other owners (through job).
	// su is the startup registration, Start's own (nil once it is over).
	su *setUp

	// shutdown: no execution may start here. Set by the job's end
	// (finish, cleanShutdown) and the console's shutdown
	// (listeners.isShutdownByConsole), read by every trigger, the pump,
	// the pump's clock (pump.wanted), the event loop and the host
	// (Job.ShuttingDown), each on its own goroutine: atomic.
	shutdown atomic.Bool
	// ready: Start has registered this instance (Job.Ready). Set by
	// startUp on Start's goroutine, read by the scheduler's check at each
	// fire without a lock: atomic.
	ready atomic.Bool
	// started: Start or Stop was called (they may be called on any
	// goroutine, and only the first counts): atomic.
	started atomic.Bool
	// up: Start succeeded. Set by Start, read by finish (on whichever
	// goroutine ends the job) and by the tree cache's goroutine
	// (jobLoop.runningNodeEvent): atomic.
	up atomic.Bool
	// ctx is the job's life (Start's ctx, cancelled by finish); set by
	// Start before anything runs under it.
	ctx context.Context
	// mu guards cancel and ending against a Stop during Start, and over,
	// stopped and readyCh.
	mu     sync.Mutex
	cancel context.CancelCauseFunc
	ending error // the cause finish cancelled with (nil: not ending)
	// ownNS: the job made ns (no Options.Namespace) and runs it (nil
	// otherwise).
	ownNS *ownNamespace
	// end makes the end of Start's ctx finish the job (the namespace's
	// ctxEnds); set by Start once it succeeded.
	end      *ctxEnd
	finished sync.Once
	over     bool // everything of the job has ended (see stopped); guarded by mu
	// subscribed: the job is subscribed to ns (set by Start before
	// anything can call finish concurrently with it).
	subscribed bool

	startupDone chan struct{} // closed when Start's work is over (whatever its result)
	// stopped is closed when everything of the job has ended (over), and
	// readyCh when the instance is registered (ready): each made when
	// first asked for (Done, Run, Ready), so the jobs of a Scheduler, which
	// stops them with Stop and checks readiness with the flag, carry none.
	stopped chan struct{}
	readyCh chan struct{}
}

// ownNamespace is the Namespace a job given none runs: stop ends its Run,
// done is closed once it has returned.
type ownNamespace struct {
	stop context.CancelFunc
	done chan struct{}
}

// Start registers this instance (upstream's SetUpFacade.registerStartUpInfo) and
// returns once it is registered (Ready is closed then), or with the error that
// stopped it (the job has then ended: nothing of it runs). From then on the job
// follows its tree and the connection without a goroutine of its own while
// nothing happens, until Stop, the end of ctx, or a shutdown from the console
// (Options.OnShutdown, then OnStopped(nil)). It may be called once.
func (j *Job) Start(ctx context.Context) error { return j.life.start(ctx) }

// Stop shuts the job down on this instance and returns once everything of
// it has ended: the queued work is dropped, the work running now returns
// (its ctx is cancelled), and on a clean exit the instance node is gone
// and leadership released (cleanShutdown). Before Start it only makes
// Start fail; after the job ended by itself it returns at once.
func (j *Job) Stop() { j.life.stop() }

// Done is closed once everything of the job has ended (after Stop, the
// end of Start's ctx, a failed Start, or an end reported by OnStopped).
func (j *Job) Done() <-chan struct{} { return j.life.stoppedCh() }

// Run is Start, then waits until the job has ended (ctx ends, or the
// console shuts the instance down). It returns Start's error, nil when ctx
// ended first or once the job had started.
func (j *Job) Run(ctx context.Context) error {
	if err := j.Start(ctx); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	<-j.life.stoppedCh()
	return nil
}

// nsConn implements nsSubscriber: a connection event, handled on the
// connection queue.
func (l *lifecycle) nsConn(ce reg.ConnEvent) { l.job.rg.cq.post(func() { l.job.rg.onConn(ce) }) }

// nsEnd implements nsSubscriber: the namespace stopped, so the job ends.
func (l *lifecycle) nsEnd(err error) { go l.finish(false, err) }

// stoppedCh returns stopped, made now if need be.
func (l *lifecycle) stoppedCh() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stopped == nil {
		if l.over {
			return closedChan
		}
		l.stopped = make(chan struct{})
	}
	return l.stopped
}

// ended reports whether everything of the job has ended.
func (l *lifecycle) ended() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.over
}

// readyChan is Job.Ready.
func (l *lifecycle) readyChan() <-chan struct{} {
	if l.ready.Load() {
		return closedChan // the scheduler's check at each fire: no lock
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.readyCh == nil {
		if l.ready.Load() {
			return closedChan
		}
		l.readyCh = make(chan struct{})
	}
	return l.readyCh
}

// setReady marks the instance registered (Job.Ready).
func (l *lifecycle) setReady() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ready.Store(true)
	if l.readyCh != nil {
		close(l.readyCh)
	}
}

// checkReady is nil once Start has registered the instance and until the
// job shuts down here, else ErrNotReady or ErrShutdown.
func (l *lifecycle) checkReady() error {
	if !l.ready.Load() {
		return ErrNotReady
	}
	if l.shutdown.Load() {
		return ErrShutdown
	}
	return nil
}

// start is Job.Start.
func (l *lifecycle) start(ctx context.Context) error {
	if !l.started.CompareAndSwap(false, true) {
		if l.ended() {
			return ErrShutdown
		}
		return errors.New("coord: Start called twice")
	}
	defer func() { l.su = nil }() // what it kept is the registry's now
	if l.ns == nil {
		l.ns = NewNamespace(l.s.c, l.log)
		nctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		l.ownNS = &ownNamespace{stop: cancel, done: make(chan struct{})}
		go func() {
			defer close(l.ownNS.done)
			_ = l.ns.Run(nctx)
		}()
	}
	if err := l.su.setUpConfig(ctx, l.ns, true); err != nil {
		close(l.startupDone)
		l.finish(true, err)
		return err
	}
	lctx, cancel := context.WithCancelCause(ctx)
	l.mu.Lock()
	l.ctx, l.cancel = lctx, cancel
	if l.ending != nil {
		cancel(l.ending) // Stop came during setUpConfig
	}
	l.mu.Unlock()
	// Subscribed before the cache loads: the connection events
	// from now on are handled once the instance is registered.
	l.ns.subscribe(l)
	l.subscribed = true
	// A job new to the registry registers in one transaction before its
	// subtree is loaded (registerNew); if that fails, the usual sequence
	// runs once the cache is loaded.
	if l.su.fresh != nil {
		if err := l.su.registerNew(l.ctx, l.ns); err != nil {
			close(l.startupDone)
			l.finish(true, err)
			return err
		}
	}
	// The initial load describes the tree as it was; the startup sequence
	// acts on it directly, so its events are not made (the first is
	// TreeInitialized, which needs nothing either). Later events queue
	// until it is done. The view calls fn on the cache's goroutine, one
	// call at a time.
	l.job.tc.view = l.ns.track(l.s.p.Root(), func(ev reg.TreeEvent) {
		if ev.Type == reg.TreeInitialized || l.job.loop.runningNodeEvent(ev) {
			return
		}
		seq := l.marks.posted.Add(1)
		l.job.loop.post(func() { l.job.loop.onTreeEvent(ev, seq) })
	}, reg.WithTreeLogger(l.log), reg.WithLeaves(l.isItemLeaf), reg.WithoutInitialEvents(), reg.WithCounted(l.isFlag))
	l.job.ldr.cache = l.job.tc.view
	l.job.tc.live.Store(l.job.tc.view)
	end := l.ns.ends.add(ctx, l)
	err := l.startUp(l.ctx)
	if err == nil && l.ctx.Err() != nil {
		err = context.Cause(l.ctx)
	}
	if err != nil {
		l.ns.ends.remove(end, l)
		close(l.startupDone)
		l.finish(true, err)
		return err
	}
	l.end = end
	l.up.Store(true)
	l.job.loop.armReconcile()
	l.job.rg.cq.release()
	l.job.loop.q.release()
	close(l.startupDone) // finish may stop the loop from now on
	return nil
}

// isItemLeaf and isFlag are the job's node.Job.IsItemLeaf and IsFlag as
// the tree cache keeps them: a method value of l's (a pointer) rather than
// of node.Job's (a value), whose copy of the paths each view kept.
func (l *lifecycle) isItemLeaf(path string) bool { return l.s.p.IsItemLeaf(path) }

func (l *lifecycle) isFlag(path string) bool { return l.s.p.IsFlag(path) }

// startUp waits for the cache's initial load, then registers the instance.
func (l *lifecycle) startUp(ctx context.Context) error {
	select {
	case <-l.job.tc.view.Initialized():
	case <-ctx.Done():
		return context.Cause(ctx)
	}
	l.job.conf.refresh(l.job.tc.view)
	cfg, err := l.job.conf.get(ctx)
	if err != nil {
		return err
	}
	fresh := l.su.fresh
	l.su.fresh = nil
	// The stale-node sweep: on a leader, of a job the registry had.
	var sweep bool
	var items []string
	if fresh != nil && fresh.sess != nil {
		// registerNew did it all: leader, server, instance, flag; the
		// subtree held nothing else (no offline server, no stale node).
		l.job.rg.registered(fresh.sess)
		l.log.Info("became leader")
	} else if sweep, items, err = l.su.registerStartUp(ctx, l.ns, l.job.tc.view, !cfg.Disabled); err != nil {
		return err
	}
	l.job.loop.st = loopState{curTotal: cfg.ShardingTotalCount, cron: cfg.Cron, tz: cfg.TimeZone, lastReconcile: time.Now()}
	l.setReady()
	l.log.Info("instance registered", "server", l.ip)
	if sweep {
		if err := l.job.sw.stale().sweepItems(ctx, items); err != nil && ctx.Err() == nil {
			l.log.Warn("stale node sweep at startup failed", "error", err)
		}
	}
	// The pump's first tick covers what startup found.
	l.job.loop.armPump()
	return nil
}

// stop is Job.Stop.
func (l *lifecycle) stop() {
	if l.started.CompareAndSwap(false, true) {
		close(l.startupDone)
		l.finish(true, ErrShutdown)
		return
	}
	l.finish(true, ErrShutdown)
}

// finish ends the job once: asked is false for an end neither Stop nor
// ctx asked for (reported by OnStopped when Start had succeeded).
func (l *lifecycle) finish(asked bool, cause error) {
	l.finished.Do(func() {
		l.shutdown.Store(true)
		l.job.tc.live.Store(nil)
		c := cause
		if c == nil {
			c = ErrShutdown
		}
		l.mu.Lock()
		l.ending = c
		if l.cancel != nil {
			l.cancel(c)
		}
		l.mu.Unlock()
		<-l.startupDone
		if l.end != nil {
			l.ns.ends.remove(l.end, l)
		}
		if l.subscribed {
			l.ns.unsubscribe(l)
		}
		l.job.loop.stopLoop()
		l.job.rg.stop()
		if l.subscribed {
			// The cache stays readable while the last execution ends.
			l.cleanShutdown()
		}
		if l.job.tc.view != nil {
			l.job.tc.view.Close()
		}
		if l.ownNS != nil {
			l.ownNS.stop()
			<-l.ownNS.done
		}
		if !asked && l.up.Load() {
			l.hooks.Stopped(cause) // an end nobody asked for
		}
		l.mu.Lock()
		l.over = true
		if l.stopped != nil {
			close(l.stopped)
		}
		l.mu.Unlock()
	})
}

// cleanShutdown is the graceful shutdown: leader node and instance node of
// this session are deleted (upstream's JobShutdownHookPlugin). Best effort with
// a short deadline.
func (l *lifecycle) cleanShutdown() {
	l.shutdown.Store(true)
	// Wait for the local execution to end first (bounded).
	grace := time.NewTimer(l.grace)
	defer grace.Stop()
	select {
	case <-l.job.att.running.Idle():
	case <-grace.C:
		l.log.Warn("shutdown: execution still running after the grace period", "grace", l.grace)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	sess := l.s.c.Session()
	if sess.Err() != nil {
		return
	}
	if _, err := l.job.ldr.e.Resign(ctx); err != nil {
		l.log.Warn("shutdown: delete failed", "path", l.job.ldr.e.LeaderPath(), "error", err)
	}
	if _, st, err := l.s.c.Get(ctx, l.s.p.Instance(l.id)); err == nil && st.EphemeralOwner == sess.ID() {
		if err := l.s.c.Delete(ctx, l.s.p.Instance(l.id), st.Version); err != nil && !errors.Is(err, reg.ErrNoNode) {
			l.log.Warn("shutdown: delete failed", "path", l.s.p.Instance(l.id), "error", err)
		}
	}
	l.log.Info("job coordination stopped")
}
