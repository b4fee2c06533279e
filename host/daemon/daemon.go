package daemon

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"runtime/debug"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ejob-io/ejob/core/executor"
	"github.com/ejob-io/ejob/core/instance"
	"github.com/ejob-io/ejob/core/kernel"
	"github.com/ejob-io/ejob/core/reg"
	"github.com/ejob-io/ejob/core/reg/embedded"
	"github.com/ejob-io/ejob/core/reg/httpreg"
	"github.com/ejob-io/ejob/core/reg/zookeeper"
	"github.com/ejob-io/ejob/core/tracing"
	"github.com/ejob-io/ejob/core/tracing/httptrace"
	"github.com/ejob-io/ejob/host/console"
	"github.com/ejob-io/ejob/host/control"
	"github.com/ejob-io/ejob/host/dump"
	"github.com/ejob-io/ejob/host/hostconfig"
	"github.com/ejob-io/ejob/host/httpapi"
	"github.com/ejob-io/ejob/host/metrics"
	"github.com/ejob-io/ejob/host/pluginhost"
	"github.com/ejob-io/ejob/internal/pagetrim"
	"github.com/ejob-io/ejob/spi"
)

// StandaloneNamespace is the embedded registry's namespace.
const StandaloneNamespace = "ejob"

// startupTail is how long after "host started" the host returns the
// startup's garbage to the OS a second time (see Run).
const startupTail = 5 * time.Second

// Options configure Run.
type Options struct {
	// ConfigFile is the path of the YAML file.
	ConfigFile string
	// PluginsDir overrides the file's ejob.pluginsDir when non-empty.
	PluginsDir string
	// LockFile overrides the file's ejob.lockFile when non-empty.
	LockFile string
	// LogLevelFixed says the command line or the environment chose
	// Logger's level: the file's ejob.logLevel then does not change it.
	LogLevelFixed bool
	// Builtin serves the built-in types (the ejob binary itself).
	Builtin *pluginhost.Builtin
	// Logger is the host logger.
	Logger hclog.Logger
	// Getenv resolves ${VAR} in the file and the EJOB_* settings; nil:
	// the process environment.
	Getenv func(string) (string, bool)
	// Abort, when closed after ctx ended, ends the drain at once: running
	// items are cancelled, then the host leaves the registry (an
	// operator's second SIGTERM).
	Abort <-chan struct{}
	// Ready, when set, is called once every job has registered.
	Ready func(instanceID string)
}

// plan is what the host does with its settings: the file's ejob: section
// with the command line's overrides. Every field of
// hostconfig.HostSettings must change it (TestEveryHostSettingIsConsumed),
// so that no setting is parsed and then ignored.
type plan struct {
	// catalog opens the plugin catalog (directory, lock file, stop grace).
	catalog pluginhost.Config
	// drain is the scheduler's drain timeout.
	drain time.Duration
	// level is the host logger's level; hclog.NoLevel keeps it.
	level hclog.Level
	// ip selects this host's IP, part of its instance id.
	ip instance.IPOptions
	// dumpPort is the dump service's port; nil: none.
	dumpPort *int
	// dumpAddr is the IP address the dump service listens on ("":
	// loopback).
	dumpAddr string
	// javaPeers is what to do about values a Java instance cannot read
	// (checkJavaPeers).
	javaPeers hostconfig.JavaPeers
	// retention is the age beyond which recorded executions are purged
	// daily (0: never).
	retention time.Duration
	// http is the operations HTTP server's settings; nil: none.
	http *hostconfig.HTTPSettings
	// controlSocket is the control socket's path as the file sets it
	// ("": the default); a standalone host serves one (host/control).
	controlSocket string
}

