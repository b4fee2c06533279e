package daemon_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ejob-io/ejob/internal/dbtest"
	"github.com/ejob-io/ejob/internal/testkit"
	"github.com/ejob-io/ejob/plugins/tracing/rdb"
	"github.com/ejob-io/ejob/spi"
)

// failItemScript writes a script that records each run in out and fails
// for sharding item 1.
func failItemScript(t *testing.T, dir, out string) string {
	t.Helper()
	p := filepath.Join(dir, "item.sh")
	body := "#!/bin/sh\nprintf '%s\\n' \"$1\" >> " + out + "\ncase \"$1\" in *'\"shardingItem\":1,'*|*'\"shardingItem\":1}'*) echo item one fails >&2; exit 3;; esac\n"
	if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func queryAll(t *testing.T, tr *rdb.Tracer, cfg map[string]string, job string) ([]spi.ExecutionEvent, []spi.StatusEvent) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ep, err := tr.QueryExecutions(ctx, spi.ExecutionQuery{Config: cfg, JobName: job, Limit: rdb.MaxLimit})
	if err != nil {
		t.Fatal(err)
	}
	sp, err := tr.QueryStatuses(ctx, spi.StatusQuery{Config: cfg, JobName: job, Limit: rdb.MaxLimit})
	if err != nil {
		t.Fatal(err)
	}
	return ep.Executions, sp.Statuses
}

// TestTracingStandaloneSQLite: a standalone host with `tracing: {type:
// RDB}` records every item's start and completion and every trigger's
// status sequence into ejob-tracing.db next to its file; a failing item's
// row carries its failure cause; an excluded job records nothing; the
// queue is flushed on SIGTERM.
func TestTracingStandaloneSQLite(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "runs.txt")
	script := failItemScript(t, dir, out)
	cfg := filepath.Join(dir, "ejob.yaml")
	os.WriteFile(cfg, []byte(fmt.Sprintf(`elasticjob:
  tracing:
    type: RDB
    excludeJobNames: [quiet]
  jobs:
    traced:
      elasticJobType: SCRIPT
      cron: "* * * * * ?"
      shardingTotalCount: 3
      props:
        script.command.line: "%[1]s"
    quiet:
      elasticJobType: SCRIPT
      cron: "* * * * * ?"
      shardingTotalCount: 1
      props:
        script.command.line: "true"
`, script)), 0o644)
	h := runHost(t, nil, "run", "-c", cfg)
	h.waitLog("recording execution events")
	testkit.Eventually(t, 30*time.Second, "two triggers of traced", func() bool { return len(readRecords(t, out)) >= 6 })
	h.signal(syscall.SIGTERM)
	logs := h.waitExit(30 * time.Second)
	if !strings.Contains(logs, filepath.Join(dir, "ejob-tracing.db")) {
		t.Errorf("the host does not say where it records:\n%s", logs)
	}

	tr := rdb.New()
	defer tr.Close()
	dbCfg := map[string]string{"driver": "sqlite", "url": filepath.Join(dir, "ejob-tracing.db")}
	execs, statuses := queryAll(t, tr, dbCfg, "traced")
	runs := readRecords(t, out)
	if len(execs) != 2*len(runs)-len(runs) {
		// One row per item run (start and completion share it).
		t.Errorf("%d execution rows for %d item runs", len(execs), len(runs))
	}
	byTask := map[string][]string{}
	for _, e := range execs {
		if e.CompleteTime.IsZero() {
			t.Errorf("execution not completed after a drained shutdown: %+v", e)
		}
		want := e.ShardingItem != 1
		if e.Success != want || (e.ShardingItem == 1) != strings.Contains(e.FailureCause, "Exit value: 3") || e.Source != "NORMAL_TRIGGER" {
			t.Errorf("row %+v", e)
		}
	}
	for i := len(statuses) - 1; i >= 0; i-- { // oldest first
		s := statuses[i]
		byTask[s.TaskID] = append(byTask[s.TaskID], s.State)
		if s.State == "TASK_STAGING" && s.Message != "Job 'traced' execute begin." {
			t.Errorf("staging message %q", s.Message)
		}
		if s.State == "TASK_ERROR" && !strings.HasPrefix(s.Message, "{1=") {
			t.Errorf("error message %q", s.Message)
		}
	}
	if len(byTask) != 1 {
		t.Errorf("task ids %v, want one (same items every trigger)", byTask)
	}
	for task, states := range byTask {
		for i := 0; i+3 <= len(states); i += 3 {
			if got := states[i : i+3]; !slices.Equal(got, []string{"TASK_STAGING", "TASK_RUNNING", "TASK_ERROR"}) {
				t.Errorf("%s: states %v", task, states)
				break
			}
		}
	}
	if e, s := queryAll(t, tr, dbCfg, "quiet"); len(e)+len(s) != 0 {
		t.Errorf("the excluded job has %d rows", len(e)+len(s))
	}
}

