package chaos

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ejob-io/ejob/test/fence"
)

// The invariants, in the order the summary lists them (docs/chaos.md
// defines each precisely).
var invariants = []string{"exclusion", "coverage", "failover", "rejoin", "stale-nodes", "fence", "upgrade", "once"}

type violations struct{ by map[string][]string }

func (v *violations) add(inv, format string, args ...any) {
	if v.by == nil {
		v.by = map[string][]string{}
	}
	v.by[inv] = append(v.by[inv], fmt.Sprintf(format, args...))
}

func (v *violations) report(t *testing.T) {
	for _, inv := range invariants {
		list := v.by[inv]
		if len(list) == 0 {
			continue
		}
		shown := list
		if len(shown) > 25 {
			shown = shown[:25]
		}
		more := ""
		if len(list) > len(shown) {
			more = fmt.Sprintf("\n  ... and %d more", len(list)-len(shown))
		}
		t.Errorf("VIOLATION %s: %d\n  %s%s", inv, len(list), strings.Join(shown, "\n  "), more)
	}
}

func killPID(pid int) error { return syscall.Kill(pid, syscall.SIGKILL) }

func percent(n, of int) string {
	if of == 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f%%", 100*float64(n)/float64(of))
}

// stats are the figures of one suite run.
type stats struct {
	// fires in the checked span per job, and those whose every item was
	// checked; itemFires and itemChecked count (fire, item) pairs;
	// excusedBy counts the excused pairs by fault kind; beyond the pairs
	// whose due time is past the records' end.
	fires, checked, itemFires, itemChecked, beyond map[string]int
	excusedBy                                      map[string]map[string]int // job -> fault kind -> excused pairs
	// throughOutage counts, per job and fault kind, the pairs a full
	// ZooKeeper fault would excuse that are judged by the catch-up after
	// it (see throughOutage).
	throughOutage map[string]map[string]int
	latencies     []time.Duration // failover: cut-off to the item's next start elsewhere
	windowed      []string
	maxWindow     time.Duration
	fence         fence.Tally // the side effects in the fenced store
	// starved counts the pairs excused by starvation (see starved) per
	// job, starvedLost the most stall time measured over one of them.
	starved     map[string]int
	starvedLost map[string]time.Duration
	starvedList []string // each one, with its lateness and the stall
}

// checkRecovery: after the faults, every host rejoins and fires again
// (rejoin), then no ZooKeeper node names a dead instance (stale-nodes).
func (s *suite) checkRecovery(v *violations, faultsEnd time.Time) {
	for _, h := range s.hosts {
		if h.stopped != nil {
			h.thaw()
		}
		h.proxy.setMode(modePass)
		if !h.alive() {
			s.restart(h)
		}
	}
	// Every dead instance's session has expired after expiry; the check
	// waits for every live host's runs of both jobs fired after it.
	expiry := time.Now().Add(sessionTimeout + tick)
	ok, why := waitFor(40*time.Second, func() (bool, string) { return s.everyHostFired(expiry) })
	s.rejoinAfter = time.Since(faultsEnd)
	if !ok {
		v.add("rejoin", "within 40s of the faults' end (%s): %s", faultsEnd.Format("15:04:05.000"), why)
	}
	live := s.livePIDs()
	var stale []string
	start := time.Now()
	ok, _ = waitFor(15*time.Second, func() (bool, string) {
		var err error
		stale, err = s.staleNodes(live)
		if err != nil {
			return false, err.Error()
		}
		return len(stale) == 0, strings.Join(stale, "; ")
	})
	s.cleanAfter = time.Since(start)
	if !ok {
		v.add("stale-nodes", "15s after every live host fired again (after the dead instances' session timeout), live pids %v, nodes naming dead instances or queued failover remain: %s",
			keys(live), strings.Join(stale, "; "))
	}
}

