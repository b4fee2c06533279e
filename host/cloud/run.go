package cloud

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"

	"github.com/hashicorp/go-hclog"
	"golang.org/x/sync/errgroup"

	"github.com/ejob-io/ejob/core/reg/zookeeper"
	"github.com/ejob-io/ejob/host/console"
	"github.com/ejob-io/ejob/host/daemon"
	"github.com/ejob-io/ejob/host/hostconfig"
	"github.com/ejob-io/ejob/host/httpapi"
	"github.com/ejob-io/ejob/host/metrics"
	"github.com/ejob-io/ejob/host/pluginhost"
	"github.com/ejob-io/ejob/spi"
)

// ErrNoLauncher: the configured launcher type is served by no plugin.
var ErrNoLauncher = errors.New("no such launcher")

// RunOptions are what `ejob cloud -c FILE` runs with.
type RunOptions struct {
	File *hostconfig.CloudFile
	// Builtin serves the built-in plugin types (nil: none).
	Builtin *pluginhost.Builtin
	Logger  hclog.Logger
	// Ready, when set, receives the REST API's address once it listens.
	Ready func(addr string)
}

// Run runs the cloud scheduler of o.File until ctx ends: the ZooKeeper
// session, the launcher plugin, the election and the REST API.
func Run(ctx context.Context, o RunOptions) error {
	f, log := o.File, o.Logger
	if log == nil {
		log = hclog.NewNullLogger()
	}
	cat, err := pluginhost.Open(ctx, pluginhost.Config{Dir: f.PluginsDir, LockFile: f.LockFile, Builtin: o.Builtin, Logger: log})
	if err != nil {
		return fmt.Errorf("%s: plugins: %w", f.Name, err)
	}
	defer cat.Close()
	l, err := spi.Resolve[spi.Launcher](cat, f.Cloud.LauncherType)
	if err != nil {
		return fmt.Errorf("%s: ejob.cloud.launcher.type %q: %w: %w", f.Name, f.Cloud.LauncherType, ErrNoLauncher, err)
	}
	lcfg := f.Cloud.LauncherConfig()
	if err := l.Validate(ctx, spi.LaunchValidateRequest{Config: lcfg}); err != nil {
		return fmt.Errorf("%s: ejob.cloud.launcher: %w", f.Name, err)
	}
	var tr spi.Tracer
	var tcfg map[string]string
	if f.Tracing != nil {
		if tr, err = spi.Resolve[spi.Tracer](cat, f.Tracing.Type); err != nil {
			return fmt.Errorf("%s:%d: elasticjob.tracing.type %q: %w", f.Name, f.Tracing.Line, f.Tracing.Type, err)
		}
		tcfg = f.Tracing.DataSource
		if err := tr.Validate(ctx, spi.TraceValidateRequest{Config: tcfg}); err != nil {
			return fmt.Errorf("%s:%d: elasticjob.tracing: %w", f.Name, f.Tracing.Line, err)
		}
	}
	c, err := zookeeper.Connect(ctx, *f.Registry)
	if err != nil {
		return fmt.Errorf("%s: regCenter %s/%s: %w", f.Name, f.Registry.ServerLists, f.Registry.Namespace, err)
	}
	defer c.Close()
	mx := metrics.New()
	hopts := daemon.HTTPOptions(*f.HTTP, f.Registry, c, mx, log.Named("http"))
	hopts.Console = console.CloudHandler
	var sched *Scheduler
	hopts.Routes = func(srv *httpapi.Server, mux *httpapi.Mux) { sched.Routes(srv, mux) }
	srv, err := httpapi.Listen(hopts)
	if err != nil {
		return fmt.Errorf("%s: ejob.http: %w", f.Name, err)
	}
	host, _ := os.Hostname()
	_, port, _ := net.SplitHostPort(srv.Addr().String())
	id := strings.ReplaceAll(host, "/", "_") + ":" + port
	sched = New(Options{Client: c, Launcher: l, LauncherConfig: lcfg, ID: id, JobStateQueueSize: f.Cloud.JobStateQueueSize,
		PollInterval: f.Cloud.PollInterval, FailureBackoff: f.Cloud.FailureBackoff, Tracer: tr, TracerConfig: tcfg, Logger: log.Named("cloud").With("instance", id)})
	if o.Ready != nil {
		o.Ready(srv.Addr().String())
	}
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return srv.Run(gctx) })
	g.Go(func() error { return sched.Run(gctx) })
	return g.Wait()
}
