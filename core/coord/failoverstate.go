package coord

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// failoverState is the failover's mutable state on this instance, its one
// owner: the items this process claimed, when a claim last asked the
// scheduler to run, and whether running nodes of a cut-off execution
// remain. The protocol that reads and writes the registry (failover.go,
// recovery.go, pump.go) keeps no state of its own. The zero value is
// ready to use; the reads (recovering, claimed, claimedBesides,
// hasClaims) and forgetClaims also work on nil, the state of a job that
// has made no failover yet (failoverSlot.state).
type failoverState struct {
	// needRecover: running nodes of an execution cut off by a session loss
	// (or presumed loss) may remain under this instance's id; they are
	// cleared (and queued for failover) as soon as no execution runs here.
	// Set by an execution's end or undo (leaveToRecovery, on its goroutine,
	// or the timer's that drops an attempt begun ahead) and by the
	// re-registration, cleared by recoverIfIdle (both on the job's queue);
	// read by triggers, the pump and the pump's clock (pump.wanted): atomic.
	needRecover atomic.Bool
	// lastTrig is when a failover claim last asked the scheduler to run
	// (UnixNano); the failover pump spaces its re-triggers by it. Written
	// by failover.trigger, from a claim in an execution's enquiry (on its
	// goroutine) or on the job's queue (tree events, pump, re-registration,
	// stale sweep), read by the pump on the job's queue: atomic.
	lastTrig atomic.Int64
	// claims are the items this process claimed for failover and has not
	// seen completed (see localFailoverItems).
	mu     sync.Mutex
	claims map[int]bool
}

// recovering reports needRecover.
func (f *failoverState) recovering() bool { return f != nil && f.needRecover.Load() }

// claimed reports whether this process claimed item i for failover and
// has not seen it completed.
func (f *failoverState) claimed(i int) bool {
	if f == nil {
		return false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.claims[i]
}

// claimedBesides reports whether this process claimed a failover item
// other than items and has not seen it completed.
func (f *failoverState) claimedBesides(items []int) bool {
	if f == nil {
		return false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := range f.claims {
		if !slices.Contains(items, i) {
			return true
		}
	}
	return false
}

// hasClaims reports whether this process claimed failover items it has not
// seen completed.
func (f *failoverState) hasClaims() bool {
	if f == nil {
		return false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.claims) > 0
}

// rememberClaim records an item this process claimed for failover.
func (f *failoverState) rememberClaim(i int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.claims == nil {
		f.claims = map[int]bool{}
	}
	f.claims[i] = true
}

// forgetClaims drops items from the recorded claims.
func (f *failoverState) forgetClaims(items ...int) {
	if f == nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, i := range items {
		delete(f.claims, i)
	}
}

// addClaims adds the recorded claims to cand.
func (f *failoverState) addClaims(cand map[int]bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := range f.claims {
		cand[i] = true
	}
}

// triggered notes that a claim asked the scheduler to run at now.
func (f *failoverState) triggered(now time.Time) { f.lastTrig.Store(now.UnixNano()) }

// sinceTrigger is how long before now a claim last asked the scheduler to
// run.
func (f *failoverState) sinceTrigger(now time.Time) time.Duration {
	return now.Sub(time.Unix(0, f.lastTrig.Load()))
}

// failoverSlot holds the job's failover protocol, made at its first use
// (get) with the owners it reads (failoverDeps): an idle job carries
// none. A trigger and the job's queue make and read it, and the pump's
// clock reads it (pump.wanted), each on its own goroutine: atomic. The
// reads that find nothing claimed and nothing to recover on a job without
// one go through state.
type failoverSlot struct {
	failoverDeps
	made atomic.Pointer[failover]
}

// get returns the failover protocol, made now if need be.
func (s *failoverSlot) get() *failover {
	if f := s.made.Load(); f != nil {
		return f
	}
	s.made.CompareAndSwap(nil, &failover{failoverDeps: &s.failoverDeps})
	return s.made.Load()
}

// state returns the failover state, or nil while the job has made none
// (failoverState's reads work on nil).
func (s *failoverSlot) state() *failoverState {
	if f := s.made.Load(); f != nil {
		return &f.failoverState
	}
	return nil
}

// leaveToRecovery notes that running nodes of this instance may remain,
// for the recovery of its running nodes (needRecover): the pump clears
// them once no execution runs here.
func (s *failoverSlot) leaveToRecovery() { s.get().needRecover.Store(true) }
