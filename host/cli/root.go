package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/hashicorp/go-hclog"
	"github.com/spf13/cobra"

	"github.com/ejob-io/ejob/core/lifecycle"
)

// env carries what every command needs: its output streams and logger.
type env struct {
	stdout, stderr io.Writer
	logLevel       string
	// logLevelFixed: --log-level or EJOB_LOG_LEVEL chose the level, so a
	// config file's ejob.logLevel does not change it.
	logLevelFixed bool
	log           hclog.Logger
	// abort is closed by a second SIGINT or SIGTERM.
	abort <-chan struct{}
}

// onSignals returns a ctx that ends at the first SIGINT or SIGTERM and a
// channel closed at the second; stop releases the signals.
func onSignals(parent context.Context) (ctx context.Context, abort <-chan struct{}, stop func()) {
	sig := make(chan os.Signal, 2)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	ctx, cancel := context.WithCancelCause(parent)
	aborted, finished := make(chan struct{}), make(chan struct{})
	go func() {
		select {
		case s := <-sig:
			cancel(fmt.Errorf("%w: %v", context.Canceled, s))
		case <-finished:
			return
		}
		select {
		case <-sig:
			close(aborted)
		case <-finished:
		}
	}()
	return ctx, aborted, func() {
		signal.Stop(sig)
		close(finished)
		cancel(nil)
	}
}

// Main runs the ejob command line with args (without the program name) and
// returns the process exit code. The first SIGINT or SIGTERM ends ctx (a
// host drains); a second one aborts the drain (running items are
// cancelled at once).
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	ctx, abort, stop := onSignals(ctx)
	defer stop()
	e := &env{stdout: stdout, stderr: stderr, abort: abort}
	root := newRoot(e)
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	if err := root.ExecuteContext(ctx); err != nil {
		var ue usageError
		if errors.As(err, &ue) {
			fmt.Fprintf(stderr, "ejob: %v\nRun 'ejob %s --help' for usage.\n", err, ue.cmd)
			return ExitUsage
		}
		fmt.Fprintf(stderr, "ejob: %v\n", err)
		return exitCode(err)
	}
	return ExitOK
}

// Exit codes of the ejob command (docs/cli.md).
const (
	// ExitOK: the command did what was asked.
	ExitOK = 0
	// ExitFailure: anything else went wrong (the registry unreachable, a
	// job that could not start, ...).
	ExitFailure = 1
	// ExitUsage: the command was called wrongly (flags, arguments).
	ExitUsage = 2
	// ExitNotFound: the job, server or instance named does not exist.
	ExitNotFound = 3
	// ExitRefused: the request was refused and nothing was written: an
	// invalid value (a bad cron, shardingTotalCount < 1, an item out of
	// range), a configuration changed by someone else meanwhile, or a
	// trigger that no instance would run (lifecycle.ErrNotRunnable).
	ExitRefused = 4
)

func exitCode(err error) int {
	switch {
	case errors.Is(err, lifecycle.ErrNotFound):
		return ExitNotFound
	case errors.Is(err, lifecycle.ErrInvalid), errors.Is(err, lifecycle.ErrConflict):
		return ExitRefused
	}
	return ExitFailure
}

// usageError is a mistake in how a command was called.
type usageError struct {
	cmd string
	err error
}

func (u usageError) Error() string { return u.err.Error() }
func (u usageError) Unwrap() error { return u.err }

func usagef(cmd *cobra.Command, format string, args ...any) error {
	return usageError{cmd: cmd.CommandPath()[len(cmd.Root().Name()):], err: fmt.Errorf(format, args...)}
}

func newRoot(e *env) *cobra.Command {
	root := &cobra.Command{
		Use:   "ejob",
		Short: "ejob is a distributed, sharded job scheduler compatible with ElasticJob-Lite",
		Long: `ejob runs cron jobs split into sharding items across many hosts, coordinated
through ZooKeeper with ElasticJob-Lite's node layout. Every extension point
(sharding strategies, error handlers, job types, thread-pool sizing) is a
plugin binary in the plugins directory: drop a binary in, name its type in
the job's configuration, nothing is recompiled.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			level := hclog.LevelFromString(e.logLevel)
			if level == hclog.NoLevel {
				return usagef(cmd, "--log-level %q: want trace, debug, info, warn or error", e.logLevel)
			}
			_, inEnv := os.LookupEnv(logLevelEnv)
			e.logLevelFixed = inEnv || cmd.Flags().Changed("log-level")
			e.log = hclog.New(&hclog.LoggerOptions{Name: "ejob", Level: level, Output: e.stderr})
			return nil
		},
	}
	root.PersistentFlags().StringVar(&e.logLevel, "log-level", envOr(logLevelEnv, "info"),
		"log level: trace, debug, info, warn or error (env "+logLevelEnv+"; overrides ejob.logLevel of a config file)")
	root.AddCommand(newRunCmd(e), newTriggerCmd(e), newJobsCmd(e), newJobCmd(e), newServersCmd(e),
		newSwitchCmd(e, true), newSwitchCmd(e, false), newShutdownCmd(e, false), newShutdownCmd(e, true), newDumpCmd(e),
		newPluginsCmd(e), newShardingCmd(e), newCronCmd(e), newAlertCmd(e), newHistoryCmd(e), newServeCmd(e), newHashPasswordCmd(e), newCloudCmd(e),
		newBuiltinPluginsCmd())
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error { return usagef(cmd, "%v", err) })
	return root
}

// The environment variables that give flags their defaults.
const (
	logLevelEnv   = "EJOB_LOG_LEVEL"
	pluginsDirEnv = "EJOB_PLUGINS_DIR"
)

func envOr(key, def string) string {
	if v, ok := os.LookupEnv(key); ok {
		return v
	}
	return def
}
