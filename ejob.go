package ejob

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ejob-io/ejob/core/config"
	"github.com/ejob-io/ejob/core/executor"
	"github.com/ejob-io/ejob/core/instance"
	"github.com/ejob-io/ejob/core/kernel"
	"github.com/ejob-io/ejob/core/lifecycle"
	"github.com/ejob-io/ejob/core/reg"
	"github.com/ejob-io/ejob/core/reg/embedded"
	"github.com/ejob-io/ejob/core/reg/zookeeper"
	"github.com/ejob-io/ejob/core/tracing"
	"github.com/ejob-io/ejob/plugins/builtin"
	"github.com/ejob-io/ejob/spi"
)

// ShardingContext is what one item of one execution receives.
type ShardingContext = spi.ShardingContext

// JobConfig is a job's configuration, with ElasticJob's keys and defaults.
type JobConfig = config.JobConfiguration

// NewJobConfig returns a configuration with upstream's defaults. Set Cron
// for a scheduled job; leave it empty for a one-off job run by Execute.
func NewJobConfig(name string, shardingTotalCount int) *JobConfig {
	return config.New(name, shardingTotalCount)
}

// Registry is a connection to a registry namespace.
type Registry = reg.Client

// ZooKeeperConfig configures a ZooKeeper registry (ElasticJob's
// ZookeeperConfiguration keys and defaults).
type ZooKeeperConfig = zookeeper.Config

// ZooKeeper connects to a ZooKeeper ensemble with upstream's defaults.
func ZooKeeper(ctx context.Context, serverLists, namespace string) (Registry, error) {
	return ZooKeeperWith(ctx, zookeeper.DefaultConfig(serverLists, namespace))
}

// ZooKeeperWith connects with a full configuration.
func ZooKeeperWith(ctx context.Context, cfg ZooKeeperConfig) (Registry, error) {
	return zookeeper.Connect(ctx, cfg)
}

// EmbeddedRegistry returns an in-process registry for one process
// (standalone: no ZooKeeper needed, nothing shared with other processes).
func EmbeddedRegistry(namespace string) (Registry, error) {
	return embedded.NewServer().Connect(namespace)
}

// DataflowJob fetches data for an item and processes it. With the job prop
// streaming.process=true, fetch/process repeat until fetch returns nothing,
// resharding is pending, or the job is stopped.
type DataflowJob[T any] = executor.DataflowJob[T]

// Plugins resolves extension types by kind and name: an spi.Plugins (such
// as Builtins, the default) serves them in-process, a host/pluginhost.Catalog
// serves plugin binaries.
type Plugins = kernel.Plugins

// Option configures a Scheduler.
type Option func(*options)

type options struct {
	log       hclog.Logger
	plugins   Plugins
	listeners spi.Plugins // only JobListeners
	drain     time.Duration
	ip        instance.IPOptions
	tracing   *Tracing
}

// Tracing is what WithTracing records execution history with.
type Tracing struct {
	// Type is the tracing sink's type in the plugins: RDB (built in) or a
	// plugin's.
	Type string
	// Config is the sink's settings; for RDB the data source (driver,
	// url, username, password, maximumPoolSize; see docs/tracing.md).
	Config map[string]string
	// Include and Exclude filter the jobs as the starter's
	// includeJobNames and excludeJobNames (at most one may be set).
	Include, Exclude []string
}

// WithTracing records every item's start and completion and every
// trigger's status into the tracing sink (upstream's event tracing; see
// docs/tracing.md). Events are queued and written in batches in the
// background, never slowing a trigger; Shutdown flushes them. The read
// side is the sink itself: spi.Resolve[spi.Tracer] on the plugins, then
// QueryExecutions and QueryStatuses.
func WithTracing(t Tracing) Option { return func(o *options) { o.tracing = &t } }

// WithLogger sets the logger (default: none).
func WithLogger(l hclog.Logger) Option { return func(o *options) { o.log = l } }

// WithPlugins replaces the in-process built-ins.
func WithPlugins(p Plugins) Option { return func(o *options) { o.plugins = p } }