func newPlan(h hostconfig.HostSettings, opts Options) plan {
	p := plan{
		catalog: pluginhost.Config{Dir: h.PluginsDir, LockFile: h.LockFile, StopGrace: h.PluginStopGrace,
			Builtin: opts.Builtin, Logger: opts.Logger},
		drain:     h.DrainTimeout,
		level:     hclog.NoLevel,
		ip:        h.IPOptions(opts.getenv),
		dumpPort:  h.DumpPort,
		dumpAddr:  h.DumpAddress,
		javaPeers: h.JavaPeers,
		retention: h.TracingRetention,
		http:      h.HTTP,

		controlSocket: h.ControlSocket,
	}
	if opts.Builtin != nil {
		b := *opts.Builtin
		b.NoChecksum = true // a host shows it nowhere
		p.catalog.Builtin = &b
	}
	if p.javaPeers == "" {
		p.javaPeers = hostconfig.DefaultJavaPeers
	}
	if opts.PluginsDir != "" {
		p.catalog.Dir = opts.PluginsDir
	}
	if opts.LockFile != "" {
		p.catalog.LockFile = opts.LockFile
	}
	if !opts.LogLevelFixed && h.LogLevel != "" {
		p.level = hclog.LevelFromString(h.LogLevel)
	}
	return p
}

// getenv looks k up with Getenv, or in the process environment.
func (opts Options) getenv(k string) string {
	if opts.Getenv != nil {
		v, _ := opts.Getenv(k)
		return v
	}
	return os.Getenv(k)
}

// Load reads and validates the config file against the plugin catalog.
// The catalog is opened with the file's plugins directory (or the
// override) and returned open; the caller closes it. The file's log level
// is applied to opts.Logger first, unless opts.LogLevelFixed.
func Load(ctx context.Context, opts Options) (*hostconfig.File, *pluginhost.Catalog, error) {
	file, cat, _, err := load(ctx, opts, nil, &kernel.ValidatedProps{})
	return file, cat, err
}

// Tracing is a config file's elasticjob.tracing sink, for the commands
// that read the history without running jobs (ejob history, ejob serve).
type Tracing struct {
	// Tracer is the sink, Config its settings (the data source).
	Tracer spi.Tracer
	Config map[string]string
}

// LoadTracing is Load, and the sink of the file's elasticjob.tracing
// resolved in the catalog: nil when the file has no such section. The
// catalog is returned open; the caller closes it.
func LoadTracing(ctx context.Context, opts Options) (*hostconfig.File, *pluginhost.Catalog, *Tracing, error) {
	file, cat, err := Load(ctx, opts)
	if err != nil {
		return nil, nil, nil, err
	}
	if file.Tracing == nil {
		return file, cat, nil, nil
	}
	tr, err := spi.Resolve[spi.Tracer](cat, file.Tracing.Type)
	if err != nil {
		cat.Close()
		return nil, nil, nil, fmt.Errorf("%s:%d: elasticjob.tracing: %w", file.Name, file.Tracing.Line, err)
	}
	return file, cat, &Tracing{Tracer: tr, Config: file.Tracing.DataSource}, nil
}

// load is Load; the catalog reports to obs when it is not nil. The props
// the plugins accept are remembered in validated (each distinct type and
// props is checked once).
func load(ctx context.Context, opts Options, obs pluginhost.Observer, validated *kernel.ValidatedProps) (*hostconfig.File, *pluginhost.Catalog, plan, error) {
	if opts.Logger == nil {
		opts.Logger = hclog.NewNullLogger()
	}
	// The host settings name the plugins directory the job types are
	// checked against; then the rest of the file is checked at once.
	// Every problem is reported together: with a bad ejob: section or
	// plugins directory the rest is checked without the catalog.
	opened, err := hostconfig.Open(opts.ConfigFile, opts.Getenv)
	if err != nil {
		return nil, nil, plan{}, err
	}
	p := newPlan(opened.Host(), opts)
	p.catalog.Observer = obs
	var cat *pluginhost.Catalog
	var lo hostconfig.LoadOptions
	if opened.HostOK() {
		if p.level != hclog.NoLevel {
			// Before the catalog starts plugin processes: they take the
			// host's level at launch.
			opts.Logger.SetLevel(p.level)
		}
		cat, err = pluginhost.Open(ctx, p.catalog)
		switch {
		case err != nil && ctx.Err() != nil:
			return nil, nil, plan{}, err
		case err != nil:
			opened.PluginsProblem(err, opts.PluginsDir != "")
		default:
			lo = catalogChecks(ctx, cat, validated)
		}
	} else if dir := p.catalog.Dir; dir != "" {
		// The catalog is not opened with settings that have problems,
		// but a plugins directory that is not there is one more.
		if _, err := os.Stat(dir); err != nil {
			opened.PluginsProblem(fmt.Errorf("plugins directory: %w", err), opts.PluginsDir != "")
		}
	}
	file, err := opened.Check(lo)
	if err != nil {
		if cat != nil {
			cat.Close()
		}
		return nil, nil, plan{}, err
	}
	p.dumpPort, p.dumpAddr = file.Host.DumpPort, file.Host.DumpAddress // elasticjob.dump: known after Check
	return file, cat, p, nil
}

