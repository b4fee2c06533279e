package testkit

import (
	"context"
	"time"
)

// StallProbe measures how long the machine starves this process: a
// goroutine ticks every millisecond until ctx ends, and the func it
// returns waits for that and reports the longest gap between two ticks
// beyond the period. A test that judges timing on a loaded machine reads
// it as evidence that a late event was the scheduler's doing.
func StallProbe(ctx context.Context) (longest func() time.Duration) {
	done := make(chan time.Duration, 1)
	go func() {
		const period = time.Millisecond
		t := time.NewTicker(period)
		defer t.Stop()
		last, worst := time.Now(), time.Duration(0)
		for {
			select {
			case <-ctx.Done():
				done <- max(worst, time.Since(last)-period)
				return
			case <-t.C:
				now := time.Now()
				worst = max(worst, now.Sub(last)-period)
				last = now
			}
		}
	}()
	return func() time.Duration { return <-done }
}