func keys(m map[int]bool) []int {
	var out []int
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// lastExcuseEnd is the end of the last fault's excuse window.
func (s *suite) lastExcuseEnd() time.Time {
	var end time.Time
	for _, x := range s.faults {
		end = maxTime(end, x.recovered.Add(eventMargin))
	}
	return end
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func newStats() *stats {
	return &stats{fires: map[string]int{}, checked: map[string]int{}, itemFires: map[string]int{},
		itemChecked: map[string]int{}, excusedBy: map[string]map[string]int{jobFO: {}, jobNoFO: {}}, beyond: map[string]int{},
		throughOutage: map[string]map[string]int{jobFO: {}, jobNoFO: {}},
		starved:       map[string]int{}, starvedLost: map[string]time.Duration{}}
}

// checkRuns checks exclusion, coverage and failover on the records.
func (s *suite) checkRuns(v *violations, runs []*run, from, to, recordsEnd time.Time) *stats {
	st := newStats()
	s.checkCoverage(v, st, runs, from, to, recordsEnd)
	s.checkFailover(v, st, runs, to)
	s.checkExclusion(v, st, runs)
	s.checkFence(v, st)
	return st
}

// fence: the recorders' side effects in the fenced store (test/fence). A
// stale write (from a run of an item that a later-started run had already
// written for) must be rejected, and a write no later run preceded must be
// accepted; writes without a fencing token are counted apart.
func (s *suite) checkFence(v *violations, st *stats) {
	store, err := fence.Open(context.Background(), s.fencePath)
	if err != nil {
		v.add("fence", "%v", err)
		return
	}
	defer store.Close()
	log, err := store.Log(context.Background())
	if err != nil {
		v.add("fence", "%v", err)
		return
	}
	st.fence = fence.Count(log)
	if st.fence.StaleAccepted > 0 {
		v.add("fence", "%d stale writes accepted", st.fence.StaleAccepted)
	}
	if st.fence.FreshRejected > 0 {
		v.add("fence", "%d writes rejected with no later run before them (tokens out of the runs' order)", st.fence.FreshRejected)
	}
}

// Margins of the coverage check (docs/chaos.md, Invariants).
const (
	// startMargin: a fire's runs start within this of the fire (the
	// trigger loop, the registry reads, the plugin call and the script's
	// start, on a loaded machine).
	startMargin = time.Second
	// eventMargin: a crash event or a resharding flag reaches every host
	// within this.
	eventMargin = 500 * time.Millisecond
	// catchUpMargin: a fire that found its item running is served by a
	// catch-up run starting within this of that run's end (in the same
	// trigger, right after).
	catchUpMargin = time.Second
	// pumpMargin: a fire that found the item's owner busy with other
	// items (failover items) is served within this of that execution's
	// end (the failover pump's two 500 ms ticks, then a trigger).
	pumpMargin = 2 * time.Second
	// reshardMargin: executions held back by a pending resharding start
	// within this of its commit (the non-leaders poll every 100 ms).
	reshardMargin = time.Second
	// outageMargin: the catch-up run of the fires an instance skipped
	// while no ZooKeeper server answered starts within this of the
	// instance being back (connected again, or registered again in a new
	// session): its trigger's registry requests on a connection just
	// opened, the plugin call and the script's start, on a loaded machine.
	outageMargin = 2 * time.Second
)

// due is how one fire of one item must be served: by a run of the item
// that starts in [fire, max(fire+period, by)]; by is when the service was
// due at the latest, from the moment its margin counts from (the fire, or
// the event seen that the rule waits for: a resharding's commit, an
// execution's end), rule says why, pids are the host incarnations that
// had to serve it (its owners until then, the host of the run in progress
// at the fire, and the host of a run cut off just before it).
type due struct {
	by, from time.Time
	rule     string
	pids     []int
}

// deadline is the latest start that serves fire f of a job of period p,
// max(f + p, d.by), and the moment its margin counts from.
func (d due) deadline(f time.Time, p time.Duration) (by, from time.Time) {
	if d.by.After(f.Add(p)) {
		return d.by, d.from
	}
	return f.Add(p), f
}

// later is d due by at the latest, by's margin counting from from.
func (d due) later(by, from time.Time, rule string) due {
	if by.After(d.by) {
		d.by, d.from = by, from
	}
	d.rule = rule
	return d
}

// jobRuns are one job's runs, indexed for the coverage check (a soak run
// has tens of thousands).
type jobRuns struct {
	byItem map[int][]*run    // in start order
	byHost map[string][]*run // in start order
}

func (s *suite) indexRuns(job string, runs []*run) jobRuns {
	jr := jobRuns{byItem: map[int][]*run{}, byHost: map[string][]*run{}}
	for _, r := range runs {
		if r.job == job {
			jr.byItem[r.item] = append(jr.byItem[r.item], r)
			h := s.hostOf(r.hostPID)
			jr.byHost[h] = append(jr.byHost[h], r)
		}
	}
	return jr
}

// maxRun bounds how long before f a run in progress at f can have started
// (the longest item runs 3.5 s; a frozen one a few seconds more).
const maxRun = time.Minute

// startedBetween are the runs of list (in start order) that started in
// [from, to).
func startedBetween(list []*run, from, to time.Time) []*run {
	lo := sort.Search(len(list), func(k int) bool { return !list[k].start.Before(from) })
	hi := sort.Search(len(list), func(k int) bool { return !list[k].start.Before(to) })
	return list[lo:max(lo, hi)]
}

// serveBy works out the due of fire f of item i of job (period p).
func (s *suite) serveBy(job string, p time.Duration, jr jobRuns, i int, f time.Time) due {
	d := due{by: f.Add(startMargin), from: f, rule: "its run"}
	if sp, ok := s.timeline.pending(job, f.Add(-200*time.Millisecond), f.Add(eventMargin)); ok {
		// The fire's executions wait for the resharding (which waits for
		// running items) before they run anything; a host busy at the fire
		// flagged the items it owned then, and a new owner's pump runs
		// those it got.
		d = d.later(sp.to.Add(pumpMargin), sp.to, "its run after the pending resharding")
	}
	var busy *run // a run of the item in progress at the fire
	var cut *run  // a run of the item cut off shortly before the fire
	for _, r := range startedBetween(jr.byItem[i], f.Add(-maxRun), f) {
		if r.end.After(f) {
			busy = r
		} else if r.kind != 'E' && r.end.After(f.Add(-heldAfterCut)) {
			cut = r
		}
	}
	owner := s.hostOf(pidOf(s.timeline.ownerAt(job, i, f)))
	var end time.Time
	ok := false
	switch {
	case busy != nil:
		// A misfire: one catch-up run right after the execution of the
		// running one (its other items may run longer: a catch-up run
		// joins the instance's own waiting items to a failover item's).
		end := executionEnd(jr.byHost[s.hostOf(busy.hostPID)], busy)
		d = s.catchUp(job, p, d, end, catchUpMargin, "the catch-up after the run in progress at the fire")
		d = s.claimsFirst(job, p, jr, busy.hostPID, i, end, d)
		d.pids = append(d.pids, busy.hostPID)
	case owner != "":
		// The owner busy with other items (failover items): its own
		// items' catch-up follows that execution.
		if end, ok = busyUntil(jr.byHost[owner], f); ok {
			d = s.catchUp(job, p, d, end, pumpMargin, "the catch-up after the owner's execution in progress at the fire")
			d = s.claimsFirst(job, p, jr, pidOf(s.timeline.ownerAt(job, i, f)), i, end, d)
		}
	}
	if busy == nil && !ok {
		// The fire's execution on an owner ran its failover claims
		// instead: its own items' catch-up follows that execution.
		var pid int
		if end, pid, ok = s.failoverExecution(job, jr, i, f, d.by); ok {
			d = s.catchUp(job, p, d, end, pumpMargin, "the catch-up after the failover execution the fire ran on an owner")
			d = s.claimsFirst(job, p, jr, pid, i, end, d)
		}
	}
	if busy != nil || ok {
		// While the catch-up waited for that execution, a resharding can
		// give the item to an instance that then runs items it had claimed
		// for failover first (a fire of the schedule finding claims runs
		// them only): the item's flag is served after that execution.
		if end, pid, found := s.failoverExecution(job, jr, i, f, d.by); found {
			d = s.catchUp(job, p, d, end, pumpMargin, d.rule+", then after the failover execution of an owner")
			d = s.claimsFirst(job, p, jr, pid, i, end, d)
		}
	}
	if cut != nil && busy == nil && !slices.Contains(d.pids, cut.hostPID) {
		// The kernel still counted the cut-off run in progress at the
		// fire (its running node lives until the session it ran in has
		// ended): the fire is served by that item's failover run (or,
		// without failover, its next fire), so it depends on the host
		// that was cut off (its fault excuses it; the failover invariant
		// checks the re-run).
		d.pids = append(d.pids, cut.hostPID)
	}
	for _, id := range s.timeline.ownersIn(job, i, f, d.by) {
		if p := pidOf(id); p > 0 && !slices.Contains(d.pids, p) {
			d.pids = append(d.pids, p)
		}
		// An owner whose instance node goes leaves the item to the
		// resharding its crash flags, and only the job's leader flags it
		// (as upstream): the leaders from then to the due time had to serve
		// the fire too. A leader killed before it flagged leaves the flag
		// to the next one, elected once the killed one's session has
		// expired.
		if gone, ok := s.timeline.goneBy(job, id, d.by); ok {
			for _, l := range s.timeline.leadersIn(job, gone, d.by) {
				if p := pidOf(l); p > 0 && !slices.Contains(d.pids, p) {
					d.pids = append(d.pids, p)
				}
			}
		}
	}
	return d
}

// heldAfterCut bounds how long after a run's last line (cancelled by a
// presumed session loss, or killed) its running node may still exist: the
// session's expiry on the server (at most S after the last contact, which
// precedes the last line), a tick, and the crash event reaching a survivor.
const heldAfterCut = sessionTimeout + tick + eventMargin

// failoverExecution: an instance that owned item i at some moment of
// [f, by] started in that span an execution of items it had claimed for
// failover, which a fire of the schedule runs instead of the instance's
// own items (docs/guarantees.md, "A fire that finds its item running").
// It returns the end of the first such execution and that instance's pid.
func (s *suite) failoverExecution(job string, jr jobRuns, i int, f, by time.Time) (time.Time, int, bool) {
	for _, id := range s.timeline.ownersIn(job, i, f, by) {
		pid := pidOf(id)
		if end, ok := s.claimedExecution(job, jr, pid, i, f, by); ok {
			return end, pid, true
		}
	}
	return time.Time{}, 0, false
}

// claimedExecution: the instance with pid started, in [from, to], an
// execution of items other than i that it had claimed for failover (the
// observer saw sharding/{k}/failover naming it at the run's start); it
// returns that execution's end (its runs and the runs chained right after
// them). A run of an item that was not claimed (an execution on a
// superseded assignment) does not count.
func (s *suite) claimedExecution(job string, jr jobRuns, pid, i int, from, to time.Time) (time.Time, bool) {
	h := s.hostOf(pid)
	if h == "" {
		return time.Time{}, false
	}
	var mine []*run
	for _, r := range jr.byHost[h] {
		if r.hostPID == pid {
			mine = append(mine, r)
		}
	}
	for _, r := range startedBetween(mine, from, to.Add(time.Nanosecond)) {
		if r.item != i && s.timeline.claimedAt(job, r.item, r.instance, r.start) {
			return busyUntil(mine, r.start.Add(time.Nanosecond))
		}
	}
	return time.Time{}, false
}

// claimsFirst: an instance that holds claimed failover items when its
// execution ends runs them before that execution's catch-up (the flags
// stay, and the pump serves them right after: docs/guarantees.md). When
// the instance with pid started such an execution between end (its
// execution's end) and the due time d, the catch-up is due after it, or
// after the resharding pending when it ends (catchUp).
func (s *suite) claimsFirst(job string, p time.Duration, jr jobRuns, pid, i int, end time.Time, d due) due {
	if e, ok := s.claimedExecution(job, jr, pid, i, end, d.by); ok {
		return s.catchUp(job, p, d, e, pumpMargin, d.rule+" (after its claimed failover items)")
	}
	return d
}

// catchUp is the due of a misfire whose busy execution ended at end: within
// margin of it, unless a resharding was pending then (upstream's misfire
// loop waits for it: the next fire after it runs the items, on their new
// owners).
func (s *suite) catchUp(job string, p time.Duration, d due, end time.Time, margin time.Duration, rule string) due {
	by, from := end.Add(margin), end
	if sp, ok := s.timeline.pending(job, end.Add(-200*time.Millisecond), end.Add(eventMargin)); ok {
		next := end.Truncate(p).Add(p)
		by, from = next.Add(startMargin), next
		if c := sp.to.Add(reshardMargin); c.After(by) {
			by, from = c, sp.to
		}
		rule += " (held back by a pending resharding)"
	}
	return d.later(by, from, rule)
}

// busyUntil: when a host whose runs of the job are hostRuns (in start
// order) ran items at f, the end of that execution (its runs and the
// catch-up runs chained right after them).
func busyUntil(hostRuns []*run, f time.Time) (time.Time, bool) {
	var end time.Time
	for _, r := range startedBetween(hostRuns, f.Add(-maxRun), f) {
		if r.end.After(f) {
			end = maxTime(end, r.end)
		}
	}
	if end.IsZero() {
		return end, false
	}
	for grown := true; grown; {
		grown = false
		for _, r := range startedBetween(hostRuns, f, end.Add(300*time.Millisecond+time.Nanosecond)) {
			if r.end.After(end) {
				end, grown = r.end, true
			}
		}
	}
	return end, true
}

// sameExecution bounds how far apart the runs of one execution's items
// start (they start together; the shortest item runs 0.3 s).
const sameExecution = 50 * time.Millisecond

// executionEnd is the end of the execution r belongs to: the last end
// among the runs of r's host process (hostRuns, in start order) that
// started with it.
func executionEnd(hostRuns []*run, r *run) time.Time {
	end := r.end
	for _, o := range startedBetween(hostRuns, r.start.Add(-sameExecution), r.start.Add(sameExecution)) {
		if o.hostPID == r.hostPID && o.end.After(end) {
			end = o.end
		}
	}
	return end
}

// hostOf is the name of the host whose incarnation had pid ("" if none).
func (s *suite) hostOf(pid int) string {
	if h := s.hostByPID(pid); h != nil {
		return h.name
	}
	return ""
}

// hostBack is, per fault, job and host incarnation (pid), when that
// incarnation serves its items again after the fault, or has left them to
// the resharding (back); until then the fault excuses the fires it had to
// serve.
type hostBack map[*fault]map[string]map[int]time.Time

// backTimes works out back for every fault, job and incarnation the fault
// hit.
func (s *suite) backTimes() hostBack {
	hb := hostBack{}
	for _, x := range s.faults {
		hb[x] = map[string]map[int]time.Time{}
		for _, job := range []string{jobFO, jobNoFO} {
			hb[x][job] = map[int]time.Time{}
			for _, pid := range x.pids {
				hb[x][job][pid] = s.back(x, job, pid)
			}
		}
	}
	return hb
}

// back is when the host incarnation pid is back from fault x for job
// (docs/chaos.md, coverage), from what the observer saw of its instance
// node and its proxy of its connections. With its session kept, once it
// talks to ZooKeeper again: if none of its connections closed during the
// fault, at healed (its requests waited for the server), or at once for
// zk-member-loss (its member kept serving); else at the server's first
// answer on a connection still open at healed (proxy.reconnected), at most
// healed + R. With its session lost (its node deleted after the fault
// began and by healed + S + T + R: killed, or expired on the server), once
// the server has deleted the node (the crash event flags the resharding,
// which the pending-resharding rule judges from then on) and, if the
// incarnation lives on, it has registered again (its node created by its
// new session).
func (s *suite) back(x *fault, job string, pid int) time.Time {
	lives := s.timeline.instanceLives(job, []int{pid})
	lostBy := x.healed.Add(sessionTimeout + tick + rejoin)
	var lost time.Time
	for _, l := range lives {
		if !l.to.IsZero() && l.to.After(x.began) && !l.to.After(lostBy) {
			lost = maxTime(lost, l.to)
		}
	}
	if lost.IsZero() {
		if h := s.hostByPID(pid); h != nil {
			at, dropped, ok := h.proxy.reconnected(x.began, x.healed)
			switch {
			case ok && !dropped && x.kind == "zk-member-loss":
				return x.began // its member kept serving
			case ok && !dropped:
				return x.healed // its requests waited for the server
			case ok && at.Before(x.healed.Add(rejoin)):
				return at
			}
		}
		return x.healed.Add(rejoin)
	}
	at := maxTime(lost, x.healed)
	for _, l := range lives {
		if l.from.After(at) {
			return l.from
		}
		if l.to.IsZero() || l.to.After(at) {
			return at
		}
	}
	return at // the incarnation is gone (killed): its items are the resharding's
}

// excuse returns the fault that kept fire f of item i (due d) from being
// served: one that hit an incarnation that had to serve it (every live
// one, for a full ZooKeeper fault) from its beginning until that
// incarnation was back, at some moment between the fire and its due time.
// A fault that began after the fire does not excuse it when a run of the
// item had started before the fault began.
func (s *suite) excuse(job string, jr jobRuns, hb hostBack, i int, f time.Time, d due) *fault {
	return s.excuseAfter(job, jr, hb, i, f, d, nil)
}

// excuseAfter is excuse over the faults not in seen.
func (s *suite) excuseAfter(job string, jr jobRuns, hb hostBack, i int, f time.Time, d due, seen map[*fault]bool) *fault {
	for _, x := range s.faults {
		if seen[x] || x.began.After(d.by) {
			continue
		}
		for _, pid := range d.pids {
			b, ok := hb[x][job][pid]
			if !ok || b.Add(eventMargin).Before(f) {
				continue
			}
			if x.began.After(f) && len(startedBetween(jr.byItem[i], f, x.began)) > 0 {
				continue
			}
			return x
		}
	}
	return nil
}

// judgeThrough is the due of fire f of item i (d, from serveBy) and the
// fault that excuses it, nil when none does. A full ZooKeeper fault (no
// server answered any host) excuses nothing on its own: both jobs run
// with misfire on, so every instance runs the fires it skipped meanwhile
// once, as soon as it is back (docs/guarantees.md, "A fire skipped while
// the registry is unreachable"); the fire is then due after that catch-up
// (throughOutage), and only a fault the guarantee gives nothing for
// excuses it: a host fault, a full ZooKeeper fault an incarnation that
// had to serve the fire is not back from alive, or one whose catch-up is
// due past the records' end (recordsEnd).
func (s *suite) judgeThrough(job string, p time.Duration, jr jobRuns, hb hostBack, i int, f, recordsEnd time.Time, d due) (due, *fault) {
	seen := map[*fault]bool{}
	for {
		x := s.excuseAfter(job, jr, hb, i, f, d, seen)
		if x == nil {
			return d, nil
		}
		next, ok := s.throughOutage(job, p, hb, x, i, f, d)
		if by, _ := next.deadline(f, p); !ok || by.After(recordsEnd) {
			return d, x
		}
		seen[x] = true
		d = next
	}
}

// throughOutage: fire f of item i (due d) came due while x, a full
// ZooKeeper fault, kept the incarnations that had to serve it from the
// registry. Each of them runs one catch-up of its skipped fires once it
// is back (hb: its session kept, once it talks to ZooKeeper again; its
// session lost, once registered again in a new one): the fire is due by
// the latest of their back times plus outageMargin. A resharding pending
// then holds the catch-up back as catchUp holds a misfire's; and as the
// catch-up runs the items its instance owns when it begins, an item
// moved by a resharding pending after the instances are back is served
// by its new owner at the first fire after the commit (the catch-up of
// the instance it moved to may have run already): due then + 1 s, or
// the commit + pumpMargin if later. The owners until the due time have
// to serve it. It reports false when x is not a full ZooKeeper fault, or
// when an incarnation x hit that had to serve the fire does not live on
// after its back time (killed meanwhile: its items are the resharding's,
// which the fault excuses until then).
func (s *suite) throughOutage(job string, p time.Duration, hb hostBack, x *fault, i int, f time.Time, d due) (due, bool) {
	if !x.zkDown {
		return d, false
	}
	var back time.Time
	for _, pid := range d.pids {
		b, hit := hb[x][job][pid]
		if !hit {
			continue
		}
		if !s.livesAt(job, pid, b) {
			return d, false
		}
		back = maxTime(back, b)
	}
	if back.IsZero() {
		return d, false
	}
	d = s.catchUp(job, p, d, back, outageMargin, "the catch-up after the full ZooKeeper fault "+x.kind)
	for seen := back; ; {
		sp, ok := s.timeline.pending(job, seen, d.by)
		if !ok || sp.to.IsZero() || !sp.to.After(seen) {
			break
		}
		next := sp.to.Truncate(p).Add(p)
		by, from := next.Add(startMargin), next
		if c := sp.to.Add(pumpMargin); c.After(by) {
			by, from = c, sp.to
		}
		d = d.later(by, from, d.rule+" (its item moved by a resharding)")
		seen = sp.to
	}
	for _, id := range s.timeline.ownersIn(job, i, f, d.by) {
		if pid := pidOf(id); pid > 0 && !slices.Contains(d.pids, pid) {
			d.pids = append(d.pids, pid)
		}
	}
	return d, true
}

// livesAt reports whether the incarnation pid has a live instance node of
// job at t (created by then and not deleted before it).
func (s *suite) livesAt(job string, pid int, t time.Time) bool {
	for _, l := range s.timeline.instanceLives(job, []int{pid}) {
		if !l.from.After(t) && (l.to.IsZero() || l.to.After(t)) {
			return true
		}
	}
	return false
}

// kindShares lists counts by fault kind, each with its share of of.
func kindShares(counts map[string]int, of int) string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(counts)) {
		out = append(out, fmt.Sprintf("%s %d (%s)", k, counts[k], percent(counts[k], of)))
	}
	return strings.Join(out, ", ")
}

