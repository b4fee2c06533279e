package cli_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ejob-io/ejob/host/cli"
	"github.com/ejob-io/ejob/plugins/tracing/rdb"
	"github.com/ejob-io/ejob/spi"
)

// historyFile writes a standalone config whose tracing records into an
// SQLite file, and that file with executions of two jobs: 12 of
// "billing" (items 0-2, every 4th failed, one still running) and 3 of
// "report", one minute apart, plus a trigger's status trace.
func historyFile(t *testing.T) (cfgPath string, dbCfg map[string]string, t0 time.Time) {
	t.Helper()
	dir := t.TempDir()
	db := filepath.Join(dir, "history.db")
	cfgPath = filepath.Join(dir, "ejob.yaml")
	os.WriteFile(cfgPath, []byte(fmt.Sprintf(`elasticjob:
  tracing:
    type: RDB
    dataSource: {url: "jdbc:sqlite:%s"}
  jobs:
    billing: {elasticJobType: SCRIPT, cron: "0 0 1 * * ?", shardingTotalCount: 3, props: {script.command.line: "true"}}
`, db)), 0o644)
	dbCfg = map[string]string{"url": "jdbc:sqlite:" + db}
	t0 = time.Now().Add(-time.Hour).Truncate(time.Second)
	var req spi.TraceWriteRequest
	req.Config = dbCfg
	add := func(job string, i int, ip string) {
		e := spi.ExecutionEvent{ID: fmt.Sprintf("%s-%02d", job, i), Hostname: "h", IP: ip, TaskID: job + "@-@0,1,2@-@READY@-@" + ip + "@-@9",
			JobName: job, Source: "NORMAL_TRIGGER", ShardingItem: i % 3, StartTime: t0.Add(time.Duration(i) * time.Minute)}
		if job == "billing" && i == 4 {
			e.FencingToken = 4294967397
		}
		req.Executions = append(req.Executions, e)
		if i == 11 && job == "billing" {
			return // still running
		}
		e.CompleteTime, e.Success = e.StartTime.Add(1500*time.Millisecond), i%4 != 0
		if !e.Success {
			e.FailureCause = "exit status 3\nstack"
			e.Output = spi.Output{Text: fmt.Sprintf("out| step 1 of %s %d\nerr| disk full\n", job, i), Cut: 10}
		}
		req.Executions = append(req.Executions, e)
	}
	for i := range 12 {
		ip := "10.0.0.1"
		if i%2 == 1 {
			ip = "10.0.0.2"
		}
		add("billing", i, ip)
	}
	for i := range 3 {
		add("report", i, "10.0.0.1")
	}
	task := "billing@-@0,1,2@-@READY@-@10.0.0.1@-@9"
	for i, st := range []string{"TASK_STAGING", "TASK_RUNNING", "TASK_ERROR"} {
		req.Statuses = append(req.Statuses, spi.StatusEvent{ID: fmt.Sprint("s", i), JobName: "billing", TaskID: task, SlaveID: "10.0.0.1",
			ExecutionType: "READY", ShardingItems: "[0, 1, 2]", State: st, Message: map[int]string{0: "Job 'billing' execute begin.", 2: "{0=boom}"}[i],
			CreationTime: t0.Add(time.Duration(i) * time.Second)})
	}
	tr := rdb.New()
	defer tr.Close()
	if _, err := tr.Write(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	return cfgPath, dbCfg, t0
}

func TestHistory(t *testing.T) {
	cfg, dbCfg, _ := historyFile(t)
	code, out, errs := run(t, "history", "-c", cfg, "--job", "billing", "--limit", "5")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 7 || !strings.HasPrefix(lines[0], "START") || !strings.Contains(lines[6], "more: --page 2") {
		t.Fatalf("output:\n%s", out)
	}
	// Newest first: item 11 (still running), then 10, 9, 8 (failed), 7.
	for i, want := range []string{"running", "ok", "ok", "FAILED", "ok"} {
		if f := strings.Fields(lines[i+1]); f[len(f)-1] != want && !strings.Contains(lines[i+1], want) {
			t.Errorf("row %d = %q, want %s", i+1, lines[i+1], want)
		}
	}
	if !strings.Contains(lines[4], "exit status 3") || strings.Contains(out, "stack") {
		t.Errorf("the failure column should show the first line of the cause:\n%s", out)
	}

	code, out, errs = run(t, "history", "-c", cfg, "--job", "billing", "--success", "false", "--ip", "10.0.0.1", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var page struct {
		Executions []struct {
			ID           string  `json:"id"`
			Success      bool    `json:"success"`
			CompleteTime *string `json:"completeTime"`
			FailureCause string  `json:"failureCause"`
		} `json:"executions"`
		More bool `json:"more"`
	}
	if err := json.Unmarshal([]byte(out), &page); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var ids []string
	for _, x := range page.Executions {
		ids = append(ids, x.ID)
	}
	// Failed on 10.0.0.1 (even i): 0, 4, 8; none running there.
	if strings.Join(ids, ",") != "billing-08,billing-04,billing-00" || page.More {
		t.Errorf("ids = %v more=%v", ids, page.More)
	}

	code, out, _ = run(t, "history", "-c", cfg, "--job", "billing", "--item", "2", "--page", "2", "--limit", "2", "--json")
	if code != 0 || !strings.Contains(out, `"id": "billing-02"`) || strings.Count(out, `"id"`) != 2 {
		t.Errorf("item 2, page 2: %s", out)
	}

	code, out, _ = run(t, "history", "-c", cfg, "--status", "billing")
	if code != 0 || !strings.Contains(out, "TASK_ERROR") || strings.Index(out, "TASK_ERROR") > strings.Index(out, "TASK_STAGING") {
		t.Errorf("status trace, newest first:\n%s", out)
	}

	code, out, _ = run(t, "history", "purge", "-c", cfg, "--older-than", "50m")
	if code != 0 || !strings.Contains(out, "deleted 14 executions (4 with output) and 3 status events") {
		t.Errorf("purge: %d %s", code, out)
	}
	tr := rdb.New()
	defer tr.Close()
	p, err := tr.QueryExecutions(context.Background(), spi.ExecutionQuery{Config: dbCfg, Limit: 100})
	if err != nil || len(p.Executions) != 1 || p.Executions[0].ID != "billing-11" {
		t.Errorf("after purge: %d rows, %v", len(p.Executions), err)
	}
	if o, err := tr.QueryOutput(context.Background(), spi.OutputQuery{Config: dbCfg, ID: "billing-08"}); err != nil || o.Found {
		t.Errorf("output of a purged execution: %+v, %v", o, err)
	}

	if code, _, errs := run(t, "history", "-c", cfg, "--success", "maybe"); code != 2 || !strings.Contains(errs, "--success") {
		t.Errorf("bad --success: %d %s", code, errs)
	}
}

// TestHistoryPageArithmetic: --page 9223372036854775807 must not wrap the
// offset into the first page's rows: a page that would start past
// tracing.MaxOffset is a usage error naming the largest page, and a page
// past the end shows no rows.
func TestHistoryPageArithmetic(t *testing.T) {
	cfg, _, _ := historyFile(t)
	for _, args := range [][]string{{"--page", "9223372036854775807"}, {"--page", "9223372036854775807", "--limit", "1"},
		{"--page", "2147485", "--limit", "1000"}, {"--status", "billing", "--page", "9223372036854775807"}, {"--page", "0"}} {
		code, out, errs := run(t, append([]string{"history", "-c", cfg}, args...)...)
		if code != 2 || !strings.Contains(errs, "--page: want 1 to") || strings.Contains(out, "billing") {
			t.Errorf("%v: exit %d\nstdout %s\nstderr %s\nwant a usage error and no rows", args, code, out, errs)
		}
	}
	code, out, errs := run(t, "history", "-c", cfg, "--page", "2147484", "--limit", "1000")
	if code != 0 || strings.Contains(out, "billing") || !strings.Contains(out, "(no rows)") {
		t.Errorf("a page past the end: exit %d\nstdout %s\nstderr %s", code, out, errs)
	}
}

// A job that is in neither the file, the trace nor the registry is
// unknown (exit 3, saying where it looked); `ejob history --job nosuch`
// once printed "(no rows)" and exited 0. A known job with no rows in the
// range still prints "(no rows)".
func TestHistoryUnknownJob(t *testing.T) {
	cfg, _, _ := historyFile(t)
	for _, args := range [][]string{{"--job", "nosuch"}, {"--status", "nosuch"}, {"--job", "nosuch", "--since", "1h"}} {
		code, out, errs := run(t, append([]string{"history", "-c", cfg}, args...)...)
		if code != cli.ExitNotFound || !strings.Contains(errs, `"nosuch" is unknown: not in `+cfg+`, and no execution or status is recorded for it`) {
			t.Errorf("%v: exit %d\nstdout %s\nstderr %s\nwant exit 3 saying the job is unknown", args, code, out, errs)
		}
	}
	for _, args := range [][]string{{"--job", "billing", "--since", "1s"}, {"--job", "report", "--item", "2", "--success", "false"},
		{"--status", "report"}} {
		code, out, errs := run(t, append([]string{"history", "-c", cfg}, args...)...)
		if code != cli.ExitOK || !strings.Contains(out, "(no rows)") {
			t.Errorf("%v (a known job, no rows): exit %d\nstdout %s\nstderr %s", args, code, out, errs)
		}
	}

	// With a regCenter, a job of the registry is known too.
	_, flags := opsWorld(t)
	data, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	zkCfg := filepath.Join(t.TempDir(), "zk.yaml")
	text := strings.Replace(string(data), "elasticjob:\n", fmt.Sprintf("elasticjob:\n  regCenter: {serverLists: %q, namespace: %q}\n", flags[1], flags[3]), 1)
	if err := os.WriteFile(zkCfg, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, errs := run(t, "history", "-c", zkCfg, "--job", "nightly"); code != cli.ExitOK || !strings.Contains(out, "(no rows)") {
		t.Errorf("a job of the registry: exit %d\nstdout %s\nstderr %s", code, out, errs)
	}
	code, _, errs := run(t, "history", "-c", zkCfg, "--job", "nosuch")
	if code != cli.ExitNotFound || !strings.Contains(errs, fmt.Sprintf(`not in namespace %q`, flags[3])) {
		t.Errorf("unknown with a regCenter: exit %d\nstderr %s", code, errs)
	}
}

// TestHistoryOutput: --output shows each execution with its whole failure
// cause and its output (how much was cut said), --id one execution, the
// JSON the output's excerpt; an unknown --id exits 3.
func TestHistoryOutput(t *testing.T) {
	cfg, _, _ := historyFile(t)
	code, out, errs := run(t, "history", "-c", cfg, "--job", "billing", "--success", "false", "--output", "--limit", "2")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"billing item 2", "FAILED", "id billing-08", "  failure:\n    exit status 3\n    stack\n",
		"  output (the first 10 bytes cut):\n    out| step 1 of billing 8\n    err| disk full\n", "  (no output)\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("--output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "fencing token") {
		t.Errorf("--output shows a fencing token for runs without one:\n%s", out)
	}
	code, out, _ = run(t, "history", "-c", cfg, "--id", "billing-04")
	if code != 0 || !strings.Contains(out, "id billing-04  fencing token 4294967397\n") || !strings.Contains(out, "out| step 1 of billing 4") || strings.Contains(out, "billing-08") {
		t.Errorf("--id billing-04: exit %d\n%s", code, out)
	}
	code, out, _ = run(t, "history", "-c", cfg, "--id", "billing-04", "--json")
	if code != 0 || !strings.Contains(out, `"output": "out| step 1 of billing 4\nerr| disk full\n"`) || !strings.Contains(out, `"outputCut": 10`) ||
		!strings.Contains(out, `"fencingToken": 4294967397`) {
		t.Errorf("--id --json: exit %d\n%s", code, out)
	}
	if code, _, errs := run(t, "history", "-c", cfg, "--id", "nope"); code != 3 || !strings.Contains(errs, `"nope"`) {
		t.Errorf("unknown --id: exit %d: %s", code, errs)
	}
	// A page of one row says "1 row", not "1 rows".
	if code, out, errs := run(t, "history", "-c", cfg, "--job", "billing", "--limit", "1"); code != 0 || !strings.Contains(out, "(1 row, page 1; more: --page 2)") {
		t.Errorf("--limit 1: exit %d\nstdout %s\nstderr %s\nwant the footer (1 row, page 1; more: --page 2)", code, out, errs)
	}
}
