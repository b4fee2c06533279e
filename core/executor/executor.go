package executor

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ejob-io/ejob/core/config"
	"github.com/ejob-io/ejob/internal/lazylog"
	"github.com/ejob-io/ejob/spi"
)

// Sentinel errors.
var (
	// ErrPropagated is wrapped (with the original failure) by the error
	// Execute returns when the error handler asked to stop the trigger
	// (HandleErrorResponse.Propagate, upstream's THROW).
	ErrPropagated = errors.New("error handler stopped the trigger")
	// ErrExecutionTimeout is the cancellation cause of an execution that
	// ran past PropExecutionTimeoutSeconds; failed items wrap it.
	ErrExecutionTimeout = errors.New("execution timeout")
	// ErrItemPanicked is wrapped by the failure of an item whose runner
	// panicked.
	ErrItemPanicked = errors.New("item runner panicked")
	// ErrInvalidOptions is wrapped by New's errors.
	ErrInvalidOptions = errors.New("invalid executor options")
	// ErrRetryStopped is wrapped by the failure of an item whose retries
	// stopped before the last one (config.PropRetryMax): its ctx ended
	// during a backoff wait (execution timeout, shutdown, session loss),
	// or resharding became pending.
	ErrRetryStopped = errors.New("retry stopped")

	errReshardingPending = errors.New("resharding pending")
)

// PropExecutionTimeoutSeconds is the job prop (in JobConfiguration.Props,
// next to the job type's own props) that bounds one execution, i.e. one run
// of this instance's items (the normal run and each misfire re-run get
// their own budget): a positive integer of seconds. On expiry the items'
// ctx is cancelled with cause ErrExecutionTimeout, and every item that had
// not returned by then counts as failed and is reported to the error
// handler. Absent, empty or <= 0 means no timeout. Java peers ignore it.
const PropExecutionTimeoutSeconds = "ejob.execution.timeout.seconds"

// Default type names, used when the configuration leaves them empty.
const (
	DefaultErrorHandlerType = "LOG"
	DefaultThreadPoolType   = "CPU"
)

// ErrorHandlerLookup resolves an error-handler type name (already
// normalised with spi.NormalizeType).
type ErrorHandlerLookup func(ctx context.Context, typ string) (spi.ErrorHandler, error)

// PoolSizeLookup resolves a thread-pool size provider type name (already
// normalised with spi.NormalizeType).
type PoolSizeLookup func(ctx context.Context, typ string) (spi.ThreadPoolSizeProvider, error)

// ListenerLookup resolves a job listener type for the job's config.
type ListenerLookup func(ctx context.Context, cfg *config.JobConfiguration, typ string) (Listener, error)

// Listener is told before and after each trigger of a job (upstream's
// ElasticJobListener). Listeners run in ascending Order (ties keep their
// configured order); the first error stops the rest and goes to the error
// handler.
type Listener interface {
	BeforeJobExecuted(ctx context.Context, sc ShardingContexts) error
	AfterJobExecuted(ctx context.Context, sc ShardingContexts) error
	Order() int
}

