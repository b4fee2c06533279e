package coord

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ejob-io/ejob/core/reg"
)

// lifecycle is the job's start and end (Start, Stop, Run).
type lifecycle struct {
	ns *Namespace // Options.Namespace, or the job's own

	started atomic.Bool
	over    bool // everything of the job has ended (see stopped); guarded by mu
	// ctx is the job's life (Start's ctx, cancelled by finish); set by
	// Start before anything runs under it.
	ctx context.Context
	// mu guards cancel and ending against a Stop during Start, and over,
	// stopped and readyCh.
	mu     sync.Mutex
	cancel context.CancelCauseFunc
	ending error // the cause finish cancelled with (nil: not ending)
	// ownNS: the job made ns (no Options.Namespace) and runs it until
	// nsDone.
	ownNS  context.CancelFunc
	nsDone chan struct{}
	// subscribed: the job is subscribed to ns (set by Start before
	// anything can call finish concurrently with it).
	subscribed bool
	stopAF     func() bool // stops the AfterFunc on Start's ctx
	up         atomic.Bool // Start succeeded
	finished   sync.Once

	startupDone chan struct{} // closed when Start's work is over (whatever its result)
	// stopped is closed when everything of the job has ended (over), and
	// readyCh when the instance is registered (Job.ready): each made when
	// first asked for (Done, Run, Ready), so the jobs of a Scheduler, which
	// stops them with Stop and checks readiness with the flag, carry none.
	stopped chan struct{}
	readyCh chan struct{}
}

// nsConn implements nsSubscriber: a connection event, handled on the
// connection queue.
func (j *Job) nsConn(ce reg.ConnEvent) { j.rg.cq.post(func() { j.rg.onConn(ce) }) }

// nsEnd implements nsSubscriber: the namespace stopped, so the job ends.
func (j *Job) nsEnd(err error) { go j.finish(false, err) }

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

