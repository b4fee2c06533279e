package chaos

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ejob-io/ejob/core/reg"
	"github.com/ejob-io/ejob/core/reg/zookeeper"
)

// timeline is what the suite's observer saw of each job's tree, as it
// happened: who owned each item (sharding/{i}/instance), who had claimed
// it for failover (sharding/{i}/failover) and when resharding was pending
// (leader/sharding/necessary), and which instance led the job
// (leader/election/instance). The coverage check reads it to know which
// host had to serve a fire, which executions ran failover claims, and
// when a pending resharding held executions back. It follows the tree through a tree cache on its own
// connection, straight to ZooKeeper (no proxy): only full ZooKeeper faults
// reach it, and their fires are excused anyway; after such a fault the
// cache reads the tree again and reports what changed.
type timeline struct {
	mu        sync.Mutex
	owners    map[string]map[int][]ownerChange // job -> item -> changes, in time order
	claims    map[string]map[int][]claim       // job -> item -> failover claims, in time order
	necessary map[string][]span                // job -> pending resharding spans
	open      map[string]time.Time             // job -> start of a span not yet closed
	// instances are the lives of each instance node (instances/{id}): from
	// its creation to its deletion seen (a zero to: still there). A new
	// session of an instance re-creates the node, so a life per session.
	instances map[string]map[string][]span // job -> instance id -> lives, in time order
	// leaders are the changes of each job's leader node: its value, or ""
	// once it is deleted.
	leaders map[string][]ownerChange // job -> changes, in time order
}

type ownerChange struct {
	at       time.Time
	instance string
}

// claim is a failover claim of an item by instance, from its node's
// creation until its deletion was seen (a zero to: still there).
type claim struct {
	instance string
	from, to time.Time
}

// span is [from, to]; a zero to is still open.
type span struct{ from, to time.Time }

// watchTimeline starts following the namespace; it stops at the test's
// cleanup.
func (s *suite) watchTimeline() {
	tl := &timeline{owners: map[string]map[int][]ownerChange{}, claims: map[string]map[int][]claim{},
		necessary: map[string][]span{}, open: map[string]time.Time{}, instances: map[string]map[string][]span{},
		leaders: map[string][]ownerChange{}}
	s.timeline = tl
	ctx, cancel := context.WithCancel(context.Background())
	cfg := zookeeper.DefaultConfig(s.zk.Addr(), s.ns)
	cfg.SessionTimeoutMilliseconds = 4000
	cfg.ConnectionTimeoutMilliseconds = 2000
	cfg.BaseSleepTimeMilliseconds = 100
	cfg.MaxSleepTimeMilliseconds = 300
	cctx, ccancel := context.WithTimeout(ctx, 20*time.Second)
	c, err := zookeeper.Connect(cctx, cfg)
	ccancel()
	if err != nil {
		cancel()
		s.t.Fatalf("observer: %v", err)
	}
	cache := reg.NewTreeCache(c, "/")
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		_ = cache.Run(ctx)
	}()
	go func() {
		defer wg.Done()
		for ev := range cache.Events() {
			tl.add(ev, time.Now())
		}
	}()
	s.t.Cleanup(func() {
		cancel()
		wg.Wait()
		_ = c.Close()
	})
	select {
	case <-cache.Initialized():
	case <-time.After(20 * time.Second):
		s.t.Fatal("observer: tree cache not initialized")
	}
}

// add records one event seen at now. A node's creation time (Ctime) and a
// value's modification time (Mtime) are ZooKeeper's, on this machine's
// clock; a deletion is dated when seen.
func (tl *timeline) add(ev reg.TreeEvent, now time.Time) {
	parts := strings.Split(strings.TrimPrefix(ev.Path, "/"), "/")
	if len(parts) < 2 {
		return
	}
	job := parts[0]
	tl.mu.Lock()
	defer tl.mu.Unlock()
	switch {
	case len(parts) == 4 && parts[1] == "sharding" && parts[3] == "instance" && ev.Type != reg.NodeDeleted:
		i, err := strconv.Atoi(parts[2])
		if err != nil {
			return
		}
		if tl.owners[job] == nil {
			tl.owners[job] = map[int][]ownerChange{}
		}
		at := ev.Stat.ModTime()
		if ev.Stat.Mtime == 0 || at.After(now) {
			at = now
		}
		tl.owners[job][i] = append(tl.owners[job][i], ownerChange{at: at, instance: string(ev.Data)})
	case len(parts) == 4 && parts[1] == "sharding" && parts[3] == "failover":
		i, err := strconv.Atoi(parts[2])
		if err != nil {
			return
		}
		if tl.claims[job] == nil {
			tl.claims[job] = map[int][]claim{}
		}
		list := tl.claims[job][i]
		if n := len(list); n > 0 && list[n-1].to.IsZero() {
			list[n-1].to = now // deleted, or replaced by another claim
		}
		if ev.Type != reg.NodeDeleted {
			from := ev.Stat.CreateTime()
			if ev.Stat.Ctime == 0 || from.After(now) {
				from = now
			}
			list = append(list, claim{instance: string(ev.Data), from: from})
		}
		tl.claims[job][i] = list
	case len(parts) == 3 && parts[1] == "instances":
		if tl.instances[job] == nil {
			tl.instances[job] = map[string][]span{}
		}
		lives := tl.instances[job][parts[2]]
		n := len(lives)
		switch ev.Type {
		case reg.NodeAdded:
			from := ev.Stat.CreateTime()
			if ev.Stat.Ctime == 0 || from.After(now) {
				from = now
			}
			if n > 0 && lives[n-1].to.IsZero() {
				lives[n-1].to = from // its deletion was not seen (a re-read after an outage)
			}
			lives = append(lives, span{from: from})
		case reg.NodeDeleted:
			if n > 0 && lives[n-1].to.IsZero() {
				lives[n-1].to = now
			}
		}
		tl.instances[job][parts[2]] = lives
	case strings.Join(parts[1:], "/") == "leader/election/instance":
		if tl.leaders == nil {
			tl.leaders = map[string][]ownerChange{}
		}
		c := ownerChange{at: now, instance: string(ev.Data)}
		if ev.Type == reg.NodeDeleted {
			c.instance = ""
		} else if at := ev.Stat.ModTime(); ev.Stat.Mtime != 0 && !at.After(now) {
			c.at = at
		}
		tl.leaders[job] = append(tl.leaders[job], c)
	case strings.Join(parts[1:], "/") == "leader/sharding/necessary":
		switch ev.Type {
		case reg.NodeAdded:
			from := ev.Stat.CreateTime()
			if ev.Stat.Ctime == 0 || from.After(now) {
				from = now
			}
			tl.open[job] = from
		case reg.NodeDeleted:
			if from, ok := tl.open[job]; ok {
				tl.necessary[job] = append(tl.necessary[job], span{from, now})
				delete(tl.open, job)
			}
		}
	}
}