// Options configure an Executor.
type Options struct {
	// InstanceID is this instance's id (ip@-@pid), for logs and handlers.
	InstanceID string
	// Facade does all registry I/O. Required.
	Facade Facade
	// Runner runs the items. Required.
	Runner ItemRunner
	// ErrorHandlers resolves jobErrorHandlerType. When nil, or when it
	// fails, failures are logged as the LOG handler would. A type it
	// reports as spi.ErrUnknownType (a config written by someone else, a
	// Java instance or the console, named a handler this host does not
	// serve) is logged once at WARN and not asked again until the type
	// changes; other failures are retried at the next trigger.
	ErrorHandlers ErrorHandlerLookup
	// PoolSizes resolves jobExecutorThreadPoolSizeProviderType. When nil,
	// or when it fails, the size is AvailableCPUs*2 (the CPU provider).
	// Unknown types are handled as for ErrorHandlers.
	PoolSizes PoolSizeLookup
	// Listeners are in-process listeners, in configured order. They run
	// after (in ascending Order, ties in configured order) the listeners
	// TypedListeners resolves.
	Listeners []Listener
	// TypedListeners resolves one type of the config's jobListenerTypes
	// (the effective config's: the registry's unless the local one was
	// written). The executor asks it at the first trigger and whenever the
	// list changes. A type it reports as spi.ErrUnknownType is logged once
	// at WARN and the job runs without it; other failures are logged and
	// retried at the next trigger. nil: jobListenerTypes is not used.
	TypedListeners ListenerLookup
	// Events defaults to NopEvents.
	Events Events
	// OnRetry, if set, is told of each retry of a failed item (metrics);
	// called from the item's goroutine.
	OnRetry func(item int)
	// OnFired, if set, is told that a fire starts, delay after its
	// scheduled time (metrics): at the start of Execute, or at the
	// scheduled time for a fire dispatched ahead.
	OnFired func(delay time.Duration)
	// OnMisfire, if set, is told of the fires of the schedule the trigger
	// loop skipped and no trigger took (Misfired), before their flags are
	// set (metrics).
	OnMisfire func(skipped int)
	// Logger defaults to a null logger.
	Logger hclog.Logger
	// AvailableCPUs is passed to the pool-size provider; default
	// runtime.NumCPU().
	AvailableCPUs int
	// CleanupTimeout bounds RegisterCompleted, which runs on a ctx that is
	// not cancelled with the trigger's (so that a shutdown still clears
	// the running nodes). Default 10 s.
	CleanupTimeout time.Duration
}

// Executor is the pipeline of one job on one instance (upstream's
// ElasticJobExecutor). Execute must not be called concurrently for one
// Executor; package trigger guarantees that.
type Executor struct {
	jobName string
	opts    Options
	log     hclog.Logger
	events  Events
	// quiet: events is NopEvents, so item events are not built (a random
	// id, two clock reads and an allocation per item for nobody).
	quiet bool
	// beginMsg is the TASK_STAGING message, "Job '<job>' execute begin.",
	// made at the first Execute (an idle job has none); Execute's own.
	beginMsg string

	mu          sync.Mutex // guards the reloadable state below
	handlerType string
	handler     spi.ErrorHandler
	poolType    string
	poolSize    int
	// listenerTypes are the normalised jobListenerTypes listeners was
	// built for; listenersBuilt is false until a build resolved them all.
	listenerTypes  []string
	listenersBuilt bool
	listeners      []Listener
	// unknown are the types already reported unknown, by kind, so that
	// each is logged once.
	unknown map[string]bool

	liveMu sync.Mutex
	// live is the output so far of each item an OutputRunner runs now.
	live map[int]*spi.LiveOutput

	// cfgCtx is the last trigger's ctx with its config (withJobConfig),
	// reused while the trigger's ctx and config are the same ones: the
	// kernel hands each trigger of a lease the same ctx. Execute's own.
	cfgCtx struct {
		parent, ctx context.Context
		cfg         *config.JobConfiguration
	}
}

// configContext is withJobConfig(ctx, cfg), the last one's when the same.
// Only a ctx that is a pointer is compared (an interface holding a value
// of a type that is not comparable would panic).
func (e *Executor) configContext(ctx context.Context, cfg *config.JobConfiguration) context.Context {
	if reflect.TypeOf(ctx).Kind() != reflect.Pointer {
		return withJobConfig(ctx, cfg)
	}
	c := &e.cfgCtx
	if c.parent != ctx || c.cfg != cfg {
		c.parent, c.cfg, c.ctx = ctx, cfg, withJobConfig(ctx, cfg)
	}
	return c.ctx
}

// LiveOutput returns the output so far of item while this host runs it
// (an OutputRunner's), and false when it does not run it now.
func (e *Executor) LiveOutput(ctx context.Context, item int) (spi.Output, bool, error) {
	e.liveMu.Lock()
	l := e.live[item]
	e.liveMu.Unlock()
	if l == nil {
		return spi.Output{}, false, nil
	}
	o, err := l.Snapshot(ctx)
	return o, true, err
}

// running records l as item's output so far, until ended.
func (e *Executor) running(item int, l *spi.LiveOutput) {
	e.liveMu.Lock()
	defer e.liveMu.Unlock()
	if e.live == nil {
		e.live = map[int]*spi.LiveOutput{}
	}
	e.live[item] = l
}

