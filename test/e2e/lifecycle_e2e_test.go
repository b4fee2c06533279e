package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ejob-io/ejob/internal/testkit"
)

// The jobs of the lifecycle test, all run by the recorder.
const (
	// liveJob is the job the operator steers: every second, 4 items.
	liveJob = "live"
	liveN   = 4
	// clockJob runs every second on every host and is never touched: its
	// runs show that fire seconds went by (the test's clock) and that the
	// hosts keep running their other jobs.
	clockJob = "clock"
	// manualJob has no cron: it runs when triggered.
	manualJob = "manual"
)

func lifecycleConfig(c *cluster, namespace string, dumpPort int) string {
	return fmt.Sprintf(`elasticjob:
  regCenter:
    serverLists: %[1]s
    namespace: %[2]s
    sessionTimeoutMilliseconds: 2000
    connectionTimeoutMilliseconds: 5000
  dump:
    port: %[4]d
  jobs:
    %[5]s:
      elasticJobType: SCRIPT
      cron: "* * * * * ?"
      shardingTotalCount: %[6]d
      props:
        script.command.line: %[3]s
    %[7]s:
      elasticJobType: SCRIPT
      cron: "* * * * * ?"
      shardingTotalCount: 2
      props:
        script.command.line: %[3]s
    %[8]s:
      elasticJobType: SCRIPT
      shardingTotalCount: 2
      props:
        script.command.line: %[3]s
ejob:
  drainTimeout: 10s
`, zk.Addr(), namespace, c.scriptLine(), dumpPort, liveJob, liveN, clockJob, manualJob)
}