// JobListener is a job listener (upstream's ElasticJobListener), named in a
// job's config by jobListenerTypes; see spi.JobListener.
type JobListener = spi.JobListener

// WithListener serves an in-process job listener under name, so that jobs
// naming it in JobConfig.JobListenerTypes (matched case-insensitively) call
// it. It takes precedence over a listener of the same name in the plugins
// (the built-ins LOG and LOG_ONCE, or WithPlugins'). A listener whose
// Describe says DistributeOnce runs once per cluster-wide trigger.
func WithListener(name string, l JobListener) Option {
	return func(o *options) {
		if o.listeners.JobListeners == nil {
			o.listeners.JobListeners = map[string]spi.JobListener{}
		}
		o.listeners.JobListeners[name] = l
	}
}

// layered resolves types in local first, then in Plugins.
type layered struct {
	Plugins
	local spi.Plugins
}

func (l layered) Lookup(kind spi.Kind, name string) (any, error) {
	if impl, err := l.local.Lookup(kind, name); err == nil {
		return impl, nil
	}
	return l.Plugins.Lookup(kind, name)
}

// WithDrainTimeout bounds how long Shutdown waits for running items before
// cancelling them (default 30 s); 0 cancels them at once.
func WithDrainTimeout(d time.Duration) Option { return func(o *options) { o.drain = d } }

// WithPreferredNetwork picks this process's IP (part of its instance id)
// from a preferred interface name or IP prefix/regex.
func WithPreferredNetwork(iface, ip string) Option {
	return func(o *options) { o.ip.PreferredInterface, o.ip.PreferredIP = iface, ip }
}

// Builtins returns the built-in sharding strategies, error handlers, job
// types, thread-pool sizes and job listeners (LOG, LOG_ONCE), served
// in-process.
func Builtins(log hclog.Logger) Plugins {
	return builtin.New(builtin.Options{Logger: log})
}

// Scheduler runs this process's jobs.
type Scheduler struct {
	s    *kernel.Kernel
	reg  Registry
	id   string
	mu   sync.Mutex
	stop context.CancelFunc
	done chan error
	// rec is the tracing writer (nil without WithTracing), and closeRec
	// closes its sink after the last flush (nil when not ours).
	rec      *tracing.Recorder
	closeRec io.Closer
}

// ErrStarted means Start was called twice, or Shutdown before Start.
var ErrStarted = errors.New("ejob: scheduler already started or not started")

// NewScheduler returns a Scheduler on the registry r.
func NewScheduler(r Registry, opts ...Option) (*Scheduler, error) {
	o := options{log: hclog.NewNullLogger(), drain: kernel.DefaultDrainTimeout}
	for _, f := range opts {
		f(&o)
	}
	ownPlugins := o.plugins == nil
	if ownPlugins {
		o.plugins = Builtins(o.log.Named("builtin"))
	}
	if len(o.listeners.JobListeners) > 0 {
		o.plugins = layered{Plugins: o.plugins, local: o.listeners}
	}
	id, err := instance.LocalID(o.ip)
	if err != nil {
		return nil, fmt.Errorf("ejob: choose this process's instance id: %w", err)
	}
	var (
		rec      *tracing.Recorder
		events   executor.Events
		closeRec io.Closer
	)
	if t := o.tracing; t != nil {
		tr, err := spi.Resolve[spi.Tracer](o.plugins, t.Type)
		if err != nil {
			return nil, fmt.Errorf("ejob: tracing: %w", err)
		}
		if c, ok := tr.(io.Closer); ok && ownPlugins {
			// The built-in RDB sink's pools are this scheduler's.
			closeRec = c
		}
		if err := tr.Validate(context.Background(), spi.TraceValidateRequest{Config: t.Config}); err != nil {
			return nil, fmt.Errorf("ejob: tracing: %w", err)
		}
		rec, err = tracing.New(tracing.Options{Tracer: tr, Config: t.Config,
			Filter: tracing.Filter{Include: t.Include, Exclude: t.Exclude}, Logger: o.log.Named("tracing")})
		if err != nil {
			return nil, fmt.Errorf("ejob: tracing: %w", err)
		}
		events = rec
	}
	s, err := kernel.New(kernel.Options{
		Client: r, InstanceID: id.String(), ServerIP: id.IP, Plugins: o.plugins,
		Logger: o.log.With("instance", id.String()), DrainTimeout: o.drain, Events: events,
	})
	if err != nil {
		return nil, err
	}
	return &Scheduler{s: s, reg: r, id: id.String(), rec: rec, closeRec: closeRec}, nil
}

