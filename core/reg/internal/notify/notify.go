// Package notify fans values out to subscribers through unbounded,
// order-preserving queues, so a slow subscriber never blocks the publisher
// and never loses a value. Registry implementations use it for connection
// states.
package notify

import (
	"context"
	"sync"
)

// Hub fans values of T out to subscribers. The zero value is not usable; use
// New.
type Hub[T any] struct {
	mu     sync.Mutex
	subs   map[*sub[T]]struct{}
	closed bool
	done   chan struct{}
	wg     sync.WaitGroup
}

type sub[T any] struct {
	mu    sync.Mutex
	queue []T
	wake  chan struct{}
}

// New returns an empty hub.
func New[T any]() *Hub[T] {
	return &Hub[T]{subs: make(map[*sub[T]]struct{}), done: make(chan struct{})}
}

// Subscribe returns a channel that receives initial, then every value
// published from now on, in order, until ctx ends or the hub closes; the
// channel is then closed.
func (h *Hub[T]) Subscribe(ctx context.Context, initial ...T) <-chan T {
	out := make(chan T)
	s := &sub[T]{queue: append([]T(nil), initial...), wake: make(chan struct{}, 1)}
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		close(out)
		return out
	}
	h.subs[s] = struct{}{}
	h.wg.Add(1)
	h.mu.Unlock()
	go func() {
		defer h.wg.Done()
		defer close(out)
		defer func() {
			h.mu.Lock()
			delete(h.subs, s)
			h.mu.Unlock()
		}()
		for {
			s.mu.Lock()
			if len(s.queue) == 0 {
				s.mu.Unlock()
				select {
				case <-s.wake:
					continue
				case <-ctx.Done():
					return
				case <-h.done:
					return
				}
			}
			v := s.queue[0]
			s.mu.Unlock()
			select {
			case out <- v:
				s.mu.Lock()
				var zero T
				s.queue[0] = zero
				s.queue = s.queue[1:]
				s.mu.Unlock()
			case <-s.wake:
			case <-ctx.Done():
				return
			case <-h.done:
				return
			}
		}
	}()
	return out
}

// Publish queues v for every current subscriber. It never blocks.
func (h *Hub[T]) Publish(v T) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for s := range h.subs {
		s.mu.Lock()
		s.queue = append(s.queue, v)
		s.mu.Unlock()
		select {
		case s.wake <- struct{}{}:
		default:
		}
	}
}

// Close closes every subscriber's channel (values not yet received may be
// dropped) and returns once the subscribers' goroutines have exited.
func (h *Hub[T]) Close() {
	h.mu.Lock()
	if !h.closed {
		h.closed = true
		close(h.done)
	}
	h.mu.Unlock()
	h.wg.Wait()
}
