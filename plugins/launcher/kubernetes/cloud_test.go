package kubernetes

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// cloudAppScript is the app of the end-to-end tests, a single script the
// test serves over HTTP: each run of an item reads the seconds to sleep
// from OUT/sleep (none when it is a failover run), appends its node and
// sharding context to OUT/item-N and its start time to OUT/span-N, sleeps,
// and appends its end time to OUT/span-N (a run killed has no end).
const cloudAppScript = `#!/bin/sh
out=%q
secs=$(cat "$out/sleep" 2>/dev/null || echo 0)
case "$EJOB_SHARDING_CONTEXT" in *@-@FAILOVER@-@*) secs=0 ;; esac
printf 'start\t%%s\t%%s\n' "$(date +%%s.%%N)" "$EJOB_TASK_ID" >>"$out/span-$EJOB_SHARDING_ITEM"
printf '%%s\t%%s\n' "$EJOB_NODE_NAME" "$EJOB_SHARDING_CONTEXT" >>"$out/item-$EJOB_SHARDING_ITEM"
sleep "$secs"
printf 'end\t%%s\t%%s\n' "$(date +%%s.%%N)" "$EJOB_TASK_ID" >>"$out/span-$EJOB_SHARDING_ITEM"
`

// cloudRun is one run of an item the app recorded.
type cloudRun struct {
	node string
	ctx  struct {
		JobName            string `json:"jobName"`
		TaskID             string `json:"taskId"`
		ShardingTotalCount int    `json:"shardingTotalCount"`
		ShardingItem       int    `json:"shardingItem"`
	}
}

// fire is the fire id of the run's task id.
func (r cloudRun) fire() string { return fireOf(r.ctx.TaskID) }

// fireOf is the fire id of a task id, its last part.
func fireOf(taskID string) string {
	parts := strings.Split(taskID, "@-@")
	return parts[len(parts)-1]
}

func (r cloudRun) failover() bool { return strings.Contains(r.ctx.TaskID, "@-@FAILOVER@-@") }

// cloudRuns reads the runs of item the app recorded in out.
func cloudRuns(t *testing.T, out string, item int) []cloudRun {
	t.Helper()
	b, _ := os.ReadFile(filepath.Join(out, "item-"+strconv.Itoa(item)))
	var rs []cloudRun
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		node, ctx, ok := strings.Cut(line, "\t")
		if !ok {
			continue
		}
		r := cloudRun{node: node}
		if err := json.Unmarshal([]byte(ctx), &r.ctx); err != nil {
			t.Fatalf("item %d: context %q is not JSON: %v", item, ctx, err)
		}
		rs = append(rs, r)
	}
	return rs
}

// cloudSpan is one run of an item as the app timed it: its task id, its
// start and its end (zero while it runs, or when it was killed).
type cloudSpan struct {
	task       string
	start, end time.Time
}

// cloudSpans reads the runs of item the app timed in out, in the order
// they started.
func cloudSpans(t *testing.T, out string, item int) []cloudSpan {
	t.Helper()
	b, _ := os.ReadFile(filepath.Join(out, "span-"+strconv.Itoa(item)))
	var spans []cloudSpan
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Split(line, "\t")
		if len(f) != 3 {
			continue
		}
		secs, err := strconv.ParseFloat(f[1], 64)
		if err != nil {
			t.Fatalf("item %d: time %q: %v", item, f[1], err)
		}
		at := time.Unix(0, int64(secs*1e9))
		switch f[0] {
		case "start":
			spans = append(spans, cloudSpan{task: f[2], start: at})
		case "end":
			for i := range spans {
				if spans[i].task == f[2] && spans[i].end.IsZero() {
					spans[i].end = at
				}
			}
		}
	}
	return spans
}

// cronAt is a Quartz cron that fires at the seconds of times, all in the
// minute of the first.
func cronAt(times ...time.Time) string {
	secs := make([]string, len(times))
	for i, at := range times {
		secs[i] = strconv.Itoa(at.Second())
	}
	t0 := times[0]
	return fmt.Sprintf("%s %d %d %d %d ?", strings.Join(secs, ","), t0.Minute(), t0.Hour(), t0.Day(), int(t0.Month()))
}

// firstFire is the first whole second that is at least after from now
// and has span more seconds left in its minute.
func firstFire(after, span time.Duration) time.Time {
	t0 := time.Now().Add(after).Truncate(time.Second).Add(time.Second)
	if t0.Second()+int(span/time.Second) > 59 {
		t0 = t0.Truncate(time.Minute).Add(time.Minute)
	}
	return t0
}

// cloudScheduler is a real `ejob cloud` process on the test cluster, with
// a logged-in admin session of its REST API.
type cloudScheduler struct {
	t           *testing.T
	base, token string
	log         string
	cmd         *exec.Cmd
}