// catalogChecks are the checks of a file's types and props against the
// open catalog cat.
func catalogChecks(ctx context.Context, cat *pluginhost.Catalog, validated *kernel.ValidatedProps) hostconfig.LoadOptions {
	return hostconfig.LoadOptions{
		KnownType: func(k spi.Kind, name string) bool { _, err := cat.Provider(k, name); return err == nil },
		Types:     cat.Types,
		KnownListener: func(name string) bool {
			_, err := cat.Provider(spi.KindJobListener, name)
			return err == nil
		},
		ValidateProps: func(kind spi.Kind, typ, job string, props map[string]string) error {
			if kind == spi.KindTracing {
				return validateProps(ctx, cat, kind, typ, job, props)
			}
			return validated.Check(kind, typ, props, func() error {
				return validateProps(ctx, cat, kind, typ, job, props)
			})
		},
	}
}

// validateProps asks the job type or error handler typ whether props suit
// it, so that a bad prop is reported with its file and line.
func validateProps(ctx context.Context, cat *pluginhost.Catalog, kind spi.Kind, typ, job string, props map[string]string) error {
	req := spi.ValidatePropsRequest{JobName: job, Props: props}
	switch kind {
	case spi.KindJobType:
		ex, err := spi.Resolve[spi.JobExecutor](cat, typ)
		if err != nil {
			return err
		}
		return ex.Validate(ctx, req)
	case spi.KindErrorHandler:
		h, err := spi.Resolve[spi.ErrorHandler](cat, typ)
		if err != nil {
			return err
		}
		return h.Validate(ctx, req)
	case spi.KindTracing:
		tr, err := spi.Resolve[spi.Tracer](cat, typ)
		if err != nil {
			return err
		}
		return tr.Validate(ctx, spi.TraceValidateRequest{Config: props})
	}
	return nil
}

// Connect opens the file's registry: ZooKeeper when it has a regCenter,
// else a fresh embedded registry (standalone, one host).
func Connect(ctx context.Context, file *hostconfig.File, log hclog.Logger) (reg.Client, error) {
	if file.Registry == nil {
		log.Info("no regCenter configured: running standalone on the embedded registry")
		return embedded.NewServer().Connect(StandaloneNamespace)
	}
	cfg := *file.Registry
	cfg.Logger = log.Named("zookeeper")
	c, err := zookeeper.Connect(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect to ZooKeeper %s: %w", cfg.ServerLists, err)
	}
	return c, nil
}

