package notify

import (
	"context"
	"testing"
)

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

func TestHubCancel(t *testing.T) {
	h := New[string]()
	defer h.Close()
	ctx, cancel := context.WithCancel(context.Background())
	ch := h.Subscribe(ctx)
	h.Publish("a")
	cancel()
	for range ch { // drains and closes after cancel
	}
}
