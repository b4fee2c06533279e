package cli

import (
	"github.com/spf13/cobra"

	"github.com/ejob-io/ejob/host/daemon"
)

func newRunCmd(e *env) *cobra.Command {
	var (
		file string
		cf   catalogFlags
	)
	cmd := &cobra.Command{
		Use:   "run -c FILE",
		Short: "Run the jobs of a config file on this host",
		Long: `Runs the jobs of FILE on this host until SIGTERM or SIGINT. The file uses the
shape of ElasticJob's Spring Boot starter (an elasticjob: section with
regCenter and jobs) plus an ejob: section for host settings; see
docs/configuration.md. With a regCenter the host joins the ZooKeeper cluster;
without one it runs standalone on an embedded registry, and serves the
operator commands given -c FILE (ejob jobs, trigger, ...) on a Unix socket
only its user can reach (ejob.controlSocket; docs/operations.md). A second
standalone host on the same file is refused.

A bad file fails before anything starts, naming the file, line and reason.
On SIGTERM/SIGINT the host stops firing, waits for running items up to
ejob.drainTimeout, then leaves the registry cleanly. A second SIGTERM/SIGINT
during that wait cancels the running items at once (their process groups
are killed) and the host leaves the registry as cleanly.

The command line wins over the environment, which wins over the file:
--plugins-dir (or EJOB_PLUGINS_DIR) over ejob.pluginsDir, --lock-file over
ejob.lockFile, --log-level (or EJOB_LOG_LEVEL) over ejob.logLevel.`,
		Example: `  ejob run -c ejob.yaml
  ejob run -c ejob.yaml --plugins-dir ./bin/plugins`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if file == "" {
				return usagef(cmd, "-c FILE is required")
			}
			b, err := builtinSource()
			if err != nil {
				return err
			}
			return daemon.Run(cmd.Context(), daemon.Options{
				ConfigFile: file, PluginsDir: cf.dir, LockFile: cf.lockFile, Builtin: b,
				Logger: e.log, LogLevelFixed: e.logLevelFixed, Abort: e.abort,
			})
		},
	}
	cmd.Flags().StringVarP(&file, "config", "c", "", "config file (YAML)")
	cf.register(cmd, true)
	return cmd
}
