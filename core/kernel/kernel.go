package kernel

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ejob-io/ejob/core/config"
	"github.com/ejob-io/ejob/core/coord"
	"github.com/ejob-io/ejob/core/cron"
	"github.com/ejob-io/ejob/core/executor"
	"github.com/ejob-io/ejob/core/reg"
	"github.com/ejob-io/ejob/core/trigger"
	"github.com/ejob-io/ejob/spi"
)

// Sentinel errors.
var (
	// ErrDuplicateJob: a job of that name is already added.
	ErrDuplicateJob = errors.New("job already added")
	// ErrNoSuchJob: no job of that name.
	ErrNoSuchJob = errors.New("no such job")
	// ErrStopped: the kernel has shut down.
	ErrStopped = errors.New("scheduler stopped")
)

// DefaultDrainTimeout bounds how long shutdown waits for running items.
const DefaultDrainTimeout = 30 * time.Second

// Plugins resolves extension types by kind and name: an spi.Plugins
// serves them in-process (Go programs embedding ejob, tests), the host's
// plugin catalog out of process. The kernel resolves every type with
// spi.Resolve.
type Plugins = spi.Resolver

// Options configure a Kernel. Client, InstanceID, ServerIP and Plugins
// are required.
type Options struct {
	Client     reg.Client
	InstanceID string // ip@-@pid
	ServerIP   string
	Plugins    Plugins
	Logger     hclog.Logger
	// DrainTimeout bounds the wait for running items at shutdown; then
	// their ctx is cancelled. It is taken literally: 0 (or less) cancels
	// running items at once. DefaultDrainTimeout is the usual value.
	DrainTimeout time.Duration
	// AvailableCPUs is passed to thread-pool providers (default: NumCPU).
	AvailableCPUs int
	// Events receives execution events (tracing); default none.
	Events executor.Events
	// Coord tunes the coordination layer (poll and reconcile periods);
	// its per-job fields are set by the kernel. Its Namespace, when
	// set, is the one the jobs share (the caller runs it); by default the
	// kernel makes one for Client and runs it while it runs.
	Coord coord.Options
	// LateThreshold is how far past its next fire time a job must be for
	// the watchdog to report it (LateJobs, and a WARN log once per
	// WatchdogInterval while it stays late). Default DefaultLateThreshold.
	LateThreshold time.Duration
	// WatchdogInterval is the watchdog's period (default
	// DefaultWatchdogInterval).
	WatchdogInterval time.Duration
	// Observer is told what happens to the jobs, for metrics; default
	// none. Item runs, failures and durations come through Events.
	Observer Observer
	// Clock is the trigger loop's clock, also the watchdog's (default
	// trigger.PreciseClock). Tests use one whose timers never fire to model a
	// trigger loop that stopped firing.
	Clock trigger.Clock
	// Validated remembers the props the plugins accepted: Add asks a job
	// type (or error handler) to validate a job's props only when that
	// type has not accepted the same props before. Set it to share what
	// the caller validated already (ejob run checks its file first); by
	// default the kernel keeps its own.
	Validated *ValidatedProps
}

// Observer is told what happens to the kernel's jobs, for metrics (the
// host implements it with Prometheus; the kernel knows no metrics
// library). Its methods are called from the kernel's, the jobs' and
// the items' goroutines: they must be safe for concurrent use and must
// not block. Embed NopObserver to implement only some.
type Observer interface {
	// Fired: a fire of the job started, delay after its scheduled time
	// (a manual trigger's delay is from the request).
	Fired(job string, delay time.Duration)
	// ItemRetried: a failed item is tried again (ejob.retry.max).
	ItemRetried(job string, item int)
	// Misfired: fires of the job were skipped while it ran, to be caught
	// up (misfire: true) or dropped.
	Misfired(job string, skipped int)
	// FailedOver: this instance claimed a crashed instance's item.
	FailedOver(job string, item int)
	// Resharded: this instance, as leader, committed a new assignment.
	Resharded(job string)
	// Late: the watchdog found the job past its fire time by late.
	Late(job string, late time.Duration)
}

// NopObserver ignores everything.
type NopObserver struct{}

var _ Observer = NopObserver{}

