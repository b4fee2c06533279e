package reg

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
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
//
// # How the recursive mode works
//
// Run arms one persistent recursive watch on the namespace root "/" before
// it loads any subtree. Job roots are the namespace root's children, so as
// soon as two jobs are tracked the narrowest root over both is "/" anyway;
// a narrower watch would have to be re-armed (and everything re-read) when
// a Track widened it. The server then notifies every change in the
// namespace, other hosts' jobs included: the watch callback drops a
// notification for a path no subtree holds after a few map lookups (its
// ancestors), without queueing it, and such paths are never read.
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
// every create, data change and delete below "/", in order, from the moment
// it is armed. A read issued after a notification was received reflects a
// state at least as new as that change, and every notified path of a
// subtree is read again after its notification; so once no notification
// arrives, the last read of every notified path shows its current state.
// Nodes nobody notified (those that existed before the watch was armed, or
// whose notification came while their parent was not cached) are found by
// listing: a node is listed when it appears in the cache (in the same round
// when it was not cached when the round began), and a child's notification
// is ignored only while its parent is absent from the cache, in which case
// the parent's later appearance (read after that notification, so listing
// the child) brings the child in. A listing that misses a cached child
// marks it dirty (its Get says whether it is gone), so a listing older than
// a cached child's read never drops it. A node deleted and re-created
// between two reads has another Czxid: the old one is reported NodeDeleted
// (its cached subtree first), then the new one NodeAdded. WithLeaves paths
// are never listed, and notifications below them are ignored.
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
type SharedCache struct {
	c   Client
	log hclog.Logger

	mu      sync.Mutex // guards the fields below
	state   int        // sharedIdle, sharedRunning, sharedDone
	mode    int        // modeUnknown, modeRecursive, modeFallback
	runCtx  context.Context
	pending []*CacheView            // tracked while the mode is unknown
	started map[*CacheView]struct{} // fallback: views with a running TreeCache

	// Recursive mode. rmu guards roots and every view's nodes (written by
	// Run only; Run reads them without the lock).
	rmu   sync.RWMutex
	roots map[string][]*CacheView // tracked views by root

	imu    sync.Mutex // guards the inbox
	inbox  []WatchEvent
	added  []*CacheView // tracked, to be loaded
	closed []*CacheView // closed, to be freed
	wake   chan struct{}

	work []*CacheView // Run's: views with dirty paths, in order
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

// maxRoundOps bounds the reads of one round (the views beyond it wait for
// the next round).
const maxRoundOps = 8192

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
		wake:    make(chan struct{}, 1),
	}
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
	leaf   func(path string) bool
	initCh chan struct{}

	closed atomic.Bool // set by Close (under s.mu and dmu)
	dmu    sync.Mutex  // held while fn runs

	// Fallback: a TreeCache of its own, running until cancel.
	tc     atomic.Pointer[TreeCache]
	cancel context.CancelFunc
	done   chan struct{} // closed when tc's Run has returned

	// Recursive mode: the root node (nil while absent), guarded by s.rmu,
	// written by Run only.
	node *snode
	// Run's own.
	dirty       map[string]uint8 // path → dirty flags
	queued      bool             // in s.work
	initialized bool
	out         []TreeEvent // to deliver after the round
}

// snode is a cached node: kept small (issue 16: 10,000 idle jobs of ~13
// nodes in ≤ 100 MiB), no map per node.
type snode struct {
	name string
	data []byte
	stat nstat
	kids []*snode // sorted by name
}

// nstat is a Stat without DataLength (len(data)): 64 bytes, so that an
// snode takes 128 (a size class) rather than 144.
type nstat struct {
	czxid, mzxid, pzxid, ctime, mtime, owner int64
	version, cversion, aversion, children    int32
}

func packStat(st Stat) nstat {
	return nstat{st.Czxid, st.Mzxid, st.Pzxid, st.Ctime, st.Mtime, st.EphemeralOwner,
		st.Version, st.Cversion, st.Aversion, st.NumChildren}
}

// Stat returns n's Stat.
func (n *snode) Stat() Stat {
	st := n.stat
	return Stat{Czxid: st.czxid, Mzxid: st.mzxid, Pzxid: st.pzxid, Ctime: st.ctime, Mtime: st.mtime,
		Version: st.version, Cversion: st.cversion, Aversion: st.aversion, EphemeralOwner: st.owner,
		DataLength: int32(len(n.data)), NumChildren: st.children}
}

// Dirty flags.
const (
	// dirtyList: list the node's children too (a resync, or a node that
	// appeared without being listed).
	dirtyList uint8 = 1 << iota
)

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
// has returned, or at an invalid root, is never loaded.
func (s *SharedCache) Track(root string, fn func(TreeEvent), opts ...TreeCacheOption) *CacheView {
	var o TreeCache
	o.leaf = func(string) bool { return false }
	for _, f := range opts {
		f(&o)
	}
	v := &CacheView{s: s, root: root, fn: fn, opts: opts, leaf: o.leaf, initCh: make(chan struct{})}
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
	_, _, closed := s.takeInbox()
	for _, v := range closed {
		s.free(v)
	}
}

