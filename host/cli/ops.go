package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/ejob-io/ejob/core/lifecycle"
	"github.com/ejob-io/ejob/core/reg"
	"github.com/ejob-io/ejob/core/reg/httpreg"
	"github.com/ejob-io/ejob/core/reg/zookeeper"
	"github.com/ejob-io/ejob/host/control"
	"github.com/ejob-io/ejob/host/hostconfig"
	"github.com/ejob-io/ejob/spi"
)

// registryFlags select the registry an operator command talks to: the
// regCenter of a config file (without one, the embedded registry of the
// standalone host running on the file, through its control socket), or
// flags.
type registryFlags struct {
	file      string
	servers   string
	namespace string
	digest    string
	jaas      string
}

func (f *registryFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVarP(&f.file, "config", "c", "", "take the registry from this config file's regCenter (without one: the standalone host running on the file)")
	cmd.Flags().StringVar(&f.servers, "zk", "", "ZooKeeper servers host:port[,host:port...] (instead of -c)")
	cmd.Flags().StringVar(&f.namespace, "namespace", "", "registry namespace (with --zk)")
	cmd.Flags().StringVar(&f.digest, "digest", "", "ZooKeeper digest user:password (with --zk)")
	cmd.Flags().StringVar(&f.jaas, "jaas", "", "JAAS file whose Client section logs in with SASL, DIGEST-MD5 or Kerberos (with --zk; Kerberos reads $KRB5_CONFIG)")
}

func (f *registryFlags) connect(ctx context.Context, cmd *cobra.Command, e *env) (reg.Client, error) {
	var cfg zookeeper.Config
	switch {
	case f.file != "" && f.servers != "":
		return nil, usagef(cmd, "give either -c FILE or --zk, not both")
	case f.file != "" && (f.digest != "" || f.jaas != ""):
		return nil, usagef(cmd, "--digest and --jaas go with --zk; with -c the file's regCenter says how to log in")
	case f.file != "":
		file, err := loadOpsFile(f.file)
		if err != nil {
			return nil, err
		}
		if file.Registry == nil {
			return connectStandalone(ctx, file)
		}
		cfg = *file.Registry
	case f.servers != "":
		if f.namespace == "" {
			return nil, usagef(cmd, "--namespace is required with --zk")
		}
		cfg = zookeeper.DefaultConfig(f.servers, f.namespace)
		cfg.Digest = f.digest
		cfg.SASL.JAASFile = f.jaas
		// An operator command should fail fast when ZooKeeper is down.
		cfg.ConnectionTimeoutMilliseconds = 5000
		cfg.MaxRetries = 1
	default:
		return nil, usagef(cmd, "give -c FILE or --zk SERVERS --namespace NS")
	}
	cfg.Logger = e.log.Named("zookeeper")
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	c, err := zookeeper.Connect(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect to ZooKeeper %s: %w", cfg.ServerLists, err)
	}
	return c, nil
}

// connectStandalone reaches the registry of the standalone host running
// on file (no regCenter) through its control socket (host/control): the
// commands then steer it as they steer a ZooKeeper namespace.
func connectStandalone(ctx context.Context, file *hostconfig.File) (reg.Client, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	hc, err := dialStandalone(ctx, file)
	if err != nil {
		return nil, err
	}
	c, err := httpreg.New(ctx, hc, controlBase)
	if err != nil {
		return nil, fmt.Errorf("the standalone host of %s: %w", file.Name, err)
	}
	return c, nil
}

// controlBase is the base URL of the requests sent on a control socket.
const controlBase = "http://ejob"

// dialStandalone returns an HTTP client of the control socket of the
// standalone host running on file; control.ErrNoHost, saying how to start
// one, when none runs.
func dialStandalone(ctx context.Context, file *hostconfig.File) (*http.Client, error) {
	paths, err := control.Candidates(file.Name, file.Host.ControlSocket, nil)
	if err != nil {
		return nil, err
	}
	return control.Dial(ctx, file.Name, paths)
}

// loadOpsFile loads a config file for an operator command: job types are
// not checked (the plugins need not be here).
func loadOpsFile(path string) (*hostconfig.File, error) {
	return hostconfig.Load(path, hostconfig.LoadOptions{
		KnownType:     func(spi.Kind, string) bool { return true },
		KnownListener: func(string) bool { return true },
	})
}

// opsFlags are the flags every operator command shares: the registry and
// --json.
type opsFlags struct {
	registryFlags
	json bool
}

func (f *opsFlags) register(cmd *cobra.Command) {
	f.registryFlags.register(cmd)
	cmd.Flags().BoolVar(&f.json, "json", false, "print JSON (the ElasticJob console's field names) instead of a table")
}

