package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ejob-io/ejob/core/config"
	"github.com/ejob-io/ejob/core/cron"
	"github.com/ejob-io/ejob/core/lifecycle"
	"github.com/ejob-io/ejob/core/reg"
	"github.com/ejob-io/ejob/spi"
)

func newJobCmd(e *env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "job",
		Short: "Show, change or delete one job of a namespace",
		Long: `Commands on one job's registry entry, for jobs run by ejob or by Java
ElasticJob alike: show it, change its configuration (validated before anything
is written; the running instances pick the change up at once), or delete it.`,
	}
	cmd.AddCommand(newJobShowCmd(e), newJobSetCmd(e), newJobEditCmd(e), newJobDeleteCmd(e))
	return cmd
}

// jobView is what `ejob job show` prints.
type jobView struct {
	// Status is upstream's, State ejob's own (as 'ejob jobs').
	Status        lifecycle.Status       `json:"status"`
	State         lifecycle.State        `json:"state"`
	Config        lifecycle.ConfigJSON   `json:"config"`
	ConfigVersion int32                  `json:"configVersion"`
	NextFireTimes []time.Time            `json:"nextFireTimes"`
	CronError     string                 `json:"cronError,omitempty"`
	Sharding      []lifecycle.ItemDetail `json:"sharding"`
	Servers       []lifecycle.JobServer  `json:"servers"`
	// LastResults is each item's last completed execution in the trace
	// (items without one are left out); NoTrace, when set, says why there
	// is no trace to read them from (LastResults is then nil).
	LastResults []itemResult `json:"lastResults"`
	NoTrace     string       `json:"noTrace,omitempty"`
	yaml        []byte
}

// itemResult is one item's last completed execution.
type itemResult struct {
	Item    int       `json:"item"`
	Success bool      `json:"success"`
	Time    time.Time `json:"time"`
	// Cause is the failure cause's first line (at most
	// lastCauseRunes runes).
	Cause string `json:"failureCause,omitempty"`
	ID    string `json:"id"`
}

// lastCauseRunes bounds the cause of a last result: a failure's first
// line names the job, the item and the plugin before its reason.
const lastCauseRunes = 300

// lastRunsScanned is how many of an item's newest executions are read to
// find its last completed one (the newest may still be running).
const lastRunsScanned = 5

// lastResults reads from src the last completed execution of each of
// job's items.
func lastResults(ctx context.Context, src *traceSource, job string, items []lifecycle.ItemDetail) ([]itemResult, error) {
	out := []itemResult{}
	for _, it := range items {
		p, err := src.tracer.QueryExecutions(ctx, spi.ExecutionQuery{Config: src.config, JobName: job, Item: &it.Item, Limit: lastRunsScanned})
		if err != nil {
			return nil, fmt.Errorf("last result of item %d: %w", it.Item, err)
		}
		for _, x := range p.Executions {
			if result(x) == "running" {
				continue
			}
			at := x.CompleteTime
			if at.IsZero() {
				at = x.StartTime
			}
			out = append(out, itemResult{Item: it.Item, Success: x.Success, Time: at, Cause: firstLine(x.FailureCause, lastCauseRunes), ID: x.ID})
			break
		}
	}
	return out, nil
}

// showTrace fills v's last results from the trace of the config file of
// f (its elasticjob.tracing, or the in-memory history of the standalone
// host running on it), or says in v.NoTrace why there is none.
func showTrace(ctx context.Context, cmd *cobra.Command, e *env, f *opsFlags, cf catalogFlags, job string, v *jobView) {
	src, closeSrc, err := jobTrace(ctx, cmd, e, f, cf)
	if err != nil {
		v.NoTrace = err.Error()
		return
	}
	defer closeSrc()
	if v.LastResults, err = lastResults(ctx, src, job, v.Sharding); err != nil {
		v.NoTrace = err.Error()
	}
}

