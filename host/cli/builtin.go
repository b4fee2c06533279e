package cli

import (
	"github.com/spf13/cobra"

	"github.com/ejob-io/ejob/plugins/builtin"
	"github.com/ejob-io/ejob/sdk"
)

// builtinPluginsCmd is the hidden subcommand under which the ejob binary
// serves every built-in type as one plugin process.
const builtinPluginsCmd = "__builtin-plugins"

func newBuiltinPluginsCmd() *cobra.Command {
	return &cobra.Command{
		Use:    builtinPluginsCmd,
		Short:  "Serve the built-in plugin types (started by the host, not by people)",
		Hidden: true,
		Args:   cobra.NoArgs,
		// The plugin process must not run the root's logger setup: it
		// logs through sdk.Logger to stderr for the host to re-level.
		PersistentPreRunE: func(*cobra.Command, []string) error { return nil },
		Run: func(*cobra.Command, []string) {
			sdk.Serve(builtin.New(builtin.Options{Logger: sdk.Logger()}))
		},
	}
}
