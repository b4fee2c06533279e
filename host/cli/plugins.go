package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/ejob-io/ejob/host/pluginhost"
	"github.com/ejob-io/ejob/plugins/builtin"
	"github.com/ejob-io/ejob/spi"
)

// catalogFlags are the flags of every command that loads plugins.
type catalogFlags struct {
	dir      string
	lockFile string
}

// register adds the flags to cmd. With overridesFile, they override the
// config file's ejob.pluginsDir and ejob.lockFile (ejob run).
func (f *catalogFlags) register(cmd *cobra.Command, overridesFile bool) {
	dirUsage := "directory of ejob-* plugin binaries (env " + pluginsDirEnv + "); empty: built-ins only"
	lockUsage := "plugin lock file (default: ejob-plugins.lock in the plugins directory, if present)"
	if overridesFile {
		dirUsage = "directory of ejob-* plugin binaries (env " + pluginsDirEnv + "); overrides ejob.pluginsDir of the file"
		lockUsage = "plugin lock file; overrides ejob.lockFile of the file"
	}
	cmd.Flags().StringVar(&f.dir, "plugins-dir", os.Getenv(pluginsDirEnv), dirUsage)
	cmd.Flags().StringVar(&f.lockFile, "lock-file", "", lockUsage)
}

func (f *catalogFlags) config(e *env) (pluginhost.Config, error) {
	b, err := builtinSource()
	if err != nil {
		return pluginhost.Config{}, err
	}
	return pluginhost.Config{Dir: f.dir, LockFile: f.lockFile, Builtin: b, Logger: e.log}, nil
}

// builtinSource describes the built-in plugin server: this very binary under
// the hidden builtin-plugins subcommand.
func builtinSource() (*pluginhost.Builtin, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("locate the ejob binary to serve built-in plugins: %w", err)
	}
	set := builtin.New(builtin.Options{})
	return &pluginhost.Builtin{Path: self, Args: []string{builtinPluginsCmd}, Version: builtin.Version, Types: set.Types()}, nil
}

func newPluginsCmd(e *env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "plugins",
		Short: "List, pin and check plugin binaries",
		Long: `Plugins are executables named ejob-* in the plugins directory. Each serves one
or more types (kind + type name) that jobs name in their configuration.
Built-in types are served by the ejob binary itself; a plugin that offers a
built-in's type name overrides it.`,
	}
	cmd.AddCommand(newPluginsListCmd(e), newPluginsLockCmd(e), newPluginsCheckCmd(e))
	return cmd
}

func newPluginsListCmd(e *env) *cobra.Command {
	var f catalogFlags
	cmd := &cobra.Command{
		Use:     "list",
		Short:   "List every plugin type with its version, binary and checksum",
		Example: `  ejob plugins list --plugins-dir ./bin/plugins`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := f.config(e)
			if err != nil {
				return err
			}
			cfg.SkipsReported = true // printed below
			cat, err := pluginhost.Open(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			defer cat.Close()
			tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "KIND\tTYPE\tVERSION\tBINARY\tSHA256")
			for _, kind := range spi.Kinds() {
				for _, typ := range cat.Types(kind) {
					bin, err := cat.Provider(kind, typ)
					if err != nil {
						return err
					}
					path := bin.Path
					if bin.Builtin {
						path = "(built-in) " + path
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", kind, typ, bin.Info.PluginVersion, path, bin.SHA256)
				}
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			for _, s := range cat.Skipped() {
				fmt.Fprintf(e.stderr, "skipped %s: %v\n", s.Path, s.Reason)
			}
			return nil
		},
	}
	f.register(cmd, false)
	return cmd
}

func newPluginsLockCmd(e *env) *cobra.Command {
	var f catalogFlags
	cmd := &cobra.Command{
		Use:   "lock",
		Short: "Pin every usable plugin binary by SHA-256 in the lock file",
		Long: `Writes ejob-plugins.lock (sha256sum format) into the plugins directory, or to
--lock-file. Once the lock file exists, ejob launches only binaries whose
checksum it lists; re-run this command after installing or upgrading a plugin.`,
		Example: `  ejob plugins lock --plugins-dir /opt/ejob/plugins`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if f.dir == "" {
				return usagef(cmd, "--plugins-dir is required")
			}
			target := f.lockFile
			if target == "" {
				target = filepath.Join(f.dir, pluginhost.LockFileName)
			}
			cfg, err := f.config(e)
			if err != nil {
				return err
			}
			cfg.SkipsReported = true // printed below
			cfg.Builtin = nil
			cfg.IgnoreLock = true
			cat, err := pluginhost.Open(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			defer cat.Close()
			lock := pluginhost.Lock{}
			for _, b := range cat.Binaries() {
				lock[filepath.Base(b.Path)] = b.SHA256
			}
			for _, s := range cat.Skipped() {
				fmt.Fprintf(e.stderr, "not pinned %s: %v\n", s.Path, s.Reason)
			}
			if err := lock.Write(target); err != nil {
				return err
			}
			fmt.Fprintf(e.stdout, "pinned %d plugin binaries in %s\n", len(lock), target)
			return nil
		},
	}
	f.register(cmd, false)
	return cmd
}