// InstanceID returns this process's instance id (ip@-@pid).
func (s *Scheduler) InstanceID() string { return s.id }

// Simple adds a SIMPLE job: fn runs once per item of each execution, with a
// ctx cancelled on execution timeout, registry session loss and shutdown.
// ctx bounds the checks of the job's configuration (plugin calls when
// WithPlugins serves types out of process).
func (s *Scheduler) Simple(ctx context.Context, cfg *JobConfig, fn func(ctx context.Context, sc ShardingContext) error) error {
	return s.s.Add(ctx, kernel.Job{Config: cfg, Runner: executor.SimpleFunc(fn), ClassName: "ejob.SimpleJob"})
}

// Dataflow adds a DATAFLOW job to s; ctx as for Simple.
func Dataflow[T any](ctx context.Context, s *Scheduler, cfg *JobConfig, job DataflowJob[T]) error {
	return s.s.Add(ctx, kernel.Job{Config: cfg, ClassName: "ejob.DataflowJob",
		NewRunner: func(f executor.Facade) executor.ItemRunner { return executor.NewDataflow(job, f) }})
}

// Typed adds a job of a type served by the plugins (SCRIPT, HTTP, ...); ctx
// bounds the validation of its props by the job type.
func (s *Scheduler) Typed(ctx context.Context, cfg *JobConfig, jobType string) error {
	return s.s.Add(ctx, kernel.Job{Config: cfg, Type: jobType})
}

// Start registers the jobs and starts firing them; it returns once every
// job has registered (or ctx ends). The scheduler runs until Shutdown.
func (s *Scheduler) Start(ctx context.Context) error {
	s.mu.Lock()
	if s.done != nil {
		s.mu.Unlock()
		return ErrStarted
	}
	runCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	s.stop, s.done = stop, make(chan error, 1)
	s.mu.Unlock()
	go func() {
		if s.rec == nil {
			s.done <- s.s.Run(runCtx)
			return
		}
		// The writer outlives the scheduler's drain, so that the last
		// items' events are flushed.
		wctx, stopWriter := context.WithCancel(context.Background())
		written := make(chan struct{})
		go func() { _ = s.rec.Run(wctx); close(written) }()
		err := s.s.Run(runCtx)
		stopWriter()
		<-written
		if s.closeRec != nil {
			_ = s.closeRec.Close()
		}
		s.done <- err
	}()
	if err := s.s.Ready(ctx); err != nil {
		s.Shutdown(context.Background())
		return err
	}
	return nil
}

// Execute runs a job once now on every process that runs it (upstream's
// OneOffJobBootstrap.execute): each runs its own items. A job that no
// process would run (none runs it, or it is disabled on every server
// where one does) is refused with an error matching
// lifecycle.ErrNotRunnable that says which.
func (s *Scheduler) Execute(ctx context.Context, jobName string) error {
	if _, err := lifecycle.TriggerAll(ctx, s.reg, jobName); err != nil {
		return fmt.Errorf("ejob: %w", err)
	}
	return nil
}

// Shutdown stops firing, waits for running items up to the drain timeout
// (then cancels them), and leaves the registry; it does not close the
// registry. If ctx ends first, Shutdown returns ctx's error and the drain
// goes on in the background.
func (s *Scheduler) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	stop, done := s.stop, s.done
	s.mu.Unlock()
	if done == nil {
		return ErrStarted
	}
	stop()
	select {
	case err := <-done:
		done <- err // later calls return the same result
		return err
	case <-ctx.Done():
		return fmt.Errorf("ejob: shutdown: %w", ctx.Err())
	}
}
