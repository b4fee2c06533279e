package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/ejob-io/ejob/core/lifecycle"
	"github.com/ejob-io/ejob/core/reg/zookeeper"
	"github.com/ejob-io/ejob/core/tracing"
	"github.com/ejob-io/ejob/core/tracing/httptrace"
	"github.com/ejob-io/ejob/host/daemon"
	"github.com/ejob-io/ejob/host/hostconfig"
	"github.com/ejob-io/ejob/spi"
)

// historyFlags select the config file whose elasticjob.tracing the history
// commands read, and the plugins that serve its type.
type historyFlags struct {
	file string
	cf   catalogFlags
}

func (f *historyFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVarP(&f.file, "config", "c", "", "config file whose elasticjob.tracing to read (YAML; without it: the standalone host running on the file)")
	f.cf.register(cmd, true)
}

// traceSource is what the history commands read: the file, its tracing
// sink and settings.
type traceSource struct {
	file   *hostconfig.File
	tracer spi.Tracer
	config map[string]string
}

// open loads the file and returns its tracing sink and settings, and the
// close of the plugin catalog.
func (f *historyFlags) open(ctx context.Context, cmd *cobra.Command, e *env) (*traceSource, func(), error) {
	if f.file == "" {
		return nil, nil, usagef(cmd, "-c FILE is required (the file with elasticjob.tracing)")
	}
	b, err := builtinSource()
	if err != nil {
		return nil, nil, err
	}
	file, cat, tr, err := daemon.LoadTracing(ctx, daemon.Options{ConfigFile: f.file, PluginsDir: f.cf.dir, LockFile: f.cf.lockFile,
		Builtin: b, Logger: e.log, LogLevelFixed: true})
	if err != nil {
		return nil, nil, err
	}
	if tr != nil {
		return &traceSource{file: file, tracer: tr.Tracer, config: tr.Config}, func() { cat.Close() }, nil
	}
	cat.Close()
	src, err := hostTrace(ctx, file)
	if err != nil {
		return nil, nil, err
	}
	return src, func() {}, nil
}

// hostTrace is the in-memory history of the standalone host running on
// file (no regCenter, no elasticjob.tracing), read through its control
// socket. A file with a regCenter and without elasticjob.tracing has no
// history: that is the error.
func hostTrace(ctx context.Context, file *hostconfig.File) (*traceSource, error) {
	if file.Registry != nil {
		return nil, fmt.Errorf("%s has no elasticjob.tracing section: no history is recorded for its jobs "+
			"(add elasticjob.tracing, type RDB, to record it)", file.Name)
	}
	hc, err := dialStandalone(ctx, file)
	if err != nil {
		return nil, err
	}
	return &traceSource{file: file, tracer: httptrace.New(hc, controlBase)}, nil
}

// registryCheckTimeout bounds the registry look-up of knownJob.
const registryCheckTimeout = 10 * time.Second

// knownJob returns lifecycle.ErrJobNotFound, saying where it looked, when
// job is unknown: not in the file's jobs, without any execution or status
// event in the trace, and not in the registry of the file's regCenter
// (a standalone file's jobs are its registry's). A registry that cannot be
// reached is not taken as an answer: the job then counts as known.
func knownJob(ctx context.Context, e *env, src *traceSource, job string) error {
	if _, ok := src.file.Job(job); ok {
		return nil
	}
	xs, err := src.tracer.QueryExecutions(ctx, spi.ExecutionQuery{Config: src.config, JobName: job, Limit: 1})
	if err != nil {
		return err
	}
	if len(xs.Executions) > 0 {
		return nil
	}
	ss, err := src.tracer.QueryStatuses(ctx, spi.StatusQuery{Config: src.config, JobName: job, Limit: 1})
	if err != nil {
		return err
	}
	if len(ss.Statuses) > 0 {
		return nil
	}
	where := fmt.Sprintf("not in %s", src.file.Name)
	if r := src.file.Registry; r != nil {
		cfg := *r
		cfg.Logger = e.log.Named("zookeeper")
		ctx, cancel := context.WithTimeout(ctx, registryCheckTimeout)
		defer cancel()
		c, err := zookeeper.Connect(ctx, cfg)
		if err != nil {
			e.log.Warn("cannot tell whether the job is known: the registry is unreachable", "job", job, "error", err)
			return nil
		}
		defer c.Close()
		_, err = lifecycle.Job(ctx, c, job)
		if !errors.Is(err, lifecycle.ErrJobNotFound) {
			return err // known (nil), or the registry failed
		}
		where += fmt.Sprintf(", not in namespace %q", r.Namespace)
	}
	return fmt.Errorf("%w: %q is unknown: %s, and no execution or status is recorded for it", lifecycle.ErrJobNotFound, job, where)
}