func (NopObserver) Fired(string, time.Duration) {}
func (NopObserver) ItemRetried(string, int)     {}
func (NopObserver) Misfired(string, int)        {}
func (NopObserver) FailedOver(string, int)      {}
func (NopObserver) Resharded(string)            {}
func (NopObserver) Late(string, time.Duration)  {}

// Watchdog defaults.
const (
	DefaultLateThreshold    = time.Minute
	DefaultWatchdogInterval = 30 * time.Second
)

// Job describes one job to run.
type Job struct {
	Config *config.JobConfiguration
	// Type is a job type served by Plugins (SCRIPT, HTTP, ...); used when
	// Runner is nil.
	Type string
	// Runner runs items in-process (SIMPLE Go jobs).
	Runner executor.ItemRunner
	// NewRunner builds an in-process runner that needs the job's
	// coordination (a DATAFLOW job asks it whether resharding is pending).
	// Used when Runner is nil.
	NewRunner func(executor.Facade) executor.ItemRunner
	// ClassName is written to the job root node: upstream writes the job
	// class; typed jobs write their type. Default: Type, or "ejob.GoJob".
	ClassName string
	// Listeners run before and after each trigger, after (in configured
	// order) the listeners named by Config.JobListenerTypes, which are
	// resolved through Plugins; all are sorted by Order.
	Listeners []executor.Listener
}

// Kernel runs jobs on one instance. Add jobs, then Run.
type Kernel struct {
	opts Options
	log  hclog.Logger
	// coordLog and execLog are the loggers named coord and executor that
	// every job's coord.Job and executor derive theirs from (one each,
	// rather than one per job).
	coordLog, execLog hclog.Logger

	// scheds are the parsed schedules the jobs share.
	scheds scheduleCache
	trig   *trigger.Loop
	// ns is the jobs' shared coordination machinery; ownNS: the
	// kernel made it and runs it.
	ns    *coord.Namespace
	ownNS bool

	mu      sync.Mutex
	jobs    map[string]*wiredJob
	runCtx  context.Context // set by Run; jobs added later start under it
	wg      sync.WaitGroup  // jobs' startups (startLocked)
	stopped bool
	// pending counts the jobs whose start has not settled; settled is
	// closed while it is 0 (Ready waits on it). One channel for all jobs,
	// not two per job.
	pending int
	settled chan struct{}
	// toStart are the jobs whose startup has not begun, and starters the
	// goroutines starting them (at most maxStarters; see startLocked).
	toStart  []*wiredJob
	starters int

	// lookups resolve plugin types for every job.
	lookups pluginLookups

	// abort is closed by Abort: the drain ends at once.
	abort     chan struct{}
	abortOnce sync.Once
}

// wiredJob is one job's wiring: its coordination, its pipeline and the
// hooks between them and the kernel.
type wiredJob struct {
	name  string
	s     *Kernel // the job's: its hooks call it
	coord *coord.Job
	// exec is the job's execution pipeline, made at its first use
	// (executor); runner and listeners make it, until then (under
	// execMu).
	exec      atomic.Pointer[executor.Executor]
	execMu    sync.Mutex
	runner    executor.ItemRunner
	listeners []executor.Listener
	log       hclog.Logger
	obs       Observer
	// outcome is how the job's start ended (pending until it has), and
	// err why it failed; under the kernel's mu (see settle).
	outcome startOutcome
	// catchUp is set by CatchUp until a fire takes it (fire): that fire
	// is the catch-up run of the fires skipped while the job was paused.
	// After outcome, it fits in the padding before err: an idle job pays
	// nothing for it.
	catchUp atomic.Bool
	err     error
	// leased is the last session context with the execution lease added
	// (leasedContext).
	leased atomic.Pointer[leasedContext]
	// cronMu guards cron and tz: the schedule the trigger loop follows
	// (Add's, then each reschedule's).
	cronMu   sync.Mutex
	cron, tz string
	// described are the job listeners described for the job, by type
	// (typedListener); nil while none.
	described map[string]executor.SPIListener
}

// leasedContext is a session context (coord.Job.SessionContext) and the
// same with the execution lease added (spi.WithLease).
type leasedContext struct {
	session, ctx context.Context
}

// leasedContext returns ectx, a session context, with the execution lease
// added: the one made for ectx last time while the session context is the
// same (coord hands out one per session), which has the same lease.
func (wj *wiredJob) leasedContext(ectx context.Context) context.Context {
	if c := wj.leased.Load(); c != nil && c.session == ectx {
		return c.ctx
	}
	ctx := spi.WithLease(ectx, spi.LeaseFunc(wj.coord.ExecutionLease()))
	wj.leased.Store(&leasedContext{session: ectx, ctx: ctx})
	return ctx
}