// ended forgets l, item's output so far.
func (e *Executor) ended(item int, l *spi.LiveOutput) {
	e.liveMu.Lock()
	defer e.liveMu.Unlock()
	if e.live[item] == l {
		delete(e.live, item)
	}
}

// New returns the Executor of jobName.
func New(jobName string, opts Options) (*Executor, error) {
	if jobName == "" {
		return nil, fmt.Errorf("executor: %w: empty job name", ErrInvalidOptions)
	}
	if opts.Facade == nil || opts.Runner == nil {
		return nil, fmt.Errorf("executor: job %q: %w: Facade and Runner are required", jobName, ErrInvalidOptions)
	}
	if opts.Events == nil {
		opts.Events = NopEvents{}
	}
	if opts.Logger == nil {
		opts.Logger = hclog.NewNullLogger()
	}
	if opts.AvailableCPUs <= 0 {
		opts.AvailableCPUs = runtime.NumCPU()
	}
	if opts.CleanupTimeout <= 0 {
		opts.CleanupTimeout = 10 * time.Second
	}
	opts.Listeners = slices.Clone(opts.Listeners)
	_, quiet := opts.Events.(NopEvents)
	return &Executor{
		jobName:   jobName,
		opts:      opts,
		log:       lazylog.With(opts.Logger, lazylog.JobInstanceID, jobName, opts.InstanceID),
		events:    opts.Events,
		quiet:     quiet,
		listeners: sortListeners(nil, opts.Listeners),
	}, nil
}

// JobName returns the job's name.
func (e *Executor) JobName() string { return e.jobName }

// run is the state of one trigger.
type run struct {
	*Executor
	cfg       *config.JobConfiguration
	handler   spi.ErrorHandler
	poolSize  int
	listeners []Listener
	timeout   time.Duration
	retry     config.Retry
	// skips is the recording of skipped fires in progress (recordSkips).
	skips struct {
		end        func() // the trigger loop's stop of the callback; nil when none
		unrecorded atomic.Bool
	}
}

// Execute runs one trigger of the job (upstream's
// ElasticJobExecutor.execute) for fire, the trigger loop's (nil: due now,
// no loop). src is the source of the first run (NormalTrigger from the
// kernel; Misfire for its run that catches up the fires skipped while the
// job was paused); a run of failover items is Failover whatever src says,
// and keeps the fire for the own items unless fire is manual. The fires
// the loop skips while this trigger runs each set the misfire flags of the
// local items at once (upstream's JobTriggerListener.triggerMisfired; the
// flags outlive this instance), and the misfire loop after the run serves
// them with one catch-up run of the items right away, in this trigger
// (misfire.go). It returns nil when the
// trigger completed, an error wrapping ErrPropagated when the error handler
// stopped it, or a wrapped Facade error.
func (e *Executor) Execute(ctx context.Context, src Source, fire Fire) error {
	if fire == nil || !fire.Ahead() {
		e.fired(fire) // else at the scheduled time (contextsAt)
	}
	f := e.opts.Facade
	cfg, err := f.Config(ctx)
	if err != nil {
		return fmt.Errorf("executor: job %q: load config: %w", e.jobName, err)
	}
	handler, poolSize, listeners := e.reload(ctx, cfg)
	r := &run{Executor: e, cfg: cfg, handler: handler, poolSize: poolSize, listeners: listeners, timeout: e.timeout(cfg), retry: e.retryPolicy(cfg)}
	ctx = e.configContext(ctx, cfg)
	// Fires skipped from now on set the flags of the items this instance
	// owns when they come (a pending resharding may move items while the
	// trigger waits for it).
	r.recordSkips(ctx, fire)
	defer r.stopRecording()

	if cfg.MaxTimeDiffSeconds >= 0 {
		if err := f.CheckEnvironment(ctx); err != nil {
			if perr := r.handle(ctx, "", -1, fmt.Errorf("environment check: %w", err)); perr != nil {
				return perr
			}
		}
	}
	sc, abandoned, err := r.contextsAt(ctx, fire) // ahead.go
	if err != nil {
		return fmt.Errorf("executor: job %q: sharding contexts: %w", e.jobName, err)
	}
	if abandoned {
		return nil
	}
	if sc.Failover && src != Failover {
		src = Failover
		r.keepOwnItemsFire(ctx, sc, fire)
	}
	if e.beginMsg == "" {
		e.beginMsg = "Job '" + e.jobName + "' execute begin."
	}
	e.status(ctx, e.events.TaskStaging, sc, src, TaskStaging, e.beginMsg)
	running, err := f.MisfireIfRunning(ctx, sc.Items)
	if err != nil {
		return fmt.Errorf("executor: job %q: misfire if running: %w", e.jobName, err)
	}
	if running {
		e.status(ctx, e.events.TaskFinished, sc, src, TaskFinished, fmt.Sprintf(
			"Previous job '%s' - shardingItems '%s' is still running, misfired job will start after previous job completed.",
			e.jobName, javaList(sc.Items)))
		return nil
	}
	if err := r.callListeners(ctx, sc, true); err != nil {
		return err
	}
	err = r.once(ctx, sc, src)
	unrecorded := r.stopRecording()
	if err != nil {
		return err
	}
	if err := r.catchUp(ctx, sc, fire, unrecorded); err != nil {
		return err
	}
	if cfg.Failover {
		if err := f.FailoverIfNecessary(ctx); err != nil {
			return fmt.Errorf("executor: job %q: failover enquiry: %w", e.jobName, err)
		}
	}
	return r.callListeners(ctx, sc, false)
}