// Run runs the host until ctx ends, then drains (ejob.drainTimeout) and
// leaves the registry.
func Run(ctx context.Context, opts Options) error {
	if opts.Logger == nil {
		opts.Logger = hclog.NewNullLogger()
	}
	// The collectors cost little: the kernel and the catalog report to
	// them whether or not ejob.http serves them.
	mx := metrics.New()
	validated := &kernel.ValidatedProps{}
	file, cat, p, err := load(ctx, opts, mx.Jobs(), validated)
	if err != nil {
		return err
	}
	defer cat.Close()
	id, err := instance.LocalID(p.ip)
	if err != nil {
		return fmt.Errorf("choose this host's instance id: %w", err)
	}
	log := opts.Logger.With("instance", id.String())
	var ctl *control.Listener
	if file.Registry == nil {
		// Before anything runs: a second host on the file is refused here.
		switch ctl, err = listenControl(file, p.controlSocket, opts, log); {
		case errors.Is(err, errors.ErrUnsupported):
			log.Warn("the operator commands cannot reach this host: no control socket on this system", "error", err)
		case err != nil:
			return err
		default:
			defer ctl.Close()
		}
	}
	client, err := Connect(ctx, file, log)
	if err != nil {
		return err
	}
	defer client.Close()
	if file.Registry != nil {
		// A ZooKeeper namespace may be shared with Java instances; the
		// embedded registry never is.
		if err := checkJavaPeers(ctx, client, file, p.javaPeers, log); err != nil {
			return err
		}
	}
	tr, err := startTracing(ctx, file, cat, log)
	if err != nil {
		return err
	}
	if tr.rec != nil {
		mx.Tracing(tr.rec)
	}
	// After the scheduler has drained (its items' last events are queued)
	// and before the catalog stops the plugin that stores them.
	defer tr.stop()
	if ctl != nil {
		ctlDone := serveControl(ctx, ctl, client, tr, log)
		// Until the host has drained and left: the commands reach it
		// while its items finish, and no second host starts meanwhile.
		defer ctlDone()
	}
	s, err := kernel.New(kernel.Options{
		Client: client, InstanceID: id.String(), ServerIP: id.IP,
		Plugins: cat, Logger: log, DrainTimeout: p.drain,
		Events: executor.MultiEvents{tr.events, mx.Jobs()}, Observer: mx.Jobs(),
		Validated: validated,
	})
	if err != nil {
		return err
	}
	for _, j := range file.Jobs {
		if err := s.Add(ctx, kernel.Job{Config: j.Config, Type: j.Type}); err != nil {
			return fmt.Errorf("%s:%d: %w", file.Name, j.Line, err)
		}
	}
	mx.JobConfigErrors(s.ConfigErrors)
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	if p.http != nil {
		mx.ExpectJobs()
		httpDone, err := serveHTTP(runCtx, *p.http, file, client, mx, tr, s.LiveOutput, log)
		if err != nil {
			return err
		}
		defer func() { stop(); <-httpDone }()
	}
	if p.dumpPort != nil {
		dumpDone := serveDump(runCtx, p.dumpAddr, *p.dumpPort, client, s, log)
		defer func() { stop(); <-dumpDone }()
	}
	done := make(chan error, 1)
	go func() { done <- s.Run(runCtx) }()
	// A registry that refuses this host's login for good (SASL) stops
	// the host: nothing it does can succeed any more.
	regFailure := func() error { return nil }
	if f, ok := client.(failer); ok {
		regFailure = f.Failure
		finished := make(chan struct{})
		defer close(finished)
		go func() {
			select {
			case <-f.Failed():
				log.Error("the registry refused this host's authentication: stopping", "error", f.Failure())
				stop()
			case <-finished:
			}
		}()
	}
	if opts.Abort != nil {
		finished := make(chan struct{})
		defer close(finished)
		go func() {
			select {
			case <-opts.Abort:
				log.Warn("second signal: cancelling running items now")
				s.Abort()
			case <-finished:
			}
		}()
	}
	started := len(file.Jobs)
	if err := s.Ready(ctx); err != nil && ctx.Err() == nil {
		if ferr := regFailure(); ferr != nil {
			stop()
			<-done
			return fmt.Errorf("registry: %w", ferr)
		}
		var se *kernel.StartError
		if !errors.As(err, &se) || se.All() {
			// A host without a job is not a healthy host: stop, and say
			// why, so that a supervisor sees the failure.
			stop()
			<-done
			return fmt.Errorf("no job could start: %w%s", err, startHint(err, file))
		}
		for _, f := range se.Failed {
			log.Error("job failed to start; the host runs the others", "job", f.Job, "error", f.Err)
		}
		started -= len(se.Failed)
	}
	if tr.tracer != nil && p.retention > 0 {
		go tr.purgeDaily(runCtx, s, file.Jobs[0].Name, p.retention)
	}
	if ctx.Err() == nil && regFailure() == nil {
		mx.JobsRegistered()
		log.Info("host started", "jobs", started, "registry", registryName(file))
		if opts.Ready != nil {
			opts.Ready(id.String())
		}
		// Startup is a burst (the config's YAML, every job's registration
		// and cache load, a goroutine stack per job starting) whose
		// garbage an idle host would otherwise keep mapped until the
		// runtime's periodic GC (2 min) and its scavenger got to it: with
		// 1,000 jobs 13-18 MiB of the host's RSS. A GC now, and one more
		// once the startup's tail (the jobs' queued tree events, the last
		// startup goroutines) has run, hand it back: some 10-30 ms of CPU
		// each, twice per start.
		//
		// The same goes for the binary's pages that start-up touched
		// (every package's init, the config's parsing): the process
		// drops its mappings of them, once the tail has run, and maps
		// again what it runs from then on (pagetrim).
		debug.FreeOSMemory()
		again := time.AfterFunc(startupTail, func() {
			debug.FreeOSMemory()
			releaseStartupPages(log)
		})
		defer again.Stop()
	}
	err = <-done
	if ferr := regFailure(); ferr != nil {
		return fmt.Errorf("registry: %w", ferr)
	}
	return err
}

