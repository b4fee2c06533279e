package coord

import "sync"

// serialQueue runs closures one at a time, in the order they were posted,
// on a goroutine started when the queue goes non-empty and exiting as soon
// as it is empty again: an idle job holds no goroutine. It is a job's event
// loop: the job's handlers, which must never run concurrently, post to it
// instead of running on a goroutine of their own.
//
// A queue starts held: closures posted before release accumulate (a job's
// startup acts on the tree directly; the events that come meanwhile run
// after it, in order).
type serialQueue struct {
	mu      sync.Mutex
	fns     []func()
	held    bool
	closed  bool
	running bool           // a goroutine drains fns
	wg      sync.WaitGroup // the draining goroutine
}

func newSerialQueue() *serialQueue { return &serialQueue{held: true} }

// post appends fn; it reports false (fn dropped) once the queue is closed.
// It never blocks on the closures (only on the queue's mutex).
func (q *serialQueue) post(fn func()) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return false
	}
	q.fns = append(q.fns, fn)
	q.startLocked()
	return true
}

// release lets the closures posted so far, and later ones, run.
func (q *serialQueue) release() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.held = false
	q.startLocked()
}

func (q *serialQueue) startLocked() {
	if q.running || q.held || q.closed || len(q.fns) == 0 {
		return
	}
	q.running = true
	q.wg.Add(1)
	go q.drain()
}

func (q *serialQueue) drain() {
	defer q.wg.Done()
	for {
		q.mu.Lock()
		if q.closed || len(q.fns) == 0 {
			q.fns = nil // an idle queue holds no memory
			q.running = false
			q.mu.Unlock()
			return
		}
		fn := q.fns[0]
		q.fns[0] = nil
		q.fns = q.fns[1:]
		q.mu.Unlock()
		fn()
	}
}

// close drops the closures not yet started and every later post, and
// returns once the closure running now (if any) has returned. It must not
// be called from a closure of the queue.
func (q *serialQueue) close() {
	q.mu.Lock()
	q.closed = true
	q.fns = nil
	q.mu.Unlock()
	q.wg.Wait()
}