// normType is spi.NormalizeType with a default for empty names. ejob
// compares normalised names, so an unset type does not rebuild the pool
// and handler on every trigger (a deliberate difference from 3.0.5, whose
// "CPU".equals(null) does; ≤3.0.4 behaved like ejob).
func normType(typ, def string) string {
	if t := spi.NormalizeType(typ); t != "" {
		return t
	}
	return def
}

// reload resolves the error handler, pool size and typed listeners when
// their configured types changed (upstream's ExecutorServiceReloader and
// JobErrorHandlerReloader, and the ElasticJobListener types of
// jobListenerTypes). Props are not compared: the SPI is stateless and
// receives the props in every call. A type the lookup does not know (the
// config was written by someone else: a Java instance, the console) is
// logged once and replaced (LOG, CPU, or no listener); another failed
// lookup is logged and retried at the next trigger.
func (e *Executor) reload(ctx context.Context, cfg *config.JobConfiguration) (spi.ErrorHandler, int, []Listener) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if ht := normType(cfg.JobErrorHandlerType, DefaultErrorHandlerType); ht != e.handlerType {
		h, err := e.lookupHandler(ctx, ht)
		switch {
		case errors.Is(err, spi.ErrUnknownType):
			e.warnUnknown("error handler", ht, "failures are logged as the LOG handler logs them", err)
			h = logHandler{e.log}
		case err != nil:
			e.log.Warn("cannot resolve error handler; logging failures instead", "type", ht, "error", err)
			h, ht = logHandler{e.log}, ""
		}
		e.handler, e.handlerType = h, ht
	}
	if pt := normType(cfg.JobExecutorThreadPoolSizeProviderType, DefaultThreadPoolType); pt != e.poolType {
		size, err := e.lookupPoolSize(ctx, pt)
		switch {
		case errors.Is(err, spi.ErrUnknownType):
			size = e.opts.AvailableCPUs * 2
			e.warnUnknown("thread pool", pt, fmt.Sprintf("the pool is sized as CPU sizes it (%d)", size), err)
		case err != nil:
			size = e.opts.AvailableCPUs * 2
			e.log.Warn("cannot size thread pool; using CPUs*2", "type", pt, "size", size, "error", err)
			pt = ""
		}
		e.poolSize, e.poolType = size, pt
	}
	e.reloadListeners(ctx, cfg)
	return e.handler, e.poolSize, e.listeners
}

// reloadListeners rebuilds the listeners when the config's listener types
// changed (or a build is incomplete). Caller holds e.mu.
func (e *Executor) reloadListeners(ctx context.Context, cfg *config.JobConfiguration) {
	if e.opts.TypedListeners == nil {
		return
	}
	types := make([]string, len(cfg.JobListenerTypes))
	for i, t := range cfg.JobListenerTypes {
		types[i] = spi.NormalizeType(t)
	}
	if e.listenersBuilt && slices.Equal(types, e.listenerTypes) {
		return
	}
	typed := make([]Listener, 0, len(types))
	complete := true
	for _, t := range cfg.JobListenerTypes {
		l, err := e.opts.TypedListeners(ctx, cfg, t)
		switch {
		case err == nil:
			typed = append(typed, l)
		case errors.Is(err, spi.ErrUnknownType):
			e.warnUnknown("job listener", t, "the job runs without it", err)
		default:
			complete = false
			e.log.Warn("cannot resolve job listener; this trigger runs without it", "type", t, "error", err)
		}
	}
	e.listeners = sortListeners(typed, e.opts.Listeners)
	e.listenerTypes, e.listenersBuilt = types, complete
}

