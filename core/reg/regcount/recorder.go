package regcount

import "sync"

// Recorder keeps the calls it observes, for tests that check which
// requests a piece of code made: pass Observe to WithObserver.
type Recorder struct {
	mu    sync.Mutex
	calls []Call
}

// Observe records c.
func (r *Recorder) Observe(c Call) {
	r.mu.Lock()
	r.calls = append(r.calls, c)
	r.mu.Unlock()
}

// Take returns the calls recorded since the last Take, oldest first.
func (r *Recorder) Take() []Call {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.calls
	r.calls = nil
	return out
}