// startCloudScheduler is startCloudSchedulers of one scheduler.
func startCloudScheduler(t *testing.T) *cloudScheduler { return startCloudSchedulers(t, 1)[0] }

// startCloudSchedulers builds bin/ejob and the launcher plugin, starts
// ZooKeeper (scripts/zk.sh) and n schedulers on it, one after the other,
// whose launcher is KUBERNETES on the test cluster's kubeconfig, and logs
// in to each as admin.
func startCloudSchedulers(t *testing.T, n int) []*cloudScheduler {
	t.Helper()
	root, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	ejob, plugins := filepath.Join(dir, "ejob"), filepath.Join(dir, "plugins")
	build := func(wd string, args ...string) {
		cmd := exec.Command("go", append([]string{"build"}, args...)...)
		cmd.Dir = wd
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build %v: %v\n%s", args, err, out)
		}
	}
	build(root, "-o", ejob, "./cmd/ejob")
	build(".", "-o", filepath.Join(plugins, "ejob-launcher-kubernetes"), "./cmd/ejob-launcher-kubernetes")

	zkDir := filepath.Join(dir, "zk")
	zkOut, err := exec.Command("bash", filepath.Join(root, "scripts", "zk.sh"), "start", zkDir).Output()
	if err != nil {
		t.Fatalf("zk.sh start: %v", err)
	}
	t.Cleanup(func() { _ = exec.Command("bash", filepath.Join(root, "scripts", "zk.sh"), "stop", zkDir).Run() })
	zkAddr := strings.TrimSpace(string(zkOut))

	const password = "cloud-e2e-password"
	hashCmd := exec.Command(ejob, "hash-password")
	hashCmd.Stdin = strings.NewReader(password + "\n")
	hash, err := hashCmd.Output()
	if err != nil {
		t.Fatalf("ejob hash-password: %v", err)
	}
	var ss []*cloudScheduler
	for i := range n {
		port := freePort(t)
		conf := filepath.Join(dir, fmt.Sprintf("cloud-%d.yaml", i))
		if err := os.WriteFile(conf, fmt.Appendf(nil, `elasticjob:
  regCenter:
    serverLists: %q
    namespace: cloud-e2e
    sessionTimeoutMilliseconds: %d
ejob:
  pluginsDir: %s
  http:
    listen: 127.0.0.1:%d
    users: [{name: admin, passwordHash: %q, role: admin}]
  cloud:
    launcher: {type: KUBERNETES}
    kubernetes: {kubeconfig: %s, namespace: default}
    pollInterval: 500ms
`, zkAddr, cloudSessionTimeout.Milliseconds(), plugins, port, strings.TrimSpace(string(hash)), cluster.Kubeconfig), 0o600); err != nil {
			t.Fatal(err)
		}
		s := &cloudScheduler{t: t, base: fmt.Sprintf("http://127.0.0.1:%d", port), log: filepath.Join(dir, fmt.Sprintf("cloud-%d.log", i))}
		logf, err := os.Create(s.log)
		if err != nil {
			t.Fatal(err)
		}
		s.cmd = exec.Command(ejob, "cloud", "-c", conf, "--log-level", "debug")
		s.cmd.Stdout, s.cmd.Stderr = logf, logf
		if err := s.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			s.kill()
			logf.Close()
		})
		s.eventually(60*time.Second, "the scheduler's API", func() bool {
			resp, err := http.Get(s.base + "/healthz")
			if err != nil {
				return false
			}
			resp.Body.Close()
			return resp.StatusCode == http.StatusOK
		})
		var lm struct {
			AccessToken string `json:"accessToken"`
		}
		if err := json.Unmarshal(s.must("POST", "/api/login", fmt.Sprintf(`{"username":"admin","password":%q}`, password)), &lm); err != nil {
			t.Fatal(err)
		}
		s.token = lm.AccessToken
		ss = append(ss, s)
	}
	return ss
}

// cloudSessionTimeout is the schedulers' ZooKeeper session timeout.
const cloudSessionTimeout = 4 * time.Second

