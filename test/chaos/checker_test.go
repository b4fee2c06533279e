package chaos

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/ejob-io/ejob/internal/testkit"
)

// The checker's own rules on made-up records: these run in `go test ./...`
// (no cluster needed).

func TestCheckOnceCountsNormalEndsPerFire(t *testing.T) {
	from := time.Unix(1000, 0)
	to := from.Add(10 * time.Second)
	runsOf := func(extra int, kind byte) []*run {
		var runs []*run
		// One run per second of chaosNoFailover item 0 in [from+1s, to).
		for k := 1; k < 10; k++ {
			start := from.Add(time.Duration(k)*time.Second + 10*time.Millisecond)
			runs = append(runs, &run{job: jobNoFO, item: 0, start: start, end: start.Add(300 * time.Millisecond), kind: 'E'})
		}
		for k := 0; k < extra; k++ {
			start := from.Add(5*time.Second + 500*time.Millisecond)
			runs = append(runs, &run{job: jobNoFO, item: 0, start: start, end: start.Add(300 * time.Millisecond), kind: kind})
		}
		return runs
	}
	s := &suite{}
	for name, c := range map[string]struct {
		runs []*run
		want int
	}{
		"one run a fire":                {runsOf(0, 'E'), 0},
		"a catch-up of the fire before": {runsOf(1, 'E'), 0},
		"a fire run twice more":         {runsOf(2, 'E'), 1},
		"cut-off runs do not count":     {runsOf(3, 'C'), 0},
	} {
		t.Run(name, func(t *testing.T) {
			v := &violations{}
			s.checkOnce(v, c.runs, from, to)
			if got := len(v.by["once"]); got != c.want {
				t.Fatalf("%d once violations, want %d: %v", got, c.want, v.by["once"])
			}
		})
	}
}

func TestProxyReconnected(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	for name, c := range map[string]struct {
		answered, ended []time.Time
		want            string
	}{
		"connection kept":             {[]time.Time{at(-5000)}, nil, "kept"},
		"connection closed before":    {[]time.Time{at(-5000)}, []time.Time{at(-100)}, "kept"},
		"dropped, answered after":     {[]time.Time{at(-5000), at(2500)}, []time.Time{at(100)}, "2.5s"},
		"dropped, no answer yet":      {[]time.Time{at(-5000)}, []time.Time{at(100)}, "none"},
		"answered on another member":  {[]time.Time{at(-5000), at(800)}, []time.Time{at(100)}, "800ms"},
		"answered, then closed again": {[]time.Time{at(800), at(2500)}, []time.Time{at(100), at(900)}, "2.5s"},
	} {
		t.Run(name, func(t *testing.T) {
			p := &proxy{answered: c.answered, ended: c.ended}
			a, dropped, ok := p.reconnected(t0, at(2000))
			got := "none"
			switch {
			case !dropped:
				got = "kept"
			case ok:
				got = fmt.Sprint(a.Sub(t0))
			}
			if got != c.want {
				t.Fatalf("reconnected: %s, want %s", got, c.want)
			}
		})
	}
}

