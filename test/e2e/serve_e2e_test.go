package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ejob-io/ejob/internal/testkit"
)

// TestServeEventTrace: `ejob serve -c FILE` serves the event trace of the
// file's elasticjob.tracing (an SQLite database an `ejob run` host of the
// same file records into), on /api/event-trace/* and the console's
// recent-executions endpoint, and a job's detail on a real ZooKeeper.
func TestServeEventTrace(t *testing.T) {
	c := newCluster(t)
	db := filepath.Join(c.dir, "trace.db")
	c.writeConfig(fmt.Sprintf(`elasticjob:
  regCenter:
    serverLists: %s
    namespace: %s
  tracing:
    type: RDB
    dataSource:
      url: jdbc:sqlite:%s
  jobs:
    good:
      elasticJobType: SCRIPT
      cron: "* * * * * ?"
      shardingTotalCount: 2
      shardingItemParameters: 0=north,1=south
      props:
        script.command.line: "true"
    bad:
      elasticJobType: SCRIPT
      cron: "* * * * * ?"
      shardingTotalCount: 1
      props:
        script.command.line: "false"
`, zk.Addr(), uniqueNamespace(t), db))
	h := c.start("h1")
	c.waitStarted(h, 30*time.Second)
	addr := fmt.Sprintf("127.0.0.1:%d", testkit.FreePort(t))
	srv := c.startProcess("serve", "serve", "-c", c.cfg, "--listen", addr)
	password := regexp.MustCompile(`password=(\S+)`)
	var pw string
	c.waitFor(30*time.Second, "serve to listen", func() (bool, string) {
		if !srv.alive() {
			t.Fatalf("serve exited: %v\n%s", srv.err, srv.logText())
		}
		log := srv.logText()
		if m := password.FindStringSubmatch(log); m != nil && strings.Contains(log, "operations HTTP server listening") {
			pw = m[1]
			return true, ""
		}
		return false, "no listening line yet"
	})
	base := "http://" + addr
	call := func(method, path, token, body string) (int, map[string]json.RawMessage) {
		t.Helper()
		req, err := http.NewRequest(method, base+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Access-Token", token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		var env map[string]json.RawMessage
		if err := json.Unmarshal(data, &env); err != nil {
			t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, data)
		}
		return testkit.APIStatus(resp.StatusCode, data), env
	}
	_, env := call("POST", "/api/login", "", fmt.Sprintf(`{"username":"admin","password":%q}`, pw))
	var login struct{ AccessToken string }
	if err := json.Unmarshal(env["model"], &login); err != nil || login.AccessToken == "" {
		t.Fatalf("login: %s", env["model"])
	}
	token := login.AccessToken

	type row struct {
		JobName, IP, FailureCause string
		ShardingItem              int
		Success                   bool
		CompleteTime              *time.Time
	}
	var failed []row
	c.waitFor(30*time.Second, "a failed execution of bad in serve's event trace", func() (bool, string) {
		st, env := call("POST", "/api/event-trace/execution", token, `{"jobName":"bad","isSuccess":false}`)
		if st != http.StatusOK {
			return false, fmt.Sprintf("%d %s", st, env["errorMsg"])
		}
		var p struct{ Rows []row }
		if err := json.Unmarshal(env["model"], &p); err != nil {
			t.Fatal(err)
		}
		failed = failed[:0]
		for _, r := range p.Rows {
			if r.CompleteTime != nil {
				failed = append(failed, r)
			}
		}
		return len(failed) > 0, fmt.Sprintf("rows %+v", p.Rows)
	})
	if r := failed[0]; r.JobName != "bad" || r.Success || r.FailureCause == "" || r.IP == "" {
		t.Errorf("failed row %+v", r)
	}
	c.waitFor(30*time.Second, "both items of good recorded", func() (bool, string) {
		st, env := call("GET", "/console/api/jobs/good/executions?limit=50", token, "")
		var p struct{ Rows []row }
		if st != http.StatusOK || json.Unmarshal(env["model"], &p) != nil {
			return false, fmt.Sprintf("%d %s", st, env["errorMsg"])
		}
		seen := map[int]bool{}
		for _, r := range p.Rows {
			if r.Success && r.CompleteTime != nil {
				seen[r.ShardingItem] = true
			}
		}
		return seen[0] && seen[1], fmt.Sprintf("rows %+v", p.Rows)
	})
	c.waitFor(30*time.Second, "a finished trigger of good in the status trace", func() (bool, string) {
		st, env := call("POST", "/api/event-trace/status", token, `{"jobName":"good"}`)
		return st == http.StatusOK && strings.Contains(string(env["model"]), `"state":"TASK_FINISHED"`), fmt.Sprintf("%d %s", st, env["model"])
	})

	st, env := call("GET", "/console/api/jobs/good", token, "")
	var d struct {
		Items []struct {
			Item                 int
			Parameter, Status    string
			InstanceID, ServerIP string
		}
		Instances []struct{ InstanceID, PID, ServerIP string }
	}
	if st != http.StatusOK || json.Unmarshal(env["model"], &d) != nil {
		t.Fatalf("detail of good: %d %s", st, env["model"])
	}
	if len(d.Items) != 2 || d.Items[0].Parameter != "north" || d.Items[1].Parameter != "south" {
		t.Errorf("items %+v", d.Items)
	}
	if len(d.Instances) != 1 || d.Instances[0].PID != h.pid() || d.Items[0].InstanceID != d.Instances[0].InstanceID {
		t.Errorf("instances %+v (host pid %s), items %+v", d.Instances, h.pid(), d.Items)
	}
}
