package chaos

import (
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ejob-io/ejob/core/reg/zktest"
)

// The two jobs every host runs, both SCRIPT jobs run by the recorder with
// monitorExecution on. An item runs for its sharding parameter in seconds.
const (
	// jobFO fires every 4 s, 4 items, failover on; items 0 and 3 are long
	// (3.5 s, longer than a session timeout and its expiry) so that faults
	// often hit a running item and a takeover can meet a survivor of it.
	jobFO       = "chaosFailover"
	jobFOCron   = "0/4 * * * * ?"
	jobFOPeriod = 4 * time.Second
	jobFOParams = "0=3.5,1=0.5,2=0.5,3=3.5"
	// jobNoFO fires every second, 4 short items, failover off.
	jobNoFO       = "chaosNoFailover"
	jobNoFOCron   = "* * * * * ?"
	jobNoFOPeriod = time.Second
	jobNoFOParams = "0=0.3,1=0.3,2=0.3,3=0.3"
	items         = 4

	// sessionTimeout is every host's sessionTimeoutMilliseconds (10 ticks).
	sessionTimeout = 2 * time.Second
	tick           = zktest.DefaultTick
	// rejoin bounds how long a (re)started host takes to register.
	rejoin = 1500 * time.Millisecond
	// steady is the fault-free span observed before the first fault and
	// after the last one's excuse window.
	steady = jobFOPeriod
)

func period(job string) time.Duration {
	if job == jobFO {
		return jobFOPeriod
	}
	return jobNoFOPeriod
}

// fault is one injected fault, as the driver saw it.
type fault struct {
	kind   string
	target string // host name, ZooKeeper member, or "zk"
	at     time.Time
	healed time.Time // the fault ended: host restarted/resumed, proxy passes, ZooKeeper serves
	// The window of the fault (zero when the fault cannot cost a session):
	// an item of an affected host may overlap another instance's run of it
	// from windowFrom until told + -chaos.window. told is when the host can
	// know its session is gone: at SIGCONT for a frozen host, one session
	// timeout after the cut for a host cut off from ZooKeeper. windowFrom
	// is told for a frozen host (nothing of it runs before), the cut for a
	// cut-off host (its session may expire on the server up to one ping
	// interval before it can conclude so itself).
	windowFrom time.Time
	told       time.Time
	affected   map[int]bool // host pids that may lose their session
	note       string
	zkDown     bool // a full ZooKeeper outage
	// What coverage excuses (see excuse): the incarnations of hosts (pids)
	// the fault kept from serving their items (every live one for a
	// ZooKeeper fault), from began (at, or the fault's first kill) until each is
	// back (see back). recovered bounds that for every host the fault hit
	// (the end of the run waits for it): the later of the sessions the
	// fault cost expiring (the crash events flag resharding) and the hosts
	// being back (restarted or thawed hosts registered, connections back).
	pids      []int
	began     time.Time
	recovered time.Time
}

// lostSession is when a session last heard from at cut has expired on the
// server (within a tick of the timeout).
func lostSession(cut time.Time) time.Time { return cut.Add(sessionTimeout + tick) }

func (f *fault) String() string {
	s := fmt.Sprintf("%-30s %-6s %s +%v", f.kind, f.target, f.at.Format("15:04:05.000"), f.healed.Sub(f.at).Round(time.Millisecond))
	if f.note != "" {
		s += " (" + f.note + ")"
	}
	return s
}

// suite is one cluster under test: a ZooKeeper, the hosts, their proxies.
type suite struct {
	t        *testing.T
	rng      *rand.Rand
	zk       *zktest.Server
	ensemble bool
	ns       string
	dir      string
	runsPath string
	// fencePath is the fenced store the recorders write their side
	// effects to (test/fence).
	fencePath string
	runLog    *runLog
	timeline  *timeline
	hosts     []*host
	faults    []*fault
	began     time.Time
	// stalls are the starvation the probes measured (stall_test.go): the
	// side probe's process writes its stalls to stallsPath.
	stalls     *stallLog
	stallsPath string
	sideProbe  *exec.Cmd

	upgrade     bool          // a rolling upgrade (TestRollingUpgrade), not faults
	rejoinAfter time.Duration // faults' end to every host firing again
	cleanAfter  time.Duration // then to a tree without dead instances' nodes
}