// jobTrace opens the trace of f's config file; an error says why there
// is none.
func jobTrace(ctx context.Context, cmd *cobra.Command, e *env, f *opsFlags, cf catalogFlags) (*traceSource, func(), error) {
	if f.file == "" {
		return nil, nil, errors.New("no trace read with --zk (give -c FILE whose elasticjob.tracing records the runs)")
	}
	file, err := loadOpsFile(f.file)
	if err != nil {
		return nil, nil, err
	}
	if file.Tracing == nil {
		src, err := hostTrace(ctx, file)
		return src, func() {}, err
	}
	hf := historyFlags{file: f.file, cf: cf}
	return hf.open(ctx, cmd, e)
}

func newJobShowCmd(e *env) *cobra.Command {
	var (
		f     opsFlags
		cf    catalogFlags
		fires int
	)
	cmd := &cobra.Command{
		Use:   "show JOB",
		Short: "Show a job: state, configuration, next fire times, sharding, instances",
		Long: `Shows JOB's state (as 'ejob jobs', with the ElasticJob console's status), its
configuration as stored in the registry (the YAML of its config node), its next
fire times computed from its cron and time zone, every sharding item (0 to
shardingTotalCount-1, and any left over from a larger count) with its state
(DISABLED, RUNNING, NEVER_RUN, RESHARDING or READY), owner and failover, and
its servers with their live instances. Secrets in props are shown as *** (as the
REST API shows them).

With -c FILE each item also shows its last result: ok or FAILED, when it
completed, and the first line of the failure cause, read from the file's
elasticjob.tracing (through the tracing plugin, as 'ejob history') or, for a
standalone file without it, from the in-memory history of the host running
on the file. Without a trace one line says why instead.`,
		Example: `  ejob job show myJob -c ejob.yaml
  ejob job show myJob --zk 127.0.0.1:2181 --namespace demo --json`,
		Args: exactArgs(1, "one job name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return f.run(cmd, e, func(ctx context.Context, c reg.Client) error {
				v, err := showJob(ctx, c, args[0], fires)
				if err != nil {
					return err
				}
				showTrace(ctx, cmd, e, &f, cf, args[0], v)
				return f.print(e, v, func(w io.Writer) error { return v.write(w, args[0]) })
			})
		},
	}
	f.register(cmd)
	cf.register(cmd, true)
	cmd.Flags().IntVarP(&fires, "fires", "n", 5, "how many next fire times to show")
	return cmd
}

func showJob(ctx context.Context, c reg.Client, job string, fires int) (*jobView, error) {
	stored, err := lifecycle.GetConfig(ctx, c, job)
	if err != nil {
		return nil, err
	}
	d, err := lifecycle.Detail(ctx, c, job)
	if err != nil {
		return nil, err
	}
	// Secrets are masked, as the REST API masks them.
	v := &jobView{Status: d.Status, State: d.State, Config: lifecycle.ToConfigJSON(stored.Config), ConfigVersion: stored.Version,
		Sharding: d.Items, Servers: d.Servers}
	if v.yaml, err = config.Marshal(stored.Config); err != nil {
		return nil, err
	}
	v.yaml = config.Redact(v.yaml)
	if cfg := stored.Config; cfg.Cron != "" {
		if v.NextFireTimes, err = cron.Preview(cfg.Cron, cfg.TimeZone, time.Now(), fires); err != nil {
			v.CronError = err.Error()
		}
	}
	if v.NextFireTimes == nil {
		v.NextFireTimes = []time.Time{}
	}
	return v, nil
}