// TestTracingBadConfigRejectedBeforeStart: an unknown driver, a bad DSN
// and include with exclude are reported with file and line before any job
// starts, without the password.
func TestTracingBadConfigRejectedBeforeStart(t *testing.T) {
	dir := t.TempDir()
	for name, tc := range map[string]struct{ tracing, where, why string }{
		"unknown driver": {"    type: RDB\n    dataSource:\n      driver: oracle\n      url: x\n      password: s3cr3t-pw\n", `:7: elasticjob.tracing.dataSource: `, `invalid config: rdb tracing: driver: unknown driver "oracle"`},
		"bad DSN":        {"    type: RDB\n    dataSource:\n      driver: postgres\n      url: postgres://u:s3cr3t-pw@db:port/x\n", ":8: elasticjob.tracing.dataSource: ", "invalid config: rdb tracing: url: not a PostgreSQL URL"},
		"both lists":     {"    type: RDB\n    includeJobNames: [a]\n    excludeJobNames: [b]\n", ":4: elasticjob.tracing: ", "[tracing.includeJobNames] and [tracing.excludeJobNames] are mutually exclusive."},
	} {
		t.Run(name, func(t *testing.T) {
			cfg := filepath.Join(dir, strings.ReplaceAll(name, " ", "-")+".yaml")
			os.WriteFile(cfg, []byte("elasticjob:\n  jobs:\n    j: {elasticJobType: SCRIPT, cron: '* * * * * ?', shardingTotalCount: 1, props: {script.command.line: 'true'}}\n  tracing:\n"+tc.tracing), 0o644)
			out, err := exec.Command(ejobBin, "run", "-c", cfg).CombinedOutput()
			if err == nil {
				t.Fatalf("ejob run accepted the file:\n%s", out)
			}
			if !strings.Contains(string(out), cfg+tc.where) || !strings.Contains(string(out), tc.why) {
				t.Errorf("output lacks %q or %q:\n%s", cfg+tc.where, tc.why, out)
			}
			if strings.Contains(string(out), "s3cr3t-pw") || strings.Contains(string(out), "host started") {
				t.Errorf("the host printed the password or started:\n%s", out)
			}
		})
	}
}

// TestTracingBadPasswordAndDatabaseDown: a wrong password, then a database
// that goes away, are logged errors; jobs keep firing every second, the
// host never exits, and the writer recovers when the database is back.
func TestTracingBadPasswordAndDatabaseDown(t *testing.T) {
	db := dbtest.Start(t, dbtest.MariaDB)
	raw, err := db.Open(db.DSN())
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"CREATE USER 'tracer'@'127.0.0.1' IDENTIFIED BY 'good-pw'", "GRANT ALL ON ejob.* TO 'tracer'@'127.0.0.1'"} {
		if _, err := raw.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	raw.Close()
	dir := t.TempDir()
	out := filepath.Join(dir, "runs.txt")
	script := recordScript(t, dir, out)
	url := strings.Replace(db.DSN(), "root@", "tracer@", 1) + "?timeout=2s"
	file := func(pw string) string {
		cfg := filepath.Join(dir, "ejob-"+pw+".yaml")
		os.WriteFile(cfg, []byte(fmt.Sprintf(`elasticjob:
  tracing:
    type: RDB
    dataSource: {driver: mysql, url: "%s", password: "${TRACE_PW}"}
  jobs:
    steady:
      elasticJobType: SCRIPT
      cron: "* * * * * ?"
      shardingTotalCount: 1
      props:
        script.command.line: "%s"
`, url, script)), 0o644)
		return cfg
	}
	env := append(os.Environ(), "TRACE_PW=bad-pw")
	h := runHost(t, env, "run", "-c", file("bad"))
	h.waitLog("cannot write events")
	before := len(readRecords(t, out))
	testkit.Eventually(t, 30*time.Second, "the job firing on with tracing failing", func() bool { return len(readRecords(t, out)) >= before+3 })
	if strings.Contains(h.logs.String(), "bad-pw") {
		t.Errorf("the host logged the password")
	}
	h.signal(syscall.SIGTERM)
	h.waitExit(30 * time.Second)

	env = append(os.Environ(), "TRACE_PW=good-pw")
	h = runHost(t, env, "run", "-c", file("good"))
	tr := rdb.New()
	defer tr.Close()
	cfg := map[string]string{"driver": "mysql", "url": url, "password": "good-pw"}
	rowsNow := func() int { e, _ := queryAll(t, tr, cfg, "steady"); return len(e) }
	testkit.Eventually(t, 30*time.Second, "rows written", func() bool { return rowsNow() >= 2 })
	if err := db.Stop(); err != nil {
		t.Fatal(err)
	}
	h.waitLog("cannot write events")
	before = len(readRecords(t, out))
	testkit.Eventually(t, 30*time.Second, "the job firing on with the database down", func() bool { return len(readRecords(t, out)) >= before+3 })
	if err := db.StartAgain(); err != nil {
		t.Fatal(err)
	}
	h.waitLog("writing events again")
	atRestart := len(readRecords(t, out))
	testkit.Eventually(t, 30*time.Second, "runs during and after the outage stored", func() bool { return rowsNow() >= atRestart })
	h.signal(syscall.SIGTERM)
	h.waitExit(30 * time.Second)
}

