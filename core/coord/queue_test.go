package coord

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ejob-io/ejob/internal/testkit"
)

// TestSerialQueue: closures run in order, one at a time, on a goroutine
// that exists only while some are queued; a held queue runs nothing until
// released; close drops what is queued and waits for the running one.
func TestSerialQueue(t *testing.T) {
	q := newSerialQueue()
	var got []int
	var mu sync.Mutex
	var inside, overlap atomic.Int32
	const n = 200
	for i := range n {
		q.post(func() {
			if inside.Add(1) > 1 {
				overlap.Add(1)
			}
			mu.Lock()
			got = append(got, i)
			mu.Unlock()
			inside.Add(-1)
		})
	}
	mu.Lock()
	if len(got) != 0 {
		t.Fatalf("a held queue ran %d closures", len(got))
	}
	mu.Unlock()
	if q.running {
		t.Fatal("a held queue started a goroutine")
	}
	q.release()
	testkit.Eventually(t, 5*time.Second, "every closure ran", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(got) == n
	})
	for i, v := range got {
		if v != i {
			t.Fatalf("closure %d ran at position %d", v, i)
		}
	}
	if overlap.Load() != 0 {
		t.Fatalf("%d closures overlapped", overlap.Load())
	}
	testkit.Eventually(t, 5*time.Second, "the drained queue's goroutine exited", func() bool {
		q.mu.Lock()
		defer q.mu.Unlock()
		return !q.running && q.fns == nil
	})

	// close waits for the running closure and drops the queued ones.
	block, entered := make(chan struct{}), make(chan struct{})
	var ranAfter, finished atomic.Bool
	q.post(func() {
		close(entered)
		<-block
		finished.Store(true)
	})
	q.post(func() { ranAfter.Store(true) })
	<-entered
	closed := make(chan struct{})
	go func() {
		q.close()
		close(closed)
	}()
	// Unblock only once close has marked the queue closed: else the
	// second closure may rightly run before close begins.
	testkit.Eventually(t, 5*time.Second, "close marked the queue closed", func() bool {
		q.mu.Lock()
		defer q.mu.Unlock()
		return q.closed
	})
	close(block)
	<-closed
	if !finished.Load() {
		t.Fatal("close returned while a closure still ran")
	}
	if ranAfter.Load() {
		t.Fatal("a closure queued before close ran after it")
	}
	if q.post(func() { ranAfter.Store(true) }) || ranAfter.Load() {
		t.Fatal("a post after close was accepted")
	}
}
