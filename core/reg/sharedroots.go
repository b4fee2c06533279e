package reg

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"
)

// Per-root watches: on a RecursiveWatcher that is not a StoreWatcher (a
// remote registry: ZooKeeper) SharedCache arms one recursive watch per
// tracked root, before the root's load, rather than one on "/".
//
// A watch on "/" would make the server send every host every change of the
// namespace, its other hosts' jobs included: with H hosts that each follow
// their own J jobs, the ensemble sends H·H·J notifications where H·J are
// wanted, and each host decodes and drops the rest. With such a watch, 10
// hosts × 1,000 jobs take 11.0 s to start against 4.9 s, and ZooKeeper's
// CPU is 14.7 s against 5.9 s (bench/cluster, docs/benchmarks.md). A watch
// per root costs one addWatch per job when it is tracked (rootArmers in
// flight at a time, off Run's goroutine) and a table entry per job on the
// server.
//
// What holds as with one watch on "/": a root's watch is armed before
// anything of the root is read (Run marks the view for its load when the
// arming's reply is in), so every change after the load's reads is
// notified; every watch of the client notifies in the connection's order
// (an inline watch's events of all roots go to one inbox, so readMark
// holds); a reconnection re-arms each watch, and each watch's EventResync
// re-reads its root's views only.
//
// Nested roots (one tracked root below another) each get a watch: the
// server sends a change below both once, and the client hands it to both
// watches, so the cache sees it twice. That costs a read at most: a
// notification only marks its path to be read again, and the deletion
// applied without a read (applyDeleted) finds nothing the second time.
// Events carrying their node (Known) come only from a store watch, which
// is not per root.

// rootArmers is how many arming workers run at once: how many addWatch
// requests are in flight while jobs start together. Until a first watch is
// armed one worker arms alone: a server without recursive watches (before
// 3.6) drops the connection at each addWatch, so it gets only one.
const rootArmers = 32

// errNoRecursive: the first root's watch was refused as unimplemented (a
// ZooKeeper before 3.6): Run goes on with a TreeCache per view.
var errNoRecursive = errors.New("shared cache: no recursive watches")

// rootWatch is the recursive watch of one tracked root.
type rootWatch struct {
	root   string
	ctx    context.Context // ends the watch (unwatch, Run's end)
	cancel context.CancelFunc
	// Run's own: the open views at root, loaded once the watch is armed
	// (ok), and the back-off of the next arming after a failure.
	views   []*CacheView
	ok      bool
	backoff time.Duration
	// dropped: the cache let it go (its last view closed): its events
	// and its end are not the cache's concern any more.
	dropped atomic.Bool
}

// armResult is the outcome of one arming, for Run.
type armResult struct {
	w   *rootWatch
	err error
}

// watchFor attaches v to its root's watch, making it and handing it to
// the arming workers when the root has none, and reports whether the
// watch is armed (v can be loaded now; otherwise armedRoot loads it).
// Run's own.
func (s *SharedCache) watchFor(ctx context.Context, v *CacheView) bool {
	w := s.watches[v.root]
	if w == nil {
		w = &rootWatch{root: v.root, backoff: minBackoff}
		w.ctx, w.cancel = context.WithCancel(ctx)
		s.watches[v.root] = w
		s.queueArm(w)
	}
	v.watch = w
	w.views = append(w.views, v)
	return w.ok
}

// unwatch detaches a freed view from its root's watch, and ends the watch
// with its last view. The client keeps nothing of an ended watch; the
// server goes on notifying its root on this connection until the
// connection ends (the client drops those notifications).
func (s *SharedCache) unwatch(v *CacheView) {
	w := v.watch
	v.watch = nil
	w.views = slices.DeleteFunc(w.views, func(x *CacheView) bool { return x == v })
	if len(w.views) > 0 {
		return
	}
	w.dropped.Store(true)
	w.cancel()
	if s.watches[w.root] == w {
		delete(s.watches, w.root)
	}
}