// TestTracingRetention: with ejob.tracingRetention, the host leading its
// first job purges what is older at start (and daily after).
func TestTracingRetention(t *testing.T) {
	dir := t.TempDir()
	dbCfg := map[string]string{"driver": "sqlite", "url": filepath.Join(dir, "ejob-tracing.db")}
	tr := rdb.New()
	defer tr.Close()
	old := spi.ExecutionEvent{ID: "old", Hostname: "h", IP: "10.0.0.1", TaskID: "t", JobName: "a", Source: "NORMAL_TRIGGER",
		StartTime: time.Now().Add(-72 * time.Hour)}
	recent := old
	recent.ID, recent.StartTime = "recent", time.Now().Add(-time.Hour)
	if _, err := tr.Write(context.Background(), spi.TraceWriteRequest{Config: dbCfg, Executions: []spi.ExecutionEvent{old, recent}}); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "ejob.yaml")
	os.WriteFile(cfg, []byte(`elasticjob:
  tracing: {type: RDB}
  jobs:
    a: {elasticJobType: SCRIPT, cron: "0 0 1 * * ?", shardingTotalCount: 1, props: {script.command.line: "true"}}
ejob:
  tracingRetention: 2d
`), 0o644)
	h := runHost(t, nil, "run", "-c", cfg)
	h.waitLog("tracing: purged old history")
	execs, _ := queryAll(t, tr, dbCfg, "a")
	if len(execs) != 1 || execs[0].ID != "recent" {
		t.Errorf("after the purge: %+v", execs)
	}
	h.signal(syscall.SIGTERM)
	h.waitExit(30 * time.Second)
}

// TestTracingOverHTTP: a host with elasticjob.tracing and ejob.http
// serves its recorded executions at POST /api/event-trace/execution, and
// its scrape counts the written events.
func TestTracingOverHTTP(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "ejob.yaml")
	if err := os.WriteFile(cfg, []byte(`elasticjob:
  tracing:
    type: RDB
  jobs:
    traced:
      elasticJobType: SCRIPT
      cron: "* * * * * ?"
      shardingTotalCount: 2
      props:
        script.command.line: "true"
ejob:
  http:
    listen: 127.0.0.1:0
`), 0o644); err != nil {
		t.Fatal(err)
	}
	h := runHost(t, nil, "run", "-c", cfg)
	h.waitLog("operations HTTP server listening")
	addr := regexp.MustCompile(`listening: .*addr=(\S+)`).FindStringSubmatch(h.logs.String())
	pw := regexp.MustCompile(`password=(\S+)`).FindStringSubmatch(h.logs.String())
	if addr == nil || pw == nil {
		t.Fatalf("no address or generated password in the log:\n%s", h.logs)
	}
	base := "http://" + addr[1]
	post := func(path, token, body string) map[string]json.RawMessage {
		req, _ := http.NewRequest("POST", base+path, strings.NewReader(body))
		req.Header.Set("Access-Token", token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var env map[string]json.RawMessage
		if err := json.NewDecoder(resp.Body).Decode(&env); err != nil {
			t.Fatal(err)
		}
		return env
	}
	var login struct{ AccessToken string }
	if err := json.Unmarshal(post("/api/login", "", fmt.Sprintf(`{"username":"admin","password":%q}`, pw[1]))["model"], &login); err != nil || login.AccessToken == "" {
		t.Fatalf("login: %v", err)
	}
	var page struct {
		Total int
		Rows  []struct {
			JobName      string
			ShardingItem int
			Success      bool
			CompleteTime *time.Time
		}
	}
	testkit.Eventually(t, 30*time.Second, "two completed executions served", func() bool {
		env := post("/api/event-trace/execution", login.AccessToken, `{"jobName":"traced","isSuccess":true}`)
		if string(env["success"]) != "true" {
			t.Fatalf("event trace: %v", env)
		}
		if err := json.Unmarshal(env["model"], &page); err != nil {
			t.Fatal(err)
		}
		return page.Total >= 2
	})
	for _, r := range page.Rows {
		if r.JobName != "traced" || !r.Success || r.CompleteTime == nil {
			t.Errorf("row %+v", r)
		}
	}
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	scrape, _ := io.ReadAll(resp.Body)
	if !regexp.MustCompile(`(?m)^ejob_tracing_events_written_total [1-9]`).Match(scrape) ||
		!strings.Contains(string(scrape), "ejob_tracing_events_dropped_total 0\n") {
		t.Errorf("scrape without the tracing counters:\n%s", scrape)
	}
	h.signal(syscall.SIGTERM)
	h.waitExit(30 * time.Second)
}