// pidNames names host incarnations: h1(pid).
func (s *suite) pidNames(pids []int) string {
	var out []string
	for _, p := range pids {
		out = append(out, fmt.Sprintf("%s(%d)", s.hostOf(p), p))
	}
	return strings.Join(out, " ")
}

// coverage: every fire of every item is served (see due), unless a fault
// excuses it (see excuse), or it was served late by as much as the
// machine starved (see starved). Fires whose due time is after the
// records' end are not judged.
func (s *suite) checkCoverage(v *violations, st *stats, runs []*run, from, to, recordsEnd time.Time) {
	hb := s.backTimes()
	for _, job := range []string{jobFO, jobNoFO} {
		p := period(job)
		jr := s.indexRuns(job, runs)
		for f := from.Truncate(p).Add(p); !f.Add(p).After(to); f = f.Add(p) {
			st.fires[job]++
			all := true
			for i := 0; i < items; i++ {
				d := s.serveBy(job, p, jr, i, f)
				deadline, from := d.deadline(f, p)
				if deadline.After(recordsEnd) {
					st.beyond[job]++
					all = false
					continue
				}
				st.itemFires[job]++
				if x := s.excuse(job, jr, hb, i, f, d); x != nil {
					var y *fault
					if d, y = s.judgeThrough(job, p, jr, hb, i, f, recordsEnd, d); y != nil {
						st.excusedBy[job][y.kind]++
						all = false
						continue
					}
					st.throughOutage[job][x.kind]++
					deadline, from = d.deadline(f, p)
				}
				if len(startedBetween(jr.byItem[i], f, deadline.Add(time.Nanosecond))) > 0 {
					st.itemChecked[job]++
					continue
				}
				lost, ok := s.starved(jr, i, f, deadline, from)
				if ok {
					st.starved[job]++
					st.starvedLost[job] = max(st.starvedLost[job], lost)
					st.starvedList = append(st.starvedList, fmt.Sprintf("%s fire %s item %d: due %s by %s, %s; stalls measured from %s: %v",
						job, f.Format("15:04:05"), i, d.rule, deadline.Format("15:04:05.000"), s.firstRunAfter(jr, i, f),
						from.Format("15:04:05.000"), lost.Round(time.Millisecond)))
					all = false
					continue
				}
				if y, lost := s.starvedInto(job, p, jr, hb, i, f, recordsEnd, d, deadline, from); y != nil {
					st.starved[job]++
					st.starvedLost[job] = max(st.starvedLost[job], lost)
					st.starvedList = append(st.starvedList, fmt.Sprintf("%s fire %s item %d: due %s by %s, starved into %s %s at %s; stalls measured from %s: %v",
						job, f.Format("15:04:05"), i, d.rule, deadline.Format("15:04:05.000"), y.kind, y.target,
						y.began.Format("15:04:05.000"), from.Format("15:04:05.000"), lost.Round(time.Millisecond)))
					all = false
					continue
				}
				st.itemChecked[job]++
				v.add("coverage", "%s fire %s item %d: no run started in [fire, %s] (due: %s by %s; instances %s); %s; stalls measured from %s to that run: %v",
					job, f.Format("15:04:05"), i, deadline.Format("15:04:05.000"), d.rule,
					d.by.Format("15:04:05.000"), s.pidNames(d.pids), s.lastRunBefore(runs, job, i, f)+"; "+s.firstRunAfter(jr, i, f),
					from.Format("15:04:05.000"), lost.Round(time.Millisecond))
			}
			if all {
				st.checked[job]++
			}
		}
	}
}