// New checks opts and returns a Kernel.
func New(opts Options) (*Kernel, error) {
	switch {
	case opts.Client == nil:
		return nil, errors.New("scheduler: nil registry client")
	case opts.InstanceID == "" || opts.ServerIP == "":
		return nil, errors.New("scheduler: empty instance id or server IP")
	case opts.Plugins == nil:
		return nil, errors.New("scheduler: nil Plugins")
	}
	if opts.Logger == nil {
		opts.Logger = hclog.NewNullLogger()
	}
	opts.DrainTimeout = max(opts.DrainTimeout, 0)
	if opts.LateThreshold <= 0 {
		opts.LateThreshold = DefaultLateThreshold
	}
	if opts.WatchdogInterval <= 0 {
		opts.WatchdogInterval = DefaultWatchdogInterval
	}
	if opts.Clock == nil {
		opts.Clock = trigger.PreciseClock{}
	}
	if opts.Observer == nil {
		opts.Observer = NopObserver{}
	}
	if opts.Validated == nil {
		opts.Validated = &ValidatedProps{}
	}
	s := &Kernel{opts: opts, log: opts.Logger, jobs: map[string]*wiredJob{}, abort: make(chan struct{}), settled: make(chan struct{}),
		coordLog: opts.Logger.Named("coord"), execLog: opts.Logger.Named("executor")}
	close(s.settled) // no job yet
	s.ns = opts.Coord.Namespace
	if s.ns == nil {
		s.ns, s.ownNS = coord.NewNamespace(opts.Client, s.coordLog), true
	}
	s.trig = trigger.New(trigger.Options{Clock: opts.Clock, Logger: opts.Logger.Named("trigger")})
	s.lookups = newPluginLookups(opts.Plugins)
	return s, nil
}

// Validate checks a job's configuration with every type resolved through
// Plugins and the cron expression parsed (once for the jobs that share it:
// the schedule Add uses). Errors name the field.
func (s *Kernel) Validate(cfg *config.JobConfiguration) error {
	return cfg.Validate(config.ValidateOptions{
		CheckCron: s.checkCron,
		KnownType: s.knownType,
		KnownListener: func(name string) bool {
			_, err := s.opts.Plugins.Lookup(spi.KindJobListener, name)
			return err == nil
		},
	})
}

// CheckCron parses a cron string of any kind (Quartz, crontab or
// descriptor; see cron.ParseSchedule) in its time zone.
func CheckCron(expr, tz string) error {
	_, err := schedule(expr, tz)
	return err
}

// checkCron is CheckCron through the kernel's parsed schedules.
func (s *Kernel) checkCron(expr, tz string) error {
	_, err := s.scheds.get(expr, tz)
	return err
}

func (s *Kernel) knownType(kind spi.Kind, name string) bool {
	_, err := s.opts.Plugins.Lookup(kind, name)
	return err == nil
}

// never is the schedule of a one-off job: it fires only when triggered.
type never struct{}

func (never) Next(time.Time) time.Time { return time.Time{} }

func schedule(expr, tz string) (trigger.Schedule, error) {
	if expr == "" {
		return never{}, nil
	}
	loc, err := cron.LoadZone(tz)
	if err != nil {
		return nil, err
	}
	return cron.ParseSchedule(expr, loc)
}

func (wj *wiredJob) itemRetried(item int) { wj.obs.ItemRetried(wj.name, item) }

func (wj *wiredJob) fired(delay time.Duration) { wj.obs.Fired(wj.name, delay) }

func (wj *wiredJob) misfired(skipped int) { wj.obs.Misfired(wj.name, skipped) }

// The job's coord.Hooks.

// Trigger: a coordination trigger (failover claim, catch-up, trigger node)
// that comes while the job runs starts right after it, as Quartz's
// one-shot triggerJob does upstream.
func (wj *wiredJob) Trigger() { wj.s.trig.TriggerSoon(wj.name) }

// CatchUp: the pause of the job's registry connection ended, and fires
// were skipped meanwhile (misfire on): one run catches them up, now when
// the job is idle, else right after the execution in progress.
func (wj *wiredJob) CatchUp() {
	wj.catchUp.Store(true)
	wj.s.trig.TriggerSoon(wj.name)
}