// kill kills the scheduler with SIGKILL and reaps it.
func (s *cloudScheduler) kill() {
	if s.cmd.ProcessState != nil {
		return
	}
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// call calls the REST API and returns the envelope's model and whether
// it succeeded, with the answer when it did not.
func (s *cloudScheduler) call(method, path, body string) (json.RawMessage, bool, string) {
	s.t.Helper()
	req, err := http.NewRequest(method, s.base+path, bytes.NewReader([]byte(body)))
	if err != nil {
		s.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if s.token != "" {
		req.Header.Set("Access-Token", s.token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, false, err.Error()
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	var env struct {
		Success  bool            `json:"success"`
		ErrorMsg *string         `json:"errorMsg"`
		Model    json.RawMessage `json:"model"`
	}
	if err := json.Unmarshal(data, &env); err != nil || !env.Success {
		return nil, false, fmt.Sprintf("HTTP %d: %s", resp.StatusCode, data)
	}
	return env.Model, true, ""
}

// must calls the REST API and returns the envelope's model, failing the
// test on an error.
func (s *cloudScheduler) must(method, path, body string) json.RawMessage {
	s.t.Helper()
	model, ok, answer := s.call(method, path, body)
	if !ok {
		s.t.Fatalf("%s %s %s: %s", method, path, body, answer)
	}
	return model
}

// results is the leader's count of finished items since it began to
// lead; ok is false on a standby (it keeps no counts without statistics
// tables) or a scheduler that does not answer.
func (s *cloudScheduler) results() (success, failed int, ok bool) {
	model, ok, _ := s.call("GET", "/api/job/statistics/tasks/results/online", "")
	if !ok {
		return 0, 0, false
	}
	var r struct {
		SuccessCount int `json:"successCount"`
		FailedCount  int `json:"failedCount"`
	}
	if err := json.Unmarshal(model, &r); err != nil {
		s.t.Fatal(err)
	}
	return r.SuccessCount, r.FailedCount, true
}

// eventually polls cond every 200 ms for up to within, failing with what
// and the scheduler's log.
func (s *cloudScheduler) eventually(within time.Duration, what string, cond func() bool) {
	s.t.Helper()
	for deadline := time.Now().Add(within); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if cond() {
			return
		}
	}
	log, _ := os.ReadFile(s.log)
	s.t.Fatalf("timed out after %v waiting for %s; scheduler log:\n%s", within, what, log)
}

// TestCloudSchedulerOnKubernetes runs `ejob cloud` end to end on the test
// cluster: an app (a single script over HTTP) and a TRANSIENT job of 3
// items registered through the REST API; a trigger runs each item once on
// a test node with its own sharding context; a node killed in the middle
// of a second fire has its item re-run on another node by the scheduler's
// failover, and only that item; each node fetches the app once
// (appCacheEnable); the running tasks and the items' task ids name the
// nodes; deregistering the job while a third fire
// runs leaves no Job and no pod behind.
func TestCloudSchedulerOnKubernetes(t *testing.T) {
	if cluster.Skip != "" {
		t.Skip(cluster.Skip)
	}
	// Three nodes of 1 CPU and items of 0.6 CPU: one item per node.
	for _, n := range []string{"cloud-a", "cloud-b"} {
		addNode(t, n, "1")
	}
	out := t.TempDir()
	var gets atomic.Int32
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/app.sh" {
			http.NotFound(w, r)
			return
		}
		gets.Add(1)
		_, _ = fmt.Fprintf(w, cloudAppScript, out)
	}))
	t.Cleanup(app.Close)

	s := startCloudScheduler(t)
	s.must("POST", "/api/app", fmt.Sprintf(`{"appName":"e2e-app","appURL":%q,"bootstrapScript":"sh app.sh","cpuCount":0.1,"memoryMB":16}`, app.URL+"/app.sh"))
	s.must("POST", "/api/job/register", `{"jobName":"e2e","appName":"e2e-app","jobExecutionType":"TRANSIENT",
"shardingTotalCount":3,"cpuCount":0.5,"memoryMB":32,"failover":true,"misfire":false}`)
	removeAtEnd(t, "e2e")
	idle := func() bool {
		var running []json.RawMessage
		_ = json.Unmarshal(s.must("GET", "/api/job/tasks/running", ""), &running)
		var failover []json.RawMessage
		_ = json.Unmarshal(s.must("GET", "/api/job/tasks/failover", ""), &failover)
		return len(running) == 0 && len(failover) == 0
	}

	// Fire 1: every item runs once, on a node, with its own context.
	s.must("POST", "/api/job/trigger", "e2e")
	s.eventually(180*time.Second, "3 items run once each", func() bool {
		for item := range 3 {
			if len(cloudRuns(t, out, item)) != 1 {
				return false
			}
		}
		return true
	})
	fire1 := cloudRuns(t, out, 0)[0].fire()
	for item := range 3 {
		r := cloudRuns(t, out, item)[0]
		// The task id's slave part is the node the pod runs on.
		want := fmt.Sprintf("e2e@-@%d@-@READY@-@%s@-@%s", item, r.node, fire1)
		if r.ctx.JobName != "e2e" || r.ctx.ShardingItem != item || r.ctx.ShardingTotalCount != 3 || r.ctx.TaskID != want {
			t.Errorf("item %d ran with %+v; want job e2e, item %d of 3, task id %s", item, r.ctx, item, want)
		}
		if r.node == "" {
			t.Errorf("item %d ran on no node", item)
		}
		t.Logf("fire %s: item %d ran on %s", fire1, item, r.node)
	}
	s.eventually(120*time.Second, "fire 1 finished", idle)

	// Fire 2: the items sleep; the node of one of them dies.
	if err := os.WriteFile(filepath.Join(out, "sleep"), []byte("20"), 0o644); err != nil {
		t.Fatal(err)
	}
	s.must("POST", "/api/job/trigger", "e2e")
	s.eventually(180*time.Second, "fire 2 running on 3 nodes", func() bool {
		for item := range 3 {
			if len(cloudRuns(t, out, item)) != 2 {
				return false
			}
		}
		return true
	})
	// The running tasks name the nodes the items run on, in their task
	// ids and slave ids, as the items' own contexts do.
	s.eventually(60*time.Second, "the running tasks to name their nodes", func() bool {
		var running []struct {
			ID      string `json:"id"`
			SlaveID string `json:"slaveId"`
		}
		_ = json.Unmarshal(s.must("GET", "/api/job/tasks/running", ""), &running)
		if len(running) != 3 {
			return false
		}
		for _, rt := range running {
			found := false
			for item := range 3 {
				r := cloudRuns(t, out, item)[1]
				found = found || (rt.ID == r.ctx.TaskID && rt.SlaveID == r.node)
			}
			if !found {
				return false
			}
		}
		return true
	})
	victim, dead := -1, ""
	for item := range 3 {
		if r := cloudRuns(t, out, item)[1]; r.node == "cloud-a" || r.node == "cloud-b" {
			victim, dead = item, r.node
		}
	}
	if victim < 0 {
		t.Fatalf("no item of fire 2 on cloud-a or cloud-b: %+v %+v %+v", cloudRuns(t, out, 0), cloudRuns(t, out, 1), cloudRuns(t, out, 2))
	}
	fire2 := cloudRuns(t, out, victim)[1].fire()
	k8s(t, "kill-node", cluster.Dir, dead)
	s.eventually(300*time.Second, fmt.Sprintf("item %d failed over from %s", victim, dead), func() bool {
		rs := cloudRuns(t, out, victim)
		return len(rs) == 3 && rs[2].failover()
	})
	if r := cloudRuns(t, out, victim)[2]; r.node == dead || r.ctx.ShardingItem != victim {
		t.Errorf("failover run of item %d: node %s, context %+v; want another node than %s", victim, r.node, r.ctx, dead)
	}
	s.eventually(180*time.Second, "fire 2 and its failover finished", idle)
	// appCacheEnable (the default): each node fetched the app once, for
	// its first item; later runs there took it from the node's cache.
	nodes := map[string]bool{}
	for item := range 3 {
		for _, r := range cloudRuns(t, out, item) {
			nodes[r.node] = true
		}
	}
	if n := gets.Load(); int(n) != len(nodes) {
		t.Errorf("the app was fetched %d times for runs on %d nodes, want once per node", n, len(nodes))
	}
	for item := range 3 {
		rs := cloudRuns(t, out, item)
		if item != victim && len(rs) != 2 {
			t.Errorf("item %d (not on the dead node) ran %d times, want 2 (once per fire): %+v", item, len(rs), rs)
		}
		t.Logf("fire %s: item %d ran on %s", fire2, item, rs[1].node)
	}

	// Fire 3: deregistered while it runs; nothing of it stays.
	if err := os.WriteFile(filepath.Join(out, "sleep"), []byte("600"), 0o644); err != nil {
		t.Fatal(err)
	}
	s.must("POST", "/api/job/trigger", "e2e")
	s.eventually(180*time.Second, "fire 3 running", func() bool {
		_, pods, _ := objectsOf(t, "e2e")
		return pods > 0 && len(cloudRuns(t, out, 0))+len(cloudRuns(t, out, 1))+len(cloudRuns(t, out, 2)) > 7
	})
	s.must("DELETE", "/api/job/e2e/deregister", "")
	s.eventually(120*time.Second, "no Job and no pod of the deregistered job", func() bool {
		jobs, pods, _ := objectsOf(t, "e2e")
		return jobs == 0 && pods == 0
	})
}

