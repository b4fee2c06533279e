package cloud

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ejob-io/ejob/internal/testkit"
)

// appScript is the test app: it records each run of an item (task id,
// parameter, sharding context) in jobParameter's directory, and its start
// time in nanoseconds (times-N), then sleeps for a parameter "sleepN",
// fails for "fail", or for "outcomesXYZ…" succeeds or fails as the
// letter of its run (S or F: X the first run of the item, Y the second).
const appScript = `#!/bin/sh
out="$EJOB_JOB_PARAMETER"
date +%s%N >> "$out/times-$EJOB_SHARDING_ITEM"
printf '%s\t%s\t%s\n' "$EJOB_TASK_ID" "$EJOB_SHARDING_PARAMETER" "$EJOB_SHARDING_CONTEXT" >> "$out/item-$EJOB_SHARDING_ITEM"
case "$EJOB_SHARDING_PARAMETER" in
  sleep*) exec sleep "${EJOB_SHARDING_PARAMETER#sleep}" ;;
  fail) exit 3 ;;
  outcomes*)
    n=$(wc -l < "$out/times-$EJOB_SHARDING_ITEM")
    case "$(printf '%s' "${EJOB_SHARDING_PARAMETER#outcomes}" | cut -c"$n")" in S) exit 0 ;; *) exit 3 ;; esac ;;
  daemonfire)
    # One DAEMON fire: BEGIN, wait for the test's go file, COMPLETE.
    echo BEGIN >> "$EJOB_FIRE_LOG"
    while [ ! -e "$out/go-$EJOB_SHARDING_ITEM" ]; do sleep 0.1; done
    echo COMPLETE >> "$EJOB_FIRE_LOG"
    exec sleep 600 ;;
esac
`

type env struct {
	t           *testing.T
	dir, ns     string
	launcherDir string
	appURL      string
	// out is the directory the app records runs in.
	out string
	// cpu is the LOCAL launcher's CPU capacity (default 4).
	cpu string
	// tracing records the event trace into an SQLite file of dir.
	tracing bool
	// queueSize is ejob.cloud.jobStateQueueSize when not 0.
	queueSize int
	// poll is ejob.cloud.pollInterval (default 200ms).
	poll string
	// backoff is ejob.cloud.failureBackoff when not empty.
	backoff string
}

func newEnv(t *testing.T) *env {
	t.Helper()
	dir := t.TempDir()
	e := &env{t: t, dir: dir, ns: "cloud-" + strings.ToLower(rand.Text()[:10]),
		launcherDir: filepath.Join(dir, "launcher"), out: filepath.Join(dir, "out"), cpu: "4", poll: "200ms"}
	for _, d := range []string{e.launcherDir, e.out, filepath.Join(dir, "app")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "app", "app.sh"), []byte(appScript), 0o755); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.FileServer(http.Dir(filepath.Join(dir, "app"))))
	t.Cleanup(srv.Close)
	e.appURL = srv.URL + "/app.sh"
	t.Cleanup(e.killItems)
	return e
}

// killItems kills every item process the launcher started (they outlive
// the schedulers, as pods do).
func (e *env) killItems() {
	pids, _ := filepath.Glob(filepath.Join(e.launcherDir, "fires", "*", "*", "*", "pid"))
	for _, p := range pids {
		b, _ := os.ReadFile(p)
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid > 0 {
			_ = syscall.Kill(-pid, syscall.SIGKILL)
		}
	}
}

// config writes a scheduler's file listening on port.
func (e *env) config(name string, port int) string {
	text := fmt.Sprintf(`elasticjob:
  regCenter:
    serverLists: %q
    namespace: %s
    sessionTimeoutMilliseconds: 2000
ejob:
  pluginsDir: %s
  http:
    listen: 127.0.0.1:%d
    users: [{name: admin, passwordHash: %q, role: admin}, {name: guest, passwordHash: %q, role: guest}]
  cloud:
    launcher: {type: LOCAL, props: {dir: %s, cpu: '%s', memory: '4096'}}
    pollInterval: %s
`, zk.Addr(), e.ns, pluginsDir, port, adminHash, adminHash, e.launcherDir, e.cpu, e.poll)
	if e.queueSize > 0 {
		text += fmt.Sprintf("    jobStateQueueSize: %d\n", e.queueSize)
	}
	if e.backoff != "" {
		text += fmt.Sprintf("    failureBackoff: %s\n", e.backoff)
	}
	if e.tracing {
		text = strings.Replace(text, "ejob:\n", fmt.Sprintf("  tracing: {type: RDB, dataSource: {url: 'jdbc:sqlite:%s'}}\nejob:\n", filepath.Join(e.dir, "trace.db")), 1)
	}
	path := filepath.Join(e.dir, name)
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		e.t.Fatal(err)
	}
	return path
}

