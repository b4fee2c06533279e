package reg

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

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

// SharedCache mirrors chosen subtrees (job roots) of one client with
// recursive watches (one per tracked root on a remote registry, one store
// watch on an in-process one) and one goroutine however many subtrees it
// tracks. On a client without RecursiveWatcher (or when it
// answers ErrUnimplemented: ZooKeeper before 3.6) each tracked subtree is a
// TreeCache of its own (a goroutine per subtree then).
//
// A tracked subtree has the semantics of a TreeCache over its root: no
// change is missed, changes may coalesce (latest data wins), a node deleted
// and re-created between reads gives NodeDeleted then NodeAdded (its Czxid
// changed), and after a resync (a reconnection or a new session) the
// differences are reported (e.g. NodeDeleted for the old session's
// ephemerals).
//
// # How the recursive mode works
//
// Each tracked root gets a persistent recursive watch of its own, armed
// before the root is read (sharedroots.go: why not one on "/", and what
// nested roots cost). The server notifies every change below the root;
// the watch callback drops a notification for a path no subtree holds
// (below a nested root's watch, or of a root whose last view closed)
// after a few map lookups (its ancestors), without queueing it.
//
// The callback queues the other notifications (an unbounded queue: it never
// blocks) and Run, the only goroutine, takes them in order and marks paths
// dirty in the subtrees that hold them; it then reads the dirty paths in
// rounds with ReadMany (a Get per path, and a Children for a path not yet
// cached or to be listed again), applies the results, reports the
// differences to the subtrees' fns, and takes the notifications that came
// meanwhile before the next round.
//
// Why this converges to the server's state: a recursive watch notifies
// every create, data change and delete below its root, in order, from the
// moment it is armed, and every watch of the client notifies in the order
// of the connection. A read issued after a notification was received reflects a
// state at least as new as that change, and every notified path of a
// subtree is read again after its notification; so once no notification
// arrives, the last read of every notified path shows its current state.
// Nodes nobody notified (those that existed before the watch was armed, or
// whose notification came while their parent was not cached) are found by
// listing: a node is listed when it appears in the cache (in the same round
// when it was not cached when the round began), and a child's notification
// is ignored only while its parent is absent from the cache, in which case
// the parent's later appearance (read after that notification, so listing
// the child) brings the child in. A listing never removes a cached child
// (it may be older than the child's read): deletions are notified, and on a
// resync every cached node is read. A node deleted and re-created
// between two reads has another Czxid: the old one is reported NodeDeleted
// (its cached subtree first), then the new one NodeAdded. WithLeaves paths
// are never listed, and notifications below them are ignored.
//
// A deletion is not read back when the watch is inline (the ZooKeeper
// client's and the embedded registry's are) and it came after every reply
// of the last round: the notifications the server sent before a reply are
// in the queue by the time the read waiting for it returns, so such a
// deletion is newer than everything the cache has read, and it removes the
// node (its cached subtree first) at once. One that came before the last
// round's replies may be older than what they showed (the node deleted and
// re-created before the read) and is read back, as is any deletion while a
// subtree has other paths waiting to be read (its events keep their
// order). A job's running node is created and deleted at every run; each
// host following the job reads it once, at its creation.
//
// EventResync (the connection was lost, or a new session began: changes
// may have been missed) marks every tracked subtree dirty in full: each
// cached node is read and listed again, and the differences are reported
// (the old session's ephemerals as NodeDeleted). A failed round (a
// connection problem) is retried after a back-off as a full re-read of the
// subtrees it was reading. A new subtree is loaded breadth-first in the
// same rounds (a level per round, a Get and a Children per node); its
// fn gets nothing until the load is complete, then a NodeAdded per node and
// TreeInitialized, then every change, as a TreeCache's reader does.
//
// # In place
//
// On a client that is a StoreWatcher (the embedded registry) the cache
// keeps no copy while the store watch's events flow: a subtree is loaded
// and registered in one step under the registry's lock, its reads go to
// the registry's tree, and its events are the watch's, each of which
// carries its node. The first EventPaused (the connection suspended, the
// session ended) gives every such subtree a copy of itself as it is then,
// and from then on the cache works as above (see addRecursive).
type SharedCache struct {
	c   Client
	log hclog.Logger

	mu      sync.Mutex // guards the fields below
	state   int        // sharedIdle, sharedRunning, sharedDone
	mode    int        // modeUnknown, modeRecursive, modeFallback
	runCtx  context.Context
	pending []*CacheView            // tracked while the mode is unknown
	started map[*CacheView]struct{} // fallback: views with a running TreeCache

	// Recursive mode. tmu guards roots (read by the watch callback, which
	// so never waits for a round being applied); rmu guards every view's
	// nodes (written by Run only, which reads them without it).
	tmu   sync.RWMutex
	roots map[string][]*CacheView // tracked views by root
	depth Depths                  // of the roots
	rmu   sync.RWMutex

	imu   sync.Mutex // guards the inbox and readMark
	inbox []WatchEvent
	// readMark is how many of the inbox's events had come when the last
	// round's reads returned; the events from readMark on came after
	// every reply of that round (ordered: see noteEvent).
	readMark int
	// ordered: the watch is inline (InlineRecursiveWatcher), so that an
	// event the server sent before a reply is in the inbox by the time
	// the read waiting for that reply returns. Set by arm before Run
	// reads it.
	ordered bool
	// Per-root watches (see arm): perRoot and watchRoot are set by arm
	// before Run's loop reads them; watches (by root) and armedOnce are
	// Run's own; the arming queue, its workers' count and their results
	// are guarded by imu.
	perRoot   bool
	watchRoot func(ctx context.Context, path string, fn func(WatchEvent)) error
	watches   map[string]*rootWatch
	armedOnce bool // a root's watch was armed: the server has recursive watches
	armQueue  []*rootWatch
	arming    int  // workers arming the queue's watches
	probed    bool // a watch was armed: rootArmers may run
	armed     []armResult
	// spare is the array of the last inbox applied, emptied, for the next
	// events (none when it grew past maxSpareInbox).
	spare  []WatchEvent
	added  []*CacheView // tracked, to be loaded
	closed []*CacheView // closed, to be freed
	wake   chan struct{}

	// Run's own: the views with dirty paths, in order, and a round's
	// buffers.
	work  []*CacheView
	ops   []ReadOp
	res   []ReadResult // the round's results (MultiReadAppend fills it)
	reads []read
	views []*CacheView
	paths []string // one view's dirty paths, sorted
	// freeDirty are emptied dirty maps of views a round has read, for
	// the next views marked (a map per execution's changes was a tenth
	// of the bytes an execution allocated on the embedded registry).
	freeDirty []map[string]uint8
	// freeOut are emptied event buffers of views a round has delivered,
	// for the next views with events (v.out).
	freeOut [][]TreeEvent
	// known are the views noteEvent applied events to, to deliver.
	known []*CacheView

	// In place (a StoreWatcher client, see addRecursive): store is the
	// registry's tree, which views loaded in place read instead of a copy
	// of their own. inplace is set while the store watch's events flow
	// (from arm to its first EventPaused); read and cleared under the
	// registry's lock (notify, Atomically), read by Track.
	store   Store
	inplace atomic.Bool
	// marks are what the inbox's eventLoaded and EventPaused markers
	// stand for, in their order (guarded by imu).
	marks []storeMark
}

