package coord

import (
	"sync"
	"testing"
	"time"
)

// The claims failoverState records are what localFailoverItems reads
// besides the tree cache, and what keeps a steady trigger off the
// pipelined path (steadyItemsInCache): recorded until forgotten, each item
// on its own.
func TestFailoverStateClaims(t *testing.T) {
	var f failoverState
	if f.hasClaims() || f.claimed(3) {
		t.Fatal("a new state has claims")
	}
	f.rememberClaim(3)
	f.rememberClaim(7)
	f.rememberClaim(3)
	if !f.hasClaims() || !f.claimed(3) || !f.claimed(7) || f.claimed(5) {
		t.Fatal("claims not recorded as made")
	}
	cand := map[int]bool{1: true}
	f.addClaims(cand)
	if len(cand) != 3 || !cand[1] || !cand[3] || !cand[7] {
		t.Fatalf("candidates %v, want 1, 3 and 7", cand)
	}
	f.forgetClaims(3, 9)
	if f.claimed(3) || !f.claimed(7) || !f.hasClaims() {
		t.Fatal("forgetting 3 changed other claims")
	}
	f.forgetClaims(7)
	if f.hasClaims() {
		t.Fatal("claims left after forgetting all")
	}
}

// The pump spaces its re-triggers of claimed items by the time since a
// claim last triggered.
func TestFailoverStateSinceTrigger(t *testing.T) {
	var f failoverState
	at := time.Unix(1_000, 0)
	f.triggered(at)
	if got := f.sinceTrigger(at.Add(3 * time.Second)); got != 3*time.Second {
		t.Fatalf("since trigger %v, want 3s", got)
	}
	if got := f.sinceTrigger(at); got != 0 {
		t.Fatalf("since trigger %v, want 0", got)
	}
}

// The claims are used from the event loop and the executions at once.
func TestFailoverStateConcurrent(t *testing.T) {
	var f failoverState
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 100 {
				f.rememberClaim(g*100 + i)
				f.claimed(i)
				f.addClaims(map[int]bool{})
			}
		}()
	}
	wg.Wait()
	cand := map[int]bool{}
	f.addClaims(cand)
	if len(cand) != 400 {
		t.Fatalf("%d claims, want 400", len(cand))
	}
}