// TestCloudDaemonFiresOnKubernetes: a DAEMON job's item on a test node,
// through `ejob cloud` and the launcher plugin, shows in the running tasks
// as idle until its fire begins, not idle while it runs and idle again
// after it, and the completed fire counts as a success in today's task
// results.
func TestCloudDaemonFiresOnKubernetes(t *testing.T) {
	if cluster.Skip != "" {
		t.Skip(cluster.Skip)
	}
	out := t.TempDir()
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, fireScript)
	}))
	t.Cleanup(app.Close)
	s := startCloudScheduler(t)
	s.must("POST", "/api/app", fmt.Sprintf(`{"appName":"daemon-app","appURL":%q,"bootstrapScript":%q,"cpuCount":0.1,"memoryMB":16}`, app.URL+"/app.sh", "sh app.sh "+out))
	s.must("POST", "/api/job/register", `{"jobName":"fires","appName":"daemon-app","jobExecutionType":"DAEMON",
"cron":"0 0 3 * * ?","shardingTotalCount":1,"cpuCount":0.2,"memoryMB":32}`)
	removeAtEnd(t, "fires")
	idle := func(want bool) func() bool {
		return func() bool {
			var running []struct {
				Idle    bool   `json:"idle"`
				SlaveID string `json:"slaveId"`
				State   string `json:"state"`
			}
			_ = json.Unmarshal(s.must("GET", "/api/job/tasks/running", ""), &running)
			return len(running) == 1 && running[0].State == "running" && running[0].Idle == want
		}
	}
	successes := func() int {
		var r struct {
			SuccessCount int `json:"successCount"`
		}
		_ = json.Unmarshal(s.must("GET", "/api/job/statistics/tasks/results/online", ""), &r)
		return r.SuccessCount
	}
	step := func(file string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(out, file), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s.eventually(120*time.Second, "the item running and idle before its first fire", idle(true))
	step("begin-0")
	s.eventually(30*time.Second, "the item not idle while its fire runs", idle(false))
	if n := successes(); n != 0 {
		t.Errorf("%d successes counted before the fire completed, want 0", n)
	}
	step("end-0")
	s.eventually(30*time.Second, "the item idle again after its fire", idle(true))
	s.eventually(30*time.Second, "the completed fire counted as a success", func() bool { return successes() == 1 })
	s.must("DELETE", "/api/job/fires/deregister", "")
	s.eventually(120*time.Second, "no pod of the deregistered job", func() bool {
		ps, err := cluster.client.CoreV1().Pods("default").List(context.Background(), metav1.ListOptions{LabelSelector: LabelJob + "=fires"})
		return err == nil && len(ps.Items) == 0
	})
}