// A fire-item served late is excused as starved only by as much stall as
// a probe measured from the moment its margin counts from (the fire, or a
// pending resharding's commit) to the late start; otherwise it is a
// coverage violation.
func TestCheckCoverageExcusesOnlyMeasuredStarvation(t *testing.T) {
	t0 := time.Unix(1000, 0)
	from, to := t0, t0.Add(20*time.Second)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	// Every fire of every item of both jobs runs 10 ms after it, except
	// chaosNoFailover item 1, fired at 5 s and 6 s: one run 1.3 s after the
	// first fire (300 ms past its due, serving the second too); and
	// chaosFailover item 2, fired at 8 s while a resharding is pending
	// until 11 s: one run at 13.4 s (400 ms past its due, commit + 2 s,
	// serving the fire at 12 s too).
	runsOf := func() []*run {
		var runs []*run
		for _, job := range []string{jobFO, jobNoFO} {
			p := period(job)
			for f := from.Truncate(p); f.Before(to.Add(5 * time.Second)); f = f.Add(p) {
				for i := 0; i < items; i++ {
					if job == jobNoFO && i == 1 && (f.Equal(at(5000)) || f.Equal(at(6000))) ||
						job == jobFO && i == 2 && (f.Equal(at(8000)) || f.Equal(at(12000))) {
						continue
					}
					start := f.Add(10 * time.Millisecond)
					runs = append(runs, &run{job: job, item: i, start: start, end: start.Add(300 * time.Millisecond), kind: 'E'})
				}
			}
		}
		runs = append(runs,
			&run{job: jobNoFO, item: 1, start: at(6300), end: at(6600), kind: 'E'},
			&run{job: jobFO, item: 2, start: at(13400), end: at(13900), kind: 'E'})
		slices.SortStableFunc(runs, func(a, b *run) int { return a.start.Compare(b.start) }) // as runLog.read
		return runs
	}
	stall := func(fromMS, toMS int) []testkit.Stall { return []testkit.Stall{{From: at(fromMS), To: at(toMS)}} }
	for name, c := range map[string]struct {
		stalls     []testkit.Stall
		starved    map[string]int
		violations int
	}{
		"no stall: both late starts are violations":              {nil, nil, 2},
		"a stall covering the late start after the fire":         {stall(5200, 5600), map[string]int{jobNoFO: 1}, 1},
		"a stall shorter than the lateness":                      {stall(5200, 5400), nil, 2},
		"a stall before the fire":                                {stall(4000, 4900), nil, 2},
		"a stall after the commit covers the start after it":     {stall(11500, 12000), map[string]int{jobFO: 1}, 1},
		"a stall before the commit is the commit's, not counted": {stall(8500, 10500), nil, 2},
		"stalls covering both": {append(stall(5100, 5500), stall(12000, 12500)...),
			map[string]int{jobNoFO: 1, jobFO: 1}, 0},
	} {
		t.Run(name, func(t *testing.T) {
			s := &suite{stalls: &stallLog{}, timeline: &timeline{necessary: map[string][]span{jobFO: {{from: at(7900), to: at(11000)}}}}}
			s.stalls.set(probeSide, c.stalls)
			s.stalls.set(probeSuite, nil)
			v := &violations{}
			st := newStats()
			s.checkCoverage(v, st, runsOf(), from, to, to.Add(10*time.Second))
			if got := len(v.by["coverage"]); got != c.violations {
				t.Errorf("%d coverage violations, want %d: %v", got, c.violations, v.by["coverage"])
			}
			for _, job := range []string{jobFO, jobNoFO} {
				if st.starved[job] != c.starved[job] {
					t.Errorf("%s: %d fire-items excused by starvation, want %d", job, st.starved[job], c.starved[job])
				}
				if want := st.itemFires[job] - st.starved[job]; st.itemChecked[job] != want {
					t.Errorf("%s: %d fire-items judged, want %d (every one due but those excused)", job, st.itemChecked[job], want)
				}
			}
		})
	}
}

