package notify

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/ejob-io/ejob/internal/testkit"
)

func TestMain(m *testing.M) { testkit.Main(m) }

func TestHubOrderAndSlowSubscriber(t *testing.T) {
	h := New[int]()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	fast := h.Subscribe(ctx, -1)
	slow := h.Subscribe(ctx) // never read until the end: must not block Publish
	for i := range 1000 {
		h.Publish(i)
	}
	if v := <-fast; v != -1 {
		t.Fatalf("initial value %d", v)
	}
	for i := range 1000 {
		if v := <-fast; v != i {
			t.Fatalf("got %d, want %d", v, i)
		}
	}
	for i := range 1000 {
		if v := <-slow; v != i {
			t.Fatalf("slow got %d, want %d", v, i)
		}
	}
	h.Close()
	if _, ok := <-fast; ok {
		t.Fatal("channel open after Close")
	}
	if _, ok := <-h.Subscribe(ctx); ok {
		t.Fatal("subscribe after Close returned an open channel")
	}
}

// TestHubCancel: a subscriber gets what was published before its ctx ended,
// then its channel closes and its goroutine ends.
func TestHubCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := New[string]()
		defer h.Close()
		ctx, cancel := context.WithCancel(t.Context())
		ch := h.Subscribe(ctx)
		h.Publish("a")
		if v := <-ch; v != "a" {
			t.Fatalf("got %q, want a", v)
		}
		cancel()
		synctest.Wait() // the subscription's goroutine has seen the cancel
		select {
		case v, ok := <-ch:
			if ok {
				t.Fatalf("got %q after cancel, want the channel closed", v)
			}
		default:
			t.Fatal("channel still open after cancel")
		}
		h.Publish("b") // no subscriber left: must not block or panic
	})
}

// A Queue hands every value over in order, on one goroutine at a time,
// and has no goroutine once drained.
func TestQueueOrderAndIdle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var got []int
		active := 0
		q := NewQueue(func(v int) {
			active++
			if active != 1 {
				t.Errorf("%d handlers at once", active)
			}
			got = append(got, v)
			active--
		})
		for round := range 3 {
			for i := range 100 {
				q.Push(round*100 + i)
			}
			q.Wait()
			synctest.Wait() // the delivery goroutine has exited
		}
		if len(got) != 300 {
			t.Fatalf("handled %d values, want 300", len(got))
		}
		for i, v := range got {
			if v != i {
				t.Fatalf("value %d is %d", i, v)
			}
		}
	})
}