// starved: fire f of item i, not served by its deadline (due.deadline),
// is excused as starved when the first run of i after f started at s with
// s - deadline at most the stall a probe measured in [from, s], from being
// the moment the deadline's margin counts from: the machine, not the
// scheduler, kept the run from starting in time. It returns the stall
// measured. A stall before from is not counted: it delayed the event the
// rule waits for, which the deadline follows already.
func (s *suite) starved(jr jobRuns, i int, f, deadline, from time.Time) (time.Duration, bool) {
	next := startedBetween(jr.byItem[i], f, f.Add(maxRun))
	if len(next) == 0 {
		return 0, false
	}
	start := next[0].start
	lost := s.stalls.lost(from, start)
	return lost, start.Sub(deadline) <= lost
}

// starvedInto: fire f of item i (due d), not served by its deadline, with
// a probe's stalls measured from from: the machine held the run back by as
// much as it stalled, so it could start as late as deadline + that stall
// (the stalls in that extension counted too). A fault that hits an
// incarnation that had to serve the fire before that later deadline, and
// before any run of i started, excuses the fire as a fault within its due
// time does (judgeThrough); starvedInto returns that fault (nil when none)
// and the stall measured.
func (s *suite) starvedInto(job string, p time.Duration, jr jobRuns, hb hostBack, i int, f, recordsEnd time.Time, d due, deadline, from time.Time) (*fault, time.Duration) {
	lost := s.stalls.lost(from, deadline)
	for range 8 {
		more := s.stalls.lost(from, deadline.Add(lost))
		if more == lost {
			break
		}
		lost = more
	}
	if lost == 0 {
		return nil, 0
	}
	_, y := s.judgeThrough(job, p, jr, hb, i, f, recordsEnd, d.later(deadline.Add(lost), from, d.rule+", held back by starvation"))
	return y, lost
}