func (wj *wiredJob) Reschedule(expr, tz string) { wj.s.reschedule(wj, expr, tz) }

func (wj *wiredJob) Shutdown() {
	wj.log.Warn("this instance was shut down for the job from the console; the job stops here")
	wj.s.trig.Remove(wj.name)
}

func (wj *wiredJob) Stopped(err error) { wj.s.ended(wj, err) }

func (wj *wiredJob) FailedOver(item int) { wj.obs.FailedOver(wj.name, item) }

func (wj *wiredJob) Resharded() { wj.obs.Resharded(wj.name) }

// reschedule makes the trigger loop follow expr in tz, unless it already
// does (a job whose registry config has the local cron: the usual start).
func (s *Kernel) reschedule(wj *wiredJob, expr, tz string) {
	wj.cronMu.Lock()
	defer wj.cronMu.Unlock()
	if expr == wj.cron && tz == wj.tz {
		return
	}
	sched, err := s.scheds.get(expr, tz)
	if err != nil {
		wj.log.Error("the registry's config has an invalid cron; keeping the current schedule", "cron", expr, "time_zone", tz, "error", err)
		return
	}
	wj.log.Info("rescheduling", "cron", expr, "time_zone", tz, "was", wj.cron, "was_time_zone", wj.tz)
	wj.cron, wj.tz = expr, tz
	s.trig.Reschedule(wj.name, sched)
}

// maxStarters bounds the goroutines that start jobs at once. A job's
// startup blocks on the registry (its reads and its transaction are
// batched with the other jobs starting then), so many run together; but
// the runtime keeps every goroutine's descriptor for reuse once it has
// existed, so one goroutine per job of a 10,000-job start left ~4.5 MB
// behind (BenchmarkIdleJobs).
const maxStarters = 256

// startLocked queues the job's start: its coordination registers, then
// adopts the effective configuration (the registry's wins unless overwrite
// is set). Up to maxStarters goroutines take the queue in order and end
// with it: a running job has none of its own. Caller holds s.mu.
func (s *Kernel) startLocked(wj *wiredJob) {
	s.toStart = append(s.toStart, wj)
	if s.starters >= maxStarters {
		return
	}
	s.starters++
	s.wg.Add(1)
	go s.starter(s.runCtx)
}

// starter starts queued jobs until the queue is empty.
func (s *Kernel) starter(ctx context.Context) {
	defer s.wg.Done()
	for {
		s.mu.Lock()
		if len(s.toStart) == 0 {
			s.toStart = nil // its array may have held 10,000 jobs
			s.starters--
			s.mu.Unlock()
			return
		}
		wj := s.toStart[0]
		s.toStart[0] = nil
		s.toStart = s.toStart[1:]
		s.mu.Unlock()
		s.start(ctx, wj)
	}
}

// start runs one job's startup.
func (s *Kernel) start(ctx context.Context, wj *wiredJob) {
	if err := wj.coord.Start(ctx); err != nil {
		s.ended(wj, err)
		return
	}
	// Ready waits for this: a fire due right after Ready returned
	// was lost when the reschedule came after it.
	defer s.settle(wj, startScheduled, nil)
	cfg, err := wj.coord.Config(ctx)
	if errors.Is(err, coord.ErrConfigInvalid) {
		return // logged by coord; the schedule follows the node once it is valid
	}
	if err != nil {
		wj.log.Warn("cannot read the effective config after startup", "error", err)
		return
	}
	s.reschedule(wj, cfg.Cron, cfg.TimeZone)
}

// ended records the end of a job's coordination: its startup failed, or it
// stopped without the kernel asking (console shutdown: err nil).
func (s *Kernel) ended(wj *wiredJob, err error) {
	why := err
	if why == nil {
		why = errors.New("stopped before it registered") // if it had not
	}
	s.settle(wj, startFailed, why)
	if err != nil && s.runCtx.Err() == nil {
		wj.log.Error("job coordination stopped", "error", err)
		s.trig.Remove(wj.name)
	}
}

// startOutcome is how a job's start ended.
type startOutcome uint8

const (
	startPending   startOutcome = iota
	startScheduled              // registered, and the trigger loop follows its cron
	startFailed                 // ended before that
)