// A full ZooKeeper fault excuses nothing on its own: the fires due while no
// server answered are due after the catch-up run each instance makes once
// it is back (misfire on), so a missing catch-up is a coverage violation.
// One host (its session kept: back at the fault's end, 5.5 s) owns every
// item; no run starts during the outage (3.5 s to 5.5 s). chaosFailover's
// fire at 4 s is due by back + 2 s = 7.5 s, and served by a run that
// starts in [4 s, max(4 s + P, 7.5 s)]: without a catch-up, its next run
// (of the fire at 8 s, 10 ms after it) is too late. The fault still excuses the fires of an
// incarnation that is not back alive (killed during the outage), and a
// resharding pending once the host is back holds the catch-up back to the
// first fire after its commit.
func TestCheckCoverageJudgesFullZooKeeperFaultsByTheCatchUp(t *testing.T) {
	t0 := time.Unix(1000, 0)
	from, to := t0, t0.Add(20*time.Second)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	const pid = 11
	id := "10.0.0.1@-@11"
	runsOf := func(catchUpAt int) []*run {
		var runs []*run
		for _, job := range []string{jobFO, jobNoFO} {
			p := period(job)
			for f := from.Truncate(p); f.Before(to.Add(5 * time.Second)); f = f.Add(p) {
				if !f.Before(at(3500)) && f.Before(at(5500)) {
					continue // the outage
				}
				for i := 0; i < items; i++ {
					start := f.Add(10 * time.Millisecond)
					runs = append(runs, &run{job: job, item: i, instance: id, hostPID: pid, start: start, end: start.Add(300 * time.Millisecond), kind: 'E'})
				}
			}
			for i := 0; catchUpAt > 0 && i < items; i++ {
				runs = append(runs, &run{job: job, item: i, instance: id, hostPID: pid, start: at(catchUpAt), end: at(catchUpAt + 300), kind: 'E'})
			}
		}
		slices.SortStableFunc(runs, func(a, b *run) int { return a.start.Compare(b.start) })
		return runs
	}
	alive := []span{{from: at(-10000)}}
	killed := []span{{from: at(-10000), to: at(4500)}}
	for name, c := range map[string]struct {
		lives      []span
		necessary  []span
		catchUpAt  int // ms; 0: no catch-up run
		violations int
		excused    int // chaosFailover fire-items the fault excuses
		through    int // chaosFailover fire-items judged through it
	}{
		"the catch-up right after the outage":        {alive, nil, 6000, 0, 0, 4},
		"no catch-up: the fire at 4 s is lost":       {alive, nil, 0, 4, 0, 4},
		"the host killed during the outage":          {killed, nil, 0, 0, 4, 0},
		"a resharding pending when the host is back": {alive, []span{{from: at(5700), to: at(7000)}}, 0, 0, 0, 4},
	} {
		t.Run(name, func(t *testing.T) {
			tl := &timeline{owners: map[string]map[int][]ownerChange{}, necessary: map[string][]span{jobFO: c.necessary, jobNoFO: c.necessary},
				instances: map[string]map[string][]span{}}
			for _, job := range []string{jobFO, jobNoFO} {
				tl.owners[job] = map[int][]ownerChange{}
				for i := 0; i < items; i++ {
					tl.owners[job][i] = []ownerChange{{at: at(-10000), instance: id}}
				}
				tl.instances[job] = map[string][]span{id: c.lives}
			}
			s := &suite{stalls: &stallLog{}, timeline: tl,
				hosts:  []*host{{name: "h1", pids: []int{pid}, proxy: &proxy{answered: []time.Time{at(-10000)}}}},
				faults: []*fault{{kind: "zk-outage-long", target: "zk", at: at(3500), began: at(3500), healed: at(5500), zkDown: true, pids: []int{pid}}}}
			s.stalls.set(probeSide, nil)
			s.stalls.set(probeSuite, nil)
			v := &violations{}
			st := newStats()
			s.checkCoverage(v, st, runsOf(c.catchUpAt), from, to, to.Add(10*time.Second))
			if got := len(v.by["coverage"]); got != c.violations {
				t.Errorf("%d coverage violations, want %d: %v", got, c.violations, v.by["coverage"])
			}
			if got := st.excusedBy[jobFO]["zk-outage-long"]; got != c.excused {
				t.Errorf("%s: %d fire-items excused, want %d", jobFO, got, c.excused)
			}
			if got := st.throughOutage[jobFO]["zk-outage-long"]; got != c.through {
				t.Errorf("%s: %d fire-items judged through the fault, want %d", jobFO, got, c.through)
			}
		})
	}
}

