package reg

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/hashicorp/go-hclog"
)

// TreeView reads a cached subtree (implemented by *TreeCache and
// *CacheView).
type TreeView interface {
	// Get returns the cached data and stat of path.
	Get(path string) ([]byte, Stat, bool)
	// Children returns the cached child names of path, sorted.
	Children(path string) ([]string, bool)
}

var (
	_ TreeView = (*TreeCache)(nil)
	_ TreeView = (*CacheView)(nil)
)

// SharedCache mirrors chosen subtrees (job roots) of one client with one
// recursive watch on the namespace root and one goroutine however many
// subtrees it tracks. On a client without RecursiveWatcher (or when it
// answers ErrUnimplemented: ZooKeeper before 3.6) each tracked subtree is a
// TreeCache of its own, as before (a goroutine per subtree then).
//
// A tracked subtree has the semantics of a TreeCache over its root: no
// change is missed, changes may coalesce (latest data wins), a node deleted
// and re-created between reads gives NodeDeleted then NodeAdded (its Czxid
// changed), and after a resync (a reconnection or a new session) the
// differences are reported (e.g. NodeDeleted for the old session's
// ephemerals).
type SharedCache struct {
	c   Client
	log hclog.Logger

	mu      sync.Mutex
	state   int             // sharedIdle, sharedRunning, sharedDone
	runCtx  context.Context // Run's, once running
	pending []*CacheView    // tracked before Run started
	views   map[*CacheView]struct{}
}

// SharedCache states.
const (
	sharedIdle = iota
	sharedRunning
	sharedDone
)

// SharedCacheOption configures a SharedCache.
type SharedCacheOption func(*SharedCache)

// WithSharedLogger sets the logger (default: none).
func WithSharedLogger(l hclog.Logger) SharedCacheOption {
	return func(s *SharedCache) { s.log = l }
}

// NewSharedCache returns a cache of c's namespace; Run starts it.
func NewSharedCache(c Client, opts ...SharedCacheOption) *SharedCache {
	s := &SharedCache{c: c, log: hclog.NewNullLogger(), views: make(map[*CacheView]struct{})}
	for _, o := range opts {
		o(s)
	}
	return s
}

// CacheView is one subtree tracked by a SharedCache (see Track).
type CacheView struct {
	s      *SharedCache
	root   string
	fn     func(TreeEvent)
	opts   []TreeCacheOption
	initCh chan struct{}

	// Fallback: a TreeCache of its own.
	tc     *TreeCache
	cancel context.CancelFunc
	done   chan struct{} // closed when tc's Run has returned

	closed bool // guarded by s.mu
}

// Track mirrors the subtree at root (root included; it need not exist).
// fn gets, in order, on the cache's goroutine: NodeAdded for each node of
// the initial load, TreeInitialized, then every change (NodeAdded,
// NodeUpdated, NodeDeleted with the same meaning and coalescing as a
// TreeCache's, children deleted before their parents). fn must not block
// (post to a queue) and must not call the view's Close; a nil fn makes the
// view a mirror only. Options: WithLeaves (as a TreeCache's); WithoutEvents
// is ignored (pass a nil fn). Close stops delivery (no call of fn after
// Close returns) and frees the subtree's memory.
//
// Track may be called before or while Run runs; a subtree tracked after Run
// has returned is never loaded.
func (s *SharedCache) Track(root string, fn func(TreeEvent), opts ...TreeCacheOption) *CacheView {
	v := &CacheView{s: s, root: root, fn: fn, opts: opts, initCh: make(chan struct{})}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch s.state {
	case sharedIdle:
		s.pending = append(s.pending, v)
	case sharedRunning:
		s.startFallback(v)
	}
	return v
}