// scheduler is a running `ejob cloud` process.
type scheduler struct {
	cmd  *exec.Cmd
	base string
	log  string
}

// start runs a scheduler named name and waits for its API.
func (e *env) start(name string) *scheduler {
	e.t.Helper()
	port := testkit.FreePort(e.t)
	conf := e.config(name+".yaml", port)
	s := &scheduler{base: fmt.Sprintf("http://127.0.0.1:%d", port), log: filepath.Join(e.dir, name+".log")}
	logf, err := os.Create(s.log)
	if err != nil {
		e.t.Fatal(err)
	}
	s.cmd = exec.Command(ejobBin, "cloud", "-c", conf, "--log-level", "debug")
	s.cmd.Stdout, s.cmd.Stderr = logf, logf
	if err := s.cmd.Start(); err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { s.kill(); logf.Close() })
	if !testkit.Poll(30*time.Second, func() bool {
		resp, err := http.Get(s.base + "/healthz")
		if err == nil {
			resp.Body.Close()
		}
		return err == nil && resp.StatusCode == 200
	}) {
		b, _ := os.ReadFile(s.log)
		e.t.Fatalf("scheduler %s did not start:\n%s", name, b)
	}
	return s
}

func (s *scheduler) kill() {
	if s.cmd.ProcessState == nil {
		_ = s.cmd.Process.Kill()
		_ = s.cmd.Wait()
	}
}

// client is a logged-in REST client.
type client struct {
	t     *testing.T
	base  string
	token string
}

func login(t *testing.T, base, user string) *client {
	t.Helper()
	c := &client{t: t, base: base}
	m, errMsg := c.call("POST", "/api/login", fmt.Sprintf(`{"username":%q,"password":%q}`, user, adminPassword))
	if errMsg != "" {
		t.Fatalf("login: %s", errMsg)
	}
	var lm struct {
		AccessToken string `json:"accessToken"`
	}
	_ = json.Unmarshal(m, &lm)
	c.token = lm.AccessToken
	return c
}