// run connects to the registry, calls fn and closes the connection.
func (f *opsFlags) run(cmd *cobra.Command, e *env, fn func(ctx context.Context, c reg.Client) error) error {
	c, err := f.connect(cmd.Context(), cmd, e)
	if err != nil {
		return err
	}
	defer c.Close()
	return fn(cmd.Context(), c)
}

// print writes v as indented JSON when --json is set, else calls human.
func (f *opsFlags) print(e *env, v any, human func(w io.Writer) error) error {
	if f.json {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}
	return human(e.stdout)
}

// table writes rows under a header, aligned.
func table(w io.Writer, header string, rows [][]string) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, header)
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	return tw.Flush()
}

func exactArgs(n int, what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return usagef(cmd, "want %s, got %d arguments", what, len(args))
		}
		return nil
	}
}

func newTriggerCmd(e *env) *cobra.Command {
	var f opsFlags
	cmd := &cobra.Command{
		Use:   "trigger JOB",
		Short: "Run a job once now on every instance",
		Long: `Asks every live instance of JOB to run it once now, exactly as the ElasticJob
console's trigger button does (one trigger/{instanceId} node per instance).
Each instance runs its own items. This is how a one-off job (no cron) runs.
An instance that is already running the job drops the request.

A job that no instance would run is refused and nothing is written (exit
status 4, with the reason): one with no live instance, or one disabled on
every server where it has a live instance ('ejob enable JOB' first).`,
		Example: `  ejob trigger myJob -c ejob.yaml
  ejob trigger myJob --zk 127.0.0.1:2181 --namespace demo`,
		Args: exactArgs(1, "one job name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return f.run(cmd, e, func(ctx context.Context, c reg.Client) error {
				ids, err := lifecycle.TriggerAll(ctx, c, args[0])
				if err != nil {
					return err
				}
				return f.print(e, ids, func(w io.Writer) error {
					_, err := fmt.Fprintf(w, "triggered %s on %s: %s\n", args[0], plural(len(ids), "instance", "instances"), strings.Join(ids, ", "))
					return err
				})
			})
		},
	}
	f.register(cmd)
	return cmd
}

func newJobsCmd(e *env) *cobra.Command {
	var f opsFlags
	cmd := &cobra.Command{
		Use:   "jobs",
		Short: "List the jobs of a namespace with cron, items, instances and state",
		Long: `Lists every job of the namespace with its cron, shardingTotalCount, live
instances and state (docs/cli.md says exactly when each applies):
CONFIG_ERROR (the job's configuration in the registry does not parse or breaks
a bound, so no ejob instance fires it; the REASON column says why), CRASHED
(no live instance), DISABLED (disabled on every server), RUNNING (an item is
running), NEVER_RUN (it has not fired yet: a one-off job never triggered, a
cron job before its first fire), RESHARDING (it has run, and the next fire
reshards first: an instance came or went, or the item count changed), READY
(waiting for its next fire or trigger). --json prints the ElasticJob
console's fields, its status (OK, CRASHED, DISABLED, SHARDING_FLAG) included,
plus state.`,
		Example: `  ejob jobs -c ejob.yaml
  ejob jobs --zk 127.0.0.1:2181 --namespace demo --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return f.run(cmd, e, func(ctx context.Context, c reg.Client) error {
				briefs, err := lifecycle.Jobs(ctx, c)
				if err != nil {
					return err
				}
				js := make([]jobJSON, len(briefs))
				for i, b := range briefs {
					js[i] = jobJSON{JobBrief: b, State: b.State}
				}
				return f.print(e, js, func(w io.Writer) error {
					rows := make([][]string, len(briefs))
					reasons := false
					for i, b := range briefs {
						rows[i] = []string{b.JobName, cronText(b.Cron), strconv.Itoa(b.ShardingTotalCount), strconv.Itoa(b.InstanceCount), string(b.State)}
						reasons = reasons || b.ConfigError != ""
					}
					if !reasons {
						return table(w, "JOB\tCRON\tITEMS\tINSTANCES\tSTATE", rows)
					}
					for i, b := range briefs {
						rows[i] = append(rows[i], oneLine(b.ConfigError))
					}
					return table(w, "JOB\tCRON\tITEMS\tINSTANCES\tSTATE\tREASON", rows)
				})
			})
		},
	}
	f.register(cmd)
	return cmd
}

// jobJSON is one job of 'ejob jobs --json': upstream's brief and ejob's
// state.
type jobJSON struct {
	lifecycle.JobBrief
	State lifecycle.State `json:"state"`
}

// plural is "1 thing" or "N things".
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

// oneLine is s with its line breaks and tabs as spaces, for a table cell.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

func cronText(cron string) string {
	if cron == "" {
		return "(one-off)"
	}
	return cron
}