// listenControl opens the control socket of a standalone host on file
// (ejob.controlSocket, or the default derived from the file's path).
func listenControl(file *hostconfig.File, setting string, opts Options, log hclog.Logger) (*control.Listener, error) {
	path, err := control.SocketPath(file.Name, setting, opts.getenv)
	if err != nil {
		return nil, err
	}
	l, err := control.Listen(file.Name, path, log.Named("control"))
	if err != nil {
		return nil, err
	}
	return l, nil
}

// ControlHandler is what a standalone host serves on its control socket:
// the registry calls of the operator commands under httpreg.PathPrefix
// and, when tr is not nil, the reads and purge of its execution history
// (tr with its settings config) under httptrace.PathPrefix, on a mux that
// more of the host's operations can be mounted on.
func ControlHandler(c reg.Client, tr spi.Tracer, config map[string]string, log hclog.Logger) *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle(httpreg.PathPrefix, httpreg.Handler(c, httpreg.HandlerOptions{Logger: log}))
	if tr != nil {
		mux.Handle(httptrace.PathPrefix, httptrace.Handler(tr, config, httptrace.HandlerOptions{Logger: log}))
	}
	return mux
}

// serveControl serves the control socket l with the registry c and the
// history of tr until the returned stop is called; stop returns once the
// server has stopped.
func serveControl(ctx context.Context, l *control.Listener, c reg.Client, tr *tracingRun, log hclog.Logger) (stop func()) {
	clog := log.Named("control")
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := control.Serve(sctx, l, ControlHandler(c, tr.tracer, tr.config, clog)); err != nil {
			clog.Error("the control socket stopped", "socket", l.Path(), "error", err)
		}
	}()
	clog.Info("serving the operator commands on the control socket", "socket", l.Path())
	return func() { cancel(); <-done }
}

// failer is a registry client that can fail for good (the ZooKeeper
// client after a refused SASL login).
type failer interface {
	Failed() <-chan struct{}
	Failure() error
}

// serveDump opens the dump port (elasticjob.dump.port on
// elasticjob.dump.address) and serves it until ctx ends; the returned
// channel closes when it has stopped. As upstream, a port that cannot be
// opened is logged and the host runs on without it.
func serveDump(ctx context.Context, addr string, port int, c reg.Client, s *kernel.Kernel, log hclog.Logger) <-chan struct{} {
	done := make(chan struct{})
	srv, err := dump.Listen(addr, port, dump.Options{Client: c, Logger: log.Named("dump"),
		Caches: func(job string) (dump.Cache, bool) {
			if cache, ok := s.JobCache(job); ok {
				return cache, true
			}
			return nil, false
		}})
	if err != nil {
		log.Error("the dump port cannot be opened; running without it", "address", addr, "port", port, "error", err)
		close(done)
		return done
	}
	go func() {
		defer close(done)
		if err := srv.Run(ctx); err != nil {
			log.Error("the dump port stopped", "error", err)
		}
	}()
	return done
}