// addNode adds a test node of cpu CPUs and 1Gi to the cluster, killed and
// removed when the test ends.
func addNode(t *testing.T, name, cpu string) {
	t.Helper()
	k8s(t, "node", cluster.Dir, name, "--cpu", cpu, "--memory", "1Gi")
	t.Cleanup(func() {
		_ = cluster.Run(nil, "kill-node", cluster.Dir, name)
		_ = cluster.client.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
}

// objectsOf counts what the cluster holds of job: its Jobs, pods and
// StatefulSets.
func objectsOf(t *testing.T, job string) (jobs, pods, sets int) {
	t.Helper()
	ctx := context.Background()
	sel := metav1.ListOptions{LabelSelector: LabelJob + "=" + job}
	js, err := cluster.client.BatchV1().Jobs("default").List(ctx, sel)
	if err != nil {
		t.Fatal(err)
	}
	ps, err := cluster.client.CoreV1().Pods("default").List(ctx, sel)
	if err != nil {
		t.Fatal(err)
	}
	ss, err := cluster.client.AppsV1().StatefulSets("default").List(ctx, sel)
	if err != nil {
		t.Fatal(err)
	}
	return len(js.Items), len(ps.Items), len(ss.Items)
}

// removeAtEnd deletes whatever the cluster holds of jobs when the test
// ends, whatever happened.
func removeAtEnd(t *testing.T, jobs ...string) {
	t.Cleanup(func() {
		ctx := context.Background()
		bg := metav1.DeletePropagationBackground
		for _, job := range jobs {
			sel := metav1.ListOptions{LabelSelector: LabelJob + "=" + job}
			_ = cluster.client.BatchV1().Jobs("default").DeleteCollection(ctx, metav1.DeleteOptions{PropagationPolicy: &bg}, sel)
			_ = cluster.client.AppsV1().StatefulSets("default").DeleteCollection(ctx, metav1.DeleteOptions{PropagationPolicy: &bg}, sel)
		}
	})
}

// serveApps serves cloudAppScript at /NAME.sh for each name of outs, its
// runs recorded in outs[name], and returns the server's URL. An app of
// it runs with bootstrapScript "sh NAME.sh".
func serveApps(t *testing.T, outs map[string]string) string {
	t.Helper()
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		out, ok := outs[strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, "/"), ".sh")]
		if !ok {
			http.NotFound(w, r)
			return
		}
		_, _ = fmt.Fprintf(w, cloudAppScript, out)
	}))
	t.Cleanup(app.Close)
	return app.URL
}

