package e2e

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// The jobs of the cluster test, all run by the recorder.
const (
	// everySecondJob fires every second with 6 items; no failover, so a
	// dead host's items move only by resharding.
	everySecondJob = "everySecond"
	everySecondN   = 6
	// slowJob fires every 5 s with 3 items and failover on; item 0 sleeps
	// 4 s (its sharding parameter), the others end at once, so the host
	// killed while it runs item 0 leaves idle survivors to take it over.
	slowJob    = "slowFailover"
	slowPeriod = 5 * time.Second
	// oneOffJob has no cron: it runs when `ejob trigger` asks.
	oneOffJob = "oneOff"
	oneOffN   = 6
)

func clusterConfig(c *cluster, namespace string) string {
	return fmt.Sprintf(`elasticjob:
  regCenter:
    serverLists: %[1]s
    namespace: %[2]s
    sessionTimeoutMilliseconds: 2000
    connectionTimeoutMilliseconds: 5000
    baseSleepTimeMilliseconds: 100
    maxSleepTimeMilliseconds: 500
  jobs:
    %[4]s:
      elasticJobType: SCRIPT
      cron: "* * * * * ?"
      shardingTotalCount: %[5]d
      monitorExecution: true
      failover: false
      props:
        script.command.line: %[3]s
    %[6]s:
      elasticJobType: SCRIPT
      cron: "0/5 * * * * ?"
      shardingTotalCount: 3
      shardingItemParameters: 0=4,1=0,2=0
      monitorExecution: true
      failover: true
      props:
        script.command.line: %[3]s
    %[7]s:
      elasticJobType: SCRIPT
      shardingTotalCount: %[8]d
      props:
        script.command.line: %[3]s
ejob:
  drainTimeout: 10s
`, zk.Addr(), namespace, c.scriptLine(), everySecondJob, everySecondN, slowJob, oneOffJob, oneOffN)
}

var notNameChars = regexp.MustCompile(`[^A-Za-z0-9_-]+`)

// uniqueNamespace gives each test (and each run of it) its own namespace
// in the shared ZooKeeper.
func uniqueNamespace(t *testing.T) string {
	return fmt.Sprintf("e2e-%s-%d", notNameChars.ReplaceAllString(t.Name(), "_"), time.Now().UnixNano())
}

// checkSeconds says, for each fire second in [from, to] of a job, why it
// is not "every item exactly once on the allowed hosts".
func checkSeconds(runs []itemRun, from, to int64, total int, allowed []string) []string {
	idx := map[int64]second{}
	for _, s := range bySecond(runs) {
		idx[s.at] = s
	}
	var out []string
	for at := from; at <= to; at++ {
		s, ok := idx[at]
		if !ok {
			s = second{at: at}
		}
		if why := s.exactlyOnce(total, allowed); why != "" {
			out = append(out, fmt.Sprintf("%s: %s", time.Unix(at, 0).Format("15:04:05"), why))
		}
	}
	return out
}

// completeThrough is the last fire second of job that every host in
// hosts has finished: a host's execution of a trigger ends before its next
// one starts, so once a host has a run fired after S, its runs of S are
// all recorded.
func completeThrough(runs []itemRun, hosts []string) int64 {
	last := map[string]int64{}
	for _, r := range runs {
		last[r.host] = max(last[r.host], r.fire())
	}
	var through int64 = -1
	for i, h := range hosts {
		l, ok := last[h]
		if !ok {
			return -1
		}
		if i == 0 || l-1 < through {
			through = l - 1
		}
	}
	return through
}

func logSeconds(t *testing.T, title string, runs []itemRun, from, to int64) {
	var b strings.Builder
	for _, s := range bySecond(runs) {
		if s.at >= from && s.at <= to {
			b.WriteString("\n  " + s.String())
		}
	}
	t.Logf("%s:%s", title, b.String())
}

