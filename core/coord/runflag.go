package coord

import "sync"

// runFlag is a flag (an execution runs) whose Idle channel is closed
// while it is off, so that a shutdown waits for the end of the execution
// without polling.
type runFlag struct {
	mu sync.Mutex
	on bool
	// idle is made by Idle, the first call while the flag is on or off:
	// open while on, closed while off. An execution nobody waits for
	// makes none (one allocation less per execution).
	idle chan struct{}
}

// Load reports whether the flag is on.
func (f *runFlag) Load() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.on
}

// Store sets the flag.
func (f *runFlag) Store(on bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if on == f.on {
		return
	}
	f.on = on
	switch {
	case on:
		f.idle = nil // a closed one: the next Idle makes an open one
	case f.idle != nil:
		close(f.idle)
	}
}

// Idle returns a channel closed while the flag is off (at once when it is
// off now; else when it goes off).
func (f *runFlag) Idle() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.idle == nil {
		f.idle = make(chan struct{})
		if !f.on {
			close(f.idle)
		}
	}
	return f.idle
}
