package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ejob-io/ejob/host/pluginhost"
	"github.com/ejob-io/ejob/spi"
	"github.com/ejob-io/ejob/spi/spitest"
)

// errContractBreaks is what `plugins check` returns when a check failed
// or a file is not a usable plugin.
var errContractBreaks = errors.New("contract breaks found")

func newPluginsCheckCmd(e *env) *cobra.Command {
	var lockFile string
	cmd := &cobra.Command{
		Use:   "check DIR",
		Short: "Run the conformance suites against the plugin binaries in a directory",
		Long: `Starts every ejob-* binary in DIR as the host does (same checks of the file,
same transport) and runs the conformance suite of spitest for each type it
serves, reporting each check: ok, FAIL with the case that broke the
contract, or skip with why.

Only what needs no knowledge of the type runs here: the whole suite of
sharding strategies and thread-pool size providers; for error handlers, job
types and job listeners the checks of Validate/Describe (props that are
not valid must be refused with an error wrapping spi.ErrInvalidConfig).
HandleError, Execute and the listener calls are never made: they may act
on the world; a tracing sink's suite is skipped (it needs a store). Run the full suites, with the props and requests your type
needs, in your Go tests (spitest.TestErrorHandler and friends; see
docs/plugins.md).

Exits 1 when a check failed or a file is not a usable plugin.`,
		Example: `  ejob plugins check ./bin`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cat, err := pluginhost.Open(cmd.Context(), pluginhost.Config{Dir: args[0], LockFile: lockFile, Logger: e.log, SkipsReported: true})
			if err != nil {
				return err
			}
			defer cat.Close()
			return checkCatalog(cmd.Context(), cat, e.stdout)
		},
	}
	cmd.Flags().StringVar(&lockFile, "lock-file", "", "plugin lock file (default: ejob-plugins.lock in DIR, if present)")
	return cmd
}

// checkCatalog runs the suites against every type of every binary of cat
// and writes the report to w.
func checkCatalog(ctx context.Context, cat *pluginhost.Catalog, w io.Writer) error {
	var passed, failed, skipped, types int
	for _, b := range cat.Binaries() {
		fmt.Fprintf(w, "%s (version %s)\n", b.Path, b.Info.PluginVersion)
		for _, k := range b.Info.Types {
			types++
			results, err := checkType(ctx, cat, k)
			if err != nil {
				return err
			}
			fmt.Fprintf(w, "  %s %s\n", k.Kind, k.Type)
			for _, r := range results {
				switch {
				case r.Passed():
					passed++
					fmt.Fprintf(w, "    ok    %s\n", r.Name)
				case r.Skipped():
					skipped++
					fmt.Fprintf(w, "    skip  %s: %s\n", r.Name, strings.TrimPrefix(r.Err.Error(), "skipped: "))
				default:
					failed++
					// A check may report several cases, one per line.
					fmt.Fprintf(w, "    FAIL  %s: %s\n", r.Name, strings.ReplaceAll(r.Err.Error(), "\n", "\n          "))
				}
			}
		}
	}
	for _, s := range cat.Skipped() {
		failed++
		fmt.Fprintf(w, "%s\n    FAIL  not a usable plugin: %v\n", s.Path, s.Reason)
	}
	fmt.Fprintf(w, "\n%d types in %d binaries: %d checks passed, %d failed, %d skipped\n",
		types, len(cat.Binaries()), passed, failed, skipped)
	if skipped > 0 {
		fmt.Fprintln(w, "Skipped checks need to know the type (valid props, a request to run): run them in your Go tests\n"+
			"with spitest.TestErrorHandler, TestJobExecutor or TestJobListener and their options (docs/plugins.md).")
	}
	if failed > 0 {
		return errContractBreaks
	}
	return nil
}

// checkType runs the suite of k's kind against the type, with the options
// that need no knowledge of it (see newPluginsCheckCmd).
func checkType(ctx context.Context, cat *pluginhost.Catalog, k spi.TypeKey) ([]spitest.Result, error) {
	none := spi.ValidatePropsRequest{JobName: "ejob_plugins_check"}
	switch k.Kind {
	case spi.KindSharding:
		return runSuite(ctx, cat, k.Type, spitest.ShardingStrategyChecks())
	case spi.KindThreadPool:
		return runSuite(ctx, cat, k.Type, spitest.ThreadPoolSizeProviderChecks())
	case spi.KindErrorHandler:
		h, err := spi.Resolve[spi.ErrorHandler](cat, k.Type)
		if err != nil {
			return nil, err
		}
		opts := &spitest.ErrorHandlerOptions{}
		if h.Validate(ctx, none) == nil {
			opts.ValidProps = []map[string]string{nil}
		}
		return spitest.Run(ctx, h, spitest.ErrorHandlerChecks(opts)), nil
	case spi.KindJobType:
		x, err := spi.Resolve[spi.JobExecutor](cat, k.Type)
		if err != nil {
			return nil, err
		}
		opts := &spitest.JobExecutorOptions{}
		if x.Validate(ctx, none) == nil {
			opts.ValidProps = []map[string]string{nil}
		}
		return spitest.Run(ctx, x, spitest.JobExecutorChecks(opts)), nil
	case spi.KindJobListener:
		l, err := spi.Resolve[spi.JobListener](cat, k.Type)
		if err != nil {
			return nil, err
		}
		checks := spitest.JobListenerChecks(&spitest.JobListenerOptions{NoCalls: true})
		if _, err := l.Describe(ctx, spi.ListenerDescribeRequest{JobName: none.JobName}); err != nil {
			// The suite takes no props as valid unless told otherwise.
			for i, c := range checks {
				if c.Name == "describe_accepts_valid_props" || c.Name == "concurrent_calls" {
					reason := fmt.Sprintf("the listener needs props (Describe of none: %v); give JobListenerOptions.ValidProps in your tests", err)
					checks[i].Run = func(context.Context, spi.JobListener) error { return spitest.Skip(reason) }
				}
			}
		}
		return spitest.Run(ctx, l, checks), nil
	case spi.KindTracing:
		// Every check writes to a store, which only the author can name.
		return []spitest.Result{{Name: "suite", Err: spitest.Skip("a tracing sink needs a store: run spitest.TestTracer with your store's config in your tests")}}, nil
	case spi.KindLauncher:
		// Every check runs items on a cluster, which only the author can name.
		return []spitest.Result{{Name: "suite", Err: spitest.Skip("a launcher needs a cluster: run spitest.TestLauncher with your cluster's config in your tests")}}, nil
	}
	return []spitest.Result{{Name: "suite", Err: spitest.Skip("no conformance suite for kind " + string(k.Kind))}}, nil
}

func runSuite[T any](ctx context.Context, cat *pluginhost.Catalog, typeName string, checks []spitest.Check[T]) ([]spitest.Result, error) {
	impl, err := spi.Resolve[T](cat, typeName)
	if err != nil {
		return nil, err
	}
	return spitest.Run(ctx, impl, checks), nil
}