// Run follows the namespace until ctx ends and returns nil then, or an
// error wrapping ErrClosed when the client closes. It returns once delivery
// to every tracked subtree has stopped. Registry errors other than a closed
// client are retried with back-off (a full re-read), never returned.
func (s *SharedCache) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s.mu.Lock()
	if s.state != sharedIdle {
		s.mu.Unlock()
		return fmt.Errorf("shared cache: Run called twice: %w", ErrInvalidArgument)
	}
	s.state, s.runCtx = sharedRunning, ctx
	for _, v := range s.pending {
		s.startFallback(v)
	}
	s.pending = nil
	s.mu.Unlock()
	return s.runFallback(ctx)
}

// runFallback waits until ctx ends or the client closes (its connection
// stream ends), then stops every view's TreeCache.
func (s *SharedCache) runFallback(ctx context.Context) error {
	conn := s.c.WatchConnection(ctx)
	var err error
	for err == nil {
		select {
		case <-ctx.Done():
			err = ctx.Err()
		case _, ok := <-conn:
			if !ok && ctx.Err() == nil {
				err = fmt.Errorf("shared cache: %w", ErrClosed)
			}
		}
	}
	s.mu.Lock()
	s.state = sharedDone
	views := make([]*CacheView, 0, len(s.views))
	for v := range s.views {
		views = append(views, v)
	}
	s.mu.Unlock()
	for _, v := range views {
		v.cancel()
		<-v.done
	}
	if errors.Is(err, ErrClosed) {
		return err
	}
	return nil
}

// startFallback runs a TreeCache of v's own whose events go to v's fn.
// Called with s.mu held, while running.
func (s *SharedCache) startFallback(v *CacheView) {
	if v.closed {
		return
	}
	opts := append([]TreeCacheOption{WithTreeLogger(s.log)}, v.opts...)
	v.tc = NewTreeCache(s.c, v.root, opts...)
	v.tc.discard = false
	v.tc.fn = v.deliver
	ctx, cancel := context.WithCancel(s.runCtx)
	v.cancel, v.done = cancel, make(chan struct{})
	s.views[v] = struct{}{}
	go func() {
		defer close(v.done)
		if err := v.tc.Run(ctx); err != nil && !errors.Is(err, ErrClosed) {
			s.log.Warn("tree cache stopped", "root", v.root, "error", err)
		}
	}()
}

// deliver passes ev to v's fn (on the goroutine that owns v's state).
func (v *CacheView) deliver(ev TreeEvent) {
	if ev.Type == TreeInitialized {
		close(v.initCh)
	}
	if v.fn != nil {
		v.fn(ev)
	}
}

// Root returns the tracked subtree's root.
func (v *CacheView) Root() string { return v.root }

// Get returns the cached data and stat of path.
func (v *CacheView) Get(path string) ([]byte, Stat, bool) {
	if tc := v.treeCache(); tc != nil {
		return tc.Get(path)
	}
	return nil, Stat{}, false
}

// Children returns the cached child names of path, sorted.
func (v *CacheView) Children(path string) ([]string, bool) {
	if tc := v.treeCache(); tc != nil {
		return tc.Children(path)
	}
	return nil, false
}

func (v *CacheView) treeCache() *TreeCache {
	v.s.mu.Lock()
	defer v.s.mu.Unlock()
	if v.closed {
		return nil
	}
	return v.tc
}

// Initialized is closed once the initial load is complete.
func (v *CacheView) Initialized() <-chan struct{} { return v.initCh }

// Close stops delivery to the view's fn (no call of fn after Close
// returns) and frees the subtree. The view then holds nothing. Closing
// twice is fine.
func (v *CacheView) Close() {
	s := v.s
	s.mu.Lock()
	if v.closed {
		s.mu.Unlock()
		return
	}
	v.closed = true
	s.pending = slices.DeleteFunc(s.pending, func(p *CacheView) bool { return p == v })
	_, started := s.views[v]
	delete(s.views, v)
	v.tc = nil
	s.mu.Unlock()
	if started {
		v.cancel()
		<-v.done
	}
}
