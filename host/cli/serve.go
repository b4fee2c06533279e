package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	"github.com/spf13/cobra"
	"golang.org/x/crypto/bcrypt"

	"github.com/ejob-io/ejob/core/reg"
	"github.com/ejob-io/ejob/core/tracing"
	"github.com/ejob-io/ejob/host/daemon"
	"github.com/ejob-io/ejob/host/hostconfig"
	"github.com/ejob-io/ejob/host/httpapi"
	"github.com/ejob-io/ejob/host/metrics"
	"github.com/ejob-io/ejob/host/namespaces"
	"github.com/ejob-io/ejob/host/pluginhost"
)

// DefaultListen is `ejob serve`'s address without ejob.http.listen or
// --listen.
const DefaultListen = "127.0.0.1:8088"

func newServeCmd(e *env) *cobra.Command {
	var (
		f      registryFlags
		cf     catalogFlags
		listen string
		nsFile string
		dsDir  string
	)
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the web console and the operations HTTP API (ElasticJob console's REST API, metrics, health) for a namespace",
		Long: `Serves the operations surface of a namespace over HTTP, without running any
job: the web console (/, docs/console.md), ElasticJob-UI's REST API (/api/...),
/metrics, /healthz and /readyz; see docs/operations.md. The registry comes from -c FILE (its regCenter, and its
ejob.http section for the listen address and users) or from --zk/--namespace.

There is no default password. Users and their bcrypt hashes come from
ejob.http.users (make a hash with 'ejob hash-password'); without users a
random admin password is generated and printed once in the log, and only a
loopback address may be listened on (ejob.http.oidc adds single sign-on).
Reads go to the registry per request (batched: a few multiRead requests for
the whole namespace on ZooKeeper).

With an elasticjob.tracing section in FILE, the event trace (the console's
History page and job executions, /api/event-trace/...) is read from its
sink, through the plugins that serve its type as 'ejob run' finds them: --plugins-dir (or EJOB_PLUGINS_DIR) over
ejob.pluginsDir, --lock-file over ejob.lockFile. The file's job types are
then checked against those plugins, as 'ejob run' and 'ejob history' check
them. For a standalone FILE without elasticjob.tracing it is the in-memory
history of the host running on the file, read through its control socket.

The registry centers and event-trace data sources an admin adds in the
console's Namespaces page are kept in --namespaces-file (default:
namespaces.json in the user's configuration directory, mode 0600); switching
to one changes the namespace served without a restart. An SQLite data source
added there must name a file under --data-source-dir (links followed); without
that flag SQLite data sources are refused, as the server would create the
file wherever a request says.`,
		Example: `  ejob serve -c ejob.yaml
  ejob serve --zk 127.0.0.1:2181 --namespace demo --listen 127.0.0.1:8088`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			settings := hostconfig.HTTPSettings{Listen: DefaultListen}
			var (
				zk *hostconfig.File
				tr *daemon.Tracing
			)
			if f.file != "" {
				file, err := loadOpsFile(f.file)
				if err != nil {
					return err
				}
				if file.Tracing != nil {
					b, err := builtinSource()
					if err != nil {
						return err
					}
					var cat *pluginhost.Catalog
					file, cat, tr, err = daemon.LoadTracing(cmd.Context(), daemon.Options{ConfigFile: f.file,
						PluginsDir: cf.dir, LockFile: cf.lockFile, Builtin: b, Logger: e.log, LogLevelFixed: true})
					if err != nil {
						return err
					}
					defer cat.Close()
				}
				if file.Host.HTTP != nil {
					settings = *file.Host.HTTP
				}
				zk = file
			}
			if cmd.Flags().Changed("listen") {
				settings.Listen = listen
			}
			c, err := f.connect(cmd.Context(), cmd, e)
			if err != nil {
				return err
			}
			defer c.Close()
			if zk != nil && zk.Registry == nil && zk.Tracing == nil {
				src, err := hostTrace(cmd.Context(), zk)
				if err != nil {
					return err
				}
				tr = &daemon.Tracing{Tracer: src.tracer, Config: map[string]string{"driver": tracing.MemoryDriver}}
			}
			return serve(cmd.Context(), e, settings, zk, tr, c, nsFile, dsDir)
		},
	}
	f.register(cmd)
	cf.register(cmd, true)
	cmd.Flags().StringVar(&listen, "listen", DefaultListen, "host:port to listen on (overrides ejob.http.listen)")
	cmd.Flags().StringVar(&nsFile, "namespaces-file", "", "the console's registry centers and data sources (default: "+
		"namespaces.json in the user's configuration directory, e.g. ~/.config/ejob/namespaces.json)")
	cmd.Flags().StringVar(&dsDir, "data-source-dir", "", "the directory SQLite data sources added in the console must keep their files in "+
		"(default: none, SQLite data sources are refused)")
	return cmd
}