// writeSleep sets the seconds the app's next runs in out sleep.
func writeSleep(t *testing.T, out string, secs int) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(out, "sleep"), []byte(strconv.Itoa(secs)), 0o644); err != nil {
		t.Fatal(err)
	}
}

// readyTimes is the rounds waiting in ready of each job.
func (s *cloudScheduler) readyTimes() map[string]int {
	s.t.Helper()
	var rs []struct {
		JobName string `json:"jobName"`
		Times   string `json:"times"`
	}
	if err := json.Unmarshal(s.must("GET", "/api/job/tasks/ready", ""), &rs); err != nil {
		s.t.Fatal(err)
	}
	out := map[string]int{}
	for _, r := range rs {
		n, err := strconv.Atoi(r.Times)
		if err != nil {
			s.t.Fatalf("ready %s: times %q", r.JobName, r.Times)
		}
		out[r.JobName] = n
	}
	return out
}

// runningTasks is the task ids of the running tasks of job.
func (s *cloudScheduler) runningTasks(job string) []string {
	s.t.Helper()
	var rs []struct {
		ID       string `json:"id"`
		MetaInfo struct {
			JobName string `json:"jobName"`
		} `json:"metaInfo"`
	}
	if err := json.Unmarshal(s.must("GET", "/api/job/tasks/running", ""), &rs); err != nil {
		s.t.Fatal(err)
	}
	var ids []string
	for _, r := range rs {
		if r.MetaInfo.JobName == job || strings.HasPrefix(r.ID, job+"@-@") {
			ids = append(ids, r.ID)
		}
	}
	return ids
}

// checkRounds checks the runs of items 0..n-1 of a job the app timed in
// out: want rounds, each a fire of its own whose items each ran once and
// to their end, and no round begun before the one before it ended.
func checkRounds(t *testing.T, job, out string, n, want int) [][]cloudSpan {
	t.Helper()
	rounds := make([][]cloudSpan, want)
	for item := range n {
		spans := cloudSpans(t, out, item)
		if len(spans) != want {
			t.Fatalf("%s: item %d ran %d times, want %d: %+v", job, item, len(spans), want, spans)
		}
		for k, sp := range spans {
			if sp.end.IsZero() {
				t.Errorf("%s: item %d's run %s did not end", job, item, sp.task)
			}
			if k > 0 && sp.start.Before(spans[k-1].end) {
				t.Errorf("%s: item %d ran twice at once: %s began at %s, before %s ended at %s",
					job, item, sp.task, sp.start.Format(time.StampMilli), spans[k-1].task, spans[k-1].end.Format(time.StampMilli))
			}
			rounds[k] = append(rounds[k], sp)
		}
	}
	fires := map[string]bool{}
	for k, round := range rounds {
		for _, sp := range round {
			if fireOf(sp.task) != fireOf(round[0].task) {
				t.Errorf("%s: round %d's items ran in fires %s and %s", job, k+1, fireOf(round[0].task), fireOf(sp.task))
			}
			if strings.Contains(sp.task, "@-@FAILOVER@-@") {
				t.Errorf("%s: round %d's run %s is a failover", job, k+1, sp.task)
			}
			if k > 0 {
				for _, prev := range rounds[k-1] {
					if sp.start.Before(prev.end) {
						t.Errorf("%s: round %d began (%s) before round %d ended (%s)", job, k+1, sp.task, k, prev.task)
					}
				}
			}
		}
		if fires[fireOf(round[0].task)] {
			t.Errorf("%s: round %d is fire %s again", job, k+1, fireOf(round[0].task))
		}
		fires[fireOf(round[0].task)] = true
	}
	return rounds
}