var notNameChars = regexp.MustCompile(`[^A-Za-z0-9_-]+`)

func newSuite(t *testing.T, ensemble bool, seed int64, nHosts int) *suite {
	t.Helper()
	s := &suite{t: t, rng: rand.New(rand.NewSource(seed)), ensemble: ensemble}
	dir, err := os.MkdirTemp("", "ejob-chaos-")
	if err != nil {
		t.Fatal(err)
	}
	s.dir = dir
	t.Cleanup(func() { // runs last
		if t.Failed() {
			// Keep the evidence: every host incarnation's full log, the
			// records and the configs (the tails printed above are short).
			t.Logf("chaos run directory kept for inspection: %s", dir)
			return
		}
		_ = os.RemoveAll(dir)
	})
	if ensemble {
		s.zk = zktest.StartEnsemble(t, zktest.Options{Tick: tick})
	} else {
		s.zk = zktest.Start(t, zktest.Options{Tick: tick})
	}
	s.ns = fmt.Sprintf("chaos-%s-%d", notNameChars.ReplaceAllString(t.Name(), "_"), time.Now().UnixNano())
	s.runsPath = filepath.Join(dir, "runs.txt")
	s.fencePath = filepath.Join(dir, "fence.db")
	s.runLog = newRunLog(s.runsPath)
	t.Cleanup(s.cleanup)
	s.startProbes()
	for i := 1; i <= nHosts; i++ {
		p, err := newProxy(strings.Split(s.zk.Addr(), ","))
		if err != nil {
			t.Fatal(err)
		}
		h := &host{name: fmt.Sprintf("h%d", i), dir: dir, proxy: p, cfg: filepath.Join(dir, fmt.Sprintf("h%d.yaml", i))}
		if err := os.WriteFile(h.cfg, []byte(s.config(p.addr())), 0o644); err != nil {
			t.Fatal(err)
		}
		s.hosts = append(s.hosts, h)
	}
	return s
}

func (s *suite) config(serverLists string) string {
	return fmt.Sprintf(`elasticjob:
  regCenter:
    serverLists: %[1]s
    namespace: %[2]s
    sessionTimeoutMilliseconds: %[3]d
    connectionTimeoutMilliseconds: 5000
    baseSleepTimeMilliseconds: 100
    maxSleepTimeMilliseconds: 500
  jobs:
    %[5]s:
      elasticJobType: SCRIPT
      cron: "%[6]s"
      shardingTotalCount: %[9]d
      shardingItemParameters: "%[7]s"
      monitorExecution: true
      failover: true
      props:
        script.command.line: %[4]s
    %[8]s:
      elasticJobType: SCRIPT
      cron: "%[10]s"
      shardingTotalCount: %[9]d
      shardingItemParameters: "%[11]s"
      monitorExecution: true
      failover: false
      props:
        script.command.line: %[4]s
ejob:
  drainTimeout: 2s
`, serverLists, s.ns, sessionTimeout.Milliseconds(), recorderBin+" -fence "+s.fencePath+" "+s.runsPath,
		jobFO, jobFOCron, jobFOParams, jobNoFO, items, jobNoFOCron, jobNoFOParams)
}

// cleanup ends every host and its children, the proxies and any recorder
// left running, and prints the host logs' tails if the test failed.
func (s *suite) cleanup() {
	for _, h := range s.hosts {
		h.destroy()
		h.proxy.close()
	}
	if runs, _, err := s.runLog.read(); err == nil {
		for _, r := range runs {
			if r.kind == 0 && processAlive(r.recPID) {
				if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", r.recPID)); err == nil && strings.Contains(string(b), recorderBin) {
					_ = killPID(r.recPID)
				}
			}
		}
	}
	if s.t.Failed() {
		for _, h := range s.hosts {
			s.t.Logf("---- %s (pids %v) last log ----\n%s", h.name, h.pids, tail(h.logText(), 60))
		}
	}
}