// tracingRun is the host's event tracing: the events the scheduler posts
// to (nil without elasticjob.tracing), the sink and its settings, and stop,
// which flushes the queue (within tracing.DefaultFlushTimeout) and waits
// for the writer.
type tracingRun struct {
	events executor.Events
	// rec is the writer (nil without elasticjob.tracing).
	rec    *tracing.Recorder
	tracer spi.Tracer
	config map[string]string
	log    hclog.Logger
	stop   func()
}

// startTracing starts the writer of the file's elasticjob.tracing, if any.
// A standalone host without one records into memory (tracing.Memory: the
// last runs of each item, with their output), so that its console and CLI
// still show recent runs.
func startTracing(ctx context.Context, file *hostconfig.File, cat *pluginhost.Catalog, log hclog.Logger) (*tracingRun, error) {
	t := file.Tracing
	if t == nil {
		if file.Registry != nil {
			return &tracingRun{stop: func() {}}, nil
		}
		return recordTracing(ctx, tracing.NewMemory(tracing.MemoryOptions{}), map[string]string{"driver": tracing.MemoryDriver},
			tracing.Filter{}, log.Named("tracing"), "type", tracing.MemoryDriver, "runs_per_item", tracing.DefaultMemoryRuns)
	}
	tr, err := spi.Resolve[spi.Tracer](cat, t.Type)
	if err != nil {
		return nil, fmt.Errorf("%s:%d: elasticjob.tracing: %w", file.Name, t.Line, err)
	}
	if err := (tracing.Filter{Include: t.Include, Exclude: t.Exclude}).Validate(); err != nil {
		return nil, fmt.Errorf("%s:%d: elasticjob.tracing: %w", file.Name, t.Line, err)
	}
	// Never the data source's values: they may hold a password.
	attrs := []any{"type", t.Type}
	if d := t.DataSource["driver"]; d != "" {
		attrs = append(attrs, "driver", d)
	}
	if t.DefaultDataSource {
		attrs = append(attrs, "file", t.DataSource["url"])
	}
	return recordTracing(ctx, tr, t.DataSource, tracing.Filter{Include: t.Include, Exclude: t.Exclude}, log.Named("tracing"), attrs...)
}

// recordTracing starts a Recorder writing into tr until the run's stop.
func recordTracing(ctx context.Context, tr spi.Tracer, config map[string]string, filter tracing.Filter, tlog hclog.Logger,
	attrs ...any) (*tracingRun, error) {
	rec, err := tracing.New(tracing.Options{Tracer: tr, Config: config, Filter: filter, Logger: tlog})
	if err != nil {
		return nil, err
	}
	tlog.Info("recording execution events", attrs...)
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = rec.Run(rctx)
	}()
	return &tracingRun{events: rec, rec: rec, tracer: tr, config: config, log: tlog, stop: func() {
		cancel()
		<-done
		if d := rec.Dropped(); d > 0 {
			tlog.Warn("execution events were dropped during this run", "dropped", d, "written", rec.Written())
		}
	}}, nil
}

// purgeCheck is how often the retention loop asks whether this host leads
// job and a day has passed since its last purge.
const purgeCheck = time.Hour

