package coord

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// misfireState is the misfire and catch-up state of this instance, its one
// owner: the flags this process set, the items a fire missed while a
// resharding was pending, the pump's sighting of pending flags and the
// items of a catch-up run. The protocol that reads and writes the registry
// (misfires, misfire.go) keeps no state of its own. The zero value is
// ready to use; the protocol makes its own when it first records
// something (misfires.made), so that an idle job carries none. The methods
// that only read or clear work on nil (misfires.state before that).
type misfireState struct {
	// seen is when the pump first saw own items with a pending misfire
	// while idle (UnixNano; 0: none seen). Written by the pump on the
	// job's queue (pump.run, misfires.runPending), read there and by the
	// pump's clock (jobLoop.pumpFired) on its timer goroutine: atomic.
	seen atomic.Int64

	mu sync.Mutex
	// before: the fires missed while a resharding was pending (nil: none),
	// one entry each: the items that fire owes nothing once it commits
	// (the instance's items then, flagged at once, and the failover items
	// run instead of them). The items the resharding gives the instance
	// are flagged once it commits, except those every fire owes nothing
	// (SetMisfire, takeBefore). deferrals counts the deferrals taken, so
	// that a fire's items go to its own deferral only.
	before    [][]int
	deferrals uint64
	// set are the items whose misfire flag this process set and has not
	// seen cleared (see misfires.candidates).
	set map[int]bool

	// joined are the own items JoinCatchUp added to a catch-up run, and
	// that run's task id (see misfires.restoreJoined).
	joined       []int
	joinedTaskID string

	// catchUp are the items whose flags misfires.runPending cleared for the
	// run it triggered (see misfires.handOver).
	catchUpMu sync.Mutex
	catchUp   []int
}

// deferredFire is one fire's entry in a deferral (deferToResharding).
type deferredFire struct {
	deferral uint64
	i        int
}

// deferToResharding notes that a fire was missed while a resharding was
// pending; the items it owes nothing follow with addBefore. Until they do,
// the fire owes every item the resharding gives the instance.
func (m *misfireState) deferToResharding() deferredFire {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.before = append(m.before, []int{})
	return deferredFire{deferral: m.deferrals, i: len(m.before) - 1}
}

// addBefore adds items to those the fire f owes nothing, unless its
// deferral was taken meanwhile.
func (m *misfireState) addBefore(f deferredFire, items []int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.before != nil && f.deferral == m.deferrals && f.i < len(m.before) {
		m.before[f.i] = append(m.before[f.i], items...)
	}
}

// deferred reports whether a missed fire waits for a resharding.
func (m *misfireState) deferred() bool {
	if m == nil {
		return false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.before != nil
}

// takeBefore returns the items every deferred fire owes nothing (nil: no
// deferral; empty: the fires owe every item the resharding gives), sorted,
// and clears the deferral.
func (m *misfireState) takeBefore() []int {
	if m == nil {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.before == nil {
		return nil
	}
	exempt := append([]int{}, m.before[0]...)
	for _, items := range m.before[1:] {
		exempt = slices.DeleteFunc(exempt, func(i int) bool { return !slices.Contains(items, i) })
	}
	m.before = nil
	m.deferrals++
	slices.Sort(exempt)
	return slices.Compact(exempt)
}

// restoreBefore puts back what takeBefore returned, as one fire of the
// deferral made since, if any.
func (m *misfireState) restoreBefore(before []int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.before = append(m.before, slices.Clone(before))
}

// note records items whose misfire flag this process set, which the tree
// cache may not show yet (misfires.candidates).
func (m *misfireState) note(items []int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.set == nil {
		m.set = map[int]bool{}
	}
	for _, i := range items {
		m.set[i] = true
	}
}

// forget drops items from the flags this process set.
func (m *misfireState) forget(items []int) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, i := range items {
		delete(m.set, i)
	}
}

// withSet adds to out the items among items whose flag this process set,
// and returns it sorted.
func (m *misfireState) withSet(out, items []int) []int {
	if m == nil {
		return out
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, i := range items {
		if m.set[i] && !slices.Contains(out, i) {
			out = append(out, i)
		}
	}
	slices.Sort(out)
	return out
}

// sighted is the pump's sighting of pending flags at now: it reports
// whether they were sighted at least tick before (the first sighting is
// recorded and reports false). clearSighting forgets it.
func (m *misfireState) sighted(now time.Time, tick time.Duration) bool {
	n := now.UnixNano()
	seen := m.seen.Load()
	if seen == 0 {
		m.seen.Store(n)
		return false
	}
	return time.Duration(n-seen) >= tick
}

// clearSighting forgets the pump's sighting of pending flags.
func (m *misfireState) clearSighting() {
	if m != nil {
		m.seen.Store(0)
	}
}

// sighting reports whether the pump sighted pending flags.
func (m *misfireState) sighting() bool { return m != nil && m.seen.Load() != 0 }

// setCatchUp records the items of a catch-up run.
func (m *misfireState) setCatchUp(items []int) {
	m.catchUpMu.Lock()
	defer m.catchUpMu.Unlock()
	m.catchUp = items
}

// takeCatchUp returns the items of the catch-up run and clears them.
func (m *misfireState) takeCatchUp() []int {
	if m == nil {
		return nil
	}
	m.catchUpMu.Lock()
	defer m.catchUpMu.Unlock()
	items := m.catchUp
	m.catchUp = nil
	return items
}

// catchingUp reports whether a catch-up run is pending.
func (m *misfireState) catchingUp() bool {
	if m == nil {
		return false
	}
	m.catchUpMu.Lock()
	defer m.catchUpMu.Unlock()
	return len(m.catchUp) > 0
}

// catchUpMoved are the items of the pending catch-up run that are not
// among items.
func (m *misfireState) catchUpMoved(items []int) []int {
	if m == nil {
		return nil
	}
	m.catchUpMu.Lock()
	defer m.catchUpMu.Unlock()
	return without(m.catchUp, items)
}

// setJoined records the own items JoinCatchUp added to the catch-up run
// with task id taskID.
func (m *misfireState) setJoined(taskID string, items []int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.joined, m.joinedTaskID = items, taskID
}

// takeJoined returns the items recorded by setJoined for the run with task
// id taskID (none for another run), and forgets them.
func (m *misfireState) takeJoined(taskID string) []int {
	if m == nil {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.joinedTaskID != taskID {
		return nil
	}
	items := m.joined
	m.joined, m.joinedTaskID = nil, ""
	return items
}
