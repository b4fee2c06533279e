package cli_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ejob-io/ejob/host/cli"
	"github.com/ejob-io/ejob/plugins/tracing/rdb"
	"github.com/ejob-io/ejob/spi"
)

// TestJobShowLastResults: `ejob job show JOB -c FILE` whose file has
// elasticjob.tracing shows each item's last completed run in a LAST
// RESULT column: ok or FAILED with its completion time and the first line
// of the cause, "-" for an item without one, and a run still going does
// not hide the last completed one; --json carries the same. Without a
// trace (--zk, or a file with a regCenter and no elasticjob.tracing) one
// line says why, instead of the column.
func TestJobShowLastResults(t *testing.T) {
	_, flags := opsWorld(t)
	dir := t.TempDir()
	db := filepath.Join(dir, "history.db")
	withTrace := filepath.Join(dir, "traced.yaml")
	noTrace := filepath.Join(dir, "untraced.yaml")
	regCenter := fmt.Sprintf("elasticjob:\n  regCenter: {serverLists: %q, namespace: %q}\n", flags[1], flags[3])
	write := func(path, text string) {
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	jobs := "  jobs:\n    report: {elasticJobType: SCRIPT, cron: \"0 0/5 * * * ?\", shardingTotalCount: 3, props: {script.command.line: \"true\"}}\n"
	write(withTrace, regCenter+fmt.Sprintf("  tracing:\n    type: RDB\n    dataSource: {url: \"jdbc:sqlite:%s\"}\n", db)+jobs)
	write(noTrace, regCenter+jobs)

	t0 := time.Now().Add(-time.Hour).Truncate(time.Second)
	ev := func(id string, item int, start time.Duration, done, ok bool, cause string) []spi.ExecutionEvent {
		e := spi.ExecutionEvent{ID: id, Hostname: "h", IP: "10.0.0.1", TaskID: "report@-@0,1,2@-@READY@-@10.0.0.1@-@9",
			JobName: "report", Source: "NORMAL_TRIGGER", ShardingItem: item, StartTime: t0.Add(start)}
		out := []spi.ExecutionEvent{e}
		if done {
			e.CompleteTime, e.Success, e.FailureCause = e.StartTime.Add(2*time.Second), ok, cause
			out = append(out, e)
		}
		return out
	}
	var req spi.TraceWriteRequest
	req.Config = map[string]string{"url": "jdbc:sqlite:" + db}
	for _, x := range [][]spi.ExecutionEvent{
		ev("a", 0, 0, true, false, "old failure"),
		ev("b", 0, time.Minute, true, true, ""),
		ev("c", 0, 2*time.Minute, false, false, ""), // still running
		ev("d", 1, time.Minute, true, false, "exit status 3\nstack line"),
	} {
		req.Executions = append(req.Executions, x...)
	}
	tr := rdb.New()
	defer tr.Close()
	if _, err := tr.Write(context.Background(), req); err != nil {
		t.Fatal(err)
	}

	out, _ := ops(t, nil, cli.ExitOK, "job", "show", "report", "-c", withTrace)
	okAt := t0.Add(time.Minute + 2*time.Second).Local().Format(time.DateTime)
	for _, re := range []string{
		`(?m)^ITEM\s+STATE\s+INSTANCE\s+SERVER\s+FAILOVER\s+LAST RESULT$`,
		`(?m)^0\s+READY\s+.*\s+ok ` + regexp.QuoteMeta(okAt) + `$`,
		`(?m)^1\s+READY\s+.*\s+FAILED ` + regexp.QuoteMeta(okAt) + `: exit status 3$`,
		`(?m)^2\s+READY\s+.*\s+-$`,
	} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("job show lacks %s:\n%s", re, out)
		}
	}
	if strings.Contains(out, "stack line") || strings.Contains(out, "Last results: not shown") {
		t.Errorf("job show with a trace:\n%s", out)
	}

	out, _ = ops(t, nil, cli.ExitOK, "job", "show", "report", "-c", withTrace, "--json")
	var v struct {
		LastResults []struct {
			Item         int       `json:"item"`
			Success      bool      `json:"success"`
			Time         time.Time `json:"time"`
			FailureCause string    `json:"failureCause"`
			ID           string    `json:"id"`
		} `json:"lastResults"`
		NoTrace *string `json:"noTrace"`
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(v.LastResults) != 2 || v.NoTrace != nil ||
		v.LastResults[0].ID != "b" || !v.LastResults[0].Success || !v.LastResults[0].Time.Equal(t0.Add(time.Minute+2*time.Second)) ||
		v.LastResults[1].ID != "d" || v.LastResults[1].Success || v.LastResults[1].FailureCause != "exit status 3" {
		t.Errorf("job show --json last results: %+v (noTrace %v)\n%s", v.LastResults, v.NoTrace, out)
	}

	for name, c := range map[string]struct {
		args []string
		want string
	}{
		"--zk":       {flags, "Last results: not shown: no trace read with --zk"},
		"no tracing": {[]string{"-c", noTrace}, "Last results: not shown: " + noTrace + " has no elasticjob.tracing section"},
	} {
		out, _ := ops(t, c.args, cli.ExitOK, "job", "show", "report")
		if !strings.Contains(out, c.want) || strings.Contains(out, "LAST RESULT") || strings.Count(out, "Last results") != 1 {
			t.Errorf("%s: job show:\n%s", name, out)
		}
	}
}