// SharedCache states and modes.
const (
	sharedIdle = iota
	sharedRunning
	sharedDone
)

const (
	modeUnknown = iota
	modeRecursive
	modeFallback
)

// SharedCacheOption configures a SharedCache.
type SharedCacheOption func(*SharedCache)

// WithSharedLogger sets the logger (default: none).
func WithSharedLogger(l hclog.Logger) SharedCacheOption {
	return func(s *SharedCache) { s.log = l }
}

// NewSharedCache returns a cache of c's namespace; Run starts it.
func NewSharedCache(c Client, opts ...SharedCacheOption) *SharedCache {
	s := &SharedCache{
		c:       c,
		log:     hclog.NewNullLogger(),
		started: make(map[*CacheView]struct{}),
		roots:   make(map[string][]*CacheView),
		watches: make(map[string]*rootWatch),
		wake:    make(chan struct{}, 1),
	}
	for _, o := range opts {
		o(s)
	}
	return s
}

// CacheView is one subtree tracked by a SharedCache (see Track).
type CacheView struct {
	s    *SharedCache
	root string
	fn   func(TreeEvent)
	opts []TreeCacheOption
	leaf func(path string) bool
	// initCh is Initialized's channel, made when asked for before the
	// load is complete and dropped once closed (initDone then: closed
	// channels are all alike); guarded by s.imu.
	initCh   chan struct{}
	initDone atomic.Bool
	// counted is WithCounted's func (nil: none), count the number of
	// cached nodes it reports true for (recursive mode; written under
	// s.rmu).
	counted func(path string) bool
	count   atomic.Int64

	closed atomic.Bool // set by Close, under s.mu
	dmu    sync.Mutex  // held while fn runs

	// Fallback: a TreeCache of its own, running until cancel.
	tc     atomic.Pointer[TreeCache]
	cancel context.CancelFunc
	done   chan struct{} // closed when tc's Run has returned

	// Recursive mode: the root node (nil while absent), guarded by s.rmu,
	// written by Run only.
	node *snode
	// Run's own.
	watch       *rootWatch       // per-root watches: the root's (see arm)
	dirty       map[string]uint8 // path → dirty flags
	queued      bool             // in s.work
	known       bool             // in s.known
	initialized bool
	quietLoad   bool        // WithoutInitialEvents
	out         []TreeEvent // to deliver after the round

	// inStore: the view was loaded in place and holds no copy: its reads
	// go to s.store. Set when it is loaded and cleared when a pause gives
	// it a copy (node), both under the registry's lock; read by every
	// reader.
	inStore atomic.Bool
	// inPlace: Run turns the store watch's events into the view's
	// (noteInPlace), from its load's marker to a pause's; Run's own.
	inPlace bool
	// preload are the load's events (NodeAdded per node) until Run
	// delivers them (in place).
	preload []TreeEvent
}