// settle records the first outcome of wj's start.
func (s *Kernel) settle(wj *wiredJob, o startOutcome, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if wj.outcome != startPending {
		return
	}
	wj.outcome, wj.err = o, err
	if s.pending--; s.pending == 0 {
		close(s.settled)
	}
}

// fire runs one trigger of the job; called by the trigger loop, never
// concurrently for one job.
func (wj *wiredJob) fire(ctx context.Context, f trigger.Fire) {
	select {
	case <-wj.coord.Ready():
	default:
		wj.log.Warn("fire skipped: the job is not registered yet", "scheduled", f.Scheduled())
		return
	}
	if wj.coord.SkipPaused() {
		wj.log.Warn("fire skipped: the registry connection is suspended or its session was lost (with misfire on, one run catches the skipped fires up once it is back)", "scheduled", f.Scheduled())
		return
	}
	if err := wj.coord.ConfigError(); err != nil {
		// Logged once, when the node was read (coord); not at every fire.
		wj.log.Debug("fire skipped: the job's configuration in the registry is invalid", "scheduled", f.Scheduled())
		return
	}
	ectx, cancel := wj.coord.SessionContext(ctx)
	defer cancel()
	// Out-of-process job types stop at the lease's deadline unless the
	// host renews it, even while the host itself is paused.
	ectx = wj.leasedContext(ectx)
	src, fire := executor.NormalTrigger, executor.Fire(f)
	if wj.catchUp.CompareAndSwap(true, false) {
		// The catch-up run is the first fire after CatchUp: its
		// TriggerSoon (or a trigger that collapsed into it), or a fire of
		// the schedule that came due as the pause ended and started
		// first. Its source is MISFIRE either way. It stands for fires of
		// the schedule, so a failover claim that runs first leaves the
		// own items flagged to run right after it (executor
		// keepOwnItemsFire).
		src = executor.Misfire
		if f.Manual() {
			fire = catchUpFire{f}
		}
	}
	ex, err := wj.executor()
	if err != nil {
		wj.log.Error("execution failed", "scheduled", f.Scheduled(), "error", err)
		return
	}
	switch err := ex.Execute(ectx, src, fire); {
	case err == nil:
	case errors.Is(err, coord.ErrPaused):
		wj.log.Warn("fire skipped: the registry connection is suspended or its session was lost (with misfire on, one run catches the skipped fires up once it is back)", "scheduled", f.Scheduled())
	default:
		wj.log.Error("execution failed", "scheduled", f.Scheduled(), "error", err)
	}
}

// catchUpFire is the trigger loop's fire of a catch-up run: not a manual
// fire, since it stands for the fires of the schedule skipped while the
// job was paused.
type catchUpFire struct{ trigger.Fire }

func (catchUpFire) Manual() bool { return false }

// Trigger runs a job once now on this instance (a running execution makes
// it a misfire, as upstream).
func (s *Kernel) Trigger(name string) error {
	s.mu.Lock()
	_, ok := s.jobs[name]
	s.mu.Unlock()
	if !ok {
		return fmt.Errorf("%w: %q", ErrNoSuchJob, name)
	}
	s.trig.TriggerNow(name)
	return nil
}

// JobCache returns the cache of a job's subtree that this instance keeps
// while it runs the job (see coord.Job.Cache), and false when it does not
// run the job (unknown, not started yet, or shut down here).
func (s *Kernel) JobCache(name string) (reg.TreeView, bool) {
	s.mu.Lock()
	wj := s.jobs[name]
	s.mu.Unlock()
	if wj == nil {
		return nil, false
	}
	c := wj.coord.Cache()
	return c, c != nil
}

// Jobs lists the names of the added jobs.
func (s *Kernel) Jobs() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	names := make([]string, 0, len(s.jobs))
	for n := range s.jobs {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// ConfigErrors returns, for every job of the kernel, nil while its
// configuration in the registry is valid, else why it is not (see
// coord.Job.ConfigError): such a job does not fire.
func (s *Kernel) ConfigErrors() map[string]error {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]error, len(s.jobs))
	for name, wj := range s.jobs {
		var err error
		if wj.coord != nil {
			err = wj.coord.ConfigError()
		}
		out[name] = err
	}
	return out
}

