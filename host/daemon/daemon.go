package daemon

import (
	"context"
	"fmt"
	"os"

	"github.com/hashicorp/go-hclog"

	"github.com/ejob-io/ejob/core/instance"
	"github.com/ejob-io/ejob/core/reg"
	"github.com/ejob-io/ejob/core/reg/embedded"
	"github.com/ejob-io/ejob/core/reg/zookeeper"
	"github.com/ejob-io/ejob/core/scheduler"
	hostconfig "github.com/ejob-io/ejob/host/config"
	"github.com/ejob-io/ejob/host/plugins"
	"github.com/ejob-io/ejob/spi"
)

// StandaloneNamespace is the embedded registry's namespace.
const StandaloneNamespace = "ejob"

// Options configure Run.
type Options struct {
	// ConfigFile is the path of the YAML file.
	ConfigFile string
	// PluginsDir overrides the file's ejob.pluginsDir when non-empty.
	PluginsDir string
	// Builtin serves the built-in types (the ejob binary itself).
	Builtin *plugins.Builtin
	// Logger is the host logger.
	Logger hclog.Logger
	// Getenv resolves ${VAR} in the file and the EJOB_* settings; nil:
	// the process environment.
	Getenv func(string) (string, bool)
	// Ready, when set, is called once every job has registered.
	Ready func(instanceID string)
}

// Load reads and validates the config file against the plugin catalog.
// The catalog is opened with the file's plugins directory (or the
// override) and returned open; the caller closes it.
func Load(ctx context.Context, opts Options) (*hostconfig.File, *plugins.Catalog, error) {
	// The host settings name the plugins directory the job types are
	// checked against; then the whole file is checked at once.
	host, err := hostconfig.LoadHost(opts.ConfigFile, opts.Getenv)
	if err != nil {
		return nil, nil, err
	}
	dir, lock := opts.PluginsDir, host.LockFile
	if dir == "" {
		dir = host.PluginsDir
	}
	cat, err := plugins.Open(ctx, plugins.Config{
		Dir: dir, LockFile: lock, Builtin: opts.Builtin, Logger: opts.Logger, StopGrace: host.PluginStopGrace,
	})
	if err != nil {
		return nil, nil, err
	}
	file, err := hostconfig.Load(opts.ConfigFile, hostconfig.LoadOptions{
		Getenv:    opts.Getenv,
		KnownType: func(k spi.Kind, name string) bool { _, err := cat.Provider(k, name); return err == nil },
		Types:     cat.Types,
		KnownListener: func(name string) bool {
			_, err := cat.Provider(spi.KindJobListener, name)
			return err == nil
		},
	})
	if err != nil {
		cat.Close()
		return nil, nil, err
	}
	if opts.PluginsDir != "" {
		file.Host.PluginsDir = opts.PluginsDir
	}
	return file, cat, nil
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
	getenv := func(k string) string {
		if opts.Getenv != nil {
			v, _ := opts.Getenv(k)
			return v
		}
		return os.Getenv(k)
	}
	file, cat, err := Load(ctx, opts)
	if err != nil {
		return err
	}
	defer cat.Close()
	id, err := instance.LocalID(file.Host.IPOptions(getenv))
	if err != nil {
		return fmt.Errorf("choose this host's instance id: %w", err)
	}
	log := opts.Logger.With("instance", id.String())
	client, err := Connect(ctx, file, log)
	if err != nil {
		return err
	}
	defer client.Close()
	s, err := scheduler.New(scheduler.Options{
		Client: client, InstanceID: id.String(), ServerIP: id.IP,
		Plugins: cat, Logger: log, DrainTimeout: file.Host.DrainTimeout,
	})
	if err != nil {
		return err
	}
	for _, j := range file.Jobs {
		if err := s.Add(ctx, scheduler.Job{Config: j.Config, Type: j.Type}); err != nil {
			return fmt.Errorf("%s:%d: %w", file.Name, j.Line, err)
		}
	}
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	if err := s.Ready(ctx); err != nil && ctx.Err() == nil {
		log.Error("a job failed to start", "error", err)
	} else if ctx.Err() == nil {
		log.Info("host started", "jobs", len(file.Jobs), "registry", registryName(file))
		if opts.Ready != nil {
			opts.Ready(id.String())
		}
	}
	return <-done
}

func registryName(f *hostconfig.File) string {
	if f.Registry == nil {
		return "embedded"
	}
	return f.Registry.ServerLists + "/" + f.Registry.Namespace
}
