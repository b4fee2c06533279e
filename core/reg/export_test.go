package reg

// BatchWriterQueued is the number of calls waiting for b's next batch.
func BatchWriterQueued(b *BatchWriter) int { return b.q.queued() }

// queued is the number of calls waiting for q's next batch (tests).
func (q *coalescer[C]) queued() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.pending)
}
