package reg

// BatchWriterQueued is the number of calls waiting for b's next batch.
func BatchWriterQueued(b *BatchWriter) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.pending)
}