// TestLifecycleObeyedLive drives two `ejob run` hosts on a real ZooKeeper
// with the operator commands (which write the registry exactly as
// upstream's lifecycle API and console do) and checks from the record of
// item runs that the hosts obey at once, without a restart:
//   - disable job: no run for 3 fires; enable: runs again;
//   - disable an item: that item is skipped, the others run;
//   - job set cron and shardingTotalCount: the new schedule and the new
//     items, spread over both hosts;
//   - trigger of a one-off job: one run per instance;
//   - shutdown and remove of the (one) server: the job stops there while
//     the hosts run their other jobs; remove and delete leave nothing;
//   - the dump port: dump@JOB from the host that holds the port.
func TestLifecycleObeyedLive(t *testing.T) {
	began := time.Now()
	c := newCluster(t)
	dumpPort := testkit.FreePort(t)
	c.writeConfig(lifecycleConfig(c, uniqueNamespace(t), dumpPort))
	all := []string{"h1", "h2"}
	hosts := map[string]*host{}
	for _, name := range all {
		hosts[name] = c.start(name)
		// One after the other: the first host holds the dump port.
		c.waitStarted(hosts[name], 30*time.Second)
	}
	must := func(args ...string) string {
		t.Helper()
		out, err := c.ejob(args...)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	// clockPast waits until every host has run the clock job at a fire
	// second after s: fire second s is over everywhere (a host starts a
	// trigger's items before its next trigger's).
	clockPast := func(s int64, what string) {
		t.Helper()
		c.waitFor(20*time.Second, what, func() (bool, string) {
			through := completeThrough(ofJob(c.records(), clockJob), all)
			return through >= s, fmt.Sprintf("clock complete through %s, want %s",
				time.Unix(through, 0).Format("15:04:05"), time.Unix(s, 0).Format("15:04:05"))
		})
	}
	// runsFrom returns the live job's runs fired in [from, to].
	runsFrom := func(from, to int64) []itemRun {
		var out []itemRun
		for _, r := range ofJob(c.records(), liveJob) {
			if r.fire() >= from && r.fire() <= to {
				out = append(out, r)
			}
		}
		return out
	}
	// cleanSeconds waits for n consecutive fires of the live job from
	// second from on where each of total items ran exactly once, and
	// returns the first of them.
	cleanSeconds := func(from int64, n, total int, what string) int64 {
		t.Helper()
		var first int64
		c.waitFor(30*time.Second, what, func() (bool, string) {
			runs := runsFrom(from, 1<<62)
			secs := bySecond(runs)
			for i := range secs {
				if i+n > len(secs) {
					break
				}
				ok := true
				for _, s := range secs[i : i+n] {
					ok = ok && s.exactlyOnce(total, all) == ""
				}
				if ok && completeThrough(runs, all) >= secs[i+n-1].at {
					first = secs[i].at
					return true, ""
				}
			}
			return false, fmt.Sprintf("%d runs since %s", len(runs), time.Unix(from, 0).Format("15:04:05"))
		})
		return first
	}
	// after is the first fire second surely after a command that returned
	// at time at: the hosts apply a registry change within milliseconds,
	// but a fire of at's second may already be under way.
	after := func(at time.Time) int64 { return at.Unix() + 1 }

	steady := cleanSeconds(began.Unix(), 2, liveN, "the live job running every item once per second on the two hosts")
	t.Logf("steady at %s, %v after start", time.Unix(steady, 0).Format("15:04:05"), time.Unix(steady, 0).Sub(began).Round(time.Millisecond))
	var ip string
	if rs := runsFrom(steady, steady); len(rs) > 0 {
		ip, _, _ = strings.Cut(rs[0].instance, "@-@")
	}

	// Disable the job: no run for 3 fires, then enable: it runs again.
	must("disable", liveJob)
	from := after(time.Now())
	clockPast(from+2, "3 fires with the live job disabled")
	if rs := runsFrom(from, from+2); len(rs) > 0 {
		t.Errorf("the disabled job ran: %v", rs)
	}
	if row := c.waitJobRow(liveJob, 2, 10*time.Second, "DISABLED"); row.items != liveN {
		t.Errorf("ejob jobs: %+v", row)
	}
	must("enable", liveJob)
	cleanSeconds(after(time.Now()), 2, liveN, "the enabled job running every item again")

	// Disable item 2: skipped while the others run; enable it again.
	must("disable", liveJob, "--item", "2")
	from = after(time.Now())
	clockPast(from+2, "3 fires with item 2 disabled")
	for _, s := range bySecond(runsFrom(from, from+2)) {
		if len(s.items[2]) > 0 || len(s.items[0]) != 1 || len(s.items[1]) != 1 || len(s.items[3]) != 1 {
			t.Errorf("with item 2 disabled, %s: want items 0, 1 and 3 once each", s)
		}
	}
	if n := len(bySecond(runsFrom(from, from+2))); n != 3 {
		t.Errorf("with item 2 disabled the job ran in %d of 3 seconds", n)
	}
	must("enable", liveJob, "--item", "2")
	cleanSeconds(after(time.Now()), 2, liveN, "item 2 running again")

	// A new cron and shardingTotalCount apply without a restart: every
	// other second, 6 items over both hosts.
	must("job", "set", liveJob, "cron=0/2 * * * * ?", "shardingTotalCount=6")
	from = after(time.Now())
	first := cleanSeconds(from, 2, 6, "6 items on the new schedule")
	for _, s := range bySecond(runsFrom(first, 1<<62)) {
		if s.at%2 != 0 {
			t.Errorf("a run at an odd second on the 0/2 schedule: %s", s)
		}
		if len(s.hosts) != 2 {
			t.Errorf("6 items not spread over the two hosts: %s", s)
		}
	}
	if first%2 != 0 {
		t.Errorf("first fire on the new schedule at an odd second: %s", time.Unix(first, 0).Format("15:04:05"))
	}

	// Trigger a one-off job: each instance runs its own item, once.
	if out := must("trigger", manualJob); !strings.Contains(out, "on 2 instances") {
		t.Errorf("ejob trigger: %s", out)
	}
	c.waitFor(15*time.Second, "the triggered job's items", func() (bool, string) {
		n := len(ofJob(c.records(), manualJob))
		return n >= 2, fmt.Sprintf("%d runs", n)
	})
	clockPast(after(time.Now())+1, "two more seconds after the trigger")
	manual := ofJob(c.records(), manualJob)
	ranOn := map[string]int{}
	for _, r := range manual {
		ranOn[r.host]++
	}
	if len(manual) != 2 || ranOn["h1"] != 1 || ranOn["h2"] != 1 {
		t.Errorf("trigger: runs %v, want one per instance", manual)
	}

	// The dump port: the first host holds it (the second logs that it is
	// in use and runs on).
	dump := dumpFrom(t, dumpPort, clockJob)
	for _, want := range []string{"/clock/config | ", "/clock/instances/ip1@-@", "/clock/servers/ip1 | ENABLED\n", "/clock/sharding/1/instance | ip1@-@"} {
		if !strings.Contains(dump, want) {
			t.Errorf("dump lacks %q:\n%s", want, dump)
		}
	}
	if ip == "" || strings.Contains(dump, ip) {
		t.Errorf("dump shows the server IP %q unmasked (or the IP is unknown):\n%s", ip, dump)
	}
	if !strings.Contains(hosts["h2"].logText(), "the dump port cannot be opened") {
		t.Errorf("h2 did not log the dump port in use:\n%s", tail(hosts["h2"].logText(), 20))
	}

	// Shut the job down on the server (both hosts are on it): the job
	// stops, the hosts run on with their other jobs.
	if out := must("shutdown", liveJob, "--server", ip); strings.Count(out, "shut live down on instance") != 2 {
		t.Errorf("ejob shutdown: %s", out)
	}
	from = after(time.Now())
	clockPast(from+3, "fires after the shutdown")
	if rs := runsFrom(from, from+3); len(rs) > 0 {
		t.Errorf("the job ran after its shutdown: %v", rs)
	}
	for _, s := range bySecond(ofJob(c.records(), clockJob)) {
		if s.at >= from && s.at <= from+3 && s.exactlyOnce(2, all) != "" {
			t.Errorf("the hosts' other job after the shutdown: %s: %s", s, s.exactlyOnce(2, all))
		}
	}
	c.waitJobRow(liveJob, 0, 10*time.Second, "CRASHED")
	must("remove", liveJob, "--server", ip)
	var show struct {
		Servers []struct{ ServerIP string }
	}
	if err := json.Unmarshal([]byte(must("job", "show", liveJob, "--json")), &show); err != nil || len(show.Servers) != 0 {
		t.Errorf("servers of the job after remove: %+v (%v)", show.Servers, err)
	}
	must("job", "delete", liveJob)
	rows, out, err := c.jobs()
	if err != nil || len(rows) != 2 || rows[liveJob] != (jobRow{}) {
		t.Errorf("ejob jobs after delete: %v\n%s", err, out)
	}
	for _, h := range all {
		if !hosts[h].alive() {
			t.Errorf("%s exited", h)
		}
	}
	if bad := overlaps(c.records()); len(bad) > 0 {
		t.Errorf("items ran on two hosts at once:\n%s", strings.Join(bad, "\n"))
	}
	t.Logf("test took %v", time.Since(began).Round(time.Millisecond))
}

// dumpFrom runs `ejob dump JOB --server 127.0.0.1 --port P`.
func dumpFrom(t *testing.T, port int, job string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, ejobBin, "dump", job, "--server", "127.0.0.1", "--port", strconv.Itoa(port))
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("ejob dump: %v\n%s", err, errb.String())
	}
	return out.String()
}
