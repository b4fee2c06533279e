package coord

import (
	"container/heap"
	"sync"
	"time"
)

// pumpSlack is how late pumpClock may run a tick so that ticks due close
// together run on one timer wake-up. The pump's tick is a failoverTick
// (500 ms by default) after an event; a couple of milliseconds later
// changes nothing it decides (its sightings and re-triggers wait at least
// a tick, never at most), and runtime timers are that late on a busy
// machine anyway.
const pumpSlack = 2 * time.Millisecond

// pumpClock runs the pump ticks and the reconcile ticks of the jobs of
// one Namespace from one runtime timer. A job's tree events arm its pump a
// failoverTick later (a running node's only when the pump has something to
// do: runningNodeEvent); with a timer per job, 100 jobs whose pumps tick
// together cost 100 timer goroutines, each for a check (pumpFired) that
// mostly finds nothing to do. Ticks armed together fall due together: one
// wake-up runs every tick due by then (and those due within pumpSlack). A
// job with no tick armed has no entry here. Each running job has its
// reconcile tick here (one a ReconcileTick), rather than a runtime timer of
// its own.
type pumpClock struct {
	mu    sync.Mutex
	due   pumpHeap
	timer *time.Timer
	at    time.Time // when the timer fires; zero while it is not armed or firing
	// firing counts the fire calls between taking their ticks and
	// running them; ended (on mu, made by cancel) is signalled when it
	// drops to 0, for cancel to wait on.
	firing  int
	started uint64 // fire calls that took their ticks, ever
	ended   *sync.Cond
}

// pumpEntry is one job's armed tick: of its pump, or of its reconcile
// check (recon).
type pumpEntry struct {
	at    time.Time
	l     *jobLoop
	recon bool
}

// after arms the tick of the job's loop l d from now: pumpFired runs then, on the clock's
// goroutine. The caller arms at most one tick per job at a time
// (armPump's pumpArmed).
func (c *pumpClock) after(l *jobLoop, d time.Duration) {
	c.push(pumpEntry{at: time.Now().Add(d), l: l})
}

// afterReconcile arms the reconcile tick of the job's loop l d from now:
// reconcileFired runs then, on the clock's goroutine. The caller arms at
// most one per job at a time (the tick arms the next).
func (c *pumpClock) afterReconcile(l *jobLoop, d time.Duration) {
	c.push(pumpEntry{at: time.Now().Add(d), l: l, recon: true})
}

func (c *pumpClock) push(e pumpEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	heap.Push(&c.due, e)
	c.armLocked()
}

// armLocked arms the timer for the earliest tick (plus pumpSlack) unless
// it is armed for that time or earlier already.
func (c *pumpClock) armLocked() {
	if len(c.due) == 0 {
		return
	}
	at := c.due[0].at.Add(pumpSlack)
	if !c.at.IsZero() && !at.Before(c.at) {
		return
	}
	c.at = at
	if c.timer == nil {
		c.timer = time.AfterFunc(time.Until(at), c.fire)
	} else {
		c.timer.Reset(time.Until(at))
	}
}

// fire runs the ticks due by now, in the order they fell due, then arms
// the timer for the next one.
func (c *pumpClock) fire() {
	now := time.Now()
	c.mu.Lock()
	c.at = time.Time{}
	c.firing++
	c.started++
	var ready []pumpEntry
	for len(c.due) > 0 && !c.due[0].at.After(now) {
		ready = append(ready, heap.Pop(&c.due).(pumpEntry))
	}
	c.armLocked()
	c.mu.Unlock()
	for _, e := range ready {
		if e.recon {
			e.l.reconcileFired()
		} else {
			e.l.pumpFired()
		}
	}
	c.mu.Lock()
	c.firing--
	if c.firing == 0 && c.ended != nil {
		c.ended.Broadcast()
	}
	c.mu.Unlock()
}

// cancel drops l's armed ticks (a stopped job's) and, once no tick is
// armed, stops the timer and waits for a fire already started to end:
// after the last job's cancel, no goroutine of the clock runs, and none
// starts until a job arms a tick again. The caller holds none of l's
// locks (fire takes them through pumpFired).
func (c *pumpClock) cancel(l *jobLoop) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k := range l.clockAt {
		// Read after the other's removal, which may have moved it.
		if i := l.clockAt[k]; i > 0 {
			heap.Remove(&c.due, int(i-1)) // in O(log n): 10,000 jobs stop in turn
		}
	}
	if len(c.due) > 0 {
		return
	}
	// A timer that expired (Stop false) has started fire in a goroutine
	// of its own, which may not have taken its ticks yet.
	pending := false
	if c.timer != nil && !c.at.IsZero() {
		if c.timer.Stop() {
			c.at = time.Time{}
		} else {
			pending = true
		}
	}
	if c.ended == nil {
		c.ended = sync.NewCond(&c.mu)
	}
	for start := c.started; (pending && c.started == start) || c.firing > 0; {
		c.ended.Wait()
	}
}

// pumpHeap is a min-heap of ticks by due time (container/heap). Each
// entry's job knows where its entries are (jobLoop.clockAt).
type pumpHeap []pumpEntry

func (h pumpHeap) Len() int           { return len(h) }
func (h pumpHeap) Less(a, b int) bool { return h[a].at.Before(h[b].at) }
func (h pumpHeap) Swap(a, b int) {
	h[a], h[b] = h[b], h[a]
	h[a].place(a)
	h[b].place(b)
}
func (h *pumpHeap) Push(x any) {
	e := x.(pumpEntry)
	e.place(len(*h))
	*h = append(*h, e)
}
func (h *pumpHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	e.place(-1)
	old[len(old)-1] = pumpEntry{} // drop the job's reference
	*h = old[:len(old)-1]
	return e
}

// place records e at index i of the heap (-1: out of it) in its job.
func (e pumpEntry) place(i int) {
	k := 0
	if e.recon {
		k = 1
	}
	e.l.clockAt[k] = int32(i + 1)
}