func (v *jobView) write(w io.Writer, job string) error {
	fmt.Fprintf(w, "Job:     %s\nState:   %s (ElasticJob status %s)\n", job, v.State, v.Status)
	zone := v.Config.TimeZone
	if zone == "" {
		zone = "host zone"
	}
	switch {
	case v.Config.Cron == "":
		fmt.Fprintln(w, "Cron:    none: a one-off job, run by 'ejob trigger'")
	case v.CronError != "":
		fmt.Fprintf(w, "Cron:    %s (%s): invalid here: %s\n", v.Config.Cron, zone, v.CronError)
	default:
		fmt.Fprintf(w, "Cron:    %s (%s)\nNext:   ", v.Config.Cron, zone)
		for i, t := range v.NextFireTimes {
			sep := " "
			if i > 0 {
				sep = "\n         "
			}
			fmt.Fprintf(w, "%s%s", sep, t.Format(time.RFC3339))
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "\nConfiguration (config node, version %d):\n", v.ConfigVersion)
	for line := range strings.SplitSeq(strings.TrimRight(string(v.yaml), "\n"), "\n") {
		fmt.Fprintf(w, "  %s\n", line)
	}
	fmt.Fprintln(w, "\nSharding:")
	last := make(map[int]itemResult, len(v.LastResults))
	for _, r := range v.LastResults {
		last[r.Item] = r
	}
	header := "ITEM\tSTATE\tINSTANCE\tSERVER\tFAILOVER"
	if v.NoTrace == "" {
		header += "\tLAST RESULT"
	}
	rows := make([][]string, len(v.Sharding))
	for i, s := range v.Sharding {
		fo := ""
		if s.Failover {
			fo = "yes"
		}
		rows[i] = []string{strconv.Itoa(s.Item), string(s.State), orDash(s.InstanceID), orDash(s.ServerIP), fo}
		if v.NoTrace == "" {
			rows[i] = append(rows[i], lastResultText(last[s.Item]))
		}
	}
	if err := table(w, header, rows); err != nil {
		return err
	}
	if v.NoTrace != "" {
		fmt.Fprintf(w, "Last results: not shown: %s\n", v.NoTrace)
	}
	fmt.Fprintln(w, "\nServers:")
	rows = rows[:0]
	for _, s := range v.Servers {
		rows = append(rows, []string{s.ServerIP, orDash(s.Status), orDash(strings.Join(s.Instances, ", "))})
	}
	return table(w, "SERVER\tSTATUS\tINSTANCES", rows)
}

// lastResultText is r as the LAST RESULT column shows it: "-" for none,
// else ok or FAILED, its time and the first line of the cause.
func lastResultText(r itemResult) string {
	switch {
	case r.ID == "" && r.Time.IsZero():
		return "-"
	case r.Success:
		return "ok " + r.Time.Local().Format(time.DateTime)
	case r.Cause != "":
		return "FAILED " + r.Time.Local().Format(time.DateTime) + ": " + r.Cause
	}
	return "FAILED " + r.Time.Local().Format(time.DateTime)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func newJobSetCmd(e *env) *cobra.Command {
	var f opsFlags
	cmd := &cobra.Command{
		Use:   "set JOB KEY=VALUE...",
		Short: "Change keys of a job's configuration in the registry",
		Long: `Changes keys of JOB's configuration (its config node) and writes it back, as the
ElasticJob console's edit form does. The running instances pick the change up
without a restart: a new cron or timeZone reschedules them, a new
shardingTotalCount reshards, props apply from the next fire.

  KEY=VALUE         a key of the config node (docs/configuration.md): cron,
                    shardingTotalCount, failover, description, ...; an empty
                    VALUE clears a string; jobListenerTypes takes a,b,c
  props.NAME=VALUE  set one property
  props.NAME-       remove one property

The whole configuration is validated first (the cron in its time zone,
shardingTotalCount > 0, shardingItemParameters within the items, ...), and
nothing is written unless it is valid (exit status 4). The write is
conditional: if someone changed the configuration meanwhile, nothing is
written (exit status 4); run the command again.`,
		Example: `  ejob job set myJob cron='0 0/10 * * * ?' -c ejob.yaml
  ejob job set myJob shardingTotalCount=6 'shardingItemParameters=' -c ejob.yaml
  ejob job set myJob props.script.command.line='/opt/run.sh --fast' props.old.key- -c ejob.yaml`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) < 2 {
				return usagef(cmd, "want a job name and at least one KEY=VALUE")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return f.run(cmd, e, func(ctx context.Context, c reg.Client) error {
				stored, err := lifecycle.GetConfig(ctx, c, args[0])
				if err != nil {
					return err
				}
				cfg := stored.Config.Clone()
				if err := lifecycle.SetConfigKeys(cfg, args[1:]...); err != nil {
					return err
				}
				return writeConfig(ctx, c, e, &f, stored, cfg)
			})
		},
	}
	f.register(cmd)
	return cmd
}

// writeConfig writes cfg over stored unless nothing changed, and reports.
func writeConfig(ctx context.Context, c reg.Client, e *env, f *opsFlags, stored lifecycle.StoredConfig, cfg *config.JobConfiguration) error {
	before, err := config.Marshal(stored.Config)
	if err != nil {
		return err
	}
	after, err := config.Marshal(cfg)
	if err != nil {
		return err
	}
	changed := !bytes.Equal(before, after)
	if changed {
		if err := lifecycle.UpdateConfig(ctx, c, cfg, lifecycle.IfVersion(stored.Version)); err != nil {
			return err
		}
	}
	return f.print(e, map[string]any{"jobName": cfg.JobName, "changed": changed, "config": lifecycle.ToConfigJSON(cfg)}, func(w io.Writer) error {
		if !changed {
			_, err := fmt.Fprintf(w, "%s: no change\n", cfg.JobName)
			return err
		}
		fmt.Fprintf(w, "updated %s:\n", cfg.JobName)
		// The diff shows secrets masked, as ejob job show does.
		diff := lineDiff(string(config.Redact(before)), string(config.Redact(after)))
		for _, d := range diff {
			fmt.Fprintf(w, "  %s\n", d)
		}
		if len(diff) == 0 {
			fmt.Fprintln(w, "  (only secret values changed; they are not shown)")
		}
		return nil
	})
}

// lineDiff lists the lines only in a ("- ") and only in b ("+ ").
func lineDiff(a, b string) []string {
	in := func(s string) map[string]bool {
		m := map[string]bool{}
		for l := range strings.SplitSeq(s, "\n") {
			m[l] = true
		}
		return m
	}
	ina, inb := in(a), in(b)
	var out []string
	for l := range strings.SplitSeq(a, "\n") {
		if !inb[l] {
			out = append(out, "- "+l)
		}
	}
	for l := range strings.SplitSeq(b, "\n") {
		if !ina[l] {
			out = append(out, "+ "+l)
		}
	}
	return out
}

func newJobEditCmd(e *env) *cobra.Command {
	var f opsFlags
	cmd := &cobra.Command{
		Use:   "edit JOB",
		Short: "Edit a job's configuration YAML in $EDITOR",
		Long: `Opens JOB's configuration (the YAML of its config node) in $VISUAL or $EDITOR
(default vi). When the editor exits, the file is read back: unchanged, nothing
is written; otherwise it must parse, keep the job name and validate (as 'ejob
job set'), and it is written only if nobody changed the configuration in the
meantime. A refused edit is kept in a file whose path is printed, so it is not
lost (exit status 4).`,
		Example: `  ejob job edit myJob -c ejob.yaml
  EDITOR='code --wait' ejob job edit myJob --zk 127.0.0.1:2181 --namespace demo`,
		Args: exactArgs(1, "one job name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return f.run(cmd, e, func(ctx context.Context, c reg.Client) error {
				stored, err := lifecycle.GetConfig(ctx, c, args[0])
				if err != nil {
					return err
				}
				before, err := config.Marshal(stored.Config)
				if err != nil {
					return err
				}
				file, err := os.CreateTemp("", "ejob-"+strings.ReplaceAll(args[0], string(os.PathSeparator), "_")+"-*.yaml")
				if err != nil {
					return err
				}
				path := file.Name()
				_, err = file.Write(before)
				if cerr := file.Close(); err == nil {
					err = cerr
				}
				if err != nil {
					return err
				}
				keep := false
				defer func() {
					if !keep {
						_ = os.Remove(path)
					}
				}()
				if err := runEditor(ctx, e, path); err != nil {
					return err
				}
				after, err := os.ReadFile(path)
				if err != nil {
					return err
				}
				if bytes.Equal(before, after) {
					return f.print(e, map[string]any{"jobName": args[0], "changed": false}, func(w io.Writer) error {
						_, err := fmt.Fprintf(w, "%s: no change\n", args[0])
						return err
					})
				}
				cfg, err := editedConfig(args[0], after)
				if err == nil {
					err = writeConfig(ctx, c, e, &f, stored, cfg)
				}
				if err != nil && (errors.Is(err, lifecycle.ErrInvalid) || errors.Is(err, lifecycle.ErrConflict)) {
					keep = true
					return fmt.Errorf("%w\nnothing was written; your edit is kept in %s", err, path)
				}
				return err
			})
		},
	}
	f.register(cmd)
	return cmd
}

