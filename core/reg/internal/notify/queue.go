package notify

import "sync"

// Queue hands values to one function, in the order they were pushed, on a
// goroutine of its own that exists only while values are waiting: Push
// never blocks on the function, and an idle Queue costs no goroutine.
// Registry implementations use it to call recursive-watch callbacks off
// their locks and off the connection's reader.
type Queue[T any] struct {
	handle func(T)

	mu sync.Mutex
	// q takes the pushes; run hands it the array of the batch it handled
	// last, emptied (unless it grew past maxSpare), so a burst of events
	// costs no allocation while the array grows again.
	q       []T
	running bool
	idle    chan struct{} // closed while no goroutine runs
}

// NewQueue returns an empty queue that calls handle for each value.
func NewQueue[T any](handle func(T)) *Queue[T] {
	idle := make(chan struct{})
	close(idle)
	return &Queue[T]{handle: handle, idle: idle}
}

// Push queues v and starts the delivery goroutine if none runs.
func (q *Queue[T]) Push(v T) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.q = append(q.q, v)
	if !q.running {
		q.running = true
		q.idle = make(chan struct{})
		go q.run(q.idle)
	}
}

// maxSpare bounds the array a Queue keeps between batches.
const maxSpare = 256

func (q *Queue[T]) run(idle chan struct{}) {
	var done []T // the batch handled last
	for {
		q.mu.Lock()
		batch := q.q
		q.q = nil
		if cap(done) <= maxSpare {
			q.q = done[:0]
		}
		if len(batch) == 0 {
			q.running = false
			close(idle)
			q.mu.Unlock()
			return
		}
		q.mu.Unlock()
		for _, v := range batch {
			q.handle(v)
		}
		clear(batch)
		done = batch
	}
}

// Wait returns once every value pushed before it has been handled and the
// delivery goroutine has exited. It must not be called from handle.
func (q *Queue[T]) Wait() {
	q.mu.Lock()
	idle := q.idle
	q.mu.Unlock()
	<-idle
}