// LiveOutput returns the output so far of job's item while this host
// runs it (a job type's item), and false when it does not run it now.
func (s *Kernel) LiveOutput(ctx context.Context, job string, item int) (spi.Output, bool, error) {
	s.mu.Lock()
	wj, ok := s.jobs[job]
	s.mu.Unlock()
	if !ok {
		return spi.Output{}, false, nil
	}
	ex := wj.exec.Load()
	if ex == nil { // it has not fired here
		return spi.Output{}, false, nil
	}
	return ex.LiveOutput(ctx, item)
}

// IsLeader reports whether this instance is the leader of the job (false
// for a job it does not run).
func (s *Kernel) IsLeader(ctx context.Context, job string) (bool, error) {
	s.mu.Lock()
	wj, ok := s.jobs[job]
	s.mu.Unlock()
	if !ok || wj.coord == nil {
		return false, nil
	}
	return wj.coord.IsLeader(ctx)
}

// Ready blocks until every job added so far has registered with the
// registry (and its trigger loop follows the effective configuration's
// cron) or failed to start, or ctx ends; a job added while it waits is
// waited for too. It returns nil when every job registered, a *StartError
// naming each job that failed, or ctx's error.
func (s *Kernel) Ready(ctx context.Context) error {
	s.mu.Lock()
	settled := s.settled
	s.mu.Unlock()
	select {
	case <-settled:
	case <-ctx.Done():
		return ctx.Err()
	}
	s.mu.Lock()
	se := &StartError{Jobs: len(s.jobs)}
	for _, wj := range s.jobs {
		if wj.outcome == startFailed {
			se.Failed = append(se.Failed, JobFailure{Job: wj.name, Err: wj.err})
		}
	}
	s.mu.Unlock()
	if len(se.Failed) > 0 {
		slices.SortFunc(se.Failed, func(a, b JobFailure) int { return strings.Compare(a.Job, b.Job) })
		return se
	}
	return nil
}

// StartError is Ready's error: the jobs that failed to start.
type StartError struct {
	// Jobs is how many jobs the kernel has.
	Jobs int
	// Failed lists the jobs that failed, sorted by name.
	Failed []JobFailure
}

// JobFailure is one job that failed to start, and why.
type JobFailure struct {
	Job string
	Err error
}

// All reports whether no job started.
func (e *StartError) All() bool { return len(e.Failed) == e.Jobs }

func (e *StartError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d of %d jobs failed to start", len(e.Failed), e.Jobs)
	for i, f := range e.Failed {
		sep := "; "
		if i == 0 {
			sep = ": "
		}
		fmt.Fprintf(&b, "%sjob %q: %v", sep, f.Job, f.Err)
	}
	return b.String()
}

// Unwrap returns each job's error.
func (e *StartError) Unwrap() []error {
	out := make([]error, len(e.Failed))
	for i, f := range e.Failed {
		out[i] = f.Err
	}
	return out
}

// Run starts every job and the trigger loop, and blocks until ctx ends.
// Then it drains: it stops firing, waits up to DrainTimeout for running
// items, cancels what still runs, and deregisters every job from the
// registry. It returns after all its goroutines have exited.
func (s *Kernel) Run(ctx context.Context) error {
	coordCtx, stopCoord := context.WithCancel(context.WithoutCancel(ctx))
	defer stopCoord()
	trigCtx, stopTrig := context.WithCancel(context.WithoutCancel(ctx))
	defer stopTrig()

	s.mu.Lock()
	if s.runCtx != nil || s.stopped {
		s.mu.Unlock()
		return errors.New("scheduler: Run called twice")
	}
	s.runCtx = coordCtx
	nsDone := make(chan struct{})
	if s.ownNS {
		nsCtx, stopNS := context.WithCancel(context.WithoutCancel(ctx))
		defer func() {
			stopNS()
			<-nsDone
		}()
		go func() {
			defer close(nsDone)
			if err := s.ns.Run(nsCtx); err != nil {
				s.log.Error("registry namespace stopped", "error", err)
			}
		}()
	}
	for _, wj := range s.jobs {
		s.startLocked(wj)
	}
	s.mu.Unlock()

	trigDone := make(chan error, 1)
	go func() { trigDone <- s.trig.Run(trigCtx) }()
	wdDone := make(chan struct{})
	go func() {
		defer close(wdDone)
		s.watchdog(trigCtx)
	}()

	<-ctx.Done()
	s.log.Info("shutting down: no new fires; waiting for running items", "drain_timeout", s.opts.DrainTimeout)
	s.mu.Lock()
	s.stopped = true
	names := make([]string, 0, len(s.jobs))
	for n := range s.jobs {
		names = append(names, n)
	}
	s.mu.Unlock()
	for _, n := range names {
		s.trig.Pause(n)
	}
	s.drain()
	stopTrig()
	err := <-trigDone
	<-wdDone
	stopCoord()
	s.wg.Wait()
	s.mu.Lock()
	wjs := make([]*wiredJob, 0, len(s.jobs))
	for _, wj := range s.jobs {
		wjs = append(wjs, wj)
	}
	s.mu.Unlock()
	for _, wj := range wjs {
		wj.coord.Stop() // each job stops on its own since coordCtx ended; this waits
	}
	s.log.Info("shut down")
	if errors.Is(err, context.Canceled) {
		err = nil
	}
	return err
}

