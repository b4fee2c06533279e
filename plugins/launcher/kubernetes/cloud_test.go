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

// cloudAppScript is the app of the end-to-end test, a single script the
// test serves over HTTP: each run of an item appends its node and sharding
// context to OUT/item-N, then sleeps for the seconds in OUT/sleep (none
// when it is a failover run).
const cloudAppScript = `#!/bin/sh
out=%q
printf '%%s\t%%s\n' "$EJOB_NODE_NAME" "$EJOB_SHARDING_CONTEXT" >>"$out/item-$EJOB_SHARDING_ITEM"
secs=$(cat "$out/sleep" 2>/dev/null || echo 0)
case "$EJOB_SHARDING_CONTEXT" in *@-@FAILOVER@-@*) secs=0 ;; esac
exec sleep "$secs"
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
func (r cloudRun) fire() string {
	parts := strings.Split(r.ctx.TaskID, "@-@")
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

// cloudScheduler is a real `ejob cloud` process on the test cluster, with
// its own ZooKeeper, and a logged-in admin session of its REST API.
type cloudScheduler struct {
	t           *testing.T
	base, token string
	log         string
}

// startCloudScheduler builds bin/ejob and the launcher plugin, starts
// ZooKeeper (scripts/zk.sh) and a scheduler whose launcher is KUBERNETES
// on the test cluster's kubeconfig, and logs in as admin.
func startCloudScheduler(t *testing.T) *cloudScheduler {
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
	port := freePort(t)
	conf := filepath.Join(dir, "cloud.yaml")
	if err := os.WriteFile(conf, fmt.Appendf(nil, `elasticjob:
  regCenter:
    serverLists: %q
    namespace: cloud-e2e
    sessionTimeoutMilliseconds: 4000
ejob:
  pluginsDir: %s
  http:
    listen: 127.0.0.1:%d
    users: [{name: admin, passwordHash: %q, role: admin}]
  cloud:
    launcher: {type: KUBERNETES}
    kubernetes: {kubeconfig: %s, namespace: default}
    pollInterval: 500ms
`, zkAddr, plugins, port, strings.TrimSpace(string(hash)), cluster.Kubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	s := &cloudScheduler{t: t, base: fmt.Sprintf("http://127.0.0.1:%d", port), log: filepath.Join(dir, "cloud.log")}
	logf, err := os.Create(s.log)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(ejob, "cloud", "-c", conf, "--log-level", "debug")
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
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
	return s
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

// must calls the REST API and returns the envelope's model, failing the
// test on an error.
func (s *cloudScheduler) must(method, path, body string) json.RawMessage {
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
		s.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	var env struct {
		Success  bool            `json:"success"`
		ErrorMsg *string         `json:"errorMsg"`
		Model    json.RawMessage `json:"model"`
	}
	if err := json.Unmarshal(data, &env); err != nil || !env.Success {
		s.t.Fatalf("%s %s %s: HTTP %d: %s", method, path, body, resp.StatusCode, data)
	}
	return env.Model
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
		k8s(t, "node", cluster.Dir, n, "--cpu", "1", "--memory", "1Gi")
		t.Cleanup(func() {
			_ = cluster.Run(nil, "kill-node", cluster.Dir, n)
			_ = cluster.client.CoreV1().Nodes().Delete(context.Background(), n, metav1.DeleteOptions{})
		})
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
	ctx := context.Background()
	objects := func() (jobs, pods int) {
		sel := metav1.ListOptions{LabelSelector: LabelJob + "=e2e"}
		js, err := cluster.client.BatchV1().Jobs("default").List(ctx, sel)
		if err != nil {
			t.Fatal(err)
		}
		ps, err := cluster.client.CoreV1().Pods("default").List(ctx, sel)
		if err != nil {
			t.Fatal(err)
		}
		return len(js.Items), len(ps.Items)
	}
	t.Cleanup(func() {
		// Whatever happened, nothing of the job stays on the cluster.
		bg := metav1.DeletePropagationBackground
		_ = cluster.client.BatchV1().Jobs("default").DeleteCollection(ctx, metav1.DeleteOptions{PropagationPolicy: &bg},
			metav1.ListOptions{LabelSelector: LabelJob + "=e2e"})
	})
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
		_, pods := objects()
		return pods > 0 && len(cloudRuns(t, out, 0))+len(cloudRuns(t, out, 1))+len(cloudRuns(t, out, 2)) > 7
	})
	s.must("DELETE", "/api/job/e2e/deregister", "")
	s.eventually(120*time.Second, "no Job and no pod of the deregistered job", func() bool {
		jobs, pods := objects()
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
	t.Cleanup(func() {
		bg := metav1.DeletePropagationBackground
		_ = cluster.client.AppsV1().StatefulSets("default").DeleteCollection(context.Background(), metav1.DeleteOptions{PropagationPolicy: &bg},
			metav1.ListOptions{LabelSelector: LabelJob + "=fires"})
	})
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