// Only a job's leader flags the resharding an instance's crash calls for
// (as upstream), so a fault that hits the leader before it flagged excuses
// the fires of the crashed owner's items until that leader is back: the
// next leader, elected once the killed one's session expired, flags it.
// A chaos run (seed 35) killed host A, the owner of every item and the
// leader; B was elected when A's node went (6 s) and was killed 10 ms
// later, before it flagged; C, elected when B's node went (8.4 s),
// flagged and committed (9 s). The fires at 7 s and 8 s are excused by
// the kill of B; with B unharmed, a flag that late loses them.
func TestCheckCoverageExcusesFiresWhileTheLeaderThatFlagsIsDown(t *testing.T) {
	t0 := time.Unix(1000, 0)
	from, to := t0, t0.Add(20*time.Second)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	idA, idB, idC := "10.0.0.1@-@11", "10.0.0.2@-@12", "10.0.0.3@-@13"
	var runs []*run
	for _, job := range []string{jobFO, jobNoFO} {
		p := period(job)
		for f := from.Truncate(p); f.Before(to.Add(5 * time.Second)); f = f.Add(p) {
			id, pid, start := idA, 11, f.Add(10*time.Millisecond)
			switch {
			case !f.Before(at(4000)) && f.Before(at(9000)):
				continue // A killed; no resharding until 9 s
			case !f.Before(at(9000)):
				id, pid = idC, 13
				if f.Equal(at(9000)) {
					start = at(9150) // after the commit
				}
			}
			for i := 0; i < items; i++ {
				runs = append(runs, &run{job: job, item: i, instance: id, hostPID: pid, start: start, end: start.Add(300 * time.Millisecond), kind: 'E'})
			}
		}
	}
	slices.SortStableFunc(runs, func(a, b *run) int { return a.start.Compare(b.start) })
	killA := &fault{kind: "kill", target: "h1", at: at(4000), began: at(4000), healed: at(4800), pids: []int{11}}
	killB := &fault{kind: "kill-leader", target: "h2", at: at(6110), began: at(6110), healed: at(8800), pids: []int{12}}
	for name, c := range map[string]struct {
		faults     []*fault
		violations int
		excused    int // chaosNoFailover fire-items the leader's kill excuses
	}{
		"the leader killed before it flagged":             {[]*fault{killA, killB}, 0, 2 * items},
		"the leader unharmed: a flag that late loses two": {[]*fault{killA}, 2 * items, 0},
	} {
		t.Run(name, func(t *testing.T) {
			tl := sameForBothJobs([]ownerChange{{at: at(-10000), instance: idA}, {at: at(9000), instance: idC}},
				map[string][]span{
					idA: {{from: at(-10000), to: at(6000)}},
					idB: {{from: at(-10000), to: at(8400)}},
					idC: {{from: at(-10000)}},
				},
				[]ownerChange{{at: at(-10000), instance: idA}, {at: at(6000)},
					{at: at(6100), instance: idB}, {at: at(8400)}, {at: at(8430), instance: idC}},
				[]span{{from: at(8430), to: at(9000)}})
			s := &suite{stalls: &stallLog{}, timeline: tl, faults: c.faults, hosts: []*host{
				{name: "h1", pids: []int{11}}, {name: "h2", pids: []int{12}}, {name: "h3", pids: []int{13}}}}
			s.stalls.set(probeSide, nil)
			s.stalls.set(probeSuite, nil)
			v := &violations{}
			st := newStats()
			s.checkCoverage(v, st, runs, from, to, to.Add(10*time.Second))
			if got := len(v.by["coverage"]); got != c.violations {
				t.Errorf("%d coverage violations, want %d: %v", got, c.violations, v.by["coverage"])
			}
			if got := st.excusedBy[jobNoFO]["kill-leader"]; got != c.excused {
				t.Errorf("%s: %d fire-items excused by kill-leader, want %d", jobNoFO, got, c.excused)
			}
		})
	}
}