// Back-off bounds after a failed request, as a TreeCache's.
const minBackoff, maxBackoff = 50 * time.Millisecond, 2 * time.Second

// arm arms the recursive watch on "/", retrying with back-off until it is
// armed, the server answers ErrUnimplemented, the client closes or ctx
// ends. Once armed, the views tracked so far are loaded by Run.
func (s *SharedCache) arm(ctx context.Context, rw RecursiveWatcher) error {
	backoff := minBackoff
	for {
		err := rw.WatchRecursive(ctx, "/", s.notify)
		if err == nil {
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
		close(v.initCh)
	}
	if v.fn != nil {
		v.fn(ev)
	}
}

// --- recursive mode ---

// addRecursive registers v for the watch callback and hands it to Run to
// load. Called with s.mu held. The registration comes first: every change
// notified from then on is queued, and the load's reads come after it.
func (s *SharedCache) addRecursive(v *CacheView) {
	s.rmu.Lock()
	s.roots[v.root] = append(s.roots[v.root], v)
	s.rmu.Unlock()
	s.imu.Lock()
	s.added = append(s.added, v)
	s.imu.Unlock()
	s.poke()
}

func (s *SharedCache) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// notify is the recursive watch's callback (on the client's delivery
// goroutine): it queues the notification unless no view holds its path.
func (s *SharedCache) notify(ev WatchEvent) {
	switch ev.Type {
	case EventNodeCreated, EventNodeDeleted, EventNodeDataChanged:
		s.rmu.RLock()
		tracked := s.tracked(ev.Path)
		s.rmu.RUnlock()
		if !tracked {
			return
		}
	}
	s.imu.Lock()
	s.inbox = append(s.inbox, ev)
	s.imu.Unlock()
	s.poke()
}

// tracked reports whether a view's root is path or one of its ancestors.
// Caller holds rmu.
func (s *SharedCache) tracked(path string) bool {
	found := false
	s.viewsOf(path, func(*CacheView) { found = true })
	return found
}

// viewsOf calls f for each view whose subtree holds path. Caller holds rmu.
func (s *SharedCache) viewsOf(path string, f func(*CacheView)) {
	if len(s.roots) == 0 {
		return
	}
	for p := path; ; p = Parent(p) {
		for _, v := range s.roots[p] {
			f(v)
		}
		if p == "/" {
			return
		}
	}
}

// runRecursive is Run's loop in recursive mode.
func (s *SharedCache) runRecursive(ctx context.Context) error {
	backoff := minBackoff
	for {
		evs, added, closed := s.takeInbox()
		for _, v := range closed {
			s.free(v)
		}
		for _, ev := range evs {
			switch ev.Type {
			case EventNotWatching:
				if ctx.Err() != nil || ev.Err == nil {
					return nil
				}
				return fmt.Errorf("shared cache: recursive watch ended: %w", ev.Err)
			case EventResync:
				s.log.Debug("shared cache: resync")
				s.rmu.RLock()
				for _, vs := range s.roots {
					for _, v := range vs {
						s.resync(v)
					}
				}
				s.rmu.RUnlock()
			default:
				s.rmu.RLock()
				s.viewsOf(ev.Path, func(v *CacheView) { s.noteChange(v, ev.Path) })
				s.rmu.RUnlock()
			}
		}
		for _, v := range added {
			if !v.closed.Load() {
				s.mark(v, v.root, dirtyList)
			}
		}
		if len(s.work) == 0 {
			select {
			case <-ctx.Done():
				return nil
			case <-s.wake:
			}
			continue
		}
		if err := s.round(ctx); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if errors.Is(err, ErrClosed) {
				return fmt.Errorf("shared cache: %w", err)
			}
			s.log.Warn("shared cache: read failed; re-reading", "error", err, "backoff", backoff)
			if !sleepCtx(ctx, backoff) {
				return nil
			}
			backoff = min(backoff*2, maxBackoff)
			continue
		}
		backoff = minBackoff
	}
}

func (s *SharedCache) takeInbox() (evs []WatchEvent, added, closed []*CacheView) {
	s.imu.Lock()
	defer s.imu.Unlock()
	evs, added, closed = s.inbox, s.added, s.closed
	s.inbox, s.added, s.closed = nil, nil, nil
	return evs, added, closed
}

// free drops a closed view's nodes.
func (s *SharedCache) free(v *CacheView) {
	s.rmu.Lock()
	v.node = nil
	s.rmu.Unlock()
	v.dirty, v.out = nil, nil
}