// warnUnknown logs, once per kind and type, that the job's config names a
// type this host does not serve and what the executor does instead.
// Caller holds e.mu.
func (e *Executor) warnUnknown(kind, typ, instead string, err error) {
	if e.unknown[kind+"/"+typ] {
		return
	}
	if e.unknown == nil {
		e.unknown = map[string]bool{}
	}
	e.unknown[kind+"/"+typ] = true
	e.log.Warn("the job's configuration (written elsewhere: a Java instance, the console) names a type this host "+
		"does not serve; "+instead, "kind", kind, "type", typ, "error", err)
}

// sortListeners returns typed then inProcess, stably sorted by Order.
func sortListeners(typed, inProcess []Listener) []Listener {
	out := append(slices.Clone(typed), inProcess...)
	slices.SortStableFunc(out, func(a, b Listener) int { return cmp.Compare(a.Order(), b.Order()) })
	return out
}

func (e *Executor) lookupHandler(ctx context.Context, typ string) (spi.ErrorHandler, error) {
	if e.opts.ErrorHandlers == nil {
		return logHandler{e.log}, nil
	}
	h, err := e.opts.ErrorHandlers(ctx, typ)
	if err == nil && h == nil {
		err = fmt.Errorf("%w: error handler %q", spi.ErrUnknownType, typ)
	}
	return h, err
}

func (e *Executor) lookupPoolSize(ctx context.Context, typ string) (int, error) {
	if e.opts.PoolSizes == nil {
		return e.opts.AvailableCPUs * 2, nil
	}
	p, err := e.opts.PoolSizes(ctx, typ)
	if err != nil {
		return 0, err
	}
	if p == nil {
		return 0, fmt.Errorf("%w: thread pool %q", spi.ErrUnknownType, typ)
	}
	resp, err := p.PoolSize(ctx, spi.PoolSizeRequest{JobName: e.jobName, AvailableCPUs: e.opts.AvailableCPUs})
	if err != nil {
		return 0, fmt.Errorf("pool size %q: %w", typ, err)
	}
	if resp.Size < 1 {
		return 0, fmt.Errorf("pool size %q: invalid size %d", typ, resp.Size)
	}
	return resp.Size, nil
}

