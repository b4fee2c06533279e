package coord

import "testing"

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// runFlag's Idle channel is what a shutdown waits on for the end of the
// execution: closed while no execution runs, open while one does, closed
// when it ends.
func TestRunFlagIdle(t *testing.T) {
	var f runFlag
	if f.Load() || !closed(f.Idle()) {
		t.Fatal("a new flag is not idle")
	}
	f.Store(true)
	idle := f.Idle()
	if !f.Load() || closed(idle) {
		t.Fatal("idle while running")
	}
	f.Store(true) // again: still the same wait
	if closed(idle) || f.Idle() != idle {
		t.Fatal("a second Store(true) changed the wait")
	}
	f.Store(false)
	if f.Load() || !closed(idle) || !closed(f.Idle()) {
		t.Fatal("the end of the execution did not close the wait")
	}
	f.Store(false)
	f.Store(true)
	if closed(f.Idle()) {
		t.Fatal("idle while running again")
	}
}
