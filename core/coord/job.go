package coord

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ejob-io/ejob/core/config"
	"github.com/ejob-io/ejob/core/executor"
	"github.com/ejob-io/ejob/core/node"
	"github.com/ejob-io/ejob/core/reg"
	"github.com/ejob-io/ejob/core/reg/recipe"
	"github.com/ejob-io/ejob/internal/lazylog"
)

// Sentinel errors callers branch on.
var (
	// ErrShutdown: the job was shut down on this instance (Stop, the end of
	// Start's ctx, or the console removed this instance).
	ErrShutdown = errors.New("coord: job is shut down on this instance")
	// ErrNotReady: Start has not completed the startup registration yet.
	ErrNotReady = errors.New("coord: job not started")
	// ErrSessionLost: the registry session the job registered under is gone
	// (or the connection is suspended); nothing was written.
	ErrSessionLost = errors.New("coord: registry session lost")
	// ErrItemRunning: RegisterBegin found an item already running on
	// another instance; nothing was written.
	ErrItemRunning = errors.New("coord: sharding item already running elsewhere")
	// ErrPaused: the registry connection is suspended or the session was
	// lost and not yet re-registered; executions must not start.
	ErrPaused = errors.New("coord: paused: registry connection unavailable")
	// ErrTimeDiff: the host clock differs from registry time by more than
	// maxTimeDiffSeconds.
	ErrTimeDiff = errors.New("coord: time difference with the registry exceeds maxTimeDiffSeconds")
	// ErrConfigInvalid: the job's config node in the registry does not
	// parse or breaks a bound of core/config (config.Decode); the job does
	// not fire until a valid configuration is written (see ConfigError).
	ErrConfigInvalid = errors.New("the job's configuration in the registry is invalid")
)

// Job is one job's coordination on one instance. It implements
// executor.Facade.
type Job struct {
	// jobBase is what every owner reads: each holds a pointer to it.
	jobBase
	recon       time.Duration
	reconMinute time.Duration
	grace       time.Duration
	onEv        func(string) // Options.OnEvent (nil: none)

	// cache is the job's view of the shared tree cache, set by Start.
	cache *reg.CacheView
	// liveCache is cache while the job runs. Written by Start and the
	// job's end (finish), read by every trigger (treeCache) and by the
	// console's dump (Cache) on their own goroutines: atomic.
	liveCache atomic.Pointer[reg.CacheView]
	// guar is the distribute-once protocol (guarantee.go).
	guar guarantees

	// conf is the job's configuration as this instance knows it
	// (configstate.go).
	conf configState
	// shutdown: no execution may start here. Set by the job's end
	// (finish, cleanShutdown) and read by every trigger, the pump and
	// the event loop: atomic.
	shutdown atomic.Bool
	// att is the trigger's attempts: the one begun ahead of RegisterBegin,
	// the running execution's, and the run flag (attempt.go).
	att attempts
	// arm estimates the lead of a pre-armed fire (prearm.go); made at the
	// first trigger (armLead), read by the trigger loop (PreArmLead) on
	// its goroutine: atomic.
	arm atomic.Pointer[armLead]
	// fo is the failover protocol and its state (claims, the pump's last
	// trigger, the recovery of cut-off running nodes): failover.go,
	// failoverstate.go. It is made at its first use, by a trigger or the
	// event loop, whichever comes first, and read by both: atomic (an
	// idle job carries none).
	fo atomic.Pointer[failover] // made at first use (failover)
	// mf is the misfire protocol and its state (misfire.go).
	mf misfires
	// cr reads the tree cache for the trigger (cachereads.go).
	cr cacheReads
	// asg is this instance's reading of the assignment and its zxid
	// accounting (assignment.go).
	asg assignment
	// ldr is the job's leader election (election.go).
	ldr leadership
	// rsh is the leader's resharding protocol (resharding.go).
	rsh resharding

	// ready: Start has registered this instance (see Ready). Set by
	// Start, read by the scheduler's check at each fire without a lock:
	// atomic.
	ready atomic.Bool
	// su is the startup registration (startup.go).
	su setUp

	// rg is the registration in the registry's session: session, lease,
	// pause and the connection handling (registration.go).
	rg registration
	// loop is the job's serial queue and its timers (loop.go); life its
	// start and end (lifecycle.go).
	loop jobLoop
	// ev are the data listeners the loop runs (events.go).
	ev listeners
	// pm is the failover and misfire pump the loop runs (pump.go).
	pm   pump
	life lifecycle
}

var _ executor.Facade = (*Job)(nil)