func (s *suite) lastRunBefore(runs []*run, job string, item int, f time.Time) string {
	var last *run
	for _, r := range runs {
		if r.job == job && r.item == item && r.start.Before(f) {
			last = r
		}
	}
	if last == nil {
		return "no earlier run"
	}
	return "previous run " + s.describe(last)
}

// firstRunAfter names the first run of item i that started at or after f,
// and how long after f: a late start and a missing run read differently.
func (s *suite) firstRunAfter(jr jobRuns, i int, f time.Time) string {
	next := startedBetween(jr.byItem[i], f, f.Add(maxRun))
	if len(next) == 0 {
		return "no later run"
	}
	return fmt.Sprintf("next run %s, %v after the fire", s.describe(next[0]), next[0].start.Sub(f).Round(time.Millisecond))
}

func (s *suite) describe(r *run) string {
	name := "?"
	if h := s.hostByPID(r.hostPID); h != nil {
		name = h.name
	}
	return fmt.Sprintf("%s(%s)", r, name)
}

// failover: a run of the failover job cut off before its end (cancelled,
// or its recorder killed) is followed by a start of the same item within
// sessionTimeout + tick + period + rejoin + 2s of the cut. Any instance
// counts: the guarantee is at-least-once per item, and an instance whose
// session survived (or that re-registered and claimed its own queued item)
// legitimately re-runs the item itself. While ZooKeeper is fully down
// nothing can be claimed, so the deadline runs from ZooKeeper's return when
// the cut fell in a full outage, and is pushed past every full outage that
// begins before it (outages stack in the short schedule).
func (s *suite) checkFailover(v *violations, st *stats, runs []*run, to time.Time) {
	bound := failoverBound
	for _, r := range runs {
		if r.job != jobFO || r.kind == 'E' {
			continue
		}
		deadline := s.failoverDeadline(r.end, bound)
		if deadline.After(to) {
			continue // the records end before the deadline
		}
		if r.kind == 0 && processAlive(r.recPID) {
			continue // still running (a frozen recorder would be thawed by now)
		}
		var next *run
		for _, z := range runs {
			if z != r && z.job == r.job && z.item == r.item && z.start.After(r.start) {
				next = z
				break
			}
		}
		if next == nil || next.start.After(deadline) {
			got := "never"
			if next != nil {
				got = "only at " + s.describe(next)
			}
			v.add("failover", "%s cut off at %s; item not started again by %s (%v after the cut, or after ZooKeeper's return from outages in between): %s",
				s.describe(r), r.end.Format("15:04:05.000"), deadline.Format("15:04:05.000"), bound, got)
			continue
		}
		st.latencies = append(st.latencies, max(0, next.start.Sub(r.end)))
	}
}