// purgeDaily deletes what is older than retention, once a day, while this
// host leads job (the first of its jobs by name), until ctx ends. The
// first check is at once.
func (t *tracingRun) purgeDaily(ctx context.Context, s *kernel.Kernel, job string, retention time.Duration) {
	tick := time.NewTicker(purgeCheck)
	defer tick.Stop()
	var last time.Time
	for {
		if leader, err := s.IsLeader(ctx, job); err == nil && leader && time.Since(last) >= 24*time.Hour {
			before := time.Now().Add(-retention)
			resp, err := t.tracer.Purge(ctx, spi.TracePurgeRequest{Config: t.config, Before: before})
			if err != nil {
				t.log.Error("tracing: purge failed; retrying in an hour", "error", err)
			} else {
				last = time.Now()
				t.log.Info("tracing: purged old history", "executions", resp.Executions, "outputs", resp.Outputs, "statuses", resp.Statuses,
					"before", before.Format(time.RFC3339))
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// serveHTTP opens the operations HTTP server (ejob.http) and serves it,
// with the registry session followed for /readyz and /metrics, until ctx
// ends; the returned channel closes when both have stopped. The
// event-trace endpoints query tr's sink, if any. A listen
// address that cannot be opened fails the start: probes and operators
// depend on it.
func serveHTTP(ctx context.Context, h hostconfig.HTTPSettings, file *hostconfig.File, c reg.Client, mx *metrics.Metrics, tr *tracingRun,
	live httpapi.LiveOutputFunc, log hclog.Logger) (<-chan struct{}, error) {
	opts := HTTPOptions(h, file.Registry, c, mx, log.Named("http"))
	opts.Tracer, opts.TracerConfig, opts.LiveOutput = tr.tracer, tr.config, live
	srv, err := httpapi.Listen(opts)
	if err != nil {
		return nil, err
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { mx.WatchSession(ctx, c) })
	wg.Go(func() {
		if err := srv.Run(ctx); err != nil {
			log.Error("the operations HTTP server stopped", "error", err)
		}
	})
	go func() { wg.Wait(); close(done) }()
	return done, nil
}

// HTTPOptions are the operations server's options for the settings h on
// the registry c (zk nil: the embedded registry).
func HTTPOptions(h hostconfig.HTTPSettings, zk *zookeeper.Config, c reg.Client, mx *metrics.Metrics, log hclog.Logger) httpapi.Options {
	o := httpapi.Options{Listen: h.Listen, Client: c, Metrics: mx.Handler(), Ready: mx.Ready, ReadyDetail: mx.ReadyDetail, Logger: log,
		Console: console.Handler, SessionIdle: h.SessionIdleTimeout, SessionMaxAge: h.SessionMaxAge,
		Registry: httpapi.RegistryInfo{ZKAddressList: "embedded", Namespace: c.Namespace()}}
	if zk != nil {
		o.Registry = httpapi.RegistryInfo{ZKAddressList: zk.ServerLists, Namespace: zk.Namespace, HasDigest: zk.Digest != ""}
	}
	for _, u := range h.Users {
		o.Users = append(o.Users, httpapi.User{Name: u.Name, PasswordHash: u.PasswordHash, Role: httpapi.Role(u.Role)})
	}
	o.OIDC = h.OIDC
	o.TLS, o.AllowInsecureHTTP, o.TrustedProxies, o.AuditLog = h.TLS, h.AllowInsecureHTTP, h.TrustedProxies, h.AuditLog
	return o
}

// startHint explains the start errors whose cause is in the file.
func startHint(err error, file *hostconfig.File) string {
	if errors.Is(err, reg.ErrNoAuth) && file.Registry != nil && file.Registry.SASL.ACL {
		return " (the namespace's nodes belong to another ZooKeeper identity: check elasticjob.regCenter.sasl and digest)"
	}
	if errors.Is(err, reg.ErrNoAuth) && file.Registry != nil {
		if file.Registry.Digest == "" {
			return " (the namespace's nodes belong to a ZooKeeper digest identity: set elasticjob.regCenter.digest to it)"
		}
		return " (the namespace's nodes belong to another ZooKeeper digest identity: check elasticjob.regCenter.digest)"
	}
	return ""
}

func registryName(f *hostconfig.File) string {
	if f.Registry == nil {
		return "embedded"
	}
	return f.Registry.ServerLists + "/" + f.Registry.Namespace
}

// releaseStartupPages drops the process's mappings of the binary's
// start-up pages (pagetrim.ReleaseExecutable) and logs the resident size
// before and after.
func releaseStartupPages(log hclog.Logger) {
	before := pagetrim.ResidentKiB()
	_, err := pagetrim.ReleaseExecutable()
	switch {
	case errors.Is(err, pagetrim.ErrUnsupported):
	case err != nil:
		log.Warn("the binary's start-up pages stay mapped", "error", err)
	default:
		log.Info("released the binary's start-up pages", "rss_before_kib", before, "rss_after_kib", pagetrim.ResidentKiB())
	}
}
