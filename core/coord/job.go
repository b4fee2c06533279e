package coord

import (
	"context"
	"errors"
	"time"

	"github.com/hashicorp/go-hclog"

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

// Job is one job's coordination on one instance: the owners of its
// parts, wired to each other once by New. It implements executor.Facade
// (facade.go, misfire.go, prearm.go, guarantee.go) and the job's start,
// end and state (lifecycle.go, job.go) by delegating to them.
type Job struct {
	// jobBase is what every owner reads: each holds a pointer to it.
	jobBase

	// life is the job's start and end, with its shutdown and ready flags
	// (lifecycle.go).
	life lifecycle
	// tc is the job's view of the shared tree cache (trigger.go).
	tc treeCache
	// conf is the job's configuration as this instance knows it
	// (configstate.go).
	conf configState
	// att is the trigger's attempts: the one begun ahead of RegisterBegin,
	// the running execution's, the run flag and the pre-arm's lead
	// (attempt.go, pipeline.go, prearm.go).
	att attempts
	// asg is this instance's reading of the assignment and its zxid
	// accounting (assignment.go).
	asg assignment
	// ldr is the job's leader election (election.go).
	ldr leadership
	// rsh is the leader's resharding protocol (resharding.go).
	rsh resharding
	// fo holds the failover protocol and its state, made at its first
	// use (failover.go, recovery.go, failoverstate.go).
	fo failoverSlot
	// mf is the misfire protocol and its state (misfire.go).
	mf misfires
	// guar is the distribute-once protocol (guarantee.go).
	guar guarantees
	// sw makes the stale-node sweeps (sweeps.go, stale.go).
	sw sweeps
	// rg is the registration in the registry's session: session, lease,
	// pause, the connection handling and the re-registration
	// (registration.go, reregister.go).
	rg registration
	// loop is the job's serial queue and its timers (loop.go).
	loop jobLoop
	// ev are the data listeners the loop runs (events.go).
	ev listeners
	// pm is the failover and misfire pump the loop runs (pump.go).
	pm pump
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
	j := &Job{jobBase: jobBase{
		s:  store{c: opts.Client, p: p},
		id: opts.InstanceID, ip: opts.ServerIP,
		log:   lazylog.With(log, lazylog.JobInstance, opts.Config.JobName, opts.InstanceID),
		poll:  opts.PollInterval,
		hooks: opts.hooks(),
	}}
	b := &j.jobBase
	b.paths.b = b
	b.job = j
	if b.poll <= 0 {
		b.poll = 100 * time.Millisecond
	}
	grace, recon := opts.ShutdownGrace, opts.ReconcileTick
	if grace <= 0 {
		grace = 10 * time.Second
	}
	if recon <= 0 {
		recon = time.Minute
	}
	running := &j.att.running
	// The startup registration (startup.go) is the lifecycle's until
	// Start is over: nothing else uses it, and outside the Job the Job
	// fits a smaller size class.
	su := new(setUp)
	j.life = lifecycle{jobBase: b, ns: opts.Namespace, grace: grace, startupDone: make(chan struct{}), su: su}
	j.conf.jobBase = b
	// The trigger's reads of the tree cache (cachereads.go): a value each
	// of its users holds.
	cr := cacheReads{jobBase: b, run: running}
	j.att = attempts{jobBase: b, inProcess: reg.IsInProcess(opts.Client), cr: cr}
	j.asg = assignment{jobBase: b}
	j.ldr = leadership{jobBase: b, e: recipe.NewElection(opts.Client, p.LeaderLatch(), p.LeaderInstance(), opts.InstanceID)}
	j.rsh = resharding{jobBase: b, strat: opts.Strategies}
	j.fo.failoverDeps = failoverDeps{jobBase: b}
	j.mf = misfires{jobBase: b, cr: cr}
	j.guar = guarantees{jobBase: b}
	j.sw = sweeps{jobBase: b}
	*su = setUp{jobBase: b, class: opts.JobClassName, shutdown: &j.life.shutdown, conf: &j.conf,
		asg: &j.asg, ldr: &j.ldr, rsh: &j.rsh, rg: &j.rg, local: opts.Config}
	j.rg = registration{jobBase: b, margin: opts.ExpiryMargin, cq: newSerialQueue()}
	j.loop = jobLoop{q: newSerialQueue(), jobBase: b, recon: recon, onEv: opts.OnEvent}
	j.ev = listeners{jobBase: b, reconMinute: opts.ReconcileUnit}
	j.pm = pump{jobBase: b, cr: cr}
	return j, nil
}

// InstanceID returns this instance's id.
func (j *Job) InstanceID() string { return j.id }

// Ready is closed once Start has registered this instance.
func (j *Job) Ready() <-chan struct{} { return j.life.readyChan() }

// Paused reports whether executions must not start now: the registry
// connection is suspended, or the session was lost and this instance is
// not yet registered again. The returned channel is closed when the pause
// ends (it is already closed when not paused).
func (j *Job) Paused() (bool, <-chan struct{}) { return j.rg.isPaused() }

// SkipPaused reports whether a fire due now must be skipped because
// executions are paused (see Paused). With misfire on, every fire it skips
// once the instance has registered is owed one catch-up run: when the
// pause ends (the connection back with the same session, or the instance
// registered again in a new session), the scheduler's CatchUp hook is
// called once for all of them. A job shutting down owes nothing. It costs
// no allocation and no registry request, however many fires it skips.
func (j *Job) SkipPaused() bool {
	return j.rg.skipPaused(j.owesCatchUp())
}

// owesCatchUp reports whether a fire this instance could not run because
// of the registry connection is owed a catch-up run: the job is registered
// here, not shutting down, and its misfire is on.
func (j *Job) owesCatchUp() bool {
	if !j.life.ready.Load() || j.life.shutdown.Load() {
		return false
	}
	cfg := j.conf.cur.Load()
	return cfg != nil && cfg.Misfire
}

// missedOn records, when err says the registry connection failed under a
// trigger before its items began (the pause, the session lost, the
// connection lost), that its fire is owed a catch-up run (registration.owe).
// A request that failed because ctx ended counts when ctx ended for that
// reason: the session context's cause (ErrSessionLost, or
// ErrSessionPresumedLost while the connection is down).
func (j *Job) missedOn(ctx context.Context, err error) {
	if err == nil || !registryFailed(err) && !registryFailed(context.Cause(ctx)) {
		return
	}
	if j.owesCatchUp() {
		j.rg.owe()
	}
}

// registryFailed reports whether err says the registry connection failed:
// executions paused, the session or the connection lost.
func registryFailed(err error) bool {
	return err != nil && (errors.Is(err, ErrPaused) || errors.Is(err, ErrSessionLost) ||
		errors.Is(err, reg.ErrConnectionLoss) || errors.Is(err, reg.ErrSessionLost))
}

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
func (j *Job) ShuttingDown() bool { return j.life.shutdown.Load() }

// Cache returns the cache of the job's subtree (/{job}) this instance
// keeps while the job runs here (upstream's regCenter cache of the job,
// which the dump port compares the registry with), or nil before Start and
// once the job is shut down here.
func (j *Job) Cache() reg.TreeView {
	if v := j.tc.live.Load(); v != nil {
		return v
	}
	return nil
}

// IsRunning reports whether an execution is registered as running locally.
func (j *Job) IsRunning() bool { return j.att.running.Load() }

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
	hooks  Hooks         // the scheduler's (Options.Hooks or the On* functions)
	// marks number the tree events posted to the job's queue, for the
	// checks of serversChanged (resharding.serversChangedSince).
	marks eventMarks
	// job is the Job this is the base of: each owner reaches the others
	// through it (one pointer a Job rather than one for each owner each
	// other owner uses: some 500 bytes a job).
	job *Job
}

// tick is the failover and misfire pump's period (failoverTick): 5 polls.
func (b *jobBase) tick() time.Duration { return 5 * b.poll }