func editedConfig(job string, data []byte) (*config.JobConfiguration, error) {
	cfg, err := config.Unmarshal(data)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", lifecycle.ErrInvalid, err)
	}
	if cfg.JobName != job {
		return nil, fmt.Errorf("%w: jobName is %q: the job name cannot be changed (it is %q)", lifecycle.ErrInvalid, cfg.JobName, job)
	}
	if err := lifecycle.ValidateConfig(cfg); err != nil {
		return nil, err
	}
	return cfg, nil
}

// runEditor runs $VISUAL or $EDITOR (default vi) on path through sh, so
// that an editor with arguments ("code --wait") works, on the terminal.
func runEditor(ctx context.Context, e *env, path string) error {
	editor := os.Getenv("VISUAL")
	if editor == "" {
		editor = os.Getenv("EDITOR")
	}
	if editor == "" {
		editor = "vi"
	}
	cmd := exec.CommandContext(ctx, "sh", "-c", editor+` "$1"`, "ejob-editor", path)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, e.stderr, e.stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("editor %q: %w; nothing was written", editor, err)
	}
	return nil
}

func newJobDeleteCmd(e *env) *cobra.Command {
	var (
		f     opsFlags
		force bool
	)
	cmd := &cobra.Command{
		Use:   "delete JOB",
		Short: "Delete a job from the registry (its whole subtree)",
		Long: `Deletes /JOB and everything under it (configuration, servers, sharding,
leader), as the ElasticJob console's remove-job action (upstream's
removeJobConfiguration): nothing of the job is left in the namespace. A job
that still has live instances is refused (exit status 4) unless --force: shut
it down first ('ejob shutdown JOB'), or its hosts would run on without a
registry entry and write a new one at their next start.`,
		Example: `  ejob shutdown myJob -c ejob.yaml && ejob job delete myJob -c ejob.yaml`,
		Args:    exactArgs(1, "one job name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return f.run(cmd, e, func(ctx context.Context, c reg.Client) error {
				brief, err := lifecycle.Job(ctx, c, args[0])
				if err != nil && !errors.Is(err, lifecycle.ErrJobNotFound) {
					return err
				}
				if brief.InstanceCount > 0 && !force {
					return fmt.Errorf("%w: job %q has %s (%s): shut it down first ('ejob shutdown %s'), or pass --force",
						lifecycle.ErrInvalid, args[0], plural(brief.InstanceCount, "live instance", "live instances"), strings.Join(brief.Instances, ", "), args[0])
				}
				if err := lifecycle.RemoveConfig(ctx, c, args[0]); err != nil {
					return err
				}
				return f.print(e, map[string]any{"jobName": args[0], "deleted": true}, func(w io.Writer) error {
					_, err := fmt.Fprintf(w, "deleted job %s\n", args[0])
					return err
				})
			})
		},
	}
	f.register(cmd)
	cmd.Flags().BoolVar(&force, "force", false, "delete even while instances run the job")
	return cmd
}