// parseAge reads a duration with a d (days) unit besides Go's: 30d, 12h.
func parseAge(s string) (time.Duration, error) {
	if n, ok := strings.CutSuffix(s, "d"); ok {
		days, err := strconv.Atoi(n)
		if err != nil || days < 0 {
			return 0, fmt.Errorf("want a duration such as 30d or 12h, got %q", s)
		}
		return time.Duration(days) * 24 * time.Hour, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("want a duration such as 30d or 12h, got %q", s)
	}
	return d, nil
}

// parseTime reads RFC 3339 or "2006-01-02[ 15:04[:05]]" in local time.
func parseTime(s string) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	for _, layout := range []string{"2006-01-02 15:04:05", "2006-01-02 15:04", "2006-01-02T15:04:05", "2006-01-02"} {
		if t, err := time.ParseInLocation(layout, s, time.Local); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("want a time such as 2026-03-01, \"2026-03-01 14:00\" or RFC 3339, got %q", s)
}

func newHistoryCmd(e *env) *cobra.Command {
	var (
		hf              historyFlags
		job, ip, task   string
		item            int
		success         string
		since, from, to string
		limit, page     int
		asJSON          bool
		statusJob       string
		withOutput      bool
		id              string
	)
	cmd := &cobra.Command{
		Use:   "history -c FILE",
		Short: "Show recorded executions (event tracing), newest first",
		Long: `Shows the item executions recorded by elasticjob.tracing (upstream's
JOB_EXECUTION_LOG), newest start first, through the tracing plugin the file
names (RDB: the database of its dataSource, or a standalone host's SQLite
file). For a standalone file without elasticjob.tracing it reads the
in-memory history (each item's last runs) of the host running on the file,
through its control socket. Filters combine: --job, --item, --ip (the instance's IP), --success
(true or false; false also lists items still running), and a start-time
range: --since (a duration such as 24h or 7d) or --from/--to. Pages hold
--limit rows; --page N shows the Nth page.

--output shows each execution as a block with its whole failure cause and
its output (a SCRIPT's stdout and stderr lines behind "out| " and "err| ",
an HTTP job's status line and body start, what a Go job type returned),
instead of the table; --id ID shows the one execution with that id so.

--status JOB shows the status trace of JOB's triggers instead (upstream's
JOB_STATUS_TRACE_LOG: TASK_STAGING, TASK_RUNNING, TASK_FINISHED or
TASK_ERROR), newest first; --task narrows it to one task id.`,
		Example: `  ejob history -c ejob.yaml --job billing --success false --since 24h
  ejob history -c ejob.yaml --job billing --item 3 --limit 20 --page 2
  ejob history -c ejob.yaml --job billing --success false --output
  ejob history -c ejob.yaml --id 6f1c0e9a-5d1b-4c1e-9a49-0d5c2b0f7e11
  ejob history -c ejob.yaml --status billing --json
  ejob history purge -c ejob.yaml --older-than 30d`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if limit < 1 || limit > 10_000 {
				return usagef(cmd, "--limit: want 1 to 10000, got %d", limit)
			}
			offset, err := tracing.PageOffset(page, limit)
			if err != nil {
				return usagef(cmd, "--page: want 1 to %d with --limit %d, got %d", tracing.MaxOffset/limit+1, limit, page)
			}
			var q spi.ExecutionQuery
			q.ID, q.JobName, q.IP, q.TaskID, q.Limit, q.Offset = id, job, ip, task, limit, offset
			if cmd.Flags().Changed("item") {
				q.Item = &item
			}
			switch success {
			case "":
			case "true", "false":
				q.Success = new(success == "true")
			default:
				return usagef(cmd, "--success: want true or false, got %q", success)
			}
			if since != "" && from != "" {
				return usagef(cmd, "give --since or --from, not both")
			}
			if since != "" {
				d, err := parseAge(since)
				if err != nil {
					return usagef(cmd, "--since: %v", err)
				}
				q.From = time.Now().Add(-d)
			}
			for _, b := range []struct {
				flag, val string
				dst       *time.Time
			}{{"--from", from, &q.From}, {"--to", to, &q.To}} {
				if b.val == "" {
					continue
				}
				t, err := parseTime(b.val)
				if err != nil {
					return usagef(cmd, "%s: %v", b.flag, err)
				}
				*b.dst = t
			}
			src, closeCat, err := hf.open(cmd.Context(), cmd, e)
			if err != nil {
				return err
			}
			defer closeCat()
			if statusJob != "" {
				return showStatuses(cmd.Context(), e, src, spi.StatusQuery{Config: src.config, JobName: statusJob, TaskID: task,
					From: q.From, To: q.To, Offset: q.Offset, Limit: q.Limit}, asJSON, page)
			}
			q.Config = src.config
			p, err := src.tracer.QueryExecutions(cmd.Context(), q)
			if err != nil {
				return err
			}
			if len(p.Executions) == 0 && job != "" {
				if err := knownJob(cmd.Context(), e, src, job); err != nil {
					return err
				}
			}
			if id != "" {
				// A tracing plugin built before the id filter ignores it.
				p.Executions = slices.DeleteFunc(p.Executions, func(x spi.ExecutionEvent) bool { return x.ID != id })
				p.More = false
			}
			if id != "" && len(p.Executions) == 0 {
				return fmt.Errorf("no execution with id %q in %s: %w", id, hf.file, lifecycle.ErrNotFound)
			}
			if withOutput || id != "" {
				if err := wholeOutputs(cmd.Context(), src.tracer, src.config, p.Executions); err != nil {
					return err
				}
				if !asJSON {
					for _, x := range p.Executions {
						printRun(e, x)
					}
					footer(e, len(p.Executions), page, p.More)
					return nil
				}
			}
			if asJSON {
				return writeJSON(e, map[string]any{"executions": executionsJSON(p.Executions), "page": page, "more": p.More})
			}
			tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "START\tDURATION\tJOB\tITEM\tIP\tSOURCE\tRESULT\tFAILURE")
			for _, x := range p.Executions {
				dur := "-"
				if !x.CompleteTime.IsZero() {
					dur = x.CompleteTime.Sub(x.StartTime).Round(time.Millisecond).String()
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\n", x.StartTime.Format("2006-01-02 15:04:05.000"), dur, x.JobName,
					x.ShardingItem, x.IP, x.Source, result(x), firstLine(x.FailureCause, 80))
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			footer(e, len(p.Executions), page, p.More)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&job, "job", "", "only this job")
	f.IntVar(&item, "item", 0, "only this sharding item")
	f.StringVar(&ip, "ip", "", "only executions on this IP")
	f.StringVar(&task, "task", "", "only this task id")
	f.StringVar(&success, "success", "", "true: succeeded only; false: failed or still running only")
	f.StringVar(&since, "since", "", "only executions started within this duration (e.g. 24h, 7d)")
	f.StringVar(&from, "from", "", "only executions started at or after this time (2026-03-01, \"2026-03-01 14:00\", RFC 3339)")
	f.StringVar(&to, "to", "", "only executions started before this time")
	f.IntVar(&limit, "limit", 50, "rows per page")
	f.IntVar(&page, "page", 1, "page number (1 is the newest)")
	f.BoolVar(&asJSON, "json", false, "print JSON instead of a table")
	f.StringVar(&statusJob, "status", "", "show the status trace of this job's triggers instead")
	f.BoolVar(&withOutput, "output", false, "show each execution's whole failure cause and output")
	f.StringVar(&id, "id", "", "show the execution with this id, with its output")
	hf.register(cmd)
	cmd.AddCommand(newHistoryPurgeCmd(e))
	return cmd
}