// failoverBound is how long after a cut-off (outside full ZooKeeper
// outages) its item may take to start again: the session expiry, a tick,
// the wait for the next trigger, a restarted host's rejoin and 2 s.
const failoverBound = sessionTimeout + tick + jobFOPeriod + rejoin + 2*time.Second

// failoverDeadline is the latest start of a re-run of an item cut off at
// cut: bound after the cut, where time inside a full ZooKeeper outage (and
// the session expiry that follows its return) does not count.
func (s *suite) failoverDeadline(cut time.Time, bound time.Duration) time.Time {
	deadline := cut.Add(bound)
	for changed := true; changed; {
		changed = false
		for _, x := range s.faults {
			if !x.zkDown || x.at.After(deadline) || !x.healed.Add(sessionTimeout+tick).After(cut) {
				continue
			}
			if d := x.healed.Add(bound); d.After(deadline) {
				deadline, changed = d, true
			}
		}
	}
	return deadline
}

// exclusion: no two runs of one item of a job overlap in time (judged on
// the recorders' heartbeats, so a frozen recorder is not running), except
// within the window: from a fault that may cost an affected host its
// session until W after that host can know it (told).
func (s *suite) checkExclusion(v *violations, st *stats, runs []*run) {
	type key struct {
		job  string
		item int
	}
	groups := map[key][]*run{}
	for _, r := range runs {
		groups[key{r.job, r.item}] = append(groups[key{r.job, r.item}], r)
	}
	w := *flagWindow
	ks := make([]key, 0, len(groups))
	for k := range groups {
		ks = append(ks, k)
	}
	sort.Slice(ks, func(i, j int) bool { return ks[i].job+fmt.Sprint(ks[i].item) < ks[j].job+fmt.Sprint(ks[j].item) })
	for _, k := range ks {
		g := groups[k]
		for i := range g {
			for j := i + 1; j < len(g); j++ {
				a, b := g[i], g[j]
				if !b.start.Before(a.end) {
					break // g is in start order: no later run overlaps a
				}
				for _, sa := range a.segments() {
					for _, sb := range b.segments() {
						o1, o2 := maxTime(sa[0], sb[0]), minTime(sa[1], sb[1])
						if !o1.Before(o2) {
							continue
						}
						if f := s.window(a, b, o1, o2, w); f != nil {
							d := o2.Sub(o1)
							st.windowed = append(st.windowed, fmt.Sprintf("%v after %s of %s (told %s): %s and %s",
								d.Round(time.Millisecond), f.kind, f.target, f.told.Format("15:04:05.000"), s.describe(a), s.describe(b)))
							st.maxWindow = max(st.maxWindow, d)
							continue
						}
						v.add("exclusion", "%s/%d ran twice at once for %v [%s, %s]: %s and %s; %s",
							k.job, k.item, o2.Sub(o1).Round(time.Millisecond), o1.Format("15:04:05.000"), o2.Format("15:04:05.000"),
							s.describe(a), s.describe(b), s.faultBefore(o1))
					}
				}
			}
		}
	}
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// window returns the fault whose window covers the overlap [o1, o2] of a
// and b: a fault that could cost a's or b's host its session, started
// before the overlap, with the overlap ending within w after told.
func (s *suite) window(a, b *run, o1, o2 time.Time, w time.Duration) *fault {
	for _, f := range s.faults {
		if f.told.IsZero() || !(f.affected[a.hostPID] || f.affected[b.hostPID]) {
			continue
		}
		if !o1.Before(f.windowFrom) && !o2.After(f.told.Add(w)) {
			return f
		}
	}
	return nil
}

func (s *suite) faultBefore(t time.Time) string {
	var last *fault
	for _, f := range s.faults {
		if f.at.Before(t) {
			last = f
		}
	}
	if last == nil {
		return "no fault before"
	}
	return fmt.Sprintf("last fault before: %s (told %s)", last, last.told.Format("15:04:05.000"))
}

// summary prints the table of the run.
func (s *suite) summary(v *violations, st *stats, runs []*run) {
	var b strings.Builder
	fmt.Fprintf(&b, "\n==== chaos summary (%s, %d hosts, session %v, tick %v, window %v) ====\n",
		map[bool]string{true: "3-node ensemble", false: "standalone ZooKeeper"}[s.ensemble], len(s.hosts), sessionTimeout, tick, *flagWindow)
	byKind := map[string]int{}
	for _, f := range s.faults {
		byKind[f.kind]++
	}
	kinds := make([]string, 0, len(byKind))
	for k := range byKind {
		kinds = append(kinds, k)
	}
	slices.Sort(kinds)
	fmt.Fprintf(&b, "faults injected: %d\n", len(s.faults))
	for _, k := range kinds {
		fmt.Fprintf(&b, "  %-32s %d\n", k, byKind[k])
	}
	fmt.Fprintf(&b, "coverage: fires whose every item was judged / fires in the checked span; fire-items judged / due in the span (the rest excused):\n")
	for _, j := range []string{jobFO, jobNoFO} {
		fmt.Fprintf(&b, "  %-32s %d / %d fires; %d / %d fire-items (%s)\n", j, st.checked[j], st.fires[j],
			st.itemChecked[j], st.itemFires[j], percent(st.itemChecked[j], st.itemFires[j]))
	}
	fmt.Fprintf(&b, "fire-items excused by fault kind (share of the job's fire-items):\n")
	for _, j := range []string{jobFO, jobNoFO} {
		fmt.Fprintf(&b, "  %-32s %s\n", j, kindShares(st.excusedBy[j], st.itemFires[j]))
	}
	fmt.Fprintf(&b, "fire-items judged through a full ZooKeeper fault (due after the catch-up once the hosts are back), by fault kind:\n")
	for _, j := range []string{jobFO, jobNoFO} {
		fmt.Fprintf(&b, "  %-32s %s\n", j, kindShares(st.throughOutage[j], st.itemFires[j]))
	}
	fmt.Fprintf(&b, "fire-items excused by starvation (started late by no more than the stall a probe measured meanwhile, or held back by it into a fault that hit the owner):\n")
	for _, j := range []string{jobFO, jobNoFO} {
		fmt.Fprintf(&b, "  %-32s %d (%s), longest stall %v\n", j, st.starved[j], percent(st.starved[j], st.itemFires[j]),
			st.starvedLost[j].Round(time.Millisecond))
	}
	for k, line := range st.starvedList {
		if k == 25 {
			fmt.Fprintf(&b, "  ... and %d more\n", len(st.starvedList)-k)
			break
		}
		fmt.Fprintf(&b, "  %s\n", line)
	}
	fmt.Fprintf(&b, "stalls measured:\n")
	for _, line := range s.stalls.report() {
		fmt.Fprintf(&b, "  %s\n", line)
	}
	fmt.Fprintf(&b, "item executions (started / ended / cancelled / no end line):\n")
	for _, j := range []string{jobFO, jobNoFO} {
		var n, e, c, k int
		for _, r := range runs {
			if r.job != j {
				continue
			}
			n++
			switch r.kind {
			case 'E':
				e++
			case 'C':
				c++
			default:
				k++
			}
		}
		fmt.Fprintf(&b, "  %-32s %d / %d / %d / %d\n", j, n, e, c, k)
	}
	fmt.Fprintf(&b, "violations:\n")
	for _, inv := range invariants {
		if (inv == "upgrade" || inv == "once") && !s.upgrade {
			continue // checked by the rolling upgrade only
		}
		fmt.Fprintf(&b, "  %-32s %d\n", inv, len(v.by[inv]))
	}
	lat := slices.Sorted(slices.Values(st.latencies))
	var p50, p99, maxLat time.Duration
	if n := len(lat); n > 0 {
		p50, p99, maxLat = lat[(n-1)/2], lat[(n-1)*99/100], lat[n-1]
	}
	fmt.Fprintf(&b, "failover re-runs: %d, latency p50 %v, p99 %v, max %v (cut-off to the item's start elsewhere)\n",
		len(lat), p50.Round(time.Millisecond), p99.Round(time.Millisecond), maxLat.Round(time.Millisecond))
	fmt.Fprintf(&b, "fenced store: %d writes, %d without a fencing token; stale writes rejected %d, accepted %d; fresh writes rejected %d\n",
		st.fence.Writes, st.fence.Unfenced, st.fence.StaleRejected, st.fence.StaleAccepted, st.fence.FreshRejected)
	fmt.Fprintf(&b, "overlaps inside the window: %d, longest %v\n", len(st.windowed), st.maxWindow.Round(time.Millisecond))
	for _, w := range st.windowed {
		fmt.Fprintf(&b, "  %s\n", w)
	}
	fmt.Fprintf(&b, "recovery: every host fired again %v after the faults; tree clean %v later\n",
		s.rejoinAfter.Round(time.Millisecond), s.cleanAfter.Round(time.Millisecond))
	fmt.Fprintf(&b, "fault log (back: when each incarnation the fault hit was back for %s, after healed):\n", jobNoFO)
	hb := s.backTimes()
	for _, f := range s.faults {
		var back []string
		for _, pid := range f.pids {
			back = append(back, fmt.Sprintf("%s %+v", s.pidNames([]int{pid}), hb[f][jobNoFO][pid].Sub(f.healed).Round(time.Millisecond)))
		}
		fmt.Fprintf(&b, "  %s; back: %s\n", f, strings.Join(back, ", "))
	}
	s.t.Log(b.String())
}
