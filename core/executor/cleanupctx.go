package executor

import (
	"context"
	"sync"
	"time"
)

// cleanupCtx is context.WithTimeout(context.WithoutCancel(parent), d) for
// the completion (run.once), in two allocations instead of five and
// without a timer until one is needed: its timer is armed by the first
// Done or AfterFunc (what a call that waits asks for), and Err compares
// the clock with the deadline. On the embedded registry nothing in the
// completion waits, so no timer is added to and removed from the
// runtime's heap per execution; on ZooKeeper the first request arms it and
// the calls end at the same deadline.
type cleanupCtx struct {
	values   context.Context // context.WithoutCancel(parent): hides the parent's cancelCtx from context.Cause
	deadline time.Time

	mu    sync.Mutex
	err   error
	done  chan struct{} // made by Done; closed with err set
	timer *time.Timer
	funcs map[*func()]struct{} // AfterFunc's, run when err is set
}

// newCleanupCtx returns the context; its cancel ends it.
func newCleanupCtx(parent context.Context, d time.Duration) *cleanupCtx {
	return &cleanupCtx{values: context.WithoutCancel(parent), deadline: time.Now().Add(d)}
}

// cancel ends c with context.Canceled, as a WithTimeout's CancelFunc (a
// method, not a func value: no allocation).
func (c *cleanupCtx) cancel() { c.end(context.Canceled) }

func (c *cleanupCtx) Deadline() (time.Time, bool) { return c.deadline, true }

func (c *cleanupCtx) Value(key any) any { return c.values.Value(key) }

func (c *cleanupCtx) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done == nil {
		c.done = make(chan struct{})
		if c.err != nil {
			close(c.done)
		} else {
			c.armLocked()
		}
	}
	return c.done
}

func (c *cleanupCtx) Err() error {
	c.mu.Lock()
	err := c.err
	c.mu.Unlock()
	if err == nil && !time.Now().Before(c.deadline) {
		c.end(context.DeadlineExceeded)
		c.mu.Lock()
		err = c.err
		c.mu.Unlock()
	}
	return err
}

// AfterFunc is what context.AfterFunc and the contexts derived from c use
// (instead of a goroutine per child watching Done): f runs on a goroutine
// of its own once c ends; stop keeps it from running and reports whether
// it did.
func (c *cleanupCtx) AfterFunc(f func()) (stop func() bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		go f()
		return func() bool { return false }
	}
	if c.funcs == nil {
		c.funcs = make(map[*func()]struct{})
	}
	key := &f
	c.funcs[key] = struct{}{}
	c.armLocked()
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		_, ok := c.funcs[key]
		delete(c.funcs, key)
		return ok
	}
}

// armLocked starts the timer that ends c at its deadline. Caller holds mu.
func (c *cleanupCtx) armLocked() {
	if c.timer == nil {
		c.timer = time.AfterFunc(time.Until(c.deadline), func() { c.end(context.DeadlineExceeded) })
	}
}

// end sets err (the first end wins), closes done and runs the AfterFuncs.
func (c *cleanupCtx) end(err error) {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return
	}
	c.err = err
	if c.timer != nil {
		c.timer.Stop()
	}
	if c.done != nil {
		close(c.done)
	}
	funcs := c.funcs
	c.funcs = nil
	c.mu.Unlock()
	for f := range funcs {
		go (*f)()
	}
}