// The catch-up of a fire whose owner was busy at it also waits for the
// failover execution of the instance a resharding gives the item to
// meanwhile: a fire of the schedule that finds claims runs the claimed
// items only, and the item's flag is served right after that execution. A
// chaos run (short form, seed 102) had h3 busy at a fire of item 1; the
// resharding gave item 1 to h2, whose execution of its claimed item 3 took
// 3.5 s, and the judge, holding the fire to h3's catch-up alone, called it
// lost. Here A runs item 0 across the fire at 8 s, the resharding at 10.1 s
// gives item 1 to B, B runs its claimed item 3 from 10.15 s to 13.5 s and
// item 1 right after; with B's item 1 run only at its next fire (16 s),
// the fires at 8 s and 12 s are lost.
func TestCheckCoverageWaitsForTheNewOwnersFailoverExecution(t *testing.T) {
	t0 := time.Unix(1000, 0)
	from, to := t0, t0.Add(20*time.Second)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	idA, idB := "10.0.0.1@-@11", "10.0.0.2@-@12"
	for name, c := range map[string]struct {
		item1At    int // B's run of item 1 after its failover execution
		violations int
	}{
		"right after the failover execution": {13550, 0},
		"only at its next fire":              {16010, 2},
	} {
		t.Run(name, func(t *testing.T) {
			var runs []*run
			add := func(job string, i int, id string, pid, start, end int) {
				runs = append(runs, &run{job: job, item: i, instance: id, hostPID: pid, start: at(start), end: at(end), kind: 'E'})
			}
			for _, job := range []string{jobFO, jobNoFO} {
				p := int(period(job) / time.Millisecond)
				for f := 0; f < 25000; f += p {
					for i := 0; i < items; i++ {
						switch {
						case job == jobNoFO:
						case f == 8000:
							continue // the exceptions below
						case f == 12000 && i != 0 && i != 2:
							continue
						case f >= 16000 && i == 1:
							add(job, i, idB, 12, f+10, f+310)
							continue
						}
						add(job, i, idA, 11, f+10, f+310)
					}
				}
			}
			add(jobFO, 0, idA, 11, 7950, 9300)   // across the fire at 8 s
			add(jobFO, 0, idA, 11, 9350, 9650)   // its catch-up
			add(jobFO, 2, idA, 11, 9350, 9650)   // the fire's, after the execution
			add(jobFO, 3, idB, 12, 10150, 13500) // B's claimed item
			add(jobFO, 3, idA, 11, 13560, 13860) // its catch-up on its owner
			if c.item1At < 16000 {
				add(jobFO, 1, idB, 12, c.item1At, c.item1At+300)
			}
			slices.SortStableFunc(runs, func(a, b *run) int { return a.start.Compare(b.start) })
			tl := &timeline{owners: map[string]map[int][]ownerChange{}, claims: map[string]map[int][]claim{},
				instances: map[string]map[string][]span{}, necessary: map[string][]span{}, leaders: map[string][]ownerChange{}}
			for _, job := range []string{jobFO, jobNoFO} {
				tl.owners[job] = map[int][]ownerChange{}
				for i := 0; i < items; i++ {
					tl.owners[job][i] = []ownerChange{{at: at(-10000), instance: idA}}
				}
				tl.instances[job] = map[string][]span{idA: {{from: at(-10000)}}, idB: {{from: at(-10000)}}}
				tl.leaders[job] = []ownerChange{{at: at(-10000), instance: idA}}
			}
			tl.owners[jobFO][1] = append(tl.owners[jobFO][1], ownerChange{at: at(10100), instance: idB})
			tl.necessary[jobFO] = []span{{from: at(10000), to: at(10100)}}
			tl.claims[jobFO] = map[int][]claim{3: {{instance: idB, from: at(10050), to: at(13500)}}}
			s := &suite{stalls: &stallLog{}, timeline: tl, hosts: []*host{{name: "h1", pids: []int{11}}, {name: "h2", pids: []int{12}}}}
			s.stalls.set(probeSide, nil)
			s.stalls.set(probeSuite, nil)
			v := &violations{}
			s.checkCoverage(v, newStats(), runs, from, to, to.Add(10*time.Second))
			if got := len(v.by["coverage"]); got != c.violations {
				t.Errorf("%d coverage violations, want %d: %v", got, c.violations, v.by["coverage"])
			}
		})
	}
}