// TestCloudMisfireOnKubernetes: two TRANSIENT jobs of 2 items whose cron
// fires three times 4 s apart while each round runs 20 s on the test
// cluster. A fire while the round runs is flagged in ready and run right
// after the round ends: with misfire false once however many fires came
// (ready shows 1), with misfire true once per fire (ready shows 2).
// Each item runs once per round, in the round's own fire, never two runs
// of an item at once nor two rounds of a job; deregistering the jobs
// leaves no Job, pod or StatefulSet of them.
func TestCloudMisfireOnKubernetes(t *testing.T) {
	if cluster.Skip != "" {
		t.Skip(cluster.Skip)
	}
	addNode(t, "misfire-a", "2")
	// Each job's rounds: the cron's first fire and the rounds its two
	// later fires flag; readyWasMax is the most rounds ready showed.
	jobs := map[string]struct {
		misfire     bool
		flagged     int
		rounds      int
		out         string
		readyWasMax int
	}{"mf-once": {misfire: false, flagged: 1, rounds: 2}, "mf-each": {misfire: true, flagged: 2, rounds: 3}}
	outs := map[string]string{}
	for name, j := range jobs {
		j.out = t.TempDir()
		writeSleep(t, j.out, 20)
		outs[name], jobs[name] = j.out, j
	}
	url := serveApps(t, outs)
	removeAtEnd(t, "mf-once", "mf-each")
	s := startCloudScheduler(t)
	t0 := firstFire(15*time.Second, 8*time.Second)
	fires := []time.Time{t0, t0.Add(4 * time.Second), t0.Add(8 * time.Second)}
	for name, j := range jobs {
		s.must("POST", "/api/app", fmt.Sprintf(`{"appName":%q,"appURL":%q,"bootstrapScript":"sh %s.sh","cpuCount":0.1,"memoryMB":16}`, name, url+"/"+name+".sh", name))
		s.must("POST", "/api/job/register", fmt.Sprintf(`{"jobName":%q,"appName":%q,"jobExecutionType":"TRANSIENT","cron":%q,
"shardingTotalCount":2,"cpuCount":0.2,"memoryMB":32,"failover":false,"misfire":%t}`, name, name, cronAt(fires...), j.misfire))
	}
	if time.Now().After(t0) {
		t.Fatalf("the jobs were registered after their first fire %s", t0)
	}

	// Round 1 starts on the first fire; the later rounds sleep 1 s.
	s.eventually(120*time.Second, "round 1 of both jobs running", func() bool {
		for _, j := range jobs {
			if len(cloudSpans(t, j.out, 0)) == 0 || len(cloudSpans(t, j.out, 1)) == 0 {
				return false
			}
		}
		return true
	})
	for _, j := range jobs {
		writeSleep(t, j.out, 1)
	}
	// The later fires come while round 1 runs: they are flagged in ready
	// until it ends, and the rounds run one after the other until none
	// is left.
	s.eventually(180*time.Second, "the flagged rounds run and none left", func() bool {
		ready := s.readyTimes()
		done := time.Now().After(fires[2])
		for name, j := range jobs {
			j.readyWasMax = max(j.readyWasMax, ready[name])
			jobs[name] = j
			if ready[name] > j.flagged {
				t.Fatalf("%s (misfire %t): %d rounds in ready, want at most %d", name, j.misfire, ready[name], j.flagged)
			}
			done = done && ready[name] == 0 && len(s.runningTasks(name)) == 0 &&
				len(cloudSpans(t, j.out, 0)) >= j.rounds && len(cloudSpans(t, j.out, 1)) >= j.rounds
		}
		return done
	})
	for name, j := range jobs {
		if j.readyWasMax != j.flagged {
			t.Errorf("%s (misfire %t): ready showed at most %d rounds while round 1 ran, want %d", name, j.misfire, j.readyWasMax, j.flagged)
		}
		rounds := checkRounds(t, name, j.out, 2, j.rounds)
		// Round 1 ran through the later fires: they were misfires.
		for _, sp := range rounds[0] {
			if !sp.end.After(fires[2]) {
				t.Errorf("%s: round 1's run %s ended at %s, before the last fire at %s", name, sp.task, sp.end.Format(time.StampMilli), fires[2].Format(time.StampMilli))
			}
		}
		for k := range rounds {
			t.Logf("%s (misfire %t): round %d fire %s, began %s", name, j.misfire, k+1, fireOf(rounds[k][0].task), rounds[k][0].start.Format(time.StampMilli))
		}
	}

	for name := range jobs {
		s.must("DELETE", "/api/job/"+name+"/deregister", "")
	}
	s.eventually(120*time.Second, "no Job, pod or StatefulSet of the deregistered jobs", func() bool {
		for name := range jobs {
			if js, ps, sets := objectsOf(t, name); js+ps+sets > 0 {
				return false
			}
		}
		return true
	})
}