// noteChange marks path dirty in v when it may matter: it is v's root, or
// its parent is cached (and not a leaf). Otherwise the parent is absent,
// and its appearance, read later, lists path.
func (s *SharedCache) noteChange(v *CacheView, path string) {
	if v.closed.Load() {
		return
	}
	if path != v.root {
		parent := Parent(path)
		if v.lookup(parent) == nil || v.leaf(parent) {
			return
		}
	}
	s.mark(v, path, 0)
}

// resync marks v dirty in full: its root and every cached node, to be read
// and listed again.
func (s *SharedCache) resync(v *CacheView) {
	if v.closed.Load() {
		return
	}
	s.mark(v, v.root, dirtyList)
	if v.node != nil {
		walk(v.root, v.node, func(path string, _ *snode) { s.mark(v, path, dirtyList) })
	}
}

// walk calls f for each node of the subtree at n (path), parents first.
func walk(path string, n *snode, f func(string, *snode)) {
	f(path, n)
	for _, k := range n.kids {
		walk(childPath(path, k.name), k, f)
	}
}

func (s *SharedCache) mark(v *CacheView, path string, flags uint8) {
	if v.dirty == nil {
		v.dirty = make(map[string]uint8)
	}
	v.dirty[path] |= flags
	if !v.queued {
		v.queued = true
		s.work = append(s.work, v)
	}
}

// read is one dirty path of a round.
type read struct {
	v    *CacheView
	path string
	get  int // index of its Get in the round's ops
	kids int // index of its Children, or -1
}

// round reads the dirty paths of the views at the head of s.work (up to
// maxRoundOps reads), applies the results and delivers the events.
func (s *SharedCache) round(ctx context.Context) error {
	var (
		ops   []ReadOp
		reads []read
		views []*CacheView
	)
	taken := 0
	for _, v := range s.work {
		if len(ops) >= maxRoundOps {
			break
		}
		taken++
		v.queued = false
		if v.closed.Load() {
			v.dirty = nil
			continue
		}
		views = append(views, v)
		paths := make([]string, 0, len(v.dirty))
		for p := range v.dirty {
			paths = append(paths, p)
		}
		slices.Sort(paths) // parents first
		for _, p := range paths {
			r := read{v: v, path: p, get: len(ops), kids: -1}
			ops = append(ops, GetOp(p))
			if !v.leaf(p) && (v.dirty[p]&dirtyList != 0 || v.lookup(p) == nil) {
				r.kids = len(ops)
				ops = append(ops, ChildrenOp(p))
			}
			reads = append(reads, r)
		}
		v.dirty = nil
	}
	s.work = slices.Delete(s.work, 0, taken)
	if len(ops) == 0 {
		return nil
	}
	res, err := ReadMany(ctx, s.c, ops...)
	if err != nil {
		// What this round was to read is read again, in full.
		for _, v := range views {
			s.resync(v)
		}
		return err
	}
	s.rmu.Lock()
	for _, r := range reads {
		if r.v.closed.Load() {
			continue
		}
		var kids *ReadResult
		if r.kids >= 0 {
			kids = &res[r.kids]
		}
		s.apply(r.v, r.path, &res[r.get], kids)
	}
	s.rmu.Unlock()
	for _, v := range views {
		if !v.initialized && v.loaded() {
			v.initialized = true
			if v.node != nil {
				walk(v.root, v.node, func(path string, n *snode) {
					v.out = append(v.out, TreeEvent{Type: NodeAdded, Path: path, Data: n.data, Stat: n.Stat()})
				})
			}
			v.out = append(v.out, TreeEvent{Type: TreeInitialized})
			close(v.initCh)
		}
		v.deliver()
	}
	return nil
}

// loaded reports whether v's initial load is complete: what is left dirty
// are data changes of cached nodes.
func (v *CacheView) loaded() bool {
	for p, f := range v.dirty {
		if f&dirtyList != 0 || v.lookup(p) == nil {
			return false
		}
	}
	return true
}

// deliver passes v's pending events to its fn unless v is closed.
func (v *CacheView) deliver() {
	out := v.out
	v.out = nil
	if len(out) == 0 || v.fn == nil {
		return
	}
	v.dmu.Lock()
	defer v.dmu.Unlock()
	if v.closed.Load() {
		return
	}
	for _, ev := range out {
		v.fn(ev)
	}
}

func (v *CacheView) emit(typ TreeEventType, path string, n *snode) {
	if v.initialized && v.fn != nil {
		v.out = append(v.out, TreeEvent{Type: typ, Path: path, Data: n.data, Stat: n.Stat()})
	}
}

