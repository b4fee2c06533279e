package hostile

import (
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ejob-io/ejob/internal/dbtest"
	"github.com/ejob-io/ejob/internal/testkit"
)

// noisyJob is a one-item SCRIPT job firing every second that writes to
// both streams, a secret on stderr, and fails.
const noisyJob = `    noisy:
      elasticJobType: SCRIPT
      cron: "* * * * * ?"
      shardingTotalCount: 1
      props:
        script.command.line: "/bin/sh -c 'echo rows: 3; echo login failed with api_key=hunter2 >&2; exit 3'"
`

// TestHostileRunOutputInHistory: a failing SCRIPT item's stdout and
// stderr reached only the host's log. Against real hosts recording into
// SQLite and into PostgreSQL, `ejob history --output` (and --id) show the
// run's output, both streams marked, the secret masked, and the failure
// cause whole; an unknown --id exits 3.
func TestHostileRunOutputInHistory(t *testing.T) {
	pg, err := dbtest.Launch(dbtest.Postgres)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pg.Close() })
	for name, tracingSection := range map[string]func(e *env) string{
		"SQLite": func(e *env) string {
			return "    dataSource:\n      url: jdbc:sqlite:" + filepath.Join(e.dir, "trace.db") + "\n"
		},
		"PostgreSQL": func(e *env) string {
			return fmt.Sprintf("    dataSource:\n      driver: postgres\n      url: %q\n", pg.NewDatabase(t))
		},
	} {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			cfg := e.write("ejob.yaml", strings.Replace(e.config(noisyJob), "  jobs:\n",
				"  tracing:\n    type: RDB\n"+tracingSection(e)+"  jobs:\n", 1))
			e.start("run", "run", "-c", cfg)
			var id string
			testkit.Eventually(t, 60*time.Second, "a completed run with output in the history", func() bool {
				r := e.ejob(30*time.Second, "history", "-c", cfg, "--job", "noisy", "--success", "false", "--json")
				var page struct {
					Executions []struct {
						ID           string  `json:"id"`
						CompleteTime *string `json:"completeTime"`
						Output       string  `json:"output"`
					} `json:"executions"`
				}
				if r.code != 0 || json.Unmarshal([]byte(r.stdout), &page) != nil {
					return false
				}
				for _, x := range page.Executions {
					if x.CompleteTime != nil && strings.Contains(x.Output, "login failed") {
						id = x.ID
						return true
					}
				}
				return false
			})
			for _, args := range [][]string{{"--job", "noisy", "--success", "false", "--output", "--limit", "1"}, {"--id", id}} {
				r := e.ejob(30*time.Second, append([]string{"history", "-c", cfg}, args...)...)
				if args[0] == "--job" {
					// The newest row with success false may be a run still in
					// progress (its row says running until it completes).
					testkit.Eventually(t, 30*time.Second, "the newest failed run completed", func() bool {
						r = e.ejob(30*time.Second, append([]string{"history", "-c", cfg}, args...)...)
						return r.code != 0 || !strings.Contains(r.stdout, "  running  ")
					})
				}
				if r.code != 0 {
					t.Fatalf("history %v: exit %d: %s", args, r.code, r.stderr)
				}
				for _, want := range []string{"noisy item 0", "FAILED", "id " + id[:8], "out| rows: 3", "err| login failed with api_key=***",
					`stderr tail: "login failed with api_key=***"`} {
					if args[0] == "--job" && want == "id "+id[:8] {
						continue // the newest failed run may be a later one
					}
					if !strings.Contains(r.stdout, want) {
						t.Errorf("history %v lacks %q:\n%s", args, want, r.stdout)
					}
				}
				if strings.Contains(r.stdout, "hunter2") {
					t.Errorf("history %v shows the secret:\n%s", args, r.stdout)
				}
			}
			if r := e.ejob(30*time.Second, "history", "-c", cfg, "--id", "no-such-id"); r.code != 3 || !strings.Contains(r.stderr, "no-such-id") {
				t.Errorf("unknown --id: exit %d, %s", r.code, r.stderr)
			}
		})
	}
}

