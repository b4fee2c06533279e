package reg

import "sync"

// coalescer hands the calls of concurrent callers to send in batches: a
// call added while no batch is in flight goes out at once, alone; the
// calls added while one is in flight wait for it to end and then go out
// together as the next. It holds no goroutine while idle (BatchReader,
// BatchWriter).
type coalescer[C any] struct {
	mu      sync.Mutex
	pending []C
	running bool
}

// add queues c, and starts sending batches with send unless a goroutine
// does already; it sends until none is left.
func (q *coalescer[C]) add(c C, send func(batch []C)) {
	q.mu.Lock()
	q.pending = append(q.pending, c)
	if !q.running {
		q.running = true
		go q.run(send)
	}
	q.mu.Unlock()
}

func (q *coalescer[C]) run(send func(batch []C)) {
	for {
		q.mu.Lock()
		batch := q.pending
		q.pending = nil
		if len(batch) == 0 {
			q.running = false
			q.mu.Unlock()
			return
		}
		q.mu.Unlock()
		send(batch)
	}
}
