package cloud

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Items wait in ready while the launcher has no room: four items of 0.5
// CPU (plus the app's 0.1) on 1.2 CPUs run two at a time, the others
// reported ready with the reason.
func TestItemsWaitForRoom(t *testing.T) {
	e := newEnv(t)
	e.cpu = "1.2"
	_, c := e.boot()
	c.must("POST", "/api/job/register", e.jobBody("wide", "app", "TRANSIENT", "", 4, "0=sleep600,1=sleep600,2=sleep600,3=sleep600", false, false))
	c.must("POST", "/api/job/trigger", "wide")
	var waiting []runningTask
	e.eventually(20*time.Second, "two items running, two ready", func() bool {
		var run int
		waiting = nil
		for _, r := range c.running() {
			switch r.State {
			case "running":
				run++
			case "ready":
				waiting = append(waiting, r)
			}
		}
		return run == 2 && len(waiting) == 2
	})
	for _, w := range waiting {
		if w.SlaveID != "unassigned-slave" {
			t.Errorf("a waiting item has slave %q", w.SlaveID)
		}
	}
	// A process reported running may not have written its run record yet:
	// wait for two records, and never see more.
	e.eventually(20*time.Second, "two items' runs recorded", func() bool {
		n := len(e.runs(0)) + len(e.runs(1)) + len(e.runs(2)) + len(e.runs(3))
		if n > 2 {
			t.Fatalf("%d items started on room for 2", n)
		}
		return n == 2
	})
	c.must("DELETE", "/api/job/wide/deregister", "")
}

// A fire while the previous round runs is flagged and run right after:
// with misfire the rounds add up in ready; without, at most one waits.
func TestMisfireQueuesRounds(t *testing.T) {
	e := newEnv(t)
	_, c := e.boot()
	c.must("POST", "/api/job/register", e.jobBody("mf", "app", "TRANSIENT", "* * * * * ?", 1, "0=sleep4", false, true))
	e.eventually(20*time.Second, "fires adding up while the round runs", func() bool {
		t := c.ready()["mf"]
		return t != "" && t != "1" && len(e.runs(0)) == 1
	})
	e.eventually(20*time.Second, "the queued round run right after", func() bool { return len(e.runs(0)) >= 2 })
	c.must("POST", "/api/job/mf/disable", "")

	c.must("POST", "/api/job/register", strings.Replace(e.jobBody("nomf", "app", "TRANSIENT", "* * * * * ?", 1, "0=sleep4", false, false),
		"/out", "/out/nomf", 1))
	if err := mkdir(e.out + "/nomf"); err != nil {
		t.Fatal(err)
	}
	e.eventually(20*time.Second, "one round flagged while the first runs", func() bool {
		return c.ready()["nomf"] == "1" && len(runsIn(e.out+"/nomf", 0)) == 1
	})
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) && len(runsIn(e.out+"/nomf", 0)) == 1 {
		if n := c.ready()["nomf"]; n != "1" && n != "" {
			t.Fatalf("misfire false: %s rounds waiting", n)
		}
		time.Sleep(100 * time.Millisecond)
	}
	c.must("DELETE", "/api/job/nomf/deregister", "")
	c.must("DELETE", "/api/job/mf/deregister", "")
}

// A DAEMON job's items are launched once and keep running; an update to
// three items relaunches them all, three.
func TestDaemonLaunchedAndResharded(t *testing.T) {
	e := newEnv(t)
	_, c := e.boot()
	body := func(n int, params string) string {
		return e.jobBody("dmn", "app", "DAEMON", "0/10 * * * * ?", n, params, false, false)
	}
	c.must("POST", "/api/job/register", body(2, "0=sleep600,1=sleep600"))
	e.eventually(20*time.Second, "two daemon items running", func() bool {
		return c.inState("running") == 2
	})
	old := append(e.itemPIDs("dmn", 0), e.itemPIDs("dmn", 1)...)
	c.must("PUT", "/api/job/update", body(3, "0=sleep600,1=sleep600,2=sleep600"))
	e.eventually(20*time.Second, "three daemon items running, the old ones gone", func() bool {
		return c.inState("running") == 3 && len(e.runs(2)) == 1 && !alive(old[0]) && !alive(old[1])
	})
	if len(e.runs(0)) != 2 {
		t.Fatalf("item 0 started %d times; want once before and once after the update", len(e.runs(0)))
	}
	c.must("DELETE", "/api/job/dmn/deregister", "")
}