// New checks opts and returns a Job; Start starts it.
func New(opts Options) (*Job, error) {
	switch {
	case opts.Client == nil:
		return nil, errors.New("coord: nil Client")
	case opts.Config == nil:
		return nil, errors.New("coord: nil Config")
	case opts.Config.JobName == "":
		return nil, errors.New("coord: empty job name")
	case opts.InstanceID == "" || opts.ServerIP == "":
		return nil, errors.New("coord: empty instance id or server IP")
	case opts.Strategies == nil:
		return nil, errors.New("coord: nil Strategies")
	}
	log := opts.Logger
	if log == nil {
		log = hclog.NewNullLogger()
	}
	p := node.New(opts.Config.JobName)
	j := &Job{
		jobBase: jobBase{
			s:  store{c: opts.Client, p: p},
			id: opts.InstanceID, ip: opts.ServerIP,
			log:   lazylog.With(log, lazylog.JobInstance, opts.Config.JobName, opts.InstanceID),
			poll:  opts.PollInterval,
			hooks: opts.hooks(),
		},
		recon: opts.ReconcileTick, reconMinute: opts.ReconcileUnit, grace: opts.ShutdownGrace,
		onEv: opts.OnEvent,
	}
	b := &j.jobBase
	b.paths.p, b.paths.id, b.paths.ip = p, opts.InstanceID, opts.ServerIP
	if b.poll <= 0 {
		b.poll = 100 * time.Millisecond
	}
	b.tick = 5 * b.poll
	if j.grace <= 0 {
		j.grace = 10 * time.Second
	}
	if j.recon <= 0 {
		j.recon = time.Minute
	}
	j.conf.jobBase = b
	j.att.jobBase, j.att.job = b, j
	j.att.inProcess = reg.IsInProcess(opts.Client)
	j.asg.jobBase = b
	j.cr = cacheReads{paths: &b.paths, run: &j.att.running}
	j.mf.jobBase, j.mf.cr, j.mf.conf, j.mf.job = b, j.cr, &j.conf, j
	j.rg = registration{jobBase: b, margin: opts.ExpiryMargin, run: &j.att.running, loop: &j.loop, cq: newSerialQueue()}
	j.life = lifecycle{ns: opts.Namespace,
		startupDone: make(chan struct{})}
	j.ldr = leadership{jobBase: b, e: recipe.NewElection(opts.Client, p.LeaderLatch(), p.LeaderInstance(), opts.InstanceID),
		conf: &j.conf, shutdown: &j.shutdown, job: j}
	j.rsh.jobBase, j.rsh.elect, j.rsh.lead = b, j.ldr.e, &j.ldr
	j.rsh.strat, j.rsh.conf, j.rsh.asg, j.rsh.job = opts.Strategies, &j.conf, &j.asg, j
	j.su = setUp{jobBase: b, class: opts.JobClassName, shutdown: &j.shutdown, conf: &j.conf,
		asg: &j.asg, ldr: &j.ldr, rsh: &j.rsh, rg: &j.rg, local: opts.Config}
	j.pm = pump{jobBase: b, shutdown: &j.shutdown, running: &j.att.running,
		conf: &j.conf, cr: j.cr, mf: &j.mf, job: j}
	j.guar = guarantees{jobBase: b, conf: &j.conf}
	j.loop = jobLoop{q: newSerialQueue(), jobBase: b, recon: j.recon,
		onEv: j.onEv,
		life: &j.life, ev: &j.ev, pm: &j.pm, rg: &j.rg, job: j}
	j.ev = listeners{jobBase: b, reconMinute: j.reconMinute,
		shutdown: &j.shutdown, running: &j.att.running, conf: &j.conf, asg: &j.asg, rsh: &j.rsh, ldr: &j.ldr,
		guar: &j.guar, mf: &j.mf, rg: &j.rg, job: j}
	return j, nil
}

// failover returns the job's failover protocol and state, made now if
// need be: an idle job carries none. The reads that find nothing claimed
// and nothing to recover on a job without one go through foState.
func (j *Job) failover() *failover {
	if f := j.fo.Load(); f != nil {
		return f
	}
	j.fo.CompareAndSwap(nil, &failover{jobBase: &j.jobBase, job: j})
	return j.fo.Load()
}

// leaveToRecovery implements attemptJob: running nodes of this instance
// may remain, for the recovery of its running nodes (needRecover).
func (j *Job) leaveToRecovery() { j.failover().needRecover.Store(true) }

// foState returns the failover state, or nil while the job has made none
// (failoverState's reads work on nil).
func (j *Job) foState() *failoverState {
	if f := j.fo.Load(); f != nil {
		return &f.failoverState
	}
	return nil
}

// stale is the sweep of nodes gone instances left (stale.go). It keeps no
// state, so an idle job does not carry one.
func (j *Job) stale() *staleSweeper {
	return &staleSweeper{s: j.s, id: j.id, log: j.log, job: j, fo: j.failover()}
}

// InstanceID returns this instance's id.
func (j *Job) InstanceID() string { return j.id }

// Ready is closed once Start has registered this instance.
func (j *Job) Ready() <-chan struct{} {
	if j.ready.Load() {
		return closedChan // the scheduler's check at each fire: no lock
	}
	l := &j.life
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.readyCh == nil {
		if j.ready.Load() {
			return closedChan
		}
		l.readyCh = make(chan struct{})
	}
	return l.readyCh
}