// drain waits until no execution runs, or DrainTimeout passes (at once
// when it is 0). The trigger loop says which jobs run: its Snapshot, taken
// after every job was paused (so no fire starts later), and its Idle
// channel, closed when the last of them returns, without polling.
func (s *Kernel) drain() {
	timeout := time.NewTimer(s.opts.DrainTimeout)
	defer timeout.Stop()
	busy := s.busyJobs()
	if busy == 0 {
		return
	}
	select {
	case <-s.trig.Idle():
	case <-timeout.C:
		s.log.Warn("drain timeout: cancelling running items", "running_jobs", s.busyJobs())
	case <-s.abort:
		s.log.Warn("drain aborted: cancelling running items", "running_jobs", s.busyJobs())
	}
}

// busyJobs is how many jobs the trigger loop runs (0 when it does not
// answer within a second).
func (s *Kernel) busyJobs() int {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	entries, err := s.trig.Snapshot(ctx)
	if err != nil {
		return 0
	}
	busy := 0
	for _, e := range entries {
		if e.Running {
			busy++
		}
	}
	return busy
}

// Abort ends the shutdown's wait for running items at once, as if
// DrainTimeout had passed: they are cancelled, then the jobs leave the
// registry as usual. An operator's second SIGTERM calls it. It may be
// called at any time, more than once, from any goroutine; before Run's ctx
// ends it only makes the coming drain end at once.
func (s *Kernel) Abort() { s.abortOnce.Do(func() { close(s.abort) }) }

// LateJob is a job whose next fire time passed longer ago than the late
// threshold: its trigger is held by a long execution, or the loop is
// stuck. Paused jobs (registry unavailable) have no next fire time and are
// not reported.
type LateJob struct {
	Name      string
	Scheduled time.Time     // the fire time that has not happened
	Late      time.Duration // how long ago it was due
	Running   bool          // an execution of the job is still in progress
}

// LateJobs returns the jobs whose next fire time is more than threshold
// (<= 0: Options.LateThreshold) in the past, most late first. For metrics
// and health checks.
func (s *Kernel) LateJobs(ctx context.Context, threshold time.Duration) ([]LateJob, error) {
	if threshold <= 0 {
		threshold = s.opts.LateThreshold
	}
	entries, err := s.trig.Snapshot(ctx)
	if err != nil {
		return nil, err
	}
	now := s.opts.Clock.Now()
	var out []LateJob
	for _, e := range entries {
		if e.Next.IsZero() || e.Paused {
			continue
		}
		if late := now.Sub(e.Next); late > threshold {
			out = append(out, LateJob{Name: e.ID, Scheduled: e.Next, Late: late, Running: e.Running})
		}
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Late > out[b].Late })
	return out, nil
}

// watchdog logs late jobs at WARN every WatchdogInterval until ctx ends.
func (s *Kernel) watchdog(ctx context.Context) {
	t := time.NewTicker(s.opts.WatchdogInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		qctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		late, err := s.LateJobs(qctx, 0)
		cancel()
		if err != nil {
			continue
		}
		for _, l := range late {
			s.opts.Observer.Late(l.Name, l.Late)
			s.log.Warn("job is late: its fire time passed and it has not fired",
				"job", l.Name, "scheduled", l.Scheduled, "late", l.Late.Round(time.Millisecond), "running", l.Running)
		}
	}
}