// A job whose items keep failing is not relaunched back to back: its
// failover items and its next ready rounds wait a pause after each
// failure (failureBackoff, doubling with each further failure), while the
// cron's fires add up in ready with misfire.
func TestFailingJobPausesBeforeItsNextLaunch(t *testing.T) {
	e := newEnv(t)
	e.backoff = "1s"
	_, c := e.boot()
	mfOut := e.out + "/mf"
	if err := mkdir(mfOut); err != nil {
		t.Fatal(err)
	}
	c.must("POST", "/api/job/register", e.jobBody("fo", "app", "TRANSIENT", "", 1, "0=fail", true, false))
	c.must("POST", "/api/job/register", strings.Replace(e.jobBody("mf", "app", "TRANSIENT", "* * * * * ?", 1, "0=fail", false, true),
		`"jobParameter":"`+e.out+`"`, `"jobParameter":"`+mfOut+`"`, 1))
	c.must("POST", "/api/job/trigger", "fo")
	flagged := false
	e.eventually(40*time.Second, "four runs of each failing job", func() bool {
		if n, _ := strconv.Atoi(c.ready()["mf"]); n >= 2 {
			flagged = true
		}
		return len(starts(t, e.out, 0)) >= 4 && len(starts(t, mfOut, 0)) >= 4
	})
	c.must("POST", "/api/job/mf/disable", "")
	c.must("POST", "/api/job/fo/disable", "")
	for job, dir := range map[string]string{"fo": e.out, "mf": mfOut} {
		ts := starts(t, dir, 0)
		for k := range 3 {
			pause := time.Second << k
			if gap := ts[k+1].Sub(ts[k]); gap < pause {
				t.Errorf("%s: run %d started %s after run %d, want at least the pause %s after a failure (runs %v)", job, k+2, gap, k+1, pause, ts)
			}
		}
	}
	if !flagged {
		t.Error("mf: the cron's fires did not add up in ready while the job waited")
	}
	if rs := e.runs(0); !strings.Contains(rs[1][0], "@-@FAILOVER@-@") {
		t.Errorf("fo: the second run %q is not a FAILOVER run", rs[1][0])
	}
}

// A success ends a failing job's pause: after three failures in a row
// (pauses of 1, 2 and 4 s) its failover run succeeds; the next fire's
// failure pauses the job 1 s again before its failover run, not the 8 s
// a fourth failure in a row would.
func TestSuccessEndsTheFailurePause(t *testing.T) {
	e := newEnv(t)
	e.backoff = "1s"
	_, c := e.boot()
	c.must("POST", "/api/job/register", e.jobBody("fs", "app", "TRANSIENT", "", 1, "0=outcomesFFFSFS", true, false))
	idle := func() bool {
		var failover []json.RawMessage
		if err := json.Unmarshal(c.must("GET", "/api/job/tasks/failover", ""), &failover); err != nil {
			t.Fatal(err)
		}
		return len(c.running()) == 0 && len(failover) == 0
	}
	c.must("POST", "/api/job/trigger", "fs")
	e.eventually(40*time.Second, "three failures and a success", func() bool {
		return len(starts(t, e.out, 0)) == 4 && idle()
	})
	c.must("POST", "/api/job/trigger", "fs")
	e.eventually(40*time.Second, "a failure and its failover run's success", func() bool {
		return len(starts(t, e.out, 0)) == 6 && idle()
	})
	c.must("POST", "/api/job/fs/disable", "")
	ts := starts(t, e.out, 0)
	if gap := ts[5].Sub(ts[4]); gap < time.Second {
		t.Errorf("the failover run started %s after the failed run, want at least the pause 1s", gap)
	} else if gap >= 8*time.Second {
		t.Errorf("the failover run started %s after the failed run: the pause counted the failures before the success", gap)
	}
	if rs := e.runs(0); len(rs) != 6 || strings.Contains(rs[4][0], "@-@FAILOVER@-@") || !strings.Contains(rs[5][0], "@-@FAILOVER@-@") {
		t.Errorf("runs %v: want the fifth a READY run and the sixth its FAILOVER run", rs)
	}
}