// A fire the machine's starvation held back past its due time into a fault
// that then hit its owner is excused by that fault: the owner could not
// have started the run sooner than the stall allowed, and the fault kept it
// from starting after. A soak run (standalone, seed 51204) had a 1.1 s
// registry stall from a fire of chaosNoFailover: the items of the other
// hosts started 1.16 s late (excused by starvation), and h2, whose
// execution of the fire waited on the registry, was frozen 1.14 s after
// the fire, before its scripts had started; its session expired, and the
// judge called items 0 and 3 lost, since the freeze began after their due
// time and their next runs (elsewhere, after the resharding) came 4 s
// late. Here A owns every item; its execution of chaosNoFailover's fire at
// 8 s (item 0) and 9 s (item 0) has not started when a sigstop freezes A
// at 9.136 s, its session expires at 11.5 s and it registers again at
// 12.7 s.
func TestCheckCoverageExcusesAFireStarvedIntoAFault(t *testing.T) {
	t0 := time.Unix(1000, 0)
	from, to := t0, t0.Add(20*time.Second)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	idA := "10.0.0.1@-@11"
	var runs []*run
	for _, job := range []string{jobFO, jobNoFO} {
		p := int(period(job) / time.Millisecond)
		for f := 0; f < 25000; f += p {
			for i := 0; i < items; i++ {
				if f > 9136 && f < 12700 || job == jobNoFO && i == 0 && (f == 8000 || f == 9000) {
					continue
				}
				runs = append(runs, &run{job: job, item: i, instance: idA, hostPID: 11, start: at(f + 10), end: at(f + 310), kind: 'E'})
			}
		}
	}
	slices.SortStableFunc(runs, func(a, b *run) int { return a.start.Compare(b.start) })
	freeze := &fault{kind: "sigstop", target: "h1", at: at(9136), began: at(9136), healed: at(12600), pids: []int{11}}
	stall := func(fromMS, toMS int) []testkit.Stall { return []testkit.Stall{{From: at(fromMS), To: at(toMS)}} }
	for name, c := range map[string]struct {
		stalls     []testkit.Stall
		violations int
	}{
		"no stall: the fire is lost":                  {nil, 1},
		"a stall reaching the freeze":                 {stall(8000, 9200), 0},
		"a stall that, from the due time, reaches it": {stall(8000, 8200), 0},
		"a stall too short to reach it":               {stall(8000, 8100), 1},
		"a stall before the fire":                     {stall(6900, 7990), 1},
	} {
		t.Run(name, func(t *testing.T) {
			tl := sameForBothJobs([]ownerChange{{at: at(-10000), instance: idA}},
				map[string][]span{idA: {{from: at(-10000), to: at(11500)}, {from: at(12700)}}},
				[]ownerChange{{at: at(-10000), instance: idA}}, nil)
			s := &suite{stalls: &stallLog{}, timeline: tl, faults: []*fault{freeze}, hosts: []*host{{name: "h1", pids: []int{11}}}}
			s.stalls.set(probeSide, c.stalls)
			s.stalls.set(probeSuite, nil)
			v := &violations{}
			st := newStats()
			s.checkCoverage(v, st, runs, from, to, to.Add(10*time.Second))
			if got := len(v.by["coverage"]); got != c.violations {
				t.Errorf("%d coverage violations, want %d: %v", got, c.violations, v.by["coverage"])
			}
			if want := 1 - c.violations; st.starved[jobNoFO] != want {
				t.Errorf("%s: %d fire-items excused by starvation, want %d", jobNoFO, st.starved[jobNoFO], want)
			}
		})
	}
}

// sameForBothJobs is the timeline of a cluster in which both jobs see the
// same things: every item's owners, the instances' lives, the leaders and
// the pending reshardings.
func sameForBothJobs(owners []ownerChange, instances map[string][]span, leaders []ownerChange, necessary []span) *timeline {
	tl := &timeline{owners: map[string]map[int][]ownerChange{}, instances: map[string]map[string][]span{},
		necessary: map[string][]span{}, leaders: map[string][]ownerChange{}}
	for _, job := range []string{jobFO, jobNoFO} {
		tl.owners[job] = map[int][]ownerChange{}
		for i := 0; i < items; i++ {
			tl.owners[job][i] = owners
		}
		tl.instances[job] = instances
		tl.leaders[job] = leaders
		tl.necessary[job] = necessary
	}
	return tl
}
