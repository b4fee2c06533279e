package reg

// BatchWriterQueued is the number of calls waiting for b's next batch.
func BatchWriterQueued(b *BatchWriter) int { return b.q.queued() }
