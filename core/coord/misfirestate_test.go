package coord

import (
	"slices"
	"testing"
	"time"
)

// A fire missed while a resharding is pending is deferred until it
// commits: the deferral is made before the fire's items are known, they
// are added only while it holds, and taking it clears it. Each fire owes
// nothing only to its own items: what the deferral exempts is what every
// fire owes nothing (a failover item one fire ran instead of the own items
// is owed by a later fire). Putting a deferral back keeps the fires
// deferred meanwhile.
func TestMisfireStateDeferral(t *testing.T) {
	var m misfireState
	if m.deferred() || m.takeBefore() != nil {
		t.Fatal("a new state has a deferral")
	}
	f := m.deferToResharding()
	if !m.deferred() {
		t.Fatal("no deferral")
	}
	if b := m.takeBefore(); b == nil || len(b) != 0 {
		t.Fatalf("exempt %v, want empty non-nil", b)
	}
	m.addBefore(f, []int{1}) // its deferral was taken
	if m.deferred() || m.takeBefore() != nil {
		t.Fatal("items added to a deferral taken were kept")
	}
	f = m.deferToResharding()
	m.addBefore(f, []int{2, 1})
	if got := m.takeBefore(); !slices.Equal(got, []int{1, 2}) {
		t.Fatalf("one fire exempts %v, want [1 2]", got)
	}
	first := m.deferToResharding()
	m.addBefore(first, []int{1, 2}) // owned 1, ran failover item 2 instead
	second := m.deferToResharding()
	m.addBefore(second, []int{1}) // owned 1, skipped while item 2 ran
	exempt := m.takeBefore()
	if !slices.Equal(exempt, []int{1}) || m.deferred() {
		t.Fatalf("two fires exempt %v (deferred after: %v), want [1] and none left", exempt, m.deferred())
	}
	// A fire whose items are not added yet exempts nothing.
	m.deferToResharding()
	f = m.deferToResharding()
	m.addBefore(f, []int{1})
	if got := m.takeBefore(); len(got) != 0 {
		t.Fatalf("exempt %v with a fire's items unknown, want none", got)
	}
	f = m.deferToResharding()
	m.addBefore(f, []int{1, 4})
	m.restoreBefore(exempt)
	if got := m.takeBefore(); !slices.Equal(got, []int{1}) {
		t.Fatalf("restored %v, want [1]", got)
	}
	m.restoreBefore([]int{3})
	f = m.deferToResharding() // made after the restore: its own entry
	m.addBefore(f, []int{3, 5})
	if got := m.takeBefore(); !slices.Equal(got, []int{3}) {
		t.Fatalf("restored then deferred %v, want [3]", got)
	}
}

// The flags this process set are candidates the tree cache may not show
// yet; withSet adds them to the cache's, once each, sorted.
func TestMisfireStateSet(t *testing.T) {
	var m misfireState
	if got := m.withSet(nil, []int{1, 2}); len(got) != 0 {
		t.Fatalf("candidates %v without flags", got)
	}
	m.note([]int{5, 2, 9})
	if got := m.withSet([]int{7, 5}, []int{2, 5, 7, 8}); !slices.Equal(got, []int{2, 5, 7}) {
		t.Fatalf("candidates %v, want [2 5 7]", got)
	}
	m.forget([]int{2, 5})
	if got := m.withSet(nil, []int{2, 5, 9}); !slices.Equal(got, []int{9}) {
		t.Fatalf("candidates %v after forgetting, want [9]", got)
	}
}

// The pump acts on pending flags sighted on two idle ticks a tick apart.
func TestMisfireStateSighting(t *testing.T) {
	var m misfireState
	tick := 500 * time.Millisecond
	at := time.Unix(1_000, 0)
	if m.sighting() {
		t.Fatal("a new state has a sighting")
	}
	if m.sighted(at, tick) || !m.sighting() {
		t.Fatal("the first sighting acted or was not recorded")
	}
	if m.sighted(at.Add(tick-time.Nanosecond), tick) {
		t.Fatal("acted less than a tick after the first sighting")
	}
	if !m.sighted(at.Add(tick), tick) {
		t.Fatal("did not act a tick after the first sighting")
	}
	m.clearSighting()
	if m.sighting() || m.sighted(at.Add(2*tick), tick) {
		t.Fatal("a cleared sighting counted")
	}
}

// The items of a catch-up run: pending until the next execution takes
// them, and those not among its items moved away.
func TestMisfireStateCatchUp(t *testing.T) {
	var m misfireState
	if m.catchingUp() || m.takeCatchUp() != nil {
		t.Fatal("a new state catches up")
	}
	m.setCatchUp([]int{1, 4, 6})
	if !m.catchingUp() {
		t.Fatal("no catch-up pending")
	}
	if got := m.catchUpMoved([]int{4, 5}); !slices.Equal(got, []int{1, 6}) {
		t.Fatalf("moved %v, want [1 6]", got)
	}
	if got := m.takeCatchUp(); !slices.Equal(got, []int{1, 4, 6}) || m.catchingUp() {
		t.Fatalf("took %v, want [1 4 6] and nothing left", got)
	}
}
