package cli

import (
	"github.com/spf13/cobra"

	"github.com/ejob-io/ejob/host/daemon"
)

func newRunCmd(e *env) *cobra.Command {
	var (
		file       string
		pluginsDir string
	)
	cmd := &cobra.Command{
		Use:   "run -c FILE",
		Short: "Run the jobs of a config file on this host",
		Long: `Runs the jobs of FILE on this host until SIGTERM or SIGINT. The file uses the
shape of ElasticJob's Spring Boot starter (an elasticjob: section with
regCenter and jobs) plus an ejob: section for host settings; see
docs/configuration.md. With a regCenter the host joins the ZooKeeper cluster;
without one it runs standalone on an embedded registry.

A bad file fails before anything starts, naming the file, line and reason.
On SIGTERM/SIGINT the host stops firing, waits for running items up to
ejob.drainTimeout, then leaves the registry cleanly.`,
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
				ConfigFile: file, PluginsDir: pluginsDir, Builtin: b, Logger: e.log,
			})
		},
	}
	cmd.Flags().StringVarP(&file, "config", "c", "", "config file (YAML)")
	cmd.Flags().StringVar(&pluginsDir, "plugins-dir", "", "plugins directory (overrides ejob.pluginsDir in the file)")
	return cmd
}