// apply updates v's copy of path from its Get (and Children) result. Caller
// holds rmu.
func (s *SharedCache) apply(v *CacheView, path string, get, kids *ReadResult) {
	n := v.lookup(path)
	if get.Err != nil { // absent (or unreadable: ErrNoAuth)
		if n != nil {
			v.remove(path, n)
		}
		return
	}
	if n != nil && n.stat.czxid != get.Stat.Czxid {
		v.remove(path, n) // deleted and re-created since it was read
		n = nil
	}
	switch {
	case n == nil:
		var parent *snode
		if path != v.root {
			ppath := Parent(path)
			if parent = v.lookup(ppath); parent == nil || v.leaf(ppath) {
				return // its parent's appearance lists it
			}
		}
		n = &snode{name: strings.Clone(Base(path)), data: get.Data, stat: packStat(get.Stat)}
		if parent == nil {
			v.node = n
		} else {
			i, _ := slices.BinarySearchFunc(parent.kids, n.name, func(k *snode, name string) int { return strings.Compare(k.name, name) })
			parent.kids = slices.Insert(parent.kids, i, n)
		}
		v.emit(NodeAdded, path, n)
		if kids == nil && !v.leaf(path) {
			s.mark(v, path, dirtyList)
		}
	case get.Stat.Mzxid != n.stat.mzxid:
		n.data, n.stat = get.Data, packStat(get.Stat)
		v.emit(NodeUpdated, path, n)
	default:
		n.stat = packStat(get.Stat)
	}
	if kids == nil || kids.Err != nil {
		return // absent now: its deletion is notified
	}
	// New children are read (and listed); cached children the listing
	// lacks are read again: gone, or created after the listing.
	names := slices.Sorted(slices.Values(kids.Children))
	i := 0
	for _, name := range names {
		for i < len(n.kids) && n.kids[i].name < name {
			s.mark(v, childPath(path, n.kids[i].name), 0)
			i++
		}
		if i < len(n.kids) && n.kids[i].name == name {
			i++
			continue
		}
		s.mark(v, childPath(path, name), 0)
	}
	for ; i < len(n.kids); i++ {
		s.mark(v, childPath(path, n.kids[i].name), 0)
	}
}

// remove drops the cached node n at path and its subtree, children first,
// reporting each NodeDeleted with its last data. Caller holds rmu.
func (v *CacheView) remove(path string, n *snode) {
	v.drop(path, n)
	if path == v.root {
		v.node = nil
	} else if p := v.lookup(Parent(path)); p != nil {
		p.kids = slices.DeleteFunc(p.kids, func(k *snode) bool { return k == n })
	}
}

// drop reports the subtree at n deleted, children first.
func (v *CacheView) drop(path string, n *snode) {
	for _, k := range n.kids {
		v.drop(childPath(path, k.name), k)
	}
	v.emit(NodeDeleted, path, n)
}

// lookup returns the cached node at path, or nil.
func (v *CacheView) lookup(path string) *snode {
	n := v.node
	if n == nil || path == v.root {
		return n
	}
	rest := path
	if v.root != "/" {
		var ok bool
		if rest, ok = strings.CutPrefix(path, v.root); !ok || rest == "" || rest[0] != '/' {
			return nil
		}
	}
	rest = rest[1:]
	for n != nil && rest != "" {
		var name string
		name, rest, _ = strings.Cut(rest, "/")
		n = n.child(name)
	}
	return n
}

func (n *snode) child(name string) *snode {
	i, ok := slices.BinarySearchFunc(n.kids, name, func(k *snode, name string) int { return strings.Compare(k.name, name) })
	if !ok {
		return nil
	}
	return n.kids[i]
}

// --- the view ---

// Root returns the tracked subtree's root.
func (v *CacheView) Root() string { return v.root }

// Get returns the cached data and stat of path.
func (v *CacheView) Get(path string) ([]byte, Stat, bool) {
	if tc := v.tc.Load(); tc != nil {
		return tc.Get(path)
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
	return slices.Clone(n.data), n.Stat(), true
}

// Children returns the cached child names of path, sorted.
func (v *CacheView) Children(path string) ([]string, bool) {
	if tc := v.tc.Load(); tc != nil {
		return tc.Children(path)
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
		out[i] = k.name
	}
	return out, true
}

// Initialized is closed once the initial load is complete.
func (v *CacheView) Initialized() <-chan struct{} { return v.initCh }

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
	// A delivery under way returns before this lock is taken; later ones
	// see closed.
	v.dmu.Lock()
	v.dmu.Unlock() //nolint:staticcheck // an empty critical section: waiting out fn
	if started {
		v.cancel()
		<-v.done
		v.tc.Store(nil)
	}
	if !recursive {
		return
	}
	s.rmu.Lock()
	s.roots[v.root] = slices.DeleteFunc(s.roots[v.root], func(x *CacheView) bool { return x == v })
	if len(s.roots[v.root]) == 0 {
		delete(s.roots, v.root)
	}
	s.rmu.Unlock()
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