// wholeOutputs replaces the output excerpts of xs by the whole outputs,
// one query per execution that has output.
func wholeOutputs(ctx context.Context, tr spi.Tracer, cfg map[string]string, xs []spi.ExecutionEvent) error {
	for i := range xs {
		if xs[i].Output.IsZero() {
			continue
		}
		r, err := tr.QueryOutput(ctx, spi.OutputQuery{Config: cfg, ID: xs[i].ID})
		if err != nil {
			return err
		}
		xs[i].Output = r.Output
	}
	return nil
}

// result is an execution's outcome: ok, FAILED or running.
func result(x spi.ExecutionEvent) string {
	switch {
	case x.Success:
		return "ok"
	case !x.CompleteTime.IsZero() || x.FailureCause != "":
		return "FAILED"
	}
	return "running"
}

// printRun prints one execution as a block: a heading line, the whole
// failure cause and the output, indented.
func printRun(e *env, x spi.ExecutionEvent) {
	dur := "-"
	if !x.CompleteTime.IsZero() {
		dur = x.CompleteTime.Sub(x.StartTime).Round(time.Millisecond).String()
	}
	token := ""
	if x.FencingToken != 0 {
		token = fmt.Sprintf("  fencing token %d", x.FencingToken)
	}
	fmt.Fprintf(e.stdout, "%s  %s item %d  %s  %s  %s  %s  id %s%s\n", x.StartTime.Format("2006-01-02 15:04:05.000"), x.JobName,
		x.ShardingItem, x.IP, x.Source, result(x), dur, x.ID, token)
	indent := func(s string) string { return "    " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n    ") }
	if x.FailureCause != "" {
		fmt.Fprintf(e.stdout, "  failure:\n%s\n", indent(x.FailureCause))
	}
	switch {
	case x.Output.IsZero():
		fmt.Fprintln(e.stdout, "  (no output)")
	case x.Output.Cut > 0:
		fmt.Fprintf(e.stdout, "  output (the first %d bytes cut):\n%s\n", x.Output.Cut, indent(x.Output.Text))
	default:
		fmt.Fprintf(e.stdout, "  output:\n%s\n", indent(x.Output.Text))
	}
	fmt.Fprintln(e.stdout)
}

func showStatuses(ctx context.Context, e *env, src *traceSource, q spi.StatusQuery, asJSON bool, page int) error {
	p, err := src.tracer.QueryStatuses(ctx, q)
	if err != nil {
		return err
	}
	if len(p.Statuses) == 0 {
		if err := knownJob(ctx, e, src, q.JobName); err != nil {
			return err
		}
	}
	if asJSON {
		return writeJSON(e, map[string]any{"statuses": statusesJSON(p.Statuses), "page": page, "more": p.More})
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TIME\tSTATE\tITEMS\tIP\tTASK\tMESSAGE")
	for _, s := range p.Statuses {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", s.CreationTime.Format("2006-01-02 15:04:05.000"), s.State, s.ShardingItems,
			s.SlaveID, s.TaskID, firstLine(s.Message, 80))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	footer(e, len(p.Statuses), page, p.More)
	return nil
}

func footer(e *env, n, page int, more bool) {
	if more {
		fmt.Fprintf(e.stdout, "(%s, page %d; more: --page %d)\n", plural(n, "row", "rows"), page, page+1)
	} else if n == 0 {
		fmt.Fprintln(e.stdout, "(no rows)")
	}
}

// firstLine is s's first line, cut to n runes.
func firstLine(s string, n int) string {
	s, _, _ = strings.Cut(s, "\n")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

func writeJSON(e *env, v any) error {
	enc := json.NewEncoder(e.stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// jsonTime is RFC 3339 with milliseconds, or null for the zero time.
func jsonTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.Format("2006-01-02T15:04:05.000Z07:00")
}

// executionsJSON uses upstream's JobExecutionEvent field names.
func executionsJSON(xs []spi.ExecutionEvent) []map[string]any {
	out := make([]map[string]any, 0, len(xs))
	for _, x := range xs {
		out = append(out, map[string]any{
			"id": x.ID, "hostname": x.Hostname, "ip": x.IP, "taskId": x.TaskID, "jobName": x.JobName,
			"source": x.Source, "shardingItem": x.ShardingItem, "startTime": jsonTime(x.StartTime),
			"completeTime": jsonTime(x.CompleteTime), "success": x.Success, "failureCause": x.FailureCause,
		})
		if !x.Output.IsZero() {
			out[len(out)-1]["output"], out[len(out)-1]["outputCut"] = x.Output.Text, x.Output.Cut
		}
		if x.FencingToken != 0 {
			out[len(out)-1]["fencingToken"] = x.FencingToken
		}
	}
	return out
}

// statusesJSON uses upstream's JobStatusTraceEvent field names.
func statusesJSON(xs []spi.StatusEvent) []map[string]any {
	out := make([]map[string]any, 0, len(xs))
	for _, s := range xs {
		out = append(out, map[string]any{
			"id": s.ID, "jobName": s.JobName, "originalTaskId": s.OriginalTaskID, "taskId": s.TaskID, "slaveId": s.SlaveID,
			"executionType": s.ExecutionType, "shardingItems": s.ShardingItems, "state": s.State, "message": s.Message,
			"creationTime": jsonTime(s.CreationTime),
		})
	}
	return out
}

func newHistoryPurgeCmd(e *env) *cobra.Command {
	var (
		hf        historyFlags
		olderThan string
	)
	cmd := &cobra.Command{
		Use:   "purge -c FILE --older-than AGE",
		Short: "Delete recorded executions and status events older than AGE",
		Long: `Deletes the executions that started, and the status events created, more
than AGE ago (a duration such as 30d or 12h) from the store of the file's
elasticjob.tracing, or from the in-memory history of the standalone host
running on a file without it.`,
		Example: `  ejob history purge -c ejob.yaml --older-than 30d`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if olderThan == "" {
				return usagef(cmd, "--older-than is required")
			}
			age, err := parseAge(olderThan)
			if err != nil {
				return usagef(cmd, "--older-than: %v", err)
			}
			src, closeCat, err := hf.open(cmd.Context(), cmd, e)
			if err != nil {
				return err
			}
			defer closeCat()
			before := time.Now().Add(-age)
			resp, err := src.tracer.Purge(cmd.Context(), spi.TracePurgeRequest{Config: src.config, Before: before})
			if err != nil {
				return err
			}
			fmt.Fprintf(e.stdout, "deleted %d executions (%d with output) and %d status events older than %s\n",
				resp.Executions, resp.Outputs, resp.Statuses, before.Format("2006-01-02 15:04:05"))
			return nil
		},
	}
	cmd.Flags().StringVar(&olderThan, "older-than", "", "age of what to delete (e.g. 30d, 12h)")
	hf.register(cmd)
	return cmd
}
