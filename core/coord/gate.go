package coord

import "sync"

// reRegisterSlots bounds the jobs of a namespace that re-register at once
// after a new session. A re-registration is a few registry round trips on
// the job's queue: a goroutine while it runs, and on ZooKeeper one more
// for each call in flight. The runtime keeps the descriptor of every
// goroutine that has existed, for reuse, so 2,000 jobs re-registering at
// once kept about 1 KB a job for good (BenchmarkIdleAfterExpiry), as a
// start of every job at once would (core/kernel's maxStarters). The
// registry's throughput, not the number at once, bounds how soon they are
// all back.
const reRegisterSlots = 256

// gate runs at most n of the funcs given to admit at a time, the others in
// the order they came as slots are released. An admitted func only posts
// its work (it must not block) and reports whether it did; the work calls
// release when it is done.
type gate struct {
	mu      sync.Mutex
	free    int
	waiting []func() bool
}

func newGate(n int) *gate { return &gate{free: n} }

// admit runs fn now if a slot is free, else once one is.
func (g *gate) admit(fn func() bool) {
	g.mu.Lock()
	if g.free == 0 {
		g.waiting = append(g.waiting, fn)
		g.mu.Unlock()
		return
	}
	g.free--
	g.mu.Unlock()
	if !fn() {
		g.release()
	}
}

// release frees the slot of a func that has done its work (or posted
// none), giving it to the first waiting func that takes it.
func (g *gate) release() {
	for {
		g.mu.Lock()
		if len(g.waiting) == 0 {
			g.waiting = nil // its array may have held every job
			g.free++
			g.mu.Unlock()
			return
		}
		fn := g.waiting[0]
		g.waiting[0] = nil
		g.waiting = g.waiting[1:]
		g.mu.Unlock()
		if fn() {
			return
		}
	}
}
