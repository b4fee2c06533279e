package hostile

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ejob-io/ejob/core/config"
	"github.com/ejob-io/ejob/core/node"
	"github.com/ejob-io/ejob/core/reg"
	"github.com/ejob-io/ejob/core/reg/zookeeper"
	"github.com/ejob-io/ejob/internal/testkit"
)

// oneBillion is the shardingTotalCount that made every host running the job
// run out of memory.
const oneBillion = 1_000_000_000

// zkDirect connects to the shared ZooKeeper in the test's namespace, as
// another tool or a Java peer would, and closes when the test ends.
func (e *env) zkDirect() reg.Client {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := zookeeper.Connect(ctx, zookeeper.DefaultConfig(zk.Addr(), e.ns))
	if err != nil {
		e.t.Fatalf("connect to ZooKeeper: %v", err)
	}
	e.t.Cleanup(func() { _ = c.Close() })
	return c
}

// writeJobConfigNode writes data into job's config node, creating it (and
// the job's root) when absent.
func writeJobConfigNode(t *testing.T, c reg.Client, job string, data []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := reg.Persist(ctx, c, node.New(job).Config(), data); err != nil {
		t.Fatalf("write the config node of %s: %v", job, err)
	}
}

// scriptConfigNode is the config node text of a valid SCRIPT job.
func scriptConfigNode(t *testing.T, job string, count int, cron, command string) []byte {
	t.Helper()
	c := config.New(job, count)
	c.Cron = cron
	c.Props = map[string]string{"script.command.line": command}
	data, err := config.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// withShardingCount is a config node's text with its shardingTotalCount replaced.
func withShardingCount(t *testing.T, data []byte, count int) []byte {
	t.Helper()
	re := regexp.MustCompile(`(?m)^shardingTotalCount: \d+$`)
	if !re.Match(data) {
		t.Fatalf("no shardingTotalCount line in\n%s", data)
	}
	return re.ReplaceAll(data, []byte("shardingTotalCount: "+strconv.Itoa(count)))
}

// recordedStarts counts the item starts a recorder wrote to path.
func recordedStarts(t *testing.T, path string) int {
	t.Helper()
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for l := range strings.SplitSeq(string(data), "\n") {
		if strings.HasPrefix(l, "S ") {
			n++
		}
	}
	return n
}

// waitRecordedStarts waits until the recorder file at path shows more than n item
// starts, and returns how many it shows.
func waitRecordedStarts(t *testing.T, within time.Duration, path string, n int) int {
	t.Helper()
	var got int
	testkit.Eventually(t, within, fmt.Sprintf("more than %d runs in %s", n, filepath.Base(path)), func() bool {
		got = recordedStarts(t, path)
		return got > n
	})
	return got
}

// zkConsLine matches a connection of ZooKeeper's `cons` answer: its
// request count and session id.
var zkConsLine = regexp.MustCompile(`recved=(\d+),sent=\d+,sid=0x([0-9a-f]+)`)

// zkRequestsOf returns how many requests ZooKeeper has received on session
// sid's connection (its `cons` four-letter command).
func zkRequestsOf(t *testing.T, sid int64) int64 {
	t.Helper()
	conn, err := net.DialTimeout("tcp", zk.Addr(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := conn.Write([]byte("cons")); err != nil {
		t.Fatal(err)
	}
	want := strconv.FormatInt(sid, 16)
	sc := bufio.NewScanner(conn)
	for sc.Scan() {
		if m := zkConsLine.FindStringSubmatch(sc.Text()); m != nil && m[2] == want {
			n, _ := strconv.ParseInt(m[1], 10, 64)
			return n
		}
	}
	t.Fatalf("session 0x%s is not among ZooKeeper's connections (%v)", want, sc.Err())
	return 0
}

// instanceSession is the ZooKeeper session of the host running job: the owner
// of its instance node.
func instanceSession(t *testing.T, c reg.Client, job string) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	j := node.New(job)
	var sid int64
	testkit.Eventually(t, 30*time.Second, "the host's instance node of "+job, func() bool {
		ids, err := c.Children(ctx, j.Instances())
		if err != nil || len(ids) != 1 {
			return false
		}
		st, ok, err := c.Exists(ctx, j.Instance(ids[0]))
		sid = st.EphemeralOwner
		return err == nil && ok && sid != 0
	})
	return sid
}

// httpGetNoLogin fetches url without a login and returns its status and body.
func httpGetNoLogin(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return testkit.APIStatus(resp.StatusCode, b), string(b)
}

// cliJobRow is the line of job in `ejob jobs`' table, or "".
func cliJobRow(out, job string) string {
	for l := range strings.SplitSeq(out, "\n") {
		if f := strings.Fields(l); len(f) > 0 && f[0] == job {
			return l
		}
	}
	return ""
}

// A shardingTotalCount of 10^9 (or 2147483647) sent to PUT
// /api/jobs/config is refused with 400 and an error naming the key, the
// value, the limit and why, and the config node is left as it was.
func TestHostileShardingCountRefusedByREST(t *testing.T) {
	e := newEnv(t)
	zc := e.zkDirect()
	before := scriptConfigNode(t, "wide", 2, "0 0 0 * * ?", "true")
	writeJobConfigNode(t, zc, "wide", before)
	cfg := e.write("ejob.yaml", e.config(""))
	_, base, pw := e.serve(cfg)
	c := login(t, base, "admin", pw)
	for _, n := range []int{oneBillion, 2147483647, config.MaxShardingTotalCount + 1} {
		status, body := c.call(http.MethodPut, "/api/jobs/config",
			fmt.Sprintf(`{"jobName":"wide","cron":"0 0 0 * * ?","shardingTotalCount":%d}`, n))
		if status != http.StatusBadRequest {
			t.Errorf("count %d: status %d (%s), want 400", n, status, body)
		}
		for _, want := range []string{"shardingTotalCount", strconv.Itoa(n), "limit of 1000", "jute.maxbuffer"} {
			if !strings.Contains(string(body), want) {
				t.Errorf("count %d: the refusal %s does not say %q", n, body, want)
			}
		}
	}
	data, _, err := zc.Get(t.Context(), node.New("wide").Config())
	if err != nil || string(data) != string(before) {
		t.Fatalf("the config node changed: %q (%v), want %q", data, err, before)
	}
	// The limit itself is accepted.
	if status, body := c.call(http.MethodPut, "/api/jobs/config",
		fmt.Sprintf(`{"jobName":"wide","cron":"0 0 0 * * ?","shardingTotalCount":%d}`, config.MaxShardingTotalCount)); status != http.StatusOK {
		t.Fatalf("count %d: status %d (%s), want 200", config.MaxShardingTotalCount, status, body)
	}
}

// twoJobHost is a host config with two SCRIPT jobs firing every
// second, "big" and "other", each recording its runs, and an operations
// HTTP server; it returns the config's path, the two record files and
// the HTTP server's base URL.
func twoJobHost(e *env) (cfg, bigRuns, otherRuns, httpBase string) {
	bigRuns, otherRuns = filepath.Join(e.dir, "big.runs"), filepath.Join(e.dir, "other.runs")
	addr := fmt.Sprintf("127.0.0.1:%d", testkit.FreePort(e.t))
	jobs := fmt.Sprintf(`    big:
      elasticJobType: SCRIPT
      cron: "* * * * * ?"
      shardingTotalCount: 2
      props:
        script.command.line: %[1]s %[2]s
    other:
      elasticJobType: SCRIPT
      cron: "* * * * * ?"
      shardingTotalCount: 1
      props:
        script.command.line: %[1]s %[3]s
ejob:
  http:
    listen: %[4]s
`, recorderBin, bigRuns, otherRuns, addr)
	return e.write("ejob.yaml", e.config(jobs)), bigRuns, otherRuns, "http://" + addr
}

// configRefusedLine is what a host logs when it refuses its job's config node.
var configRefusedLine = regexp.MustCompile(`the job's configuration in the registry is invalid`)

// A shardingTotalCount of 10^9 written straight into a job's config node
// (as another tool or a Java peer can) must not take the host down: the
// host stays up and logs the refusal once, the job does not fire while the
// other job of the host keeps firing, `ejob jobs` lists the job as
// CONFIG_ERROR with its reason and exits 0, the console's detail of the job
// answers at once, /readyz and /metrics say which job and why, the host
// sends ZooKeeper no stream of requests, and the first SIGTERM stops it.
// After a restart (the config node wins over the file) the same holds; a
// valid configuration written back through the REST API makes the job fire
// again without a restart.
func TestHostileShardingCountInConfigNode(t *testing.T) {
	e := newEnv(t)
	zc := e.zkDirect()
	cfg, bigRuns, otherRuns, httpBase := twoJobHost(e)
	host := e.start("host", "run", "-c", cfg)
	host.waitLog(t, 60*time.Second, regexp.MustCompile(`host started`))
	waitRecordedStarts(t, 30*time.Second, bigRuns, 0)
	waitRecordedStarts(t, 30*time.Second, otherRuns, 0)

	ctx := t.Context()
	good, _, err := zc.Get(ctx, node.New("big").Config())
	if err != nil {
		t.Fatal(err)
	}
	writeJobConfigNode(t, zc, "big", withShardingCount(t, good, oneBillion))
	host.waitLog(t, 30*time.Second, configRefusedLine)

	serveCfg := e.write("serve.yaml", e.config(""))
	_, base, servePW := e.serve(serveCfg)
	console := login(t, base, "admin", servePW)

	checkBroken := func(host *proc) {
		t.Helper()
		// The job stops firing (a fire may have been on its way), the
		// other one goes on.
		testkit.Eventually(t, 15*time.Second, "big to stop firing", func() bool {
			n := recordedStarts(t, bigRuns)
			return !testkit.Poll(2500*time.Millisecond, func() bool { return recordedStarts(t, bigRuns) != n })
		})
		big := recordedStarts(t, bigRuns)
		other := recordedStarts(t, otherRuns)
		waitRecordedStarts(t, 20*time.Second, otherRuns, other+1)
		if n := recordedStarts(t, bigRuns); n != big {
			t.Errorf("big fired %d times with its configuration refused", n-big)
		}
		if !host.alive() {
			t.Fatalf("the host exited: %v", host.err)
		}
		// ZooKeeper requests of the host's session over 3 s: two jobs
		// firing every second cost a few dozen a second; the refused
		// count made ~12,600 a second.
		sid := instanceSession(t, zc, "other")
		r0, t0 := zkRequestsOf(t, sid), time.Now()
		<-time.After(3 * time.Second) // the measuring window, not a wait for state
		rate := float64(zkRequestsOf(t, sid)-r0) / time.Since(t0).Seconds()
		if rate > 1000 {
			t.Errorf("the host sends ZooKeeper %.0f requests a second with its job's configuration refused", rate)
		}
		if n := len(configRefusedLine.FindAllString(host.out.String(), -1)); n != 1 {
			t.Errorf("the refusal was logged %d times, want once", n)
		}

		r := e.ejob(30*time.Second, "jobs", "-c", cfg)
		row := cliJobRow(r.stdout, "big")
		if r.code != 0 || !strings.Contains(row, "CONFIG_ERROR") || !strings.Contains(row, "limit of 1000") {
			t.Errorf("ejob jobs: exit %d, row %q, want 0 and a CONFIG_ERROR row naming the limit\nstdout:\n%s\nstderr:\n%s", r.code, row, r.stdout, r.stderr)
		}
		if row := cliJobRow(r.stdout, "other"); !strings.Contains(row, "READY") && !strings.Contains(row, "RUNNING") {
			t.Errorf("ejob jobs: other's row %q, want READY or RUNNING", row)
		}

		start := time.Now()
		status, body := console.call(http.MethodGet, "/console/api/jobs/big", "")
		if took := time.Since(start); took > 5*time.Second {
			t.Errorf("the console's detail of big took %v", took)
		}
		var d struct {
			Model struct {
				Status      string `json:"status"`
				ConfigError string `json:"configError"`
				Items       []any  `json:"items"`
			} `json:"model"`
		}
		if err := json.Unmarshal(body, &d); status != http.StatusOK || err != nil || d.Model.Status != "CONFIG_ERROR" ||
			!strings.Contains(d.Model.ConfigError, "shardingTotalCount") || len(d.Model.Items) > 2 {
			t.Errorf("console detail of big: %d %.500s (%v), want CONFIG_ERROR with the reason and at most its 2 real items", status, body, err)
		}
		for path, want := range map[string]string{"/api/jobs/getAllJobsBriefInfo": `"CONFIG_ERROR"`, "/console/api/jobs": `"CONFIG_ERROR"`,
			"/console/api/overview": `"configErrors":[{"jobName":"big"`} {
			if status, body := console.call(http.MethodGet, path, ""); status != http.StatusOK || !strings.Contains(string(body), want) {
				t.Errorf("%s: %d %.300s, want 200 with %s", path, status, body, want)
			}
		}

		status, ready := httpGetNoLogin(t, httpBase+"/readyz")
		if status != http.StatusOK || !strings.Contains(ready, `job "big": configuration error`) || !strings.Contains(ready, "shardingTotalCount") {
			t.Errorf("/readyz: %d %q, want 200 naming big and why", status, ready)
		}
		_, metrics := httpGetNoLogin(t, httpBase+"/metrics")
		if !strings.Contains(metrics, `ejob_job_config_error{job="big"} 1`) || !strings.Contains(metrics, `ejob_job_config_error{job="other"} 0`) {
			t.Errorf("/metrics does not say big's configuration is refused:\n%s", linesWith(metrics, "config_error"))
		}
	}
	checkBroken(host)

	// The first SIGTERM stops the host; restarted, the registry's node
	// wins over the file.
	stopWithin := func(p *proc) {
		t.Helper()
		start := time.Now()
		if err := p.stop(15 * time.Second); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s stopped %v after SIGTERM", p.name, time.Since(start))
	}
	stopWithin(host)
	again := e.start("host-again", "run", "-c", cfg)
	again.waitLog(t, 60*time.Second, regexp.MustCompile(`host started`))
	again.waitLog(t, 30*time.Second, configRefusedLine)
	checkBroken(again)

	// A valid configuration, written through the REST API, makes the job
	// fire again on the running host.
	fixed := fmt.Sprintf(`{"jobName":"big","cron":"* * * * * ?","shardingTotalCount":2,"monitorExecution":true,"props":{"script.command.line":%q}}`,
		recorderBin+" "+bigRuns)
	if status, body := console.call(http.MethodPut, "/api/jobs/config", fixed); status != http.StatusOK {
		t.Fatalf("write a valid configuration back: %d %s", status, body)
	}
	again.waitLog(t, 30*time.Second, regexp.MustCompile(`configuration in the registry is valid again`))
	waitRecordedStarts(t, 30*time.Second, bigRuns, recordedStarts(t, bigRuns))
	if r := e.ejob(30*time.Second, "jobs", "-c", cfg); strings.Contains(cliJobRow(r.stdout, "big"), "CONFIG_ERROR") {
		t.Errorf("ejob jobs still shows big in error after the fix:\n%s", r.stdout)
	}
	if _, metrics := httpGetNoLogin(t, httpBase+"/metrics"); !strings.Contains(metrics, `ejob_job_config_error{job="big"} 0`) {
		t.Errorf("/metrics still says big's configuration is refused:\n%s", linesWith(metrics, "config_error"))
	}
	stopWithin(again)
}

// linesWith is the lines of text containing s.
func linesWith(text, s string) string {
	var out []string
	for l := range strings.SplitSeq(text, "\n") {
		if strings.Contains(l, s) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// A job config node holding invalid YAML (`cron: [`) must not break any
// list: getAllJobsBriefInfo, /console/api/jobs and the overview answer 200
// with every job, the bad one as CONFIG_ERROR with its reason; the detail
// of the bad job answers; `ejob jobs` lists it as a CONFIG_ERROR row and
// exits 0; a valid configuration sent to PUT /api/jobs/config replaces
// the bad node.
func TestHostileInvalidYAMLConfigNode(t *testing.T) {
	e := newEnv(t)
	zc := e.zkDirect()
	writeJobConfigNode(t, zc, "fine", scriptConfigNode(t, "fine", 1, "0 0 0 * * ?", "true"))
	writeJobConfigNode(t, zc, "broken", []byte("jobName: broken\nshardingTotalCount: 1\ncron: [\n"))
	cfg := e.write("ejob.yaml", e.config(""))
	_, base, pw := e.serve(cfg)
	c := login(t, base, "admin", pw)

	status, body := c.call(http.MethodGet, "/api/jobs/getAllJobsBriefInfo", "")
	var briefs struct {
		Model []struct {
			JobName     string `json:"jobName"`
			Status      string `json:"status"`
			ConfigError string `json:"configError"`
		} `json:"model"`
	}
	if err := json.Unmarshal(body, &briefs); status != http.StatusOK || err != nil {
		t.Fatalf("getAllJobsBriefInfo: %d %s (%v)", status, body, err)
	}
	got := map[string]string{}
	for _, b := range briefs.Model {
		got[b.JobName] = b.Status
		if b.JobName == "broken" && !strings.Contains(b.ConfigError, "malformed job configuration YAML") {
			t.Errorf("broken's reason is %q, want the YAML error", b.ConfigError)
		}
	}
	if got["broken"] != "CONFIG_ERROR" || got["fine"] == "" || got["fine"] == "CONFIG_ERROR" {
		t.Errorf("getAllJobsBriefInfo statuses %v, want broken CONFIG_ERROR and fine listed", got)
	}
	for _, path := range []string{"/console/api/jobs", "/console/api/overview", "/console/api/jobs/broken"} {
		status, body := c.call(http.MethodGet, path, "")
		if status != http.StatusOK || !strings.Contains(string(body), "CONFIG_ERROR") && !strings.Contains(string(body), "malformed") {
			t.Errorf("%s: %d %.300s, want 200 with broken's error", path, status, body)
		}
	}
	r := e.ejob(30*time.Second, "jobs", "-c", cfg)
	if row := cliJobRow(r.stdout, "broken"); r.code != 0 || !strings.Contains(row, "CONFIG_ERROR") || !strings.Contains(row, "malformed") {
		t.Errorf("ejob jobs: exit %d, broken's row %q\nstdout:\n%s\nstderr:\n%s", r.code, row, r.stdout, r.stderr)
	}
	if cliJobRow(r.stdout, "fine") == "" {
		t.Errorf("ejob jobs does not list fine:\n%s", r.stdout)
	}

	if status, body := c.call(http.MethodPut, "/api/jobs/config", `{"jobName":"broken","cron":"0 0 0 * * ?","shardingTotalCount":1}`); status != http.StatusOK {
		t.Fatalf("replace the bad node: %d %s", status, body)
	}
	if r := e.ejob(30*time.Second, "jobs", "-c", cfg); strings.Contains(cliJobRow(r.stdout, "broken"), "CONFIG_ERROR") {
		t.Errorf("ejob jobs still shows broken in error:\n%s", r.stdout)
	}
}
