package cloud

import (
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A TRANSIENT job on a cron: each fire runs every item once, with its
// sharding context in the environment (the JSON SCRIPT jobs get, and
// field by field); disabling the job stops the fires.
func TestCronTransientRunsItemsWithContextAndDisableStops(t *testing.T) {
	e := newEnv(t)
	_, c := e.boot()
	c.must("POST", "/api/job/register", e.jobBody("cronjob", "app", "TRANSIENT", "0/2 * * * * ?", 3, "0=a,1=b,2=c", false, false))
	e.eventually(20*time.Second, "every item ran twice", func() bool {
		return len(e.runs(0)) >= 2 && len(e.runs(1)) >= 2 && len(e.runs(2)) >= 2
	})
	for item, param := range []string{"a", "b", "c"} {
		r := e.runs(item)[0]
		// The LOCAL launcher runs every item on its node "local".
		if !strings.HasPrefix(r[0], "cronjob@-@"+string(rune('0'+item))+"@-@READY@-@local@-@") || r[1] != param {
			t.Errorf("item %d: task id %q, parameter %q", item, r[0], r[1])
		}
		var sc map[string]any
		if err := json.Unmarshal([]byte(r[2]), &sc); err != nil {
			t.Fatalf("item %d: EJOB_SHARDING_CONTEXT %q: %v", item, r[2], err)
		}
		if sc["jobName"] != "cronjob" || sc["shardingItem"] != float64(item) || sc["shardingTotalCount"] != float64(3) ||
			sc["shardingParameter"] != param || sc["taskId"] != r[0] {
			t.Errorf("item %d: sharding context %v", item, sc)
		}
	}
	c.must("POST", "/api/job/cronjob/disable", "")
	if d := string(c.must("GET", "/api/job/cronjob/disable", "")); d != "true" {
		t.Fatalf("disable status %s", d)
	}
	e.eventually(10*time.Second, "no task running after disable", func() bool { return len(c.running()) == 0 })
	before := len(e.runs(0))
	// Three cron periods with the job disabled: no new run.
	deadline := time.Now().Add(6 * time.Second)
	for time.Now().Before(deadline) {
		if n := len(e.runs(0)); n != before {
			t.Fatalf("item 0 ran %d times after disable", n-before)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// Apps and jobs live in ZooKeeper: a new scheduler process after the
// first was killed serves them, and a trigger runs the job.
func TestAppAndJobSurviveRestartAndTrigger(t *testing.T) {
	e := newEnv(t)
	s, c := e.boot()
	c.must("POST", "/api/job/register", e.jobBody("onejob", "app", "TRANSIENT", "", 2, "", false, false))
	s.kill()
	s = e.start("b")
	c = login(t, s.base, "admin")
	var apps []map[string]any
	_ = json.Unmarshal(c.must("GET", "/api/app/list", ""), &apps)
	var job map[string]any
	_ = json.Unmarshal(c.must("GET", "/api/job/jobs/onejob", ""), &job)
	if len(apps) != 1 || apps[0]["appName"] != "app" || job["jobName"] != "onejob" || job["shardingTotalCount"] != float64(2) {
		t.Fatalf("after restart: apps %v, job %v", apps, job)
	}
	// The CLI over the REST API: list, then trigger.
	cli := func(args ...string) string {
		cmd := exec.Command(ejobBin, append([]string{"cloud"}, append(args, "--url", s.base)...)...)
		cmd.Env = append(os.Environ(), "EJOB_CLOUD_PASSWORD="+adminPassword)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("ejob cloud %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	if out := cli("job", "list"); !strings.Contains(out, `"jobName": "onejob"`) {
		t.Fatalf("ejob cloud job list:\n%s", out)
	}
	cli("job", "trigger", "onejob")
	e.eventually(20*time.Second, "both items ran once", func() bool { return len(e.runs(0)) == 1 && len(e.runs(1)) == 1 })
	if out := cli("stats", "types"); !strings.Contains(out, `"transientJobCount": 1`) {
		t.Fatalf("ejob cloud stats types:\n%s", out)
	}
	if out := cli("operate", "sandbox", "app"); !strings.HasPrefix(strings.TrimSpace(out), "[") {
		t.Fatalf("ejob cloud operate sandbox app:\n%s", out)
	}
	e.eventually(10*time.Second, "nothing running", func() bool { return len(c.running()) == 0 })
	if len(e.runs(0)) != 1 {
		t.Fatalf("item 0 ran %d times for one trigger", len(e.runs(0)))
	}
	// A guest reads but may not write.
	g := login(t, s.base, "guest")
	g.must("GET", "/api/job/jobs", "")
	if _, msg := g.call("POST", "/api/job/trigger", "onejob"); !strings.Contains(msg, "read-only") {
		t.Fatalf("guest trigger: %q", msg)
	}
}

// Deregistering a job stops what runs of it: its processes are gone.
func TestDeregisterStopsRunningItems(t *testing.T) {
	e := newEnv(t)
	_, c := e.boot()
	c.must("POST", "/api/job/register", e.jobBody("longjob", "app", "TRANSIENT", "", 2, "0=sleep600,1=sleep600", false, false))
	c.must("POST", "/api/job/trigger", `"longjob"`)
	e.eventually(20*time.Second, "both items running", func() bool {
		return c.inState("running") == 2 && len(e.itemPIDs("longjob", 0)) == 1 && len(e.itemPIDs("longjob", 1)) == 1
	})
	pids := append(e.itemPIDs("longjob", 0), e.itemPIDs("longjob", 1)...)
	c.must("DELETE", "/api/job/longjob/deregister", "")
	e.eventually(10*time.Second, "the items' processes gone", func() bool {
		return !alive(pids[0]) && !alive(pids[1]) && len(c.running()) == 0
	})
	if _, msg := c.call("GET", "/api/job/jobs/longjob", ""); !strings.HasPrefix(msg, "404") {
		t.Fatalf("deregistered job still there: %q", msg)
	}
}

// An item whose process dies (as on a dead node) is failed over: only
// that item runs again, as a FAILOVER task; the other keeps running.
func TestLostItemFailsOverAlone(t *testing.T) {
	e := newEnv(t)
	_, c := e.boot()
	c.must("POST", "/api/job/register", e.jobBody("fojob", "app", "TRANSIENT", "", 2, "0=sleep600,1=sleep600", true, false))
	c.must("POST", "/api/job/trigger", "fojob")
	e.eventually(20*time.Second, "both items running", func() bool {
		return len(e.runs(0)) == 1 && len(e.runs(1)) == 1 && len(e.itemPIDs("fojob", 1)) == 1
	})
	pid := e.itemPIDs("fojob", 1)[0]
	if err := syscall.Kill(-pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	e.eventually(20*time.Second, "item 1 run again as FAILOVER", func() bool {
		r := e.runs(1)
		return len(r) == 2 && strings.Contains(r[1][0], "@-@1@-@FAILOVER@-@")
	})
	if n := len(e.runs(0)); n != 1 {
		t.Fatalf("item 0 ran %d times; only item 1 was lost", n)
	}
	var types []string
	for _, r := range c.running() {
		types = append(types, r.Type)
	}
	if len(types) != 2 {
		t.Fatalf("running tasks %v, want item 0 READY and item 1 FAILOVER", types)
	}
	c.must("DELETE", "/api/job/fojob/deregister", "")
}

// Two schedulers: the leader is killed; the standby leads within the
// session timeout, keeps the running item (not run again) and fires the
// cron job.
func TestStandbyTakesOverWithNothingLostOrRunTwice(t *testing.T) {
	e := newEnv(t)
	a := e.start("a")
	c := login(t, a.base, "admin")
	e.registerApp(c, "app")
	c.must("POST", "/api/job/register", e.jobBody("held", "app", "TRANSIENT", "", 1, "0=sleep600", true, false))
	c.must("POST", "/api/job/trigger", "held")
	e.eventually(20*time.Second, "the held item running", func() bool { return len(e.runs(0)) == 1 })
	b := e.start("b")
	cb := login(t, b.base, "admin")
	a.kill()
	killed := time.Now()
	cb.must("POST", "/api/job/register", strings.Replace(e.jobBody("ticker", "app", "TRANSIENT", "0/1 * * * * ?", 1, "", false, false),
		`"jobParameter":"`+e.out+`"`, `"jobParameter":"`+e.out+`/ticker"`, 1))
	if err := mkdir(e.out + "/ticker"); err != nil {
		t.Fatal(err)
	}
	e.eventually(15*time.Second, "the standby firing the cron job", func() bool {
		return len(runsIn(e.out+"/ticker", 0)) >= 1
	})
	if took := time.Since(killed); took > 10*time.Second {
		t.Errorf("takeover took %s", took)
	}
	if n := len(e.runs(0)); n != 1 {
		t.Fatalf("the held item ran %d times across the takeover", n)
	}
	pids := e.itemPIDs("held", 0)
	if len(pids) != 1 || !alive(pids[0]) {
		t.Fatalf("the held item's process: %v", pids)
	}
	rs := cb.running()
	found := false
	for _, r := range rs {
		found = found || r.MetaInfo.JobName == "held"
	}
	if !found {
		t.Fatalf("the held item is not running after the takeover: %+v", rs)
	}
	cb.must("DELETE", "/api/job/held/deregister", "")
	cb.must("DELETE", "/api/job/ticker/deregister", "")
}

// Bad bodies are refused with every reason; nothing is stored.
func TestBadBodiesRefusedWithReasons(t *testing.T) {
	e := newEnv(t)
	s := e.start("a")
	c := login(t, s.base, "admin")
	for body, want := range map[string][]string{
		`{"appName":"a/b","bootstrapScript":""}`:                            {"400", "appName: ", "must not contain '/'", "appURL: required"},
		`{"appName":"x","appURL":"ftp://h/x","bootstrapScript":"s"}`:        {"400", "appURL: \"ftp://h/x\": want an http:// or https:// URL"},
		`{"appName":"x","appURL":"http://h/x","bootstrapScript":"s","z":1}`: {"400", `unknown field "z"`},
		`not json`: {"400", "app body"},
	} {
		_, msg := c.call("POST", "/api/app", body)
		for _, w := range want {
			if !strings.Contains(msg, w) {
				t.Errorf("POST /api/app %s: %q lacks %q", body, msg, w)
			}
		}
	}
	e.registerApp(c, "app")
	for body, want := range map[string][]string{
		`{"jobName":"j","appName":"app","cron":"0/5 * * * * ?","shardingTotalCount":0,"cpuCount":0,"memoryMB":0}`: {
			"400", `jobExecutionType: "": want TRANSIENT or DAEMON`, "shardingTotalCount: 0", "cpuCount: 0", "memoryMB: 0"},
		`{"jobName":"j","appName":"app","jobExecutionType":"TRANSIENT","cron":"bad","shardingTotalCount":1,"cpuCount":1,"memoryMB":1}`:                   {"400", `cron: "bad"`},
		`{"jobName":"j","appName":"app","jobExecutionType":"DAEMON","shardingTotalCount":1,"cpuCount":1,"memoryMB":1}`:                                   {"400", "cron: required for a DAEMON job"},
		`{"jobName":"j","appName":"app","jobExecutionType":"TRANSIENT","shardingTotalCount":2,"shardingItemParameters":"5=x","cpuCount":1,"memoryMB":1}`: {"400", "item 5: the job has 2 items"},
		`{"jobName":"j","appName":"none","jobExecutionType":"TRANSIENT","shardingTotalCount":1,"cpuCount":1,"memoryMB":1}`:                               {"404", "Register app 'none' firstly."},
	} {
		_, msg := c.call("POST", "/api/job/register", body)
		for _, w := range want {
			if !strings.Contains(msg, w) {
				t.Errorf("POST /api/job/register %s: %q lacks %q", body, msg, w)
			}
		}
	}
	var jobs []any
	_ = json.Unmarshal(c.must("GET", "/api/job/jobs", ""), &jobs)
	if len(jobs) != 0 {
		t.Fatalf("refused jobs were stored: %v", jobs)
	}
	c.must("POST", "/api/job/register", e.jobBody("d", "app", "DAEMON", "0/5 * * * * ?", 1, "", false, false))
	if _, msg := c.call("POST", "/api/job/trigger", "d"); !strings.Contains(msg, "Daemon job 'd' cannot support trigger.") {
		t.Errorf("trigger of a DAEMON job: %q", msg)
	}
	c.must("DELETE", "/api/job/d/deregister", "")
}