func tail(text string, n int) string {
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func (s *suite) logf(format string, args ...any) {
	s.t.Logf("%s "+format, append([]any{time.Now().Format("15:04:05.000")}, args...)...)
}

// startAll starts every host and waits until each is up and the job
// leader exists.
func (s *suite) startAll() {
	s.t.Helper()
	for _, h := range s.hosts {
		if err := h.start(); err != nil {
			s.t.Fatal(err)
		}
	}
	for _, h := range s.hosts {
		if !h.waitStarted(s.t, 30*time.Second) {
			s.t.FailNow()
		}
	}
	s.began = time.Now()
}

// livePIDs are the pids of the hosts' current processes.
func (s *suite) livePIDs() map[int]bool {
	m := map[int]bool{}
	for _, h := range s.hosts {
		if h.alive() {
			m[h.pid()] = true
		}
	}
	return m
}

func (s *suite) hostByPID(pid int) *host {
	for _, h := range s.hosts {
		if slices.Contains(h.pids, pid) {
			return h
		}
	}
	return nil
}

func (s *suite) runs() []*run {
	runs, _, err := s.runLog.read()
	if err != nil {
		s.t.Fatal(err)
	}
	return runs
}

// sleep holds a fault for d: faults last by design, this is no
// synchronisation.
func sleep(d time.Duration) { time.Sleep(d) }

func (s *suite) between(lo, hi time.Duration) time.Duration {
	return lo + time.Duration(s.rng.Int63n(int64(hi-lo)+1))
}

func (s *suite) pick() *host { return s.hosts[s.rng.Intn(len(s.hosts))] }

func (s *suite) allPIDs() map[int]bool { return s.livePIDs() }

// restart starts a new incarnation of h and waits until it is up.
func (s *suite) restart(h *host) {
	if err := h.start(); err != nil {
		s.t.Fatal(err)
	}
	h.waitStarted(s.t, 30*time.Second)
}

// record appends f to the fault log.
func (s *suite) record(f *fault) {
	if f.began.IsZero() {
		f.began = f.at
	}
	s.faults = append(s.faults, f)
	s.logf("fault %s", f)
}

// ---- faults ----

// faultKill: kill -9 of a random host, restarted after hold.
func (s *suite) faultKill() {
	h := s.pick()
	f := &fault{kind: "kill", target: h.name, at: time.Now(), pids: []int{h.pid()}}
	h.kill9()
	sleep(s.between(500*time.Millisecond, 3*time.Second))
	s.restart(h)
	f.healed = time.Now()
	f.recovered = maxTime(lostSession(f.at), f.healed.Add(rejoin))
	s.record(f)
}

// leaderHost is the host of the leader of job (nil if none or unknown).
func (s *suite) leaderHost(job string) *host {
	id, err := s.leader(job)
	if err != nil || id == "" {
		return nil
	}
	h := s.hostByPID(pidOf(id))
	if h == nil || !h.alive() || h.pid() != pidOf(id) {
		return nil
	}
	return h
}

// faultKillLeader: kill -9 of the leader of a random job.
func (s *suite) faultKillLeader() {
	job := []string{jobFO, jobNoFO}[s.rng.Intn(2)]
	h := s.leaderHost(job)
	note := "leader of " + job
	if h == nil {
		h, note = s.pick(), "no leader found; random host"
	}
	f := &fault{kind: "kill-leader", target: h.name, at: time.Now(), note: note, pids: []int{h.pid()}}
	h.kill9()
	sleep(s.between(500*time.Millisecond, 3*time.Second))
	s.restart(h)
	f.healed = time.Now()
	f.recovered = maxTime(lostSession(f.at), f.healed.Add(rejoin))
	s.record(f)
}

// faultKillLeaderResharding: a non-leader host is killed and restarted at
// once (membership changes twice, so resharding is flagged); as soon as
// leader/sharding/necessary or processing is seen, the leader is killed.
func (s *suite) faultKillLeaderResharding() {
	job := []string{jobFO, jobNoFO}[s.rng.Intn(2)]
	lh := s.leaderHost(job)
	if lh == nil {
		s.faultKillLeader()
		return
	}
	var other *host
	for _, i := range s.rng.Perm(len(s.hosts)) {
		if s.hosts[i] != lh {
			other = s.hosts[i]
			break
		}
	}
	f := &fault{kind: "kill-leader-during-resharding", target: lh.name, at: time.Now(), pids: []int{lh.pid(), other.pid()}}
	otherAt := f.at
	other.kill9()
	if err := other.start(); err != nil {
		s.t.Fatal(err)
	}
	seen := ""
	waitFor(8*time.Second, func() (bool, string) {
		for _, n := range []string{"necessary", "processing"} {
			if ok, _ := s.exists("/" + job + "/leader/sharding/" + n); ok {
				seen = n
				return true, ""
			}
		}
		return false, "no resharding flag"
	})
	f.at = time.Now()
	lh.kill9()
	if seen != "" {
		f.note = fmt.Sprintf("%s of %s seen; %s restarted just before", seen, job, other.name)
	} else {
		f.note = fmt.Sprintf("no resharding flag of %s seen within 8s; killed anyway", job)
	}
	other.waitStarted(s.t, 30*time.Second)
	sleep(s.between(500*time.Millisecond, 2*time.Second))
	s.restart(lh)
	f.healed = time.Now()
	f.recovered = maxTime(maxTime(lostSession(otherAt), lostSession(f.at)), f.healed.Add(rejoin))
	f.began = otherAt
	s.record(f)
}

// runningLong finds a host running a long item of jobFO that started
// within the last 400 ms, waiting up to 6 s.
func (s *suite) runningLong() (*host, *run) {
	var h *host
	var r *run
	waitFor(6*time.Second, func() (bool, string) {
		for _, x := range s.runs() {
			if x.job == jobFO && x.kind == 0 && (x.item == 0 || x.item == 3) && time.Since(x.start) < 400*time.Millisecond {
				if hh := s.hostByPID(x.hostPID); hh != nil && hh.alive() && hh.pid() == x.hostPID {
					h, r = hh, x
					return true, ""
				}
			}
		}
		return false, "no long item running"
	})
	return h, r
}

// faultKillDuringFailover: kill -9 a host while it runs a long item of the
// failover job, wait for another instance to start that item (the
// failover), and kill that one at once too.
func (s *suite) faultKillDuringFailover() {
	x, r := s.runningLong()
	if x == nil {
		s.faultKill()
		return
	}
	f := &fault{kind: "kill-during-failover", target: x.name, at: time.Now(), pids: []int{x.pid()}}
	x.kill9()
	lastKill := f.at
	var y *host
	waitFor(sessionTimeout+8*time.Second, func() (bool, string) {
		for _, z := range s.runs() {
			if z.job == jobFO && z.item == r.item && z.start.After(f.at) && z.hostPID != r.hostPID {
				if hh := s.hostByPID(z.hostPID); hh != nil && hh.alive() && hh.pid() == z.hostPID {
					y = hh
					return true, ""
				}
			}
		}
		return false, "no takeover yet"
	})
	if y != nil {
		lastKill = time.Now()
		f.pids = append(f.pids, y.pid())
		y.kill9()
		f.note = fmt.Sprintf("item %d taken over by %s after %v, killed too", r.item, y.name, time.Since(f.at).Round(time.Millisecond))
		f.target += "+" + y.name
	} else {
		f.note = fmt.Sprintf("item %d: no takeover seen", r.item)
	}
	sleep(s.between(500*time.Millisecond, 2*time.Second))
	s.restart(x)
	if y != nil {
		s.restart(y)
	}
	f.healed = time.Now()
	f.recovered = maxTime(lostSession(lastKill), f.healed.Add(rejoin))
	s.record(f)
}

// faultPause: SIGSTOP of a host (with its plugin process and scripts)
// longer than its session timeout, then SIGCONT. Hosts running a long item
// are preferred.
func (s *suite) faultPause() {
	h, _ := s.runningLong()
	if h == nil {
		h = s.pick()
	}
	f := &fault{kind: "sigstop", target: h.name, at: time.Now(), affected: map[int]bool{h.pid(): true}, pids: []int{h.pid()}}
	h.freeze()
	sleep(sessionTimeout + s.between(time.Second, 3*time.Second))
	f.told = time.Now()
	f.windowFrom = f.told
	h.thaw()
	f.healed = time.Now()
	f.recovered = maxTime(lostSession(f.at), f.healed.Add(rejoin))
	s.record(f)
}

// faultPauseHost: SIGSTOP of the host process only, longer than its
// session timeout, as a long GC pause or a stuck runtime would; its plugin
// process and running scripts go on.
func (s *suite) faultPauseHost() {
	h, _ := s.runningLong()
	if h == nil {
		h = s.pick()
	}
	f := &fault{kind: "sigstop-host-only", target: h.name, at: time.Now(), affected: map[int]bool{h.pid(): true}, pids: []int{h.pid()}}
	_ = syscall.Kill(h.pid(), syscall.SIGSTOP)
	h.stopped = []int{h.pid()}
	sleep(sessionTimeout + s.between(time.Second, 3*time.Second))
	f.told = time.Now()
	f.windowFrom = f.told
	h.thaw()
	f.healed = time.Now()
	f.recovered = maxTime(lostSession(f.at), f.healed.Add(rejoin))
	s.record(f)
}

// faultPartition: the host's proxy drops or stalls its ZooKeeper
// connections, longer than the session timeout or (sometimes) shorter.
func (s *suite) faultPartition(mode proxyMode, long bool) {
	h, _ := s.runningLong()
	if h == nil {
		h = s.pick()
	}
	hold := s.between(300*time.Millisecond, sessionTimeout/2)
	if long {
		hold = sessionTimeout + s.between(time.Second, 3*time.Second)
	}
	f := &fault{kind: "partition-" + mode.String(), target: h.name, at: time.Now(), affected: map[int]bool{h.pid(): true}, pids: []int{h.pid()}}
	if !long {
		f.kind += "-short"
	}
	h.proxy.setMode(mode)
	sleep(hold)
	h.proxy.setMode(modePass)
	f.healed = time.Now()
	f.told, f.windowFrom = f.at.Add(sessionTimeout), f.at
	f.recovered = f.healed.Add(rejoin)
	if long {
		f.recovered = maxTime(lostSession(f.at), f.recovered)
	}
	s.record(f)
}

// faultZK: a ZooKeeper fault. kinds: zk-restart (graceful stop, start),
// zk-outage-short (kill -9 of every server, start at once), zk-outage-long
// (kill -9, start after more than a session timeout), zk-member-loss (one
// ensemble member killed, started again after a while).
func (s *suite) faultZK(kind string) {
	f := &fault{kind: kind, target: "zk", at: time.Now(), affected: s.allPIDs(), zkDown: true, pids: keys(s.livePIDs())}
	var err error
	switch kind {
	case "zk-restart":
		err = s.zk.Restart()
	case "zk-crash-restart":
		if err = s.zk.Kill(); err == nil {
			err = s.zk.StartAgain()
		}
	case "zk-outage-short":
		// Every server frozen (SIGSTOP) for a quarter to half a session
		// timeout: no server answers, none restarts.
		var pids []int
		if pids, err = zkPIDs(s.zk.Dir()); err == nil {
			for _, p := range pids {
				_ = syscall.Kill(p, syscall.SIGSTOP)
			}
			sleep(s.between(sessionTimeout/4, sessionTimeout/2))
			for _, p := range pids {
				_ = syscall.Kill(p, syscall.SIGCONT)
			}
		}
	case "zk-outage-long":
		if err = s.zk.Kill(); err == nil {
			sleep(sessionTimeout + s.between(time.Second, 3*time.Second))
			err = s.zk.StartAgain()
		}
	case "zk-member-loss":
		n := 1 + s.rng.Intn(3)
		f.target, f.affected, f.zkDown = fmt.Sprintf("zk%d", n), nil, false
		if err = killMember(s.zk.Dir(), n); err == nil {
			sleep(s.between(time.Second, 5*time.Second))
			err = s.zk.StartAgain()
		}
	}
	// zk.sh occasionally fails to bring a restarted ensemble member up (it
	// exits during the rejoin); that is the harness, not ejob: retry.
	for attempt := 1; err != nil && attempt <= 3; attempt++ {
		s.logf("%s: starting ZooKeeper again failed (attempt %d): %v", kind, attempt, firstLine(err.Error()))
		f.note = fmt.Sprintf("ZooKeeper restart needed %d retries; ", attempt)
		err = s.zk.StartAgain()
	}
	if err != nil {
		s.t.Fatalf("%s: %v", kind, err)
	}
	// Started is not serving: a server restarted after kill -9 replays its
	// log and may answer new sessions only seconds later (13 s once, in a
	// loaded soak run). The fault lasts until a fresh session is served.
	started := time.Now()
	if ok, why := waitFor(60*time.Second, func() (bool, string) {
		ok, err := s.exists("/" + jobFO)
		if err != nil {
			return false, err.Error()
		}
		return ok, "no job node"
	}); !ok {
		s.t.Fatalf("%s: ZooKeeper does not serve 60 s after it started again: %s", kind, why)
	}
	if d := time.Since(started); d > time.Second {
		f.note += fmt.Sprintf("serving %v after it started; ", d.Round(time.Millisecond))
	}
	f.healed = time.Now()
	// Sessions the restarted server kept expire one timeout after it
	// serves again. A lost member may be the quorum's leader: then no
	// member serves until the others elect one, which can take as long as
	// the member is down (every client suspended and presuming its session
	// expired, seen in ensemble runs), so the same bound applies.
	f.recovered = f.healed.Add(rejoin + sessionTimeout + tick)
	if f.zkDown {
		out := f.healed.Sub(f.at)
		f.note += fmt.Sprintf("outage %v, %s the session timeout", out.Round(time.Millisecond),
			map[bool]string{true: "longer than", false: "shorter than"}[out > sessionTimeout])
		if out > sessionTimeout {
			f.told, f.windowFrom = f.at.Add(sessionTimeout), f.at
		} else {
			f.affected = nil
		}
	}
	s.record(f)
}

// inject runs one fault of the given kind.
func (s *suite) inject(kind string) {
	switch kind {
	case "kill":
		s.faultKill()
	case "kill-leader":
		s.faultKillLeader()
	case "kill-leader-during-resharding":
		s.faultKillLeaderResharding()
	case "kill-during-failover":
		s.faultKillDuringFailover()
	case "sigstop":
		s.faultPause()
	case "sigstop-host-only":
		s.faultPauseHost()
	case "partition-drop":
		s.faultPartition(modeDrop, true)
	case "partition-stall":
		s.faultPartition(modeStall, true)
	case "partition-drop-short":
		s.faultPartition(modeDrop, false)
	default:
		s.faultZK(kind)
	}
}

// shortSchedule is the short form: every fault kind once on a standalone
// server, in this order.
var shortSchedule = []string{
	"kill", "kill-leader-during-resharding", "sigstop", "partition-drop", "sigstop-host-only",
	"kill-during-failover", "partition-stall", "zk-restart", "zk-outage-short", "zk-outage-long",
}

func longKinds(ensemble bool) []string {
	k := []string{"kill", "kill-leader", "kill-leader-during-resharding", "kill-during-failover",
		"sigstop", "sigstop-host-only", "partition-drop", "partition-stall", "partition-drop-short",
		"zk-outage-short", "zk-outage-long", "zk-crash-restart"}
	if ensemble {
		return append(k, "zk-member-loss", "zk-member-loss")
	}
	return append(k, "zk-restart")
}

// TestChaos is the chaos suite. With -chaos.run alone it is the short form
// (one standalone ZooKeeper, the fixed shortSchedule, ~80-90 s); with
// -chaos.duration it injects random faults for that long on a standalone
// server and then on a 3-node ensemble (-chaos.topology picks one).
func TestChaos(t *testing.T) {
	if !*flagRun {
		t.Skip("the chaos suite runs with -chaos.run: make test and make chaos-short (short form), make chaos (long form)")
	}
	seed := *flagSeed
	if seed == 0 {
		seed = time.Now().UnixNano()
	}
	t.Logf("chaos seed %d (rerun with -chaos.seed=%d)", seed, seed)
	hosts := min(max(*flagHosts, 2), items)
	if *flagDuration <= 0 {
		runSuite(t, false, seed, hosts, 0)
		return
	}
	for _, topo := range []string{"standalone", "ensemble"} {
		if *flagTopology != "" && *flagTopology != "both" && *flagTopology != topo {
			continue
		}
		t.Run(topo, func(t *testing.T) { runSuite(t, topo == "ensemble", seed, hosts, *flagDuration) })
	}
}

func runSuite(t *testing.T, ensemble bool, seed int64, nHosts int, duration time.Duration) {
	s := newSuite(t, ensemble, seed, nHosts)
	s.startAll()
	s.watchTimeline()
	s.logf("%d hosts started (zk %s, ensemble %v, session timeout %v, tick %v)", nHosts, s.zk.Addr(), ensemble, sessionTimeout, tick)
	// Warm up: every host runs items of both jobs.
	if ok, why := waitFor(20*time.Second, func() (bool, string) { return s.everyHostFired(s.began) }); !ok {
		t.Fatalf("cluster never reached steady state: %s", why)
	}
	// A steady span before the first fault is checked too.
	checkFrom := time.Now()
	sleep(steady)
	settle := func() { sleep(s.between(500*time.Millisecond, 1500*time.Millisecond)) }
	if duration <= 0 {
		for _, k := range shortSchedule {
			s.inject(k)
			settle()
		}
	} else {
		kinds := longKinds(ensemble)
		end := time.Now().Add(duration)
		for time.Now().Before(end) {
			s.inject(kinds[s.rng.Intn(len(kinds))])
			sleep(s.between(2*time.Second, 12*time.Second))
		}
	}
	s.logf("faults over; checking recovery")
	s.finish(&violations{}, checkFrom, time.Now(), nil)
}

// finish checks the recovery after the faults' end, observes a steady span
// after the last fault's excuse window (see excuse), leaves the last
// triggers' runs time to be recorded, checks the runs from checkFrom (and
// with more, when given) and prints the summary.
func (s *suite) finish(v *violations, checkFrom, faultsEnd time.Time, more func(runs []*run, from, to time.Time)) {
	s.checkRecovery(v, faultsEnd)
	sleep(time.Until(s.lastExcuseEnd().Add(steady + period(jobFO))))
	recordsEnd := time.Now()
	runs := s.runs()
	s.readSideProbe()
	s.stalls.explainRegistry(s.faults)
	checkTo := recordsEnd.Add(-period(jobFO) - time.Second)
	st := s.checkRuns(v, runs, checkFrom, checkTo, recordsEnd)
	if more != nil {
		more(runs, checkFrom, checkTo)
	}
	s.summary(v, st, runs)
	v.report(s.t)
}

// everyHostFired: every live host has started an item of both jobs since.
func (s *suite) everyHostFired(since time.Time) (bool, string) {
	seen := map[string]bool{}
	for _, r := range s.runs() {
		if r.start.After(since) {
			seen[fmt.Sprintf("%d/%s", r.hostPID, r.job)] = true
		}
	}
	var missing []string
	for _, h := range s.hosts {
		for _, j := range []string{jobFO, jobNoFO} {
			if !h.alive() || !seen[fmt.Sprintf("%d/%s", h.pid(), j)] {
				missing = append(missing, h.name+"/"+j)
			}
		}
	}
	return len(missing) == 0, "no run yet of " + strings.Join(missing, ", ")
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
