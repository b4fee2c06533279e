package cli

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/ejob-io/ejob/internal/pagetrim"
	"github.com/ejob-io/ejob/plugins/builtin"
	"github.com/ejob-io/ejob/sdk"
)

// builtinPluginsCmd is the hidden subcommand under which the ejob binary
// serves every built-in type as one plugin process.
const builtinPluginsCmd = "__builtin-plugins"

// pluginStartupTail is how long after its start the built-in plugin
// process releases its start-up pages: past the handshake and the host's
// first calls.
const pluginStartupTail = 5 * time.Second

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
			// Once the host has handshaken and set up its types, the
			// process runs a small part of the binary: it drops its
			// mappings of the pages start-up touched (pagetrim).
			release := time.AfterFunc(pluginStartupTail, func() { _, _ = pagetrim.ReleaseExecutable() })
			defer release.Stop()
			sdk.Serve(builtin.New(builtin.Options{Logger: sdk.Logger()}))
		},
	}
}