// Track mirrors the subtree at root (root included; it need not exist).
// fn gets, in order, on the cache's goroutine: NodeAdded for each node of
// the initial load, TreeInitialized, then every change (NodeAdded,
// NodeUpdated, NodeDeleted with the same meaning and coalescing as a
// TreeCache's, children deleted before their parents). fn must not block
// (post to a queue) and must not call the view's Close; a nil fn makes the
// view a mirror only. Options: WithLeaves and WithoutInitialEvents (as a
// TreeCache's); WithoutEvents is ignored (pass a nil fn). Close stops
// delivery (no call of fn after Close returns) and frees the subtree's
// memory.
//
// Track may be called before or while Run runs; a subtree tracked after Run
// has returned, or at an invalid root, is never loaded.
func (s *SharedCache) Track(root string, fn func(TreeEvent), opts ...TreeCacheOption) *CacheView {
	var o TreeCache
	o.leaf = func(string) bool { return false }
	for _, f := range opts {
		f(&o)
	}
	v := &CacheView{s: s, root: root, fn: fn, opts: opts, leaf: o.leaf, counted: o.counted, quietLoad: o.quietLoad}
	if err := ValidatePath(root, false); err != nil {
		s.log.Error("shared cache: not tracked", "root", root, "error", err)
		v.closed.Store(true)
		return v
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state == sharedDone {
		return v
	}
	switch s.mode {
	case modeUnknown:
		s.pending = append(s.pending, v)
	case modeFallback:
		s.startFallback(v)
	case modeRecursive:
		s.addRecursive(v)
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
	s.mu.Unlock()
	if rw, ok := s.c.(RecursiveWatcher); ok {
		err := s.arm(ctx, rw)
		switch {
		case err == nil:
			err = s.runRecursive(ctx)
			if errors.Is(err, errNoRecursive) {
				s.log.Info("no recursive watches on this server: a tree cache per subtree")
				s.toFallback()
				return s.runFallback(ctx)
			}
			s.setDone()
			return err
		case errors.Is(err, ErrUnimplemented):
			s.log.Info("no recursive watches on this server: a tree cache per subtree", "error", err)
		default:
			s.setDone()
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
	}
	s.mu.Lock()
	s.mode = modeFallback
	for _, v := range s.pending {
		s.startFallback(v)
	}
	s.pending = nil
	s.mu.Unlock()
	return s.runFallback(ctx)
}

// setDone marks Run as returned and frees the views closed meanwhile.
func (s *SharedCache) setDone() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.state = sharedDone
	s.pending = nil
	_, _, _, _, closed := s.takeInbox()
	for _, v := range closed {
		s.free(v)
	}
}

// Back-off bounds after a failed request (TreeCache, SharedCache).
const minBackoff, maxBackoff = 50 * time.Millisecond, 2 * time.Second

// arm sets up the recursive mode. On a StoreWatcher it arms the store
// watch, retrying with back-off until it is armed, the client answers
// ErrUnimplemented, closes or ctx ends. On another RecursiveWatcher it
// sends nothing: each tracked root gets a watch of its own as Run takes it
// (watchFor), before its load. The views tracked so far go to Run.
func (s *SharedCache) arm(ctx context.Context, rw RecursiveWatcher) error {
	backoff := minBackoff
	sw, inPlace := rw.(StoreWatcher)
	for {
		watch := rw.WatchRecursive
		in, inline := rw.(InlineRecursiveWatcher)
		if inline {
			watch = in.WatchRecursiveInline // notify never blocks nor calls the client
		}
		s.ordered = inline
		var err error
		if inPlace {
			// Set first: a pause that comes before WatchStore returns
			// clears it.
			s.inplace.Store(true)
			var st Store
			if st, err = sw.WatchStore(ctx, s.notify); err == nil {
				s.mu.Lock()
				s.store = st
				s.mu.Unlock()
				break
			}
			s.inplace.Store(false)
			if errors.Is(err, ErrUnimplemented) {
				inPlace = false
				continue
			}
		} else {
			// The subtrees' own watches, armed as they are tracked
			// (watchFor): nothing to send yet.
			s.perRoot, s.watchRoot = true, watch
			break
		}
		if errors.Is(err, ErrUnimplemented) || errors.Is(err, ErrClosed) || ctx.Err() != nil {
			return fmt.Errorf("shared cache: %w", err)
		}
		s.log.Warn("shared cache: arming the recursive watch failed; retrying", "error", err, "backoff", backoff)
		if !sleepCtx(ctx, backoff) {
			return ctx.Err()
		}
		backoff = min(backoff*2, maxBackoff)
	}
	s.mu.Lock()
	s.mode = modeRecursive
	for _, v := range s.pending {
		s.addRecursive(v)
	}
	s.pending = nil
	s.mu.Unlock()
	return nil
}

// sleepCtx waits d and reports true, or false when ctx ends first.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// --- fallback: a TreeCache per view ---

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
	views := make([]*CacheView, 0, len(s.started))
	for v := range s.started {
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
	if v.closed.Load() {
		return
	}
	opts := append([]TreeCacheOption{WithTreeLogger(s.log)}, v.opts...)
	tc := NewTreeCache(s.c, v.root, opts...)
	tc.discard = false
	tc.fn = v.deliverFallback
	ctx, cancel := context.WithCancel(s.runCtx)
	v.cancel, v.done = cancel, make(chan struct{})
	v.tc.Store(tc)
	s.started[v] = struct{}{}
	go func() {
		defer close(v.done)
		if err := tc.Run(ctx); err != nil && !errors.Is(err, ErrClosed) {
			s.log.Warn("tree cache stopped", "root", v.root, "error", err)
		}
	}()
}

// deliverFallback passes ev to v's fn (on its TreeCache's goroutine).
func (v *CacheView) deliverFallback(ev TreeEvent) {
	if ev.Type == TreeInitialized {
		v.setInitialized()
	}
	if v.fn != nil {
		v.fn(ev)
	}
}

// Root returns the tracked subtree's root.
func (v *CacheView) Root() string { return v.root }

// Get returns the cached data and stat of path.
func (v *CacheView) Get(path string) ([]byte, Stat, bool) {
	if tc := v.tc.Load(); tc != nil {
		return tc.Get(path)
	}
	data, st, ok := v.Peek(path)
	if !ok {
		return nil, Stat{}, false
	}
	return slices.Clone(data), st, true
}

// Peek is Get without the copy: the data returned is the cache's own,
// which the cache never modifies (a change replaces it), and the caller
// must not modify it either. For readers that only compare or look at the
// stat (a trigger reads about ten nodes).
func (v *CacheView) Peek(path string) ([]byte, Stat, bool) {
	if tc := v.tc.Load(); tc != nil {
		return tc.Get(path)
	}
	if v.inStore.Load() {
		return v.readStore(path)
	}
	v.s.rmu.RLock()
	defer v.s.rmu.RUnlock()
	if v.closed.Load() {
		return nil, Stat{}, false
	}
	n := v.lookup(path)
	if n == nil {
		return nil, Stat{}, false
	}
	return n.data, n.Stat(), true
}

// Children returns the cached child names of path, sorted.
func (v *CacheView) Children(path string) ([]string, bool) {
	if tc := v.tc.Load(); tc != nil {
		return tc.Children(path)
	}
	if v.inStore.Load() {
		out := make([]string, 0)
		found := v.eachStoreChild(path, func(name string) bool {
			out = append(out, name)
			return true
		})
		if !found {
			return nil, false
		}
		return out, true
	}
	v.s.rmu.RLock()
	defer v.s.rmu.RUnlock()
	if v.closed.Load() {
		return nil, false
	}
	n := v.lookup(path)
	if n == nil {
		return nil, false
	}
	out := make([]string, len(n.kids))
	for i, k := range n.kids {
		out[i] = k.name.Value()
	}
	return out, true
}

// EachChild calls f with the cached child names of path, sorted, until f
// returns false: Children without the copy. found is false when path is
// not cached. f runs under the cache's read lock (or the registry's, for a
// view loaded in place) and must call neither the cache nor the registry.
func (v *CacheView) EachChild(path string, f func(name string) bool) (found bool) {
	if tc := v.tc.Load(); tc != nil {
		names, ok := tc.Children(path)
		for _, name := range names {
			if !f(name) {
				break
			}
		}
		return ok
	}
	if v.inStore.Load() {
		return v.eachStoreChild(path, f)
	}
	v.s.rmu.RLock()
	defer v.s.rmu.RUnlock()
	if v.closed.Load() {
		return false
	}
	n := v.lookup(path)
	if n == nil {
		return false
	}
	for _, k := range n.kids {
		if !f(k.name.Value()) {
			break
		}
	}
	return true
}

// Initialized is closed once the initial load is complete.
func (v *CacheView) Initialized() <-chan struct{} {
	if v.initDone.Load() {
		return closedChan
	}
	v.s.imu.Lock()
	defer v.s.imu.Unlock()
	if v.initDone.Load() {
		return closedChan
	}
	if v.initCh == nil {
		v.initCh = make(chan struct{})
	}
	return v.initCh
}

// setInitialized marks the initial load complete (Initialized).
func (v *CacheView) setInitialized() {
	v.s.imu.Lock()
	defer v.s.imu.Unlock()
	v.initDone.Store(true)
	if v.initCh != nil {
		close(v.initCh)
		v.initCh = nil
	}
}

// closedChan is closed before any use and never written to, so it is not
// mutable state: every loaded view's Initialized (a channel each was
// 96 bytes of an idle job).
var closedChan = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

// Counted returns how many of the view's cached nodes WithCounted's func
// reports true for, as of the view's last change (a lookup of those nodes
// would find as many). ok is false when the view does not count: no
// WithCounted, a TreeCache fallback, not loaded yet, or closed.
func (v *CacheView) Counted() (n int, ok bool) {
	if v.counted == nil || v.tc.Load() != nil || v.closed.Load() {
		return 0, false
	}
	if !v.initDone.Load() {
		return 0, false
	}
	return int(v.count.Load()), true
}

// countNode counts the node at path, added (d 1) or removed (d -1), when
// WithCounted's func says so. Caller holds s.rmu.
func (v *CacheView) countNode(path string, d int64) {
	if v.counted != nil && v.counted(path) {
		v.count.Add(d)
	}
}

// Close stops delivery to the view's fn (no call of fn after Close
// returns) and frees the subtree; the view then holds nothing. Closing
// twice is fine.
func (v *CacheView) Close() {
	s := v.s
	s.mu.Lock()
	if v.closed.Load() {
		s.mu.Unlock()
		return
	}
	v.closed.Store(true)
	s.pending = slices.DeleteFunc(s.pending, func(p *CacheView) bool { return p == v })
	_, started := s.started[v]
	delete(s.started, v)
	recursive := s.mode == modeRecursive
	s.mu.Unlock()
	// An empty critical section: a delivery under way (which holds dmu)
	// returns before it, and later ones see closed.
	v.dmu.Lock()
	v.dmu.Unlock()
	if started {
		v.cancel()
		<-v.done
		v.tc.Store(nil)
	}
	if !recursive {
		return
	}
	s.tmu.Lock()
	if vs := s.roots[v.root]; slices.Contains(vs, v) {
		s.roots[v.root] = slices.DeleteFunc(vs, func(x *CacheView) bool { return x == v })
		s.depth.Remove(v.root)
	}
	if len(s.roots[v.root]) == 0 {
		delete(s.roots, v.root)
	}
	s.tmu.Unlock()
	// Run (or, once it has returned, setDone) frees the nodes.
	s.mu.Lock()
	if s.state == sharedDone {
		s.free(v)
	} else {
		s.imu.Lock()
		s.closed = append(s.closed, v)
		s.imu.Unlock()
		s.poke()
	}
	s.mu.Unlock()
}