func (e *Executor) timeout(cfg *config.JobConfiguration) time.Duration {
	v, ok := cfg.Props[PropExecutionTimeoutSeconds]
	if !ok || strings.TrimSpace(v) == "" {
		return 0
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil {
		e.log.Warn("ignoring invalid execution timeout prop", "prop", PropExecutionTimeoutSeconds, "value", v)
		return 0
	}
	if n <= 0 {
		return 0
	}
	return time.Duration(n) * time.Second
}

// retryPolicy reads the retry props. A configuration checked by
// config.Validate has valid ones; one written by another tool may not,
// and then its items are not retried.
func (e *Executor) retryPolicy(cfg *config.JobConfiguration) config.Retry {
	r, err := config.ParseRetry(cfg.Props)
	if err != nil {
		e.log.Warn("ignoring invalid retry props: failed items are not retried", "error", err)
		return config.Retry{}
	}
	return r
}

// handle reports err to the trigger's error handler. It returns an error
// wrapping ErrPropagated when the handler asks to stop the trigger.
func (r *run) handle(ctx context.Context, taskID string, item int, err error) error {
	return r.handleTries(ctx, taskID, item, 0, err)
}

// handleTries is handle for an item that ran tries times.
func (r *run) handleTries(ctx context.Context, taskID string, item, tries int, err error) error {
	resp, herr := r.handler.HandleError(ctx, spi.HandleErrorRequest{
		JobName:      r.jobName,
		InstanceID:   r.opts.InstanceID,
		TaskID:       taskID,
		ShardingItem: item,
		Props:        r.cfg.Props,
		Error:        spi.JobError{Message: err.Error(), Detail: detail(err)},
		Tries:        tries,
	})
	if herr != nil {
		r.log.Error("error handler failed", "item", item, "task_id", taskID, "job_error", err, "error", herr)
	}
	if resp.Propagate {
		return fmt.Errorf("executor: job %q: %w: %w", r.jobName, ErrPropagated, err)
	}
	return nil
}

// detail lists the error chain as plain text, one level per line,
// outermost first: "caused by: <text>". Each line says what its level
// adds: a wrapper's text ends with its cause's (fmt.Errorf("...: %w")),
// which the next line shows, so that suffix is cut and every fact appears
// once. Go type names (*fmt.wrapError) say nothing to an operator and are
// left out; a level that adds no text is left out too.
func detail(err error) string {
	var b strings.Builder
	for e := errors.Unwrap(err); e != nil; e = errors.Unwrap(e) {
		msg := e.Error()
		if inner := errors.Unwrap(e); inner != nil {
			if own, ok := strings.CutSuffix(msg, inner.Error()); ok {
				msg = strings.TrimSuffix(own, ": ")
			}
		}
		if msg == "" {
			continue
		}
		fmt.Fprintf(&b, "caused by: %s\n", msg)
	}
	return b.String()
}

func (r *run) callListeners(ctx context.Context, sc ShardingContexts, before bool) error {
	for _, l := range r.listeners {
		var err error
		if before {
			err = l.BeforeJobExecuted(ctx, sc)
		} else {
			err = l.AfterJobExecuted(ctx, sc)
		}
		if err != nil {
			phase := "after"
			if before {
				phase = "before"
			}
			return r.handle(ctx, "", -1, fmt.Errorf("%s-listener (order %d): %w", phase, l.Order(), err))
		}
	}
	return nil
}

func (e *Executor) status(ctx context.Context, post func(context.Context, StatusEvent), sc ShardingContexts, src Source, st State, msg string) {
	post(ctx, StatusEvent{
		JobName: e.jobName, TaskID: sc.TaskID, InstanceID: e.opts.InstanceID,
		Source: src, Items: sc.Items, State: st, Message: msg,
	})
}

// once runs the items one time (upstream's ElasticJobExecutor.executeOnce).
func (r *run) once(ctx context.Context, sc ShardingContexts, src Source) error {
	f := r.opts.Facade
	if len(sc.Items) == 0 {
		r.status(ctx, r.events.TaskFinished, sc, src, TaskFinished, fmt.Sprintf("Sharding item for job '%s' is empty.", r.jobName))
		return nil
	}
	if err := f.RegisterBegin(ctx, sc); err != nil {
		return fmt.Errorf("executor: job %q: register begin: %w", r.jobName, notBegun{err})
	}
	r.status(ctx, r.events.TaskRunning, sc, src, TaskRunning, "")

	failures, perr := r.items(ctx, sc, src)

	var failed []int
	if len(failures) > 0 {
		failed = slices.Sorted(maps.Keys(failures))
	}
	cctx := newCleanupCtx(ctx, r.opts.CleanupTimeout)
	defer cctx.cancel()
	if err := f.RegisterCompleted(cctx, sc, failed); err != nil {
		// ejob's own end of the status trace: upstream would post
		// FINISHED or ERROR as if the run had completed normally.
		r.status(ctx, r.events.TaskError, sc, src, TaskError, fmt.Sprintf(
			"Job '%s' execution was cut off: the completion of items %s could not be registered: %v", r.jobName, javaList(sc.Items), err))
		return errors.Join(perr, fmt.Errorf("executor: job %q: register completed: %w", r.jobName, err))
	}
	if len(failures) == 0 {
		r.status(ctx, r.events.TaskFinished, sc, src, TaskFinished, "")
	} else {
		r.status(ctx, r.events.TaskError, sc, src, TaskError, javaMap(failed, failures))
	}
	return perr
}

// notBegun wraps the Facade's refusal of a run (RegisterBegin): nothing of
// the run started, so the misfire loop may run its items again without the
// items it joined.
type notBegun struct{ err error }

func (e notBegun) Error() string { return e.err.Error() }
func (e notBegun) Unwrap() error { return e.err }

// items runs every item: one inline, several on at most poolSize
// goroutines in Items order. It returns the failure text per failed item
// (nil when none failed) and the first propagation requested by the error
// handler. All items run to completion even when the handler propagates:
// ejob then stops the trigger after the finally step for several items as
// for one (upstream's ElasticJobExecutor swallows THROW for several
// items: the pool's Future holding it is never read).
// The items run under ctx, or with an execution timeout under a ctx that
// also ends then (cause ErrExecutionTimeout). No context is derived
// without a timeout: a new cancel context under the trigger's, once per
// run, costs a twentieth of an execution's CPU (BenchmarkFire100Jobs).
func (r *run) items(ctx context.Context, sc ShardingContexts, src Source) (map[int]string, error) {
	ictx := ctx
	if r.timeout > 0 {
		var stop context.CancelFunc
		ictx, stop = context.WithTimeoutCause(ctx, r.timeout, fmt.Errorf("%w of %s", ErrExecutionTimeout, r.timeout))
		defer stop()
	}
	if len(sc.Items) == 1 {
		item := sc.Items[0]
		cause, perr := r.item(ctx, ictx, sc, item, r.startEvent(sc, src, item))
		if cause == "" {
			return nil, nil
		}
		return map[int]string{item: cause}, perr
	}
	var (
		mu       sync.Mutex
		failures map[int]string
		perr     error
	)
	do := func(item int, ev ItemEvent) {
		cause, p := r.item(ctx, ictx, sc, item, ev)
		if cause == "" {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if failures == nil {
			failures = map[int]string{}
		}
		failures[item] = cause
		if perr == nil {
			perr = p
		}
	}
	// Start events are built on the dispatching goroutine, in order, so
	// their start time is dispatch time (as upstream).
	type task struct {
		item int
		ev   ItemEvent
	}
	tasks := make(chan task, len(sc.Items))
	for _, item := range sc.Items {
		tasks <- task{item, r.startEvent(sc, src, item)}
	}
	close(tasks)
	var wg sync.WaitGroup
	for range min(r.poolSize, len(sc.Items)) {
		wg.Go(func() {
			for t := range tasks {
				do(t.item, t.ev)
			}
		})
	}
	wg.Wait()
	return failures, perr
}

func (r *run) startEvent(sc ShardingContexts, src Source, item int) ItemEvent {
	if r.quiet {
		return ItemEvent{Item: item}
	}
	return ItemEvent{
		ID: NewEventID(), JobName: r.jobName, TaskID: sc.TaskID, InstanceID: r.opts.InstanceID,
		Source: src, Item: item, Start: time.Now(), FencingToken: sc.FencingTokens[item],
	}
}

// item runs one item (upstream's processItem), retrying it in place as
// the retry props say. ctx is the trigger's, ictx the items' (ended by the
// execution timeout, shutdown and session loss, which also end a backoff
// wait). It
// returns the failure text ("" on success) and the handler's propagation.
// The handler is told once, about the last try; events cover the item as
// a whole, not each try.
func (r *run) item(ctx, ictx context.Context, sc ShardingContexts, item int, ev ItemEvent) (string, error) {
	r.events.ItemStarted(ctx, ev)
	tries, out, err := r.tryItem(ictx, sc, item)
	if !r.quiet {
		ev.Output = out
	}
	if cause := context.Cause(ictx); errors.Is(cause, ErrExecutionTimeout) && !errors.Is(err, ErrExecutionTimeout) {
		if err == nil {
			err = cause
		} else {
			err = fmt.Errorf("%w: %w", cause, err)
		}
	}
	if !r.quiet {
		ev.Complete = time.Now()
	}
	if err == nil {
		ev.Success = true
		r.events.ItemCompleted(ctx, ev)
		return "", nil
	}
	if r.retry.Max > 0 {
		err = fmt.Errorf("job %q item %d (try %d of %d): %w", r.jobName, item, tries, r.retry.Max+1, err)
	} else {
		err = fmt.Errorf("job %q item %d: %w", r.jobName, item, err)
	}
	ev.FailureCause = err.Error()
	r.events.ItemCompleted(ctx, ev)
	return ev.FailureCause, r.handleTries(ctx, sc.TaskID, item, tries, err)
}

// tryItem runs the item up to 1+retry.Max times, until a try succeeds. It
// returns how many tries ran, the last one's output and error, which wraps
// ErrRetryStopped when a wait before a retry was cut short.
func (r *run) tryItem(ctx context.Context, sc ShardingContexts, item int) (int, spi.Output, error) {
	tries := r.retry.Max + 1
	for try := 1; ; try++ {
		out, err := r.runItem(ctx, sc.ShardingContext(item))
		if err == nil || try == tries {
			return try, out, err
		}
		if ctx.Err() != nil { // the runner was stopped: no retry to announce
			return try, out, fmt.Errorf("%w (%w: %w)", err, ErrRetryStopped, context.Cause(ctx))
		}
		delay := r.retry.Delay(try)
		if r.opts.OnRetry != nil {
			r.opts.OnRetry(item)
		}
		r.log.Warn(fmt.Sprintf("item %d failed (try %d of %d); retrying in %s", item, try, tries, delay),
			"item", item, "try", try, "tries", tries, "backoff", delay, "error", err)
		if stop := r.backoff(ctx, delay); stop != nil {
			r.log.Warn(fmt.Sprintf("item %d: retry stopped after try %d of %d", item, try, tries),
				"item", item, "try", try, "tries", tries, "reason", stop)
			return try, out, fmt.Errorf("%w (%w: %w)", err, ErrRetryStopped, stop)
		}
	}
}

// backoff waits d before a retry. It returns nil when the retry may run,
// or why it may not: the cause of ctx's end, or errReshardingPending when
// resharding is pending (checked at once, every DefaultReshardingPoll and
// at the end: a retry would hold up the resharding, which waits for
// running items, and the item may belong to another instance after it).
func (r *run) backoff(ctx context.Context, d time.Duration) error {
	timer := time.NewTimer(d)
	defer timer.Stop()
	poll := time.NewTicker(DefaultReshardingPoll)
	defer poll.Stop()
	for elapsed := false; ; {
		if need, err := r.opts.Facade.NeedSharding(ctx); err == nil && need {
			return errReshardingPending
		}
		if elapsed {
			if ctx.Err() != nil { // ended as the wait did
				return context.Cause(ctx)
			}
			return nil
		}
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-timer.C:
			elapsed = true
		case <-poll.C:
		}
	}
}

// runItem calls the runner, turning a panic into an error as upstream
// catches every Throwable.
// (and the output of an OutputRunner, whose output so far LiveOutput
// reads while it runs).
func (r *run) runItem(ctx context.Context, sc spi.ShardingContext) (out spi.Output, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%w: %v\n%s", ErrItemPanicked, p, debug.Stack())
		}
	}()
	if o, ok := r.opts.Runner.(OutputRunner); ok {
		live := new(spi.LiveOutput)
		r.running(sc.ShardingItem, live)
		defer r.ended(sc.ShardingItem, live)
		return o.RunItemOutput(spi.WithLiveOutput(ctx, live), sc)
	}
	return spi.Output{}, r.opts.Runner.RunItem(ctx, sc)
}

// javaList formats items as Java's List/Set toString: "[0, 1]".
func javaList(items []int) string {
	var b strings.Builder
	b.WriteByte('[')
	for i, it := range items {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.Itoa(it))
	}
	b.WriteByte(']')
	return b.String()
}

// javaMap formats failures as Java's Map toString: "{0=a, 1=b}".
func javaMap(items []int, failures map[int]string) string {
	var b strings.Builder
	b.WriteByte('{')
	for i, it := range items {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.Itoa(it))
		b.WriteByte('=')
		b.WriteString(failures[it])
	}
	b.WriteByte('}')
	return b.String()
}

// logHandler is the fallback when no error handler can be resolved: it
// logs as the LOG handler does and never propagates.
type logHandler struct{ log hclog.Logger }

func (h logHandler) HandleError(ctx context.Context, req spi.HandleErrorRequest) (spi.HandleErrorResponse, error) {
	h.log.Error(fmt.Sprintf("Job '%s' exception occur in job processing", req.JobName),
		"task_id", req.TaskID, "item", req.ShardingItem, "error", req.Error.Message)
	return spi.HandleErrorResponse{}, nil
}

func (logHandler) Validate(context.Context, spi.ValidatePropsRequest) error { return nil }