// TestHostileStandaloneOutputInMemory: a standalone host without
// elasticjob.tracing showed no run anywhere but its log. It keeps each
// item's last runs in memory: its console API lists them with an output
// excerpt and serves a run's whole output, masked.
func TestHostileStandaloneOutputInMemory(t *testing.T) {
	e := newEnv(t)
	c := e.standaloneConsole(noisyJob, "")
	var id string
	testkit.Eventually(t, 60*time.Second, "a run with output in the console's list", func() bool {
		st, body := c.call(http.MethodGet, "/console/api/jobs/noisy/executions", "")
		var env struct {
			Model struct {
				Rows []struct {
					ID     string `json:"id"`
					Output *struct {
						Tail string `json:"tail"`
					} `json:"output"`
				} `json:"rows"`
			} `json:"model"`
		}
		if st != http.StatusOK || json.Unmarshal(body, &env) != nil {
			return false
		}
		for _, r := range env.Model.Rows {
			if r.Output != nil && strings.Contains(r.Output.Tail, "login failed") {
				id = r.ID
				return true
			}
		}
		return false
	})
	st, body := c.call(http.MethodGet, "/console/api/executions/"+id+"/output", "")
	var env struct {
		Model struct {
			HasOutput bool   `json:"hasOutput"`
			Output    string `json:"output"`
			Execution struct {
				FailureCause string `json:"failureCause"`
			} `json:"execution"`
		} `json:"model"`
	}
	if st != http.StatusOK || json.Unmarshal(body, &env) != nil {
		t.Fatalf("output of %s: %d %s", id, st, body)
	}
	// The in-memory history is no data source of the namespaces page.
	if st, body := c.call(http.MethodGet, "/api/namespaces", ""); st != http.StatusOK || !strings.Contains(string(body), `"dataSources":[]`) {
		t.Errorf("namespaces of a host with in-memory history: %d %s", st, body)
	}
	o := env.Model
	if !o.HasOutput || !strings.Contains(o.Output, "out| rows: 3\n") || !strings.Contains(o.Output, "err| login failed with api_key=***\n") ||
		strings.Contains(string(body), "hunter2") || !strings.Contains(o.Execution.FailureCause, "stderr tail") {
		t.Errorf("output of %s: %s", id, body)
	}
}

// TestHostileLiveOutputOfRunningItem: a running item's output reached
// nothing until the item ended. The host's console API serves the output
// so far of an item it runs, masked, while the script still runs.
func TestHostileLiveOutputOfRunningItem(t *testing.T) {
	e := newEnv(t)
	c := e.standaloneConsole(`    slow:
      elasticJobType: SCRIPT
      cron: "* * * * * ?"
      shardingTotalCount: 1
      props:
        script.command.line: "/bin/sh -c 'echo step 1 of 2 with token=hunter2; sleep 60'"
`, "  drainTimeout: 0s\n")
	var body []byte
	testkit.Eventually(t, 60*time.Second, "the running item's first line", func() bool {
		var st int
		st, body = c.call(http.MethodGet, "/console/api/jobs/slow/items/0/output", "")
		return st == http.StatusOK && strings.Contains(string(body), `"running":true`) &&
			strings.Contains(string(body), `out| step 1 of 2 with token=***\n`)
	})
	if strings.Contains(string(body), "hunter2") {
		t.Errorf("the live output shows the secret: %s", body)
	}
	if st, body := c.call(http.MethodGet, "/console/api/jobs/slow/items/7/output", ""); st != http.StatusOK || !strings.Contains(string(body), `"running":false`) {
		t.Errorf("an item not running here: %d %s", st, body)
	}
}

// standaloneConsole starts `ejob run` on a standalone file with jobs
// (elasticjob.jobs entries indented by four spaces), ejob settings (keys
// indented by two) and ejob.http on a free port, and logs in to its
// console API as the generated admin.
func (e *env) standaloneConsole(jobs, ejob string) *apiClient {
	e.t.Helper()
	addr := fmt.Sprintf("127.0.0.1:%d", testkit.FreePort(e.t))
	cfg := e.write("ejob.yaml", "elasticjob:\n  jobs:\n"+jobs+"ejob:\n"+ejob+"  http:\n    listen: "+addr+"\n")
	p := e.start("run", "run", "-c", cfg)
	p.waitLog(e.t, 60*time.Second, regexp.MustCompile(`operations HTTP server listening`))
	m := regexp.MustCompile(`user=admin password=(\S+)`).FindStringSubmatch(p.out.String())
	if m == nil {
		e.t.Fatalf("no generated password in the log:\n%s", p.out.String())
	}
	return login(e.t, "http://"+addr, "admin", m[1])
}
