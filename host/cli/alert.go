package cli

import (
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ejob-io/ejob/core/instance"
	"github.com/ejob-io/ejob/host/daemon"
	"github.com/ejob-io/ejob/plugins/errorhandler/alert"
	errorhandlerbuiltin "github.com/ejob-io/ejob/plugins/errorhandler/builtin"
	"github.com/ejob-io/ejob/spi"
)

// TestAlertMessage is the error text of the failure `ejob alert test`
// reports.
const TestAlertMessage = "test alert from 'ejob alert test' (the job did not fail)"

func newAlertCmd(e *env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "alert",
		Short: "Check a job's alerting (its error handler)",
	}
	cmd.AddCommand(newAlertTestCmd(e))
	return cmd
}

func newAlertTestCmd(e *env) *cobra.Command {
	var (
		file string
		cf   catalogFlags
	)
	cmd := &cobra.Command{
		Use:   "test -c FILE JOB",
		Short: "Send one test alert through a job's error handler and print what happened",
		Long: `Loads FILE as 'ejob run' does, and reports one failure of JOB, marked as a
test, to the job's error handler (jobErrorHandlerType) with the job's props.
The handler sends it at once and waits for the answer (the prop alert.test is
set for this one call), so the command prints either that the alert was sent
or the receiver's exact refusal: an SMTP reply, an HTTP status and body, a
robot's errcode and errmsg. Secrets are masked. Nothing runs and the registry
is not touched.

The alerting handlers are EMAIL, WECHAT, DINGTALK, SLACK and WEBHOOK (see
docs/alerting.md). LOG, THROW and IGNORE send nothing, so a job that uses
them fails this check.`,
		Example: `  ejob alert test -c ejob.yaml orders`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usagef(cmd, "want one job name, got %d arguments", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if file == "" {
				return usagef(cmd, "-c FILE is required")
			}
			return alertTest(cmd.Context(), e, file, cf, args[0])
		},
	}
	cmd.Flags().StringVarP(&file, "config", "c", "", "config file (YAML)")
	cf.register(cmd, true)
	return cmd
}

func alertTest(ctx context.Context, e *env, file string, cf catalogFlags, jobName string) error {
	b, err := builtinSource()
	if err != nil {
		return err
	}
	f, cat, err := daemon.Load(ctx, daemon.Options{
		ConfigFile: file, PluginsDir: cf.dir, LockFile: cf.lockFile, Builtin: b,
		Logger: e.log, LogLevelFixed: e.logLevelFixed,
	})
	if err != nil {
		return err
	}
	defer cat.Close()
	job, ok := f.Job(jobName)
	if !ok {
		names := make([]string, 0, len(f.Jobs))
		for _, j := range f.Jobs {
			names = append(names, j.Name)
		}
		return fmt.Errorf("%s has no job %q (its jobs: %s)", file, jobName, strings.Join(names, ", "))
	}
	typ := job.Config.ErrorHandlerType()
	if slices.Contains([]string{errorhandlerbuiltin.TypeLog, errorhandlerbuiltin.TypeThrow, errorhandlerbuiltin.TypeIgnore}, spi.NormalizeType(typ)) {
		return fmt.Errorf("job %q uses the error handler %s, which sends no alert: set jobErrorHandlerType to EMAIL, WECHAT, DINGTALK, SLACK, WEBHOOK or a plugin's type (docs/alerting.md)", jobName, spi.NormalizeType(typ))
	}
	h, err := spi.Resolve[spi.ErrorHandler](cat, typ)
	if err != nil {
		return err
	}
	props := maps.Clone(job.Config.Props)
	if props == nil {
		props = map[string]string{}
	}
	props[alert.PropTest] = "true"
	id := "ejob-alert-test@-@" + fmt.Sprint(os.Getpid())
	if local, err := instance.LocalID(f.Host.IPOptions(nil)); err == nil {
		id = local.String()
	}
	start := time.Now()
	_, err = h.HandleError(ctx, spi.HandleErrorRequest{
		JobName: jobName, InstanceID: id, ShardingItem: -1, Props: props,
		Error: spi.JobError{Message: TestAlertMessage},
	})
	if err != nil {
		return fmt.Errorf("job %q: %s did not deliver the test alert: %w", jobName, spi.NormalizeType(typ), err)
	}
	fmt.Fprintf(e.stdout, "job %q: test alert sent through %s in %s\n", jobName, spi.NormalizeType(typ), time.Since(start).Round(time.Millisecond))
	return nil
}