// TestClusterShardingFailoverAndOperations runs three `ejob run` hosts on
// one real ZooKeeper and checks, from the outside:
//   - steady state: every item of every one-second trigger runs exactly
//     once across the cluster, spread over the three hosts;
//   - `ejob jobs` shows 3 instances and OK; `ejob trigger` of a one-off
//     job runs each of its items once across the hosts;
//   - kill -9 of the host running a long item: the item is taken over by
//     a survivor through failover as soon as the session expires, before
//     the job's next scheduled fire, and the dead host's items of the
//     one-second job run on the survivors from the next trigger on;
//   - `ejob jobs` then shows 2 instances and OK;
//   - no item ever runs on two hosts at once; survivors drain on SIGTERM.
func TestClusterShardingFailoverAndOperations(t *testing.T) {
	began := time.Now()
	c := newCluster(t)
	c.writeConfig(clusterConfig(c, uniqueNamespace(t)))
	all := []string{"h1", "h2", "h3"}
	hosts := map[string]*host{}
	for _, name := range all {
		hosts[name] = c.start(name)
	}
	for _, name := range all {
		c.waitStarted(hosts[name], 30*time.Second)
	}
	t.Logf("3 hosts started after %v", time.Since(began).Round(time.Millisecond))

	// Steady state: from the first two consecutive seconds in which all
	// three hosts share the job and each item runs exactly once, every
	// later second must do the same. (Runs are grouped by their start
	// second; around the first resharding a run can start late and its
	// missed fire is re-run as a misfire in the same second, which is
	// upstream's misfire semantics, not a duplicate trigger.)
	var s0 int64
	c.waitFor(30*time.Second, "five complete seconds of "+everySecondJob+" shared by the three hosts", func() (bool, string) {
		runs := ofJob(c.records(), everySecondJob)
		s0 = -1
		clean := map[int64]bool{}
		for _, s := range bySecond(runs) {
			clean[s.at] = len(s.hosts) == 3 && s.exactlyOnce(everySecondN, all) == ""
		}
		for _, s := range bySecond(runs) {
			if clean[s.at] && clean[s.at+1] {
				s0 = s.at
				break
			}
		}
		if s0 < 0 {
			return false, fmt.Sprintf("no second yet where all three ran; %d runs", len(runs))
		}
		return completeThrough(runs, all) >= s0+4, "waiting for more seconds"
	})
	runs := ofJob(c.records(), everySecondJob)
	logSeconds(t, "first seconds of "+everySecondJob, runs, 0, s0+4)
	if bad := checkSeconds(runs, s0, completeThrough(runs, all), everySecondN, all); len(bad) > 0 {
		t.Errorf("steady state with 3 hosts, not every item exactly once:\n%s", strings.Join(bad, "\n"))
	}
	for _, s := range bySecond(runs) {
		if s.at < s0 || s.at > completeThrough(runs, all) {
			continue
		}
		for h, items := range s.hosts {
			if len(items) != everySecondN/3 {
				t.Errorf("AVG_ALLOCATION over 3 hosts: %s: %s runs items %v, want %d items", s, h, items, everySecondN/3)
			}
		}
	}
	t.Logf("steady state reached %v after start", time.Unix(s0, 0).Sub(began).Round(time.Millisecond))

	// Operations: `ejob jobs` and `ejob trigger`.
	row := c.waitJobRow(everySecondJob, 3, 15*time.Second, "READY", "RUNNING")
	if row.cron != "* * * * * ?" || row.items != everySecondN {
		t.Errorf("ejob jobs: %s row = %+v", everySecondJob, row)
	}
	out, err := c.ejob("trigger", oneOffJob)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "on 3 instances") {
		t.Errorf("ejob trigger %s: %q, want 3 instances triggered", oneOffJob, out)
	}
	c.waitFor(20*time.Second, "the one-off job's items", func() (bool, string) {
		n := len(ofJob(c.records(), oneOffJob))
		return n >= oneOffN, fmt.Sprintf("%d of %d items ran", n, oneOffN)
	})
	oneOffHosts := map[string]bool{}
	for _, r := range ofJob(c.records(), oneOffJob) {
		oneOffHosts[r.host] = true
	}
	if len(oneOffHosts) != 3 {
		t.Errorf("one-off job ran on %v, want all three hosts", oneOffHosts)
	}

	// Failover: kill -9 the host while it runs the long item 0 of slowJob.
	var victim itemRun
	c.waitFor(2*slowPeriod+10*time.Second, slowJob+" item 0 running", func() (bool, string) {
		for _, r := range ofJob(c.records(), slowJob) {
			if r.item == 0 && r.end.IsZero() && time.Since(r.start) < time.Second {
				victim = r
				return true, ""
			}
		}
		return false, "not running"
	})
	killed := hosts[victim.host]
	killedAt, goneAt := c.killTree(killed)
	survivors := slices.DeleteFunc(slices.Clone(all), func(h string) bool { return h == victim.host })
	nextFire := time.Unix(victim.fire(), 0).Add(slowPeriod)
	t.Logf("killed %s (pid %s) %v after it started %s item 0 (fired %s); next scheduled fire %s",
		victim.host, killed.pid(), killedAt.Sub(victim.start).Round(time.Millisecond), slowJob,
		time.Unix(victim.fire(), 0).Format("15:04:05"), nextFire.Format("15:04:05"))

	var takeover itemRun
	c.waitFor(slowPeriod+10*time.Second, "a survivor to take over "+slowJob+" item 0", func() (bool, string) {
		for _, r := range ofJob(c.records(), slowJob) {
			if r.item == 0 && r.start.After(killedAt) && r.host != victim.host {
				takeover = r
				return true, ""
			}
		}
		return false, "not yet"
	})
	latency := takeover.start.Sub(killedAt)
	t.Logf("FAILOVER LATENCY: %s item 0 restarted on %s %v after kill -9 (session timeout 2s, tick %v)",
		slowJob, takeover.host, latency.Round(time.Millisecond), zk.Tick())
	if !slices.Contains(survivors, takeover.host) {
		t.Errorf("item 0 taken over by %s, want one of %v", takeover.host, survivors)
	}
	if !takeover.start.Before(nextFire) {
		t.Errorf("item 0 restarted at %s, not before the next scheduled fire %s: not a failover",
			takeover.start.Format("15:04:05.000"), nextFire.Format("15:04:05.000"))
	}

	// Resharding: from some trigger after the session expired, the dead
	// host's items of the one-second job run on the survivors, each
	// exactly once per second.
	var s1 int64
	c.waitFor(30*time.Second, everySecondJob+" items moving to the survivors", func() (bool, string) {
		runs := ofJob(c.records(), everySecondJob)
		s1 = -1
		for _, s := range bySecond(runs) {
			if s.at > killedAt.Unix() && s.exactlyOnce(everySecondN, survivors) == "" {
				s1 = s.at
				break
			}
		}
		if s1 < 0 {
			return false, "no second yet where the survivors ran every item"
		}
		return completeThrough(runs, survivors) >= s1+3, "waiting for more seconds"
	})
	runs = ofJob(c.records(), everySecondJob)
	t.Logf("RESHARD LATENCY: %s's items of %s ran on the survivors from the trigger %v after kill -9",
		victim.host, everySecondJob, time.Unix(s1, 0).Sub(killedAt).Round(time.Millisecond))
	logSeconds(t, everySecondJob+" around the kill", runs, killedAt.Unix()-1, s1+3)
	if bad := checkSeconds(runs, s1, completeThrough(runs, survivors), everySecondN, survivors); len(bad) > 0 {
		t.Errorf("steady state with 2 hosts, not every item exactly once:\n%s", strings.Join(bad, "\n"))
	}
	// Before the kill, the steady state held up to the kill's second.
	if bad := checkSeconds(runs, s0, killedAt.Unix()-1, everySecondN, all); len(bad) > 0 {
		t.Errorf("steady state with 3 hosts (up to the kill), not every item exactly once:\n%s", strings.Join(bad, "\n"))
	}
	c.waitJobRow(everySecondJob, 2, 15*time.Second, "READY", "RUNNING")

	// Survivors drain and exit cleanly on SIGTERM.
	for _, h := range survivors {
		if err := c.stop(hosts[h], 20*time.Second); err != nil {
			t.Errorf("%s: exit after SIGTERM: %v", h, err)
		}
	}
	final := c.records()
	if got := len(ofJob(final, oneOffJob)); got != oneOffN {
		t.Errorf("one-off job: %d runs, want each of its %d items once: %v", got, oneOffN, ofJob(final, oneOffJob))
	}
	// The killed host's scripts die with its plugin process (see
	// TestKilledHostLeavesNoScriptRunning), so their runs record no end; a
	// run it started, even one whose Execute reached the plugin just
	// before the kill and started just after it, is taken as ending when
	// the plugin was seen gone.
	for i, r := range final {
		if r.host == victim.host && r.start.Before(goneAt) && r.end.IsZero() {
			final[i].end = goneAt
		}
	}
	if bad := overlaps(final); len(bad) > 0 {
		t.Errorf("items ran on two hosts at once:\n%s", strings.Join(bad, "\n"))
	}
	t.Logf("test took %v", time.Since(began).Round(time.Millisecond))
}