// serve runs the operations server on c until ctx ends; tr, when not nil,
// serves the event trace. nsFile is the namespaces store ("": the default
// path), dsDir the directory of its SQLite data sources ("": none).
func serve(ctx context.Context, e *env, settings hostconfig.HTTPSettings, file *hostconfig.File, tr *daemon.Tracing, c reg.Client, nsFile, dsDir string) error {
	log := e.log.Named("serve")
	mx := metrics.New()
	opts := daemon.HTTPOptions(settings, nil, c, mx, log.Named("http"))
	if file != nil {
		opts = daemon.HTTPOptions(settings, file.Registry, c, mx, log.Named("http"))
	}
	if tr != nil {
		opts.Tracer, opts.TracerConfig = tr.Tracer, tr.Config
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sw := &nsSwitcher{log: log.Named("namespaces"), own: c, ownInfo: opts.Registry,
		ownTracer: opts.Tracer, ownConfig: opts.TracerConfig}
	if nsFile == "" {
		var err error
		if nsFile, err = namespaces.DefaultPath(); err != nil {
			log.Warn("the console cannot add registry centers: no user configuration directory (set HOME or --namespaces-file)", "error", err)
		}
	}
	if nsFile != "" {
		opts.Namespaces, opts.Switch = namespaces.Open(nsFile), sw
	}
	if dsDir != "" {
		st, err := os.Stat(dsDir)
		if err == nil && !st.IsDir() {
			err = errors.New("not a directory")
		}
		if err != nil {
			return fmt.Errorf("--data-source-dir %s: %w", dsDir, err)
		}
		opts.DataSourceDir = dsDir
	}
	srv, err := httpapi.Listen(opts)
	if err != nil {
		return err
	}
	sw.srv = srv
	defer sw.Close()
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() { mx.WatchSession(ctx, c) })
	return srv.Run(ctx)
}

func newHashPasswordCmd(e *env) *cobra.Command {
	var cost int
	cmd := &cobra.Command{
		Use:   "hash-password",
		Short: "Print the bcrypt hash of a password read from standard input, for ejob.http.users",
		Long: `Reads one password line from standard input and prints its bcrypt hash, the
value of passwordHash in ejob.http.users. The password never appears in a
command line or a file.`,
		Example: `  ejob hash-password < /run/secrets/ops-password
  read -rs P && printf '%s\n' "$P" | ejob hash-password`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cost < hostconfig.MinPasswordHashCost || cost > bcrypt.MaxCost {
				return usagef(cmd, "--cost %d: want %d to %d (ejob.http.users refuses a hash of cost below %d)",
					cost, hostconfig.MinPasswordHashCost, bcrypt.MaxCost, hostconfig.MinPasswordHashCost)
			}
			line, err := bufio.NewReader(cmd.InOrStdin()).ReadString('\n')
			if err != nil && !errors.Is(err, io.EOF) {
				return err
			}
			pw := strings.TrimRight(line, "\r\n")
			if pw == "" {
				return usagef(cmd, "no password on standard input")
			}
			h, err := bcrypt.GenerateFromPassword([]byte(pw), cost)
			if err != nil {
				return err
			}
			_, err = fmt.Fprintln(e.stdout, string(h))
			return err
		},
	}
	cmd.Flags().IntVar(&cost, "cost", hostconfig.MinPasswordHashCost, fmt.Sprintf("bcrypt cost (%d to %d; each step doubles the work of a login)",
		hostconfig.MinPasswordHashCost, bcrypt.MaxCost))
	cmd.SetIn(os.Stdin)
	return cmd
}
