package kernel

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/ejob-io/ejob/core/config"
	"github.com/ejob-io/ejob/core/coord"
	"github.com/ejob-io/ejob/core/executor"
	"github.com/ejob-io/ejob/core/trigger"
	"github.com/ejob-io/ejob/internal/lazylog"
	"github.com/ejob-io/ejob/spi"
)

// Add validates and adds a job; ctx bounds the plugin calls that check it
// (props validation, listener descriptions). Before Run it is started by Run;
// after Run has started it starts at once. It runs in three steps: resolve
// (validation of the configuration and of the props with the plugins, and
// the resolution of what the job runs with), then, under the kernel's
// lock, wireLocked (its coordination, pipeline and trigger-loop entry).
func (s *Kernel) Add(ctx context.Context, job Job) error {
	cfg := job.Config
	if cfg == nil {
		return errors.New("scheduler: nil job config")
	}
	r, err := s.resolve(ctx, job)
	if err != nil {
		return fmt.Errorf("job %q: %w", cfg.JobName, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return ErrStopped
	}
	if _, dup := s.jobs[cfg.JobName]; dup {
		return fmt.Errorf("%w: %q", ErrDuplicateJob, cfg.JobName)
	}
	if err := s.wireLocked(job, r); err != nil {
		return fmt.Errorf("job %q: %w", cfg.JobName, err)
	}
	return nil
}

// resolvedJob is a job as resolve found it valid: what runs its items (a
// runner, or one built on its coordination), the class name its root node
// gets, the listeners its configuration names, described, and its parsed
// schedule.
type resolvedJob struct {
	runner    executor.ItemRunner
	newRunner func(executor.Facade) executor.ItemRunner
	className string
	listeners []executor.SPIListener
	sched     trigger.Schedule
}

// resolve validates job (Validate, then the props of its job type and of
// its error handler, with the plugins that serve them) and resolves what it
// runs with. Errors name the field or the type.
func (s *Kernel) resolve(ctx context.Context, job Job) (resolvedJob, error) {
	cfg := job.Config
	if err := s.Validate(cfg); err != nil {
		return resolvedJob{}, err
	}
	r := resolvedJob{runner: job.Runner, newRunner: job.NewRunner, className: job.ClassName}
	if r.runner == nil && r.newRunner == nil {
		ex, err := s.resolveJobType(ctx, cfg, job.Type)
		if err != nil {
			return resolvedJob{}, err
		}
		r.newRunner = func(f executor.Facade) executor.ItemRunner { return executor.Typed{Executor: ex, Sharding: f} }
		if r.className == "" {
			r.className = spi.NormalizeType(job.Type)
		}
	}
	if r.className == "" {
		r.className = "ejob.GoJob"
	}
	if err := s.checkErrorHandler(ctx, cfg); err != nil {
		return resolvedJob{}, err
	}
	var err error
	if r.listeners, err = s.describeListeners(ctx, cfg); err != nil {
		return resolvedJob{}, err
	}
	if r.sched, err = s.scheds.get(cfg.Cron, cfg.TimeZone); err != nil {
		return resolvedJob{}, err
	}
	return r, nil
}

// resolveJobType resolves the job type typ, for a job with no in-process
// runner, and has it validate cfg's props.
func (s *Kernel) resolveJobType(ctx context.Context, cfg *config.JobConfiguration, typ string) (spi.JobExecutor, error) {
	if typ == "" {
		return nil, fmt.Errorf("%w: neither a job type nor an in-process runner", spi.ErrInvalidConfig)
	}
	ex, err := spi.Resolve[spi.JobExecutor](s.opts.Plugins, typ)
	if err != nil {
		return nil, err
	}
	if err := s.checkProps(ctx, spi.KindJobType, typ, cfg, ex); err != nil {
		return nil, fmt.Errorf("props for job type %s: %w", typ, err)
	}
	return ex, nil
}

// checkErrorHandler has the job's error handler validate cfg's props. As
// upstream, they are checked only when the type is set.
func (s *Kernel) checkErrorHandler(ctx context.Context, cfg *config.JobConfiguration) error {
	ht := strings.TrimSpace(cfg.JobErrorHandlerType)
	if ht == "" {
		return nil
	}
	h, err := spi.Resolve[spi.ErrorHandler](s.opts.Plugins, ht)
	if err != nil {
		return err
	}
	if err := s.checkProps(ctx, spi.KindErrorHandler, ht, cfg, h); err != nil {
		return fmt.Errorf("props for error handler %s: %w", ht, err)
	}
	return nil
}

// pluginCheckTimeout bounds each plugin call Add makes to check a job (a
// props validation, a listener's description).
const pluginCheckTimeout = 30 * time.Second

// propsValidator is a plugin that validates a job's props: a job type, an
// error handler.
type propsValidator interface {
	Validate(ctx context.Context, req spi.ValidatePropsRequest) error
}

// checkProps has v, the plugin of kind and type typ, validate cfg's props,
// unless it accepted the same props before (Options.Validated).
func (s *Kernel) checkProps(ctx context.Context, kind spi.Kind, typ string, cfg *config.JobConfiguration, v propsValidator) error {
	return s.opts.Validated.Check(kind, typ, cfg.Props, func() error {
		vctx, cancel := context.WithTimeout(ctx, pluginCheckTimeout)
		defer cancel()
		return v.Validate(vctx, spi.ValidatePropsRequest{JobName: cfg.JobName, Props: cfg.Props})
	})
}

// wireLocked wires a resolved job: its coordination (coord.Job, whose
// Hooks the job's wiring is), its execution pipeline on it, and its entry
// in the trigger loop, whose fires go to the pipeline and whose leftover
// misfires to Executor.Misfired. It starts the job when Run has started.
// Caller holds s.mu and checked the name is free.
func (s *Kernel) wireLocked(job Job, r resolvedJob) error {
	cfg := job.Config
	// The job's wiring keeps its name, not cfg: the caller's config is
	// not kept (coord keeps its own copy).
	name := cfg.JobName
	wj := &wiredJob{name: name, s: s, obs: s.opts.Observer, log: lazylog.With(s.log, lazylog.JobInstance, name, s.opts.InstanceID),
		cron: cfg.Cron, tz: cfg.TimeZone}
	co := s.opts.Coord
	co.Client, co.Config, co.JobClassName = s.opts.Client, cfg.Clone(), r.className
	co.InstanceID, co.ServerIP, co.Logger = s.opts.InstanceID, s.opts.ServerIP, s.coordLog
	co.Namespace = s.ns
	co.Strategies = s.lookups.strategy
	co.Hooks = wj
	cj, err := coord.New(co)
	if err != nil {
		return err
	}
	runner := r.runner
	if runner == nil {
		runner = r.newRunner(cj)
	}
	// The listeners the local config names were described by resolve (a
	// bad one fails Add); the executor asks for those of the effective
	// config, which may be the registry's.
	wj.coord = cj
	for i, l := range r.listeners { // most jobs name none: no map then
		if wj.described == nil {
			wj.described = make(map[string]executor.SPIListener, len(r.listeners))
		}
		l.Guarantee = cj
		wj.described[spi.NormalizeType(cfg.JobListenerTypes[i])] = l
	}
	wj.runner, wj.listeners = runner, slices.Clone(job.Listeners)
	s.jobs[name] = wj
	if s.pending++; s.pending == 1 {
		s.settled = make(chan struct{})
	}
	// A steady job's fire is dispatched a lead ahead of its time (the
	// pre-arm: core/coord prearm.go); the items start at the time.
	s.trig.AddAhead(name, r.sched, wj.fire, wj.misfiredFires, cj.PreArmLead)
	if s.runCtx != nil {
		s.startLocked(wj)
	}
	return nil
}

// executor returns the job's execution pipeline, made at its first use
// (a fire, a misfire report): an idle job holds none, only what makes it
// (its runner and listeners), about 450 bytes less a job.
func (wj *wiredJob) executor() (*executor.Executor, error) {
	if ex := wj.exec.Load(); ex != nil {
		return ex, nil
	}
	wj.execMu.Lock()
	defer wj.execMu.Unlock()
	if ex := wj.exec.Load(); ex != nil {
		return ex, nil
	}
	s := wj.s
	eo := executor.Options{
		InstanceID:     s.opts.InstanceID,
		Facade:         wj.coord,
		Runner:         wj.runner,
		ErrorHandlers:  s.lookups.errorHandler,
		PoolSizes:      s.lookups.poolSize,
		Listeners:      wj.listeners,
		TypedListeners: wj.typedListener,
		Events:         s.opts.Events,
		Logger:         s.execLog,
		AvailableCPUs:  s.opts.AvailableCPUs,
	}
	if _, nop := s.opts.Observer.(NopObserver); !nop {
		// The observer's hooks: three closures a job, made only for an
		// observer that is told something.
		eo.OnRetry, eo.OnFired, eo.OnMisfire = wj.itemRetried, wj.fired, wj.misfired
	}
	ex, err := executor.New(wj.name, eo)
	if err != nil {
		return nil, err
	}
	wj.exec.Store(ex)
	wj.runner, wj.listeners = nil, nil
	return ex, nil
}

// misfiredFires is the job's trigger.MisfireFunc: its executor's
// Misfired.
func (wj *wiredJob) misfiredFires(ctx context.Context, m trigger.Misfire) {
	ex, err := wj.executor()
	if err != nil {
		wj.log.Error("misfired fires not recorded", "error", err)
		return
	}
	ex.Misfired(ctx, m)
}

// typedListener is the job's executor.ListenerLookup: the listeners the
// local config names were described by Add (a bad one fails it); the
// executor asks for those of the effective config, which may be the
// registry's. Called under the executor's lock.
func (wj *wiredJob) typedListener(ctx context.Context, eff *config.JobConfiguration, name string) (executor.Listener, error) {
	key := spi.NormalizeType(name)
	if l, ok := wj.described[key]; ok {
		return l, nil
	}
	l, err := wj.s.describeListener(ctx, eff, name)
	if err != nil {
		return nil, err
	}
	l.Guarantee = wj.coord
	if wj.described == nil {
		wj.described = map[string]executor.SPIListener{}
	}
	wj.described[key] = l
	return l, nil
}

// describeListeners resolves cfg.JobListenerTypes through Plugins and asks
// each listener, once, how to call it for this job (as upstream resolves
// each name when the job's scheduler is built).
func (s *Kernel) describeListeners(ctx context.Context, cfg *config.JobConfiguration) ([]executor.SPIListener, error) {
	out := make([]executor.SPIListener, 0, len(cfg.JobListenerTypes))
	for _, name := range cfg.JobListenerTypes {
		l, err := s.describeListener(ctx, cfg, name)
		if err != nil {
			return nil, err
		}
		out = append(out, l)
	}
	return out, nil
}

// describeListener resolves one listener type and asks it how to call it
// for the job. An unknown type wraps spi.ErrUnknownType.
func (s *Kernel) describeListener(ctx context.Context, cfg *config.JobConfiguration, name string) (executor.SPIListener, error) {
	l, err := spi.Resolve[spi.JobListener](s.opts.Plugins, name)
	if err != nil {
		return executor.SPIListener{}, fmt.Errorf("job listener %s: %w", name, err)
	}
	dctx, cancel := context.WithTimeout(ctx, pluginCheckTimeout)
	desc, err := l.Describe(dctx, spi.ListenerDescribeRequest{JobName: cfg.JobName, Props: cfg.Props})
	cancel()
	if err != nil {
		return executor.SPIListener{}, fmt.Errorf("job listener %s: %w", name, err)
	}
	return executor.SPIListener{Listener: l, Desc: desc}, nil
}
