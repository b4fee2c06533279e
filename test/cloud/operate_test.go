package cloud

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A standby serves the REST API: an app and a job registered and
// triggered through it are run by the leader, and the standby shows the
// running item with the launcher's state. What only the leader knows (the
// counts without statistics tables) the standby refuses, naming the
// leader.
func TestStandbyWritesRunByTheLeader(t *testing.T) {
	e := newEnv(t)
	a := e.start("a")
	ca := login(t, a.base, "admin")
	e.eventually(20*time.Second, "a leading", func() bool {
		_, msg := ca.call("GET", "/api/job/statistics/tasks/results/online", "")
		return msg == ""
	})
	b := e.start("b")
	cb := login(t, b.base, "admin")
	if _, msg := cb.call("GET", "/api/job/statistics/tasks/results/online", ""); !strings.HasPrefix(msg, "503: ") || !strings.Contains(msg, "the leader ") {
		t.Errorf("online on the standby: %q, want 503 naming the leader", msg)
	}
	e.registerApp(cb, "app")
	cb.must("POST", "/api/job/register", e.jobBody("viab", "app", "TRANSIENT", "", 1, "0=sleep600", false, false))
	cb.must("POST", "/api/job/trigger", "viab")
	e.eventually(20*time.Second, "the item run by the leader, shown running by the standby", func() bool {
		rs := cb.running()
		return len(e.runs(0)) == 1 && len(rs) == 1 && rs[0].State == "running"
	})
	// The leader logs the launch once the launcher has started the item,
	// so the item may be seen running before the line is written.
	e.eventually(10*time.Second, "the leader's log of the launch", func() bool {
		return strings.Contains(readFile(t, filepath.Join(e.dir, "a.log")), "fire launched")
	})
	if strings.Contains(readFile(t, filepath.Join(e.dir, "b.log")), "fire launched") {
		t.Errorf("the standby b launched the fire too")
	}

	// The sandbox of the app: where its running item runs, as the launcher
	// names it.
	var boxes []struct {
		Hostname, Path, JobName, TaskID string
		Item                            int
	}
	_ = json.Unmarshal(cb.must("GET", "/api/operate/sandbox?appName=app", ""), &boxes)
	if len(boxes) != 1 || boxes[0].Hostname != "local" || boxes[0].Path == "" || boxes[0].JobName != "viab" || !strings.HasPrefix(boxes[0].TaskID, "viab@-@0@-@READY@-@") {
		t.Errorf("sandbox %+v", boxes)
	}
	if _, msg := cb.call("GET", "/api/operate/sandbox", ""); msg != "400: invalid: Lack param 'appName'" {
		t.Errorf("sandbox without appName: %q", msg)
	}
	if _, msg := cb.call("GET", "/api/operate/sandbox?appName=nope", ""); !strings.HasPrefix(msg, "404: ") {
		t.Errorf("sandbox of an unknown app: %q", msg)
	}

	// Reconciliation: every running item is held by the launcher; a second
	// one within ten seconds is refused, explicit and implicit alike.
	var rep struct {
		Checked          int
		Missing, Unknown []string
	}
	_ = json.Unmarshal(ca.must("POST", "/api/operate/reconcile/implicit", ""), &rep)
	if rep.Checked != 1 || len(rep.Missing) != 0 || len(rep.Unknown) != 0 {
		t.Errorf("implicit reconcile %+v", rep)
	}
	for _, kind := range []string{"explicit", "implicit"} {
		if _, msg := ca.call("POST", "/api/operate/reconcile/"+kind, ""); !strings.HasPrefix(msg, "429: ") || !strings.Contains(msg, "Repeat "+kind+"Reconcile") {
			t.Errorf("%s reconcile right after one: %q", kind, msg)
		}
	}
	// The guard is each instance's: the standby reconciles, explicitly.
	_ = json.Unmarshal(cb.must("POST", "/api/operate/reconcile/explicit", ""), &rep)
	if rep.Checked != 1 || len(rep.Missing) != 0 {
		t.Errorf("explicit reconcile %+v", rep)
	}
	cb.must("DELETE", "/api/job/viab/deregister", "")
	e.eventually(10*time.Second, "nothing running after deregister", func() bool { return len(ca.running()) == 0 })
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A DAEMON item is idle between its fires: busy while a fire runs, idle
// after it; each completed fire counts as a success and is traced as
// TASK_RUNNING COMPLETE.
func TestDaemonIdleBetweenFires(t *testing.T) {
	e := newEnv(t)
	e.tracing = true
	_, c := e.boot()
	c.must("POST", "/api/job/register", e.jobBody("dfire", "app", "DAEMON", "0/10 * * * * ?", 1, "0=daemonfire", false, false))
	e.eventually(20*time.Second, "the daemon item in a fire (not idle)", func() bool {
		rs := c.running()
		return len(rs) == 1 && rs[0].State == "running" && !rs[0].Idle
	})
	online := func() int {
		var r struct{ SuccessCount int }
		_ = json.Unmarshal(c.must("GET", "/api/job/statistics/tasks/results/online", ""), &r)
		return r.SuccessCount
	}
	before := online()
	if err := os.WriteFile(filepath.Join(e.out, "go-0"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	e.eventually(20*time.Second, "the daemon item idle after its fire", func() bool {
		rs := c.running()
		return len(rs) == 1 && rs[0].Idle
	})
	if n := online(); n != before+1 {
		t.Errorf("online successes %d after one daemon fire, want %d", n, before+1)
	}
	e.eventually(10*time.Second, "BEGIN and COMPLETE traced", func() bool {
		var p struct {
			Rows []struct{ State, Message string }
		}
		_ = json.Unmarshal(c.must("GET", "/api/job/events/statusTraces?jobName=dfire&per_page=50", ""), &p)
		var msgs []string
		for _, r := range p.Rows {
			if r.State == "TASK_RUNNING" && r.Message != "" {
				msgs = append(msgs, r.Message)
			}
		}
		return strings.Join(msgs, ",") == "COMPLETE" || strings.Join(msgs, ",") == "COMPLETE,BEGIN"
	})
	c.must("DELETE", "/api/job/dfire/deregister", "")
}

// ejob.cloud.jobStateQueueSize bounds the disable nodes too (and the
// ready and failover queues): a job beyond it is refused by name.
func TestQueueSizeBoundsDisabledJobs(t *testing.T) {
	e := newEnv(t)
	e.queueSize = 1
	_, c := e.boot()
	for _, j := range []string{"q1", "q2"} {
		c.must("POST", "/api/job/register", e.jobBody(j, "app", "TRANSIENT", "", 1, "", false, false))
	}
	c.must("POST", "/api/job/q1/disable", "")
	c.must("POST", "/api/job/q1/disable", "") // there already: fine
	if _, msg := c.call("POST", "/api/job/q2/disable", ""); !strings.HasPrefix(msg, "409: ") || !strings.Contains(msg, "jobStateQueueSize") {
		t.Errorf("a second disabled job with jobStateQueueSize 1: %q", msg)
	}
	c.must("POST", "/api/job/q1/enable", "")
	c.must("POST", "/api/job/q2/disable", "")
}

// A fire the launcher lost (its state gone, as when an operator deletes a
// Kubernetes Job): explicit reconciliation names the running item, and
// the leader, woken by it, launches the fire again. The leader's own
// passes are a minute apart here, so only the reconciliation acts.
func TestExplicitReconcileRelaunchesLostFire(t *testing.T) {
	e := newEnv(t)
	e.poll = "1m"
	_, c := e.boot()
	c.must("POST", "/api/job/register", e.jobBody("lostfire", "app", "TRANSIENT", "", 1, "0=sleep600", false, false))
	c.must("POST", "/api/job/trigger", "lostfire")
	e.eventually(20*time.Second, "the item running", func() bool {
		return len(e.runs(0)) == 1 && len(e.itemPIDs("lostfire", 0)) == 1
	})
	pid := e.itemPIDs("lostfire", 0)[0]
	if err := syscall.Kill(-pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	fires, _ := filepath.Glob(filepath.Join(e.launcherDir, "fires", "lostfire", "*"))
	for _, f := range fires {
		if err := os.RemoveAll(f); err != nil {
			t.Fatal(err)
		}
	}
	var rep struct {
		Checked int
		Missing []string
	}
	_ = json.Unmarshal(c.must("POST", "/api/operate/reconcile/explicit", ""), &rep)
	if rep.Checked != 1 || len(rep.Missing) != 1 || !strings.HasPrefix(rep.Missing[0], "lostfire@-@0@-@READY@-@") {
		t.Fatalf("explicit reconcile %+v, want the lost item", rep)
	}
	e.eventually(20*time.Second, "the fire launched again", func() bool { return len(e.runs(0)) == 2 })
	c.must("DELETE", "/api/job/lostfire/deregister", "")
}