// Start registers this instance (upstream's SetUpFacade.registerStartUpInfo) and
// returns once it is registered (Ready is closed then), or with the error that
// stopped it (the job has then ended: nothing of it runs). From then on the job
// follows its tree and the connection without a goroutine of its own while
// nothing happens, until Stop, the end of ctx, or a shutdown from the console
// (Options.OnShutdown, then OnStopped(nil)). It may be called once.
func (j *Job) Start(ctx context.Context) error {
	if !j.life.started.CompareAndSwap(false, true) {
		if j.life.ended() {
			return ErrShutdown
		}
		return errors.New("coord: Start called twice")
	}
	l := &j.life
	if l.ns == nil {
		l.ns = NewNamespace(j.s.c, j.log)
		nctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		l.ownNS, l.nsDone = cancel, make(chan struct{})
		go func() {
			defer close(l.nsDone)
			_ = l.ns.Run(nctx)
		}()
	}
	if err := j.su.setUpConfig(ctx, l.ns, true); err != nil {
		close(j.life.startupDone)
		j.finish(true, err)
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
	l.ns.subscribe(j)
	l.subscribed = true
	// A job new to the registry registers in one transaction before its
	// subtree is loaded (registerNew); if that fails, the usual sequence
	// runs once the cache is loaded.
	if j.su.fresh != nil {
		if err := j.su.registerNew(l.ctx, l.ns); err != nil {
			close(l.startupDone)
			j.finish(true, err)
			return err
		}
	}
	// The initial load describes the tree as it was; the startup sequence
	// acts on it directly, so its events are not made (the first is
	// TreeInitialized, which needs nothing either). Later events queue
	// until it is done. The view calls fn on the cache's goroutine, one
	// call at a time.
	j.cache = l.ns.track(j.s.p.Root(), func(ev reg.TreeEvent) {
		if ev.Type == reg.TreeInitialized || j.loop.runningNodeEvent(ev) {
			return
		}
		j.loop.post(func() { j.loop.onTreeEvent(ev) })
	}, reg.WithTreeLogger(j.log), reg.WithLeaves(j.s.p.IsItemLeaf), reg.WithoutInitialEvents(), reg.WithCounted(j.s.p.IsFlag))
	j.ldr.cache, j.loop.cache = j.cache, j.cache
	j.liveCache.Store(j.cache)
	stopAF := context.AfterFunc(ctx, func() { j.finish(true, nil) })
	err := j.startUp(l.ctx)
	if err == nil && l.ctx.Err() != nil {
		err = context.Cause(l.ctx)
	}
	if err != nil {
		stopAF()
		close(l.startupDone)
		j.finish(true, err)
		return err
	}
	l.stopAF = stopAF
	l.up.Store(true)
	j.loop.armReconcile()
	j.rg.cq.release()
	j.loop.q.release()
	close(l.startupDone) // finish may stop the loop from now on
	return nil
}

// startUp waits for the cache's initial load, then registers the instance.
func (j *Job) startUp(ctx context.Context) error {
	select {
	case <-j.cache.Initialized():
	case <-ctx.Done():
		return context.Cause(ctx)
	}
	j.conf.refresh(j.cache)
	cfg, err := j.config(ctx)
	if err != nil {
		return err
	}
	fresh := j.su.fresh
	j.su.fresh = nil
	// The stale-node sweep: on a leader, of a job the registry had.
	var sweep bool
	var items []string
	if fresh != nil && fresh.sess != nil {
		// registerNew did it all: leader, server, instance, flag; the
		// subtree held nothing else (no offline server, no stale node).
		j.rg.registered(fresh.sess)
		j.log.Info("became leader")
	} else if sweep, items, err = j.su.registerStartUp(ctx, j.life.ns, j.cache, !cfg.Disabled); err != nil {
		return err
	}
	j.loop.st = loopState{curTotal: cfg.ShardingTotalCount, cron: cfg.Cron, tz: cfg.TimeZone, lastReconcile: time.Now()}
	j.setReady()
	j.log.Info("instance registered", "server", j.ip)
	if sweep {
		if err := j.stale().sweepItems(ctx, items); err != nil && ctx.Err() == nil {
			j.log.Warn("stale node sweep at startup failed", "error", err)
		}
	}
	// The pump's first tick covers what startup found.
	j.loop.armPump()
	return nil
}

// Stop shuts the job down on this instance and returns once everything of
// it has ended: the queued work is dropped, the work running now returns
// (its ctx is cancelled), and on a clean exit the instance node is gone
// and leadership released (cleanShutdown). Before Start it only makes
// Start fail; after the job ended by itself it returns at once.
func (j *Job) Stop() {
	if j.life.started.CompareAndSwap(false, true) {
		close(j.life.startupDone)
		j.finish(true, ErrShutdown)
		return
	}
	j.finish(true, ErrShutdown)
}

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

// finish ends the job once: asked is false for an end neither Stop nor
// ctx asked for (reported by OnStopped when Start had succeeded).
func (j *Job) finish(asked bool, cause error) {
	l := &j.life
	l.finished.Do(func() {
		j.shutdown.Store(true)
		j.liveCache.Store(nil)
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
		if l.stopAF != nil {
			l.stopAF()
		}
		if l.subscribed {
			l.ns.unsubscribe(j)
		}
		j.loop.stopLoop()
		j.rg.stop()
		if l.subscribed {
			// The cache stays readable while the last execution ends.
			j.cleanShutdown()
		}
		if j.cache != nil {
			j.cache.Close()
		}
		if l.ownNS != nil {
			l.ownNS()
			<-l.nsDone
		}
		if !asked && l.up.Load() {
			j.hooks.Stopped(cause) // an end nobody asked for
		}
		l.mu.Lock()
		l.over = true
		if l.stopped != nil {
			close(l.stopped)
		}
		l.mu.Unlock()
	})
}