// call returns the envelope's model, or its error code and message.
func (c *client) call(method, path, body string) (json.RawMessage, string) {
	c.t.Helper()
	req, _ := http.NewRequest(method, c.base+path, bytes.NewReader([]byte(body)))
	req.Header.Set("Content-Type", "application/json")
	if c.token != "" {
		req.Header.Set("Access-Token", c.token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	var env struct {
		Success   bool            `json:"success"`
		ErrorCode int             `json:"errorCode"`
		ErrorMsg  *string         `json:"errorMsg"`
		Model     json.RawMessage `json:"model"`
	}
	if err := json.Unmarshal(data, &env); err != nil {
		c.t.Fatalf("%s %s: HTTP %d, not an envelope: %s", method, path, resp.StatusCode, data)
	}
	if !env.Success {
		return nil, fmt.Sprintf("%d: %s", env.ErrorCode, *env.ErrorMsg)
	}
	return env.Model, ""
}

// must is call that fails the test on an error.
func (c *client) must(method, path, body string) json.RawMessage {
	c.t.Helper()
	m, errMsg := c.call(method, path, body)
	if errMsg != "" {
		c.t.Fatalf("%s %s %s: %s", method, path, body, errMsg)
	}
	return m
}

// registerApp registers the test app as name.
func (e *env) registerApp(c *client, name string) {
	c.must("POST", "/api/app", fmt.Sprintf(`{"appName":%q,"appURL":%q,"bootstrapScript":"sh app.sh","cpuCount":0.1,"memoryMB":16}`, name, e.appURL))
}

// jobBody is a job of app with n items, params and cron.
func (e *env) jobBody(job, app, typ, cron string, n int, params string, failover, misfire bool) string {
	return fmt.Sprintf(`{"jobName":%q,"appName":%q,"jobExecutionType":%q,"cron":%q,"shardingTotalCount":%d,
"shardingItemParameters":%q,"jobParameter":%q,"cpuCount":0.5,"memoryMB":32,"failover":%t,"misfire":%t}`,
		job, app, typ, cron, n, params, e.out, failover, misfire)
}

// runs returns the recorded runs of item: task id, parameter, context.
func (e *env) runs(item int) [][]string {
	b, _ := os.ReadFile(filepath.Join(e.out, "item-"+strconv.Itoa(item)))
	var out [][]string
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if l != "" {
			out = append(out, strings.SplitN(l, "\t", 3))
		}
	}
	return out
}

type runningTask struct {
	ID       string `json:"id"`
	MetaInfo struct {
		JobName       string `json:"jobName"`
		ShardingItems []int  `json:"shardingItems"`
	} `json:"metaInfo"`
	Type      string     `json:"type"`
	SlaveID   string     `json:"slaveId"`
	Idle      bool       `json:"idle"`
	State     string     `json:"state"`
	StartTime *time.Time `json:"startTime"`
}

func (c *client) running() []runningTask {
	c.t.Helper()
	var out []runningTask
	if err := json.Unmarshal(c.must("GET", "/api/job/tasks/running", ""), &out); err != nil {
		c.t.Fatal(err)
	}
	return out
}

// eventually waits for cond, failing with what and the scheduler logs.
func (e *env) eventually(within time.Duration, what string, cond func() bool) {
	e.t.Helper()
	if testkit.Poll(within, cond) {
		return
	}
	logs, _ := filepath.Glob(filepath.Join(e.dir, "*.log"))
	var b strings.Builder
	for _, l := range logs {
		data, _ := os.ReadFile(l)
		fmt.Fprintf(&b, "--- %s\n%s\n", filepath.Base(l), data)
	}
	e.t.Fatalf("timed out waiting for %s\n%s", what, b.String())
}

// itemPID is the pid of item's wrapper in the launcher's newest fire of job.
func (e *env) itemPIDs(job string, item int) []int {
	paths, _ := filepath.Glob(filepath.Join(e.launcherDir, "fires", job, "*", strconv.Itoa(item), "pid"))
	var out []int
	for _, p := range paths {
		b, _ := os.ReadFile(p)
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			out = append(out, pid)
		}
	}
	return out
}

func alive(pid int) bool { return syscall.Kill(pid, 0) == nil }

func mkdir(d string) error { return os.MkdirAll(d, 0o755) }

// starts are the start times the app recorded for item in dir.
func starts(t *testing.T, dir string, item int) []time.Time {
	t.Helper()
	b, _ := os.ReadFile(filepath.Join(dir, "times-"+strconv.Itoa(item)))
	var out []time.Time
	for _, l := range strings.Fields(string(b)) {
		ns, err := strconv.ParseInt(l, 10, 64)
		if err != nil {
			t.Fatalf("item %d: start time %q: %v", item, l, err)
		}
		out = append(out, time.Unix(0, ns))
	}
	return out
}

// runsIn is runs for an out directory other than the env's.
func runsIn(dir string, item int) []string {
	b, _ := os.ReadFile(filepath.Join(dir, "item-"+strconv.Itoa(item)))
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if l != "" {
			out = append(out, l)
		}
	}
	return out
}

func (c *client) ready() map[string]string {
	c.t.Helper()
	var rs []struct{ JobName, Times string }
	if err := json.Unmarshal(c.must("GET", "/api/job/tasks/ready", ""), &rs); err != nil {
		c.t.Fatal(err)
	}
	out := map[string]string{}
	for _, r := range rs {
		out[r.JobName] = r.Times
	}
	return out
}

// boot starts scheduler "a", logs in as admin and registers the test app
// as "app".
func (e *env) boot() (*scheduler, *client) {
	e.t.Helper()
	s := e.start("a")
	c := login(e.t, s.base, "admin")
	e.registerApp(c, "app")
	return s, c
}

// inState counts the running tasks the launcher reports in state.
func (c *client) inState(state string) int {
	c.t.Helper()
	n := 0
	for _, r := range c.running() {
		if r.State == state {
			n++
		}
	}
	return n
}