// instanceLives are the lives of the instance nodes of job whose
// instance id ends in one of pids.
func (tl *timeline) instanceLives(job string, pids []int) []span {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	var out []span
	for id, lives := range tl.instances[job] {
		if slices.Contains(pids, pidOf(id)) {
			out = append(out, lives...)
		}
	}
	slices.SortFunc(out, func(a, b span) int { return a.from.Compare(b.from) })
	return out
}

// ownerAt is the instance item i of job was assigned to at t ("" when
// unknown).
func (tl *timeline) ownerAt(job string, i int, t time.Time) string {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	id := ""
	for _, c := range tl.owners[job][i] {
		if c.at.After(t) {
			break
		}
		id = c.instance
	}
	return id
}

// claimedAt reports whether the observer saw item i of job claimed for
// failover by instance at t.
func (tl *timeline) claimedAt(job string, i int, instance string, t time.Time) bool {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	for _, c := range tl.claims[job][i] {
		if c.instance == instance && !c.from.After(t) && (c.to.IsZero() || !c.to.Before(t)) {
			return true
		}
	}
	return false
}

// ownersIn are the instances item i was assigned to at some moment of
// [from, to].
func (tl *timeline) ownersIn(job string, i int, from, to time.Time) []string {
	out := []string{tl.ownerAt(job, i, from)}
	tl.mu.Lock()
	defer tl.mu.Unlock()
	for _, c := range tl.owners[job][i] {
		if c.at.After(from) && !c.at.After(to) && !slices.Contains(out, c.instance) {
			out = append(out, c.instance)
		}
	}
	return out
}

// goneBy reports when the instance node of id (job) was deleted, if its
// last life begun by to ended by then.
func (tl *timeline) goneBy(job, id string, to time.Time) (time.Time, bool) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	var last span
	for _, l := range tl.instances[job][id] {
		if !l.from.After(to) {
			last = l
		}
	}
	if last.from.IsZero() || last.to.IsZero() || last.to.After(to) {
		return time.Time{}, false
	}
	return last.to, true
}

// leadersIn are the instances that led job at some moment of [from, to].
func (tl *timeline) leadersIn(job string, from, to time.Time) []string {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	var out []string
	cur := ""
	for _, c := range tl.leaders[job] {
		if c.at.After(to) {
			break
		}
		if c.at.After(from) && cur != "" && !slices.Contains(out, cur) {
			out = append(out, cur)
		}
		cur = c.instance
	}
	if cur != "" && !slices.Contains(out, cur) {
		out = append(out, cur)
	}
	return out
}

// pending returns the span of pending resharding of job that overlaps
// [from, to], if any (an open span ends at the far future).
func (tl *timeline) pending(job string, from, to time.Time) (span, bool) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	spans := slices.Clone(tl.necessary[job])
	if f, ok := tl.open[job]; ok {
		spans = append(spans, span{f, time.Time{}})
	}
	slices.SortFunc(spans, func(a, b span) int { return a.from.Compare(b.from) })
	for k, sp := range spans {
		end := sp.to
		if end.IsZero() {
			end = time.Unix(1<<40, 0)
		}
		if sp.from.After(to) || end.Before(from) {
			continue
		}
		// A resharding flagged again right after a commit (the leader saw
		// the instances change meanwhile) holds the waiting executions
		// through both: they poll the flag and may not see the gap.
		for _, next := range spans[k+1:] {
			if next.from.Sub(end) > backToBack {
				break
			}
			if next.to.IsZero() {
				end = time.Unix(1<<40, 0)
				break
			}
			end = maxTime(end, next.to)
		}
		return span{sp.from, end}, true
	}
	return span{}, false
}

// backToBack: a resharding flagged within this of the last commit extends
// that pending span (the non-leaders poll the flag every 100 ms).
const backToBack = 200 * time.Millisecond