// TestCloudStandbyTakesOverOnKubernetes: two `ejob cloud` processes on
// one ZooKeeper and the test cluster; the leader is killed with SIGKILL
// while a fire's 2 items run on the cluster. The standby leads within
// twice the session timeout, keeps the running items (each runs once in
// that fire, no failover, not launched again) and records their
// results; the job's cron fires after the takeover and its items run
// once more; deregistering the job leaves no Job, pod or StatefulSet.
func TestCloudStandbyTakesOverOnKubernetes(t *testing.T) {
	if cluster.Skip != "" {
		t.Skip(cluster.Skip)
	}
	addNode(t, "takeover-a", "1")
	out := t.TempDir()
	writeSleep(t, out, 25)
	url := serveApps(t, map[string]string{"held": out})
	removeAtEnd(t, "held")
	ss := startCloudSchedulers(t, 2)
	var leader, standby *cloudScheduler
	ss[0].eventually(60*time.Second, "one scheduler leading", func() bool {
		for i, s := range ss {
			if _, _, ok := s.results(); ok {
				leader, standby = s, ss[1-i]
				return true
			}
		}
		return false
	})
	if _, _, ok := standby.results(); ok {
		t.Fatal("both schedulers lead")
	}
	// The cron fires once, well after the takeover; the first fire is a
	// trigger.
	cronFire := firstFire(40*time.Second, 0)
	leader.must("POST", "/api/app", fmt.Sprintf(`{"appName":"held","appURL":%q,"bootstrapScript":"sh held.sh","cpuCount":0.1,"memoryMB":16}`, url+"/held.sh"))
	leader.must("POST", "/api/job/register", fmt.Sprintf(`{"jobName":"held","appName":"held","jobExecutionType":"TRANSIENT","cron":%q,
"shardingTotalCount":2,"cpuCount":0.2,"memoryMB":32,"failover":true,"misfire":false}`, cronAt(cronFire)))
	leader.must("POST", "/api/job/trigger", "held")
	leader.eventually(120*time.Second, "the 2 items of the triggered fire running", func() bool {
		return len(cloudRuns(t, out, 0)) == 1 && len(cloudRuns(t, out, 1)) == 1 && len(leader.runningTasks("held")) == 2
	})
	fire1 := cloudRuns(t, out, 0)[0].fire()
	writeSleep(t, out, 1)

	leader.kill()
	killed := time.Now()
	standby.eventually(60*time.Second, "the standby leading", func() bool {
		_, _, ok := standby.results()
		return ok
	})
	took := time.Since(killed)
	t.Logf("the standby leads %s after the leader was killed", took.Round(time.Millisecond))
	if took > 2*cloudSessionTimeout {
		t.Errorf("the standby took %s to lead, more than twice the session timeout %s", took, cloudSessionTimeout)
	}
	if !time.Now().Before(cronFire) {
		t.Fatalf("the takeover ended after the cron's fire at %s: the test cannot tell who fired it", cronFire)
	}
	// The new leader follows the items running: same task ids, as the
	// items' own contexts name them.
	var want []string
	for item := range 2 {
		want = append(want, cloudRuns(t, out, item)[0].ctx.TaskID)
	}
	standby.eventually(30*time.Second, "the new leader listing the running items", func() bool {
		got := standby.runningTasks("held")
		return len(got) == 2 && (got[0] == want[0] && got[1] == want[1] || got[0] == want[1] && got[1] == want[0])
	})
	// Their results are recorded by the new leader, the items not run
	// again.
	standby.eventually(60*time.Second, "the kept items' 2 successes recorded", func() bool {
		success, _, _ := standby.results()
		return success >= 2 && len(standby.runningTasks("held")) == 0
	})
	for item := range 2 {
		if rs := cloudRuns(t, out, item); len(rs) != 1 {
			t.Errorf("item %d ran %d times before the cron's fire, want once: %+v", item, len(rs), rs)
		}
	}
	// The cron fires under the new leader.
	standby.eventually(time.Until(cronFire)+120*time.Second, "the cron's fire run under the new leader", func() bool {
		success, _, _ := standby.results()
		return success >= 4 && len(standby.runningTasks("held")) == 0
	})
	rounds := checkRounds(t, "held", out, 2, 2)
	if f := fireOf(rounds[0][0].task); f != fire1 {
		t.Errorf("round 1 ran in fire %s, want the triggered fire %s", f, fire1)
	}
	for _, sp := range rounds[1] {
		if sp.start.Before(cronFire) {
			t.Errorf("the cron's round began at %s, before its fire at %s", sp.start.Format(time.StampMilli), cronFire.Format(time.StampMilli))
		}
	}
	if success, failed, _ := standby.results(); success != 4 || failed != 0 {
		t.Errorf("the new leader counted %d successes and %d failures, want 4 and 0 (2 items of each fire)", success, failed)
	}
	var failover []json.RawMessage
	_ = json.Unmarshal(standby.must("GET", "/api/job/tasks/failover", ""), &failover)
	if len(failover) != 0 {
		t.Errorf("failover tasks after the takeover: %s", failover)
	}

	standby.must("DELETE", "/api/job/held/deregister", "")
	standby.eventually(120*time.Second, "no Job, pod or StatefulSet of the deregistered job", func() bool {
		js, ps, sets := objectsOf(t, "held")
		return js+ps+sets == 0
	})
}