// queueArm hands w to the arming workers, starting one if fewer than
// rootArmers run.
func (s *SharedCache) queueArm(w *rootWatch) {
	s.imu.Lock()
	s.armQueue = append(s.armQueue, w)
	s.startArmers()
	s.imu.Unlock()
}

// startArmers starts the arming workers the queue may use: one until a
// watch was armed, then up to rootArmers. Caller holds imu.
func (s *SharedCache) startArmers() {
	limit := 1
	if s.probed {
		limit = rootArmers
	}
	for s.arming < min(limit, len(s.armQueue)) {
		s.arming++
		go s.armWorker()
	}
}

// armWorker arms queued watches until the queue is empty, handing each
// outcome to Run.
func (s *SharedCache) armWorker() {
	for {
		s.imu.Lock()
		if len(s.armQueue) == 0 {
			s.arming--
			s.armQueue = nil // the array of a start-up's thousands
			s.imu.Unlock()
			return
		}
		w := s.armQueue[0]
		s.armQueue[0] = nil
		s.armQueue = s.armQueue[1:]
		s.imu.Unlock()
		var err error
		if !w.dropped.Load() {
			err = s.watchRoot(w.ctx, w.root, func(ev WatchEvent) {
				if !w.dropped.Load() {
					s.notify(ev)
				}
			})
		}
		s.imu.Lock()
		s.armed = append(s.armed, armResult{w, err})
		if err == nil && !w.dropped.Load() && !s.probed {
			s.probed = true
			s.startArmers()
		}
		s.imu.Unlock()
		s.poke()
	}
}

// takeArmed takes the armings done since the last call.
func (s *SharedCache) takeArmed() []armResult {
	s.imu.Lock()
	defer s.imu.Unlock()
	r := s.armed
	s.armed = nil
	return r
}

// armedRoot applies an arming's outcome (Run's own): an armed watch's
// views are loaded (or, if an enclosing root's watch loaded one already,
// read again in full: changes between that watch's end and this one's
// arming were notified to neither); a failed one is queued again after
// a back-off. The first refusal as unimplemented, before any watch was
// armed, is errNoRecursive; a closed client ends Run.
func (s *SharedCache) armedRoot(ctx context.Context, r armResult) error {
	w := r.w
	if w.dropped.Load() {
		return nil
	}
	switch {
	case r.err == nil:
		w.ok, s.armedOnce = true, true
		for _, v := range w.views {
			switch {
			case v.closed.Load():
			case v.node != nil || v.initialized:
				s.resync(v)
			default:
				s.mark(v, v.root, dirtyList)
			}
		}
		return nil
	case errors.Is(r.err, ErrUnimplemented) && !s.armedOnce:
		return errNoRecursive
	case errors.Is(r.err, ErrClosed):
		return fmt.Errorf("shared cache: %w", r.err)
	case ctx.Err() != nil:
		return nil
	}
	s.log.Warn("shared cache: arming a subtree's recursive watch failed; retrying",
		"root", w.root, "error", r.err, "backoff", w.backoff)
	d := w.backoff
	w.backoff = min(w.backoff*2, maxBackoff)
	time.AfterFunc(d, func() {
		if !w.dropped.Load() && ctx.Err() == nil {
			s.queueArm(w)
		}
	})
	return nil
}

// toFallback turns every tracked view into a TreeCache of its own: the
// server refused the first root's watch, so no view was loaded yet.
func (s *SharedCache) toFallback() {
	for _, w := range s.watches {
		w.dropped.Store(true)
		w.cancel()
	}
	clear(s.watches)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mode = modeFallback
	s.tmu.Lock()
	var views []*CacheView
	for _, vs := range s.roots {
		views = append(views, vs...)
	}
	clear(s.roots)
	s.depth = Depths{}
	s.tmu.Unlock()
	for _, v := range views {
		v.watch = nil
		s.startFallback(v)
	}
}