// setReady marks the instance registered (Ready).
func (j *Job) setReady() {
	l := &j.life
	l.mu.Lock()
	defer l.mu.Unlock()
	j.ready.Store(true)
	if l.readyCh != nil {
		close(l.readyCh)
	}
}

// Paused reports whether executions must not start now: the registry
// connection is suspended, or the session was lost and this instance is
// not yet registered again. The returned channel is closed when the pause
// ends (it is already closed when not paused).
func (j *Job) Paused() (bool, <-chan struct{}) { return j.rg.isPaused() }

func (j *Job) setPaused(p bool) { j.rg.setPaused(p) }

// session returns the live session this instance is registered under, or
// ErrSessionLost.
func (j *Job) session() (*reg.Session, error) {
	s, _, err := j.rg.sessionLease()
	return s, err
}

// sessionLease is session plus the live lease executions start under.
func (j *Job) sessionLease() (*reg.Session, *lease, error) { return j.rg.sessionLease() }

// SessionContext returns a context cancelled when the session this instance
// is registered under is lost, or presumed expired by the client's clock
// while the connection is down (cause ErrSessionPresumedLost; see
// Options.ExpiryMargin), or when parent ends. Executions run under it. The
// executions under one parent and lease share it: it is not cancelled
// when one returns, and the returned CancelFunc does nothing (it is kept
// for callers that defer it).
func (j *Job) SessionContext(parent context.Context) (context.Context, context.CancelFunc) {
	return j.rg.sessionContext(parent)
}

// ShuttingDown reports whether the job is shutting down or shut down on
// this instance: no new execution may start.
func (j *Job) ShuttingDown() bool { return j.shutdown.Load() }

// Cache returns the cache of the job's subtree (/{job}) this instance
// keeps while the job runs here (upstream's regCenter cache of the job,
// which the dump port compares the registry with), or nil before Start and
// once the job is shut down here.
func (j *Job) Cache() reg.TreeView {
	if v := j.liveCache.Load(); v != nil {
		return v
	}
	return nil
}

// regClient and logger implement registrant.
func (j *Job) regClient() reg.Client { return j.s.c }
func (j *Job) logger() hclog.Logger  { return j.log }

// IsRunning reports whether an execution is registered as running locally.
func (j *Job) IsRunning() bool { return j.att.running.Load() }

// cleanShutdown is the graceful shutdown: leader node and instance node of
// this session are deleted (upstream's JobShutdownHookPlugin). Best effort with
// a short deadline.
func (j *Job) cleanShutdown() {
	j.shutdown.Store(true)
	// Wait for the local execution to end first (bounded).
	grace := time.NewTimer(j.grace)
	defer grace.Stop()
	select {
	case <-j.att.running.Idle():
	case <-grace.C:
		j.log.Warn("shutdown: execution still running after the grace period", "grace", j.grace)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	sess := j.s.c.Session()
	if sess.Err() != nil {
		return
	}
	if _, err := j.ldr.e.Resign(ctx); err != nil {
		j.log.Warn("shutdown: delete failed", "path", j.ldr.e.LeaderPath(), "error", err)
	}
	if _, st, err := j.s.c.Get(ctx, j.s.p.Instance(j.id)); err == nil && st.EphemeralOwner == sess.ID() {
		if err := j.s.c.Delete(ctx, j.s.p.Instance(j.id), st.Version); err != nil && !errors.Is(err, reg.ErrNoNode) {
			j.log.Warn("shutdown: delete failed", "path", j.s.p.Instance(j.id), "error", err)
		}
	}
	j.log.Info("job coordination stopped")
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-t.C:
		return nil
	}
}

// config returns the configuration the job knows (configState.get).
// The result is shared: callers must not modify it.
func (j *Job) config(ctx context.Context) (*config.JobConfiguration, error) { return j.conf.get(ctx) }

// ConfigError is nil while the job's config node in the registry is
// valid, else why it is not (an error wrapping ErrConfigInvalid and the
// config package's ErrMalformed or ErrInvalid): the job then does not fire.
func (j *Job) ConfigError() error { return j.conf.err() }

// jobBase is what every owner of the job reads and nothing writes after
// New: the registry client and the job's paths, this instance's id and
// its server's IP, the logger, the periods and the scheduler's hooks. The
// Job holds the one jobBase; each owner embeds a pointer to it.
type jobBase struct {
	s      store    // the registry client and node.Job (s.c, s.p)
	paths  jobPaths // the paths as this instance uses them, with the hot ones of its triggers (hotpaths.go)
	id, ip string   // this instance's id and its server's IP
	log    hclog.Logger
	poll   time.Duration // Options.PollInterval
	tick   time.Duration // the failover and misfire pump's period: 5 polls (failoverTick)
	hooks  Hooks         // the scheduler's (Options.Hooks or the On* functions)
}
