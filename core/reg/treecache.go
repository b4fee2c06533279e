package reg

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sort"

	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
)

// TreeEventType is the kind of a TreeCache event, as CuratorCache's.
type TreeEventType int

// TreeCache event types.
const (
	// NodeAdded: a node appeared (including every node of the initial
	// load); Data is its data.
	NodeAdded TreeEventType = iota + 1
	// NodeUpdated: a node's data was set (its Mzxid changed); Data is the
	// new data. Changes in quick succession may be coalesced into one.
	NodeUpdated
	// NodeDeleted: a node went away; Data is the last data the cache saw.
	// A deleted subtree yields one event per node, children first.
	NodeDeleted
	// TreeInitialized: the initial load is complete (sent once).
	TreeInitialized
)

func (t TreeEventType) String() string {
	switch t {
	case NodeAdded:
		return "added"
	case NodeUpdated:
		return "updated"
	case NodeDeleted:
		return "deleted"
	case TreeInitialized:
		return "initialized"
	}
	return fmt.Sprintf("TreeEventType(%d)", int(t))
}

// TreeEvent is one change in a watched subtree.
type TreeEvent struct {
	Type TreeEventType
	Path string // namespace-relative; "" for TreeInitialized
	Data []byte
	Stat Stat
}

// TreeCache mirrors the subtree at a root (the root included) and reports
// every change as TreeEvents, like Curator's CuratorCache over a job root.
//
// It is built from one-shot data and child watches re-armed after each
// event; because a read arms its watch atomically, and every re-arm re-reads
// and diffs against the cache, no change is missed: at worst several
// changes coalesce into one event carrying the latest data. A node deleted
// and re-created between two reads yields NodeDeleted then NodeAdded (its
// Czxid changed). After a session loss every watch ends; the cache re-reads
// the whole subtree in the new session and reports the differences (e.g.
// NodeDeleted for the old session's ephemerals). Events come from one
// goroutine, in order.
type TreeCache struct {
	c       Client
	root    string
	log     hclog.Logger
	discard bool
	// quietLoad: no events before TreeInitialized (WithoutInitialEvents).
	quietLoad bool
	leaf      func(path string) bool
	// counted is WithCounted's func: read by SharedCache.Track only (a
	// TreeCache counts nothing).
	counted func(path string) bool
	// fn, when set, gets every event on Run's goroutine instead of the
	// Events queue (SharedCache's fallback).
	fn func(TreeEvent)

	events chan TreeEvent
	initCh chan struct{}

	mu    sync.RWMutex // guards nodes for readers; written only by Run
	nodes map[string]*cnode
}

type cnode struct {
	data       []byte
	stat       Stat
	children   map[string]struct{}
	dataWatch  bool
	childWatch bool
	// listedPzxid is the Pzxid the node had when its children were last
	// listed with a child watch armed (ChildrenW); 0 when the last listing
	// armed none (see handle).
	listedPzxid int64
}

// TreeCacheOption configures a TreeCache.
type TreeCacheOption func(*TreeCache)

// WithTreeLogger sets the logger (default: none).
func WithTreeLogger(l hclog.Logger) TreeCacheOption { return func(t *TreeCache) { t.log = l } }

// WithoutEvents makes the cache a mirror only: no events are queued, so
// nobody needs to read Events.
func WithoutEvents() TreeCacheOption { return func(t *TreeCache) { t.discard = true } }

// WithoutInitialEvents leaves out the events of the initial load (a
// NodeAdded for every node there is when the cache starts): the first event
// is TreeInitialized, then every change after it, as usual. For a caller
// that reads the initial tree from the cache itself and would drop them.
func WithoutInitialEvents() TreeCacheOption { return func(t *TreeCache) { t.quietLoad = true } }

// WithLeaves names the paths that never have children (leaf reports true
// for them): the cache neither lists their children nor arms a child
// watch on them, which saves a request and a watch per such node (and the
// re-read when that watch fires on the node's deletion). A child created
// under such a path anyway is not seen.
func WithLeaves(leaf func(path string) bool) TreeCacheOption {
	return func(t *TreeCache) { t.leaf = leaf }
}

// WithCounted makes a SharedCache's view count its cached nodes whose path
// counted reports true for (CacheView.Counted), for a caller that asks
// often whether there is any such node: it reads one number instead of
// looking the nodes up. Only a view of a SharedCache in recursive mode
// counts; a TreeCache (the SharedCache's fallback included) does not.
// counted must be cheap: the cache asks it of every node it adds or
// removes.
func WithCounted(counted func(path string) bool) TreeCacheOption {
	return func(t *TreeCache) { t.counted = counted }
}

// NewTreeCache returns a cache of the subtree at root; Run starts it.
func NewTreeCache(c Client, root string, opts ...TreeCacheOption) *TreeCache {
	t := &TreeCache{
		c:      c,
		root:   root,
		log:    hclog.NewNullLogger(),
		events: make(chan TreeEvent),
		initCh: make(chan struct{}),
		nodes:  make(map[string]*cnode),
		leaf:   func(string) bool { return false },
	}
	for _, o := range opts {
		o(t)
	}
	return t
}

// WatchTree runs a TreeCache over root until ctx ends and returns its
// events; the channel closes once the cache has stopped.
func WatchTree(ctx context.Context, c Client, root string) (<-chan TreeEvent, error) {
	if err := ValidatePath(root, false); err != nil {
		return nil, err
	}
	t := NewTreeCache(c, root)
	go func() { _ = t.Run(ctx) }()
	return t.Events(), nil
}

// Events returns the event stream. Unread events queue without bound (the
// cache never blocks on its reader); the channel closes when Run returns.
func (t *TreeCache) Events() <-chan TreeEvent { return t.events }

// Initialized is closed once the initial load is complete.
func (t *TreeCache) Initialized() <-chan struct{} { return t.initCh }

// Get returns the cached data and stat of path.
func (t *TreeCache) Get(path string) ([]byte, Stat, bool) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	n := t.nodes[path]
	if n == nil {
		return nil, Stat{}, false
	}
	return slices.Clone(n.data), n.stat, true
}

// Children returns the cached child names of path, sorted.
func (t *TreeCache) Children(path string) ([]string, bool) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	n := t.nodes[path]
	if n == nil {
		return nil, false
	}
	out := make([]string, 0, len(n.children))
	for c := range n.children {
		out = append(out, c)
	}
	sort.Strings(out)
	return out, true
}

type watchKind int

const (
	wData watchKind = iota
	wChild
	wExists
)

type fired struct {
	path string
	kind watchKind
	node *cnode // incarnation the watch was armed for (nil for exists)
	ev   WatchEvent
}

// armedWatch is a one-shot watch waiting to fire.
type armedWatch struct {
	ch   <-chan WatchEvent
	path string
	kind watchKind
	node *cnode
}

// maxSelected bounds the watches a Run selects on itself. reflect.Select
// costs O(cases) per call (it locks every channel), so a tree of thousands
// of nodes (a 1,000-item job) made every event cost thousands of channel
// locks: 10 such caches on 2 cores took ~75% of the CPU and slowed the
// registry round trips of a resharding twentyfold. Watches beyond the bound
// get a goroutine each that forwards the event to one shared channel.
const maxSelected = 64

// treeRun is the state of one Run: owned by its goroutine. Up to
// maxSelected armed watches are selected on by that goroutine itself
// (reflect.Select), so a small tree (an idle job's) costs one goroutine
// however many nodes it watches; the others are forwarded to fwd.
type treeRun struct {
	*TreeCache
	ctx        context.Context
	armed      []armedWatch
	fwd        chan fired     // events of forwarded watches
	fwds       sync.WaitGroup // the forwarding goroutines
	queue      []TreeEvent
	rootExists bool // an exists watch on the absent root is armed
	loaded     bool // TreeInitialized was emitted
}

// Run loads the subtree, then follows it until ctx ends. It returns nil
// after ctx ends (or an error wrapping ErrClosed when the client closes),
// once every goroutine it started has exited, and closes Events. Other
// registry errors are retried with back-off (a full re-read), never returned.
func (t *TreeCache) Run(ctx context.Context) error {
	if err := ValidatePath(t.root, false); err != nil {
		close(t.events)
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer close(t.events)
	r := &treeRun{TreeCache: t, ctx: ctx, fwd: make(chan fired)}
	defer r.fwds.Wait() // after cancel: forwarders end with ctx
	defer cancel()

	backoff := minBackoff
	resync := true
	var retry <-chan time.Time
	for {
		if resync && retry == nil {
			if err := r.refreshData(t.root, true); err != nil {
				if ctx.Err() != nil {
					return nil
				}
				if errors.Is(err, ErrClosed) {
					return fmt.Errorf("tree cache %s: %w", t.root, err)
				}
				t.log.Warn("tree cache resync failed; retrying", "root", t.root, "error", err, "backoff", backoff)
				retry = time.After(backoff)
				backoff = min(backoff*2, maxBackoff)
			} else {
				resync, backoff = false, minBackoff
				if !r.loaded {
					r.loaded = true
					r.emit(TreeEvent{Type: TreeInitialized})
					close(t.initCh)
				}
			}
		}
		var out chan TreeEvent
		var head TreeEvent
		if len(r.queue) > 0 {
			out, head = t.events, r.queue[0]
		}
		switch chosen, f := r.wait(out, head, retry); chosen {
		case waitDone:
			return nil
		case waitSent:
			r.queue[0] = TreeEvent{}
			r.queue = r.queue[1:]
		case waitRetry:
			retry = nil
		case waitFired:
			if err := r.handle(f); err != nil {
				if ctx.Err() != nil {
					return nil
				}
				t.log.Debug("tree cache refresh failed; resyncing", "path", f.path, "error", err)
				resync = true
			}
			if f.ev.Type == EventNotWatching {
				resync = true
			}
		}
	}
}

// What wait returned.
const (
	waitDone = iota
	waitSent
	waitRetry
	waitFired
)

// wait blocks until ctx ends, head is sent on out (when out is not nil),
// retry fires, or one of the armed watches fires (it is then disarmed and
// returned).
func (r *treeRun) wait(out chan TreeEvent, head TreeEvent, retry <-chan time.Time) (int, fired) {
	const fixed = 4
	cases := make([]reflect.SelectCase, fixed, fixed+len(r.armed))
	cases[0] = reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(r.ctx.Done())}
	cases[1] = reflect.SelectCase{Dir: reflect.SelectSend} // zero Chan: never chosen
	if out != nil {
		cases[1].Chan, cases[1].Send = reflect.ValueOf(out), reflect.ValueOf(head)
	}
	cases[2] = reflect.SelectCase{Dir: reflect.SelectRecv}
	if retry != nil {
		cases[2].Chan = reflect.ValueOf(retry)
	}
	cases[3] = reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(r.fwd)}
	for _, w := range r.armed {
		cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(w.ch)})
	}
	i, v, ok := reflect.Select(cases)
	switch i {
	case 0:
		return waitDone, fired{}
	case 1:
		return waitSent, fired{}
	case 2:
		return waitRetry, fired{}
	case 3:
		return waitFired, v.Interface().(fired)
	}
	w := r.armed[i-fixed]
	r.armed[i-fixed] = r.armed[len(r.armed)-1]
	r.armed[len(r.armed)-1] = armedWatch{}
	r.armed = r.armed[:len(r.armed)-1]
	ev := WatchEvent{Type: EventNotWatching, Path: w.path, Err: ErrClosed}
	if ok {
		ev = v.Interface().(WatchEvent)
	}
	return waitFired, fired{path: w.path, kind: w.kind, node: w.node, ev: ev}
}

func (r *treeRun) emit(ev TreeEvent) {
	if r.discard || (r.quietLoad && !r.loaded) {
		return
	}
	if r.fn != nil {
		r.fn(ev)
		return
	}
	r.queue = append(r.queue, ev)
}

// arm adds a one-shot watch for the loop to select on, or, beyond
// maxSelected, a goroutine that forwards its event.
func (r *treeRun) arm(ch <-chan WatchEvent, path string, kind watchKind, n *cnode) {
	if len(r.armed) < maxSelected {
		r.armed = append(r.armed, armedWatch{ch: ch, path: path, kind: kind, node: n})
		return
	}
	r.fwds.Add(1)
	go func() {
		defer r.fwds.Done()
		f := fired{path: path, kind: kind, node: n, ev: WatchEvent{Type: EventNotWatching, Path: path, Err: ErrClosed}}
		select {
		case ev, ok := <-ch:
			if ok {
				f.ev = ev
			}
		case <-r.ctx.Done():
			return
		}
		select {
		case r.fwd <- f:
		case <-r.ctx.Done():
		}
	}()
}

func (r *treeRun) handle(f fired) error {
	if f.kind == wExists {
		r.rootExists = false
		if f.ev.Type == EventNotWatching {
			return nil
		}
		return r.refreshData(f.path, true)
	}
	n := r.nodes[f.path]
	if n != nil && n == f.node {
		if f.kind == wData {
			n.dataWatch = false
		} else {
			n.childWatch = false
		}
	}
	if f.ev.Type == EventNotWatching {
		return nil // the loop resyncs
	}
	if n == nil && f.path != r.root && r.nodes[Parent(f.path)] == nil {
		return nil // a stale watch of a subtree already gone
	}
	if f.ev.Type == EventNodeDeleted && f.path != r.root {
		// A node's deletion also fires its parent's child watch, whose
		// re-listing sees any re-creation. So the node need not be read
		// again when that re-listing is still to come:
		//   - the node has left the cache already (the parent's listing
		//     dropped it, and armed the child watch that reports a later
		//     re-creation);
		//   - the parent's last listing armed its child watch and was made
		//     before any child change after this node's creation (its
		//     Pzxid is not past the node's Czxid): the deletion, a later
		//     child change, fired that watch, which is still to be
		//     handled (handling it re-lists and moves listedPzxid on).
		// Otherwise (a re-listing since may have seen a re-created node
		// under the same name) the node is read.
		if n == nil {
			return nil
		}
		if p := r.nodes[Parent(f.path)]; n == f.node && p != nil && p.listedPzxid != 0 && p.listedPzxid <= n.stat.Czxid {
			r.removeSubtree(f.path)
			return nil
		}
	}
	if f.kind == wChild && f.ev.Type == EventNodeChildrenChanged && n != nil {
		return r.refreshChildren(f.path, n, false)
	}
	return r.refreshData(f.path, false)
}

// refreshData re-reads path (arming a data watch if none is armed), diffs it
// against the cache, and lists its children when it is new or deep is set.
func (r *treeRun) refreshData(path string, deep bool) error {
	n := r.nodes[path]
	var (
		data []byte
		st   Stat
		ch   <-chan WatchEvent
		err  error
	)
	if n != nil && n.dataWatch {
		data, st, err = r.c.Get(r.ctx, path)
	} else {
		data, st, ch, err = r.c.GetW(r.ctx, path)
	}
	if errors.Is(err, ErrNoNode) {
		if n != nil {
			r.removeSubtree(path)
		}
		if path == r.root && !r.rootExists {
			_, ok, ch, err := r.c.ExistsW(r.ctx, path)
			if err != nil {
				return err
			}
			r.rootExists = true
			r.arm(ch, path, wExists, nil)
			if ok {
				// Created between the two reads: the exists watch fires for
				// nothing more, so read it now.
				return r.refreshData(path, true)
			}
		}
		return nil
	}
	if err != nil {
		return err
	}
	if n != nil && st.Czxid != n.stat.Czxid {
		// Deleted and re-created since we last looked.
		r.removeSubtree(path)
		n = nil
	}
	isNew := n == nil
	switch {
	case isNew:
		var parent *cnode
		if path != r.root {
			if parent = r.nodes[Parent(path)]; parent == nil {
				return nil // its parent left the cache: a stale read
			}
		}
		n = &cnode{children: make(map[string]struct{})}
		r.mu.Lock()
		if parent != nil {
			parent.children[Base(path)] = struct{}{}
		}
		r.nodes[path] = n
		n.data, n.stat = data, st
		r.mu.Unlock()
		r.emit(TreeEvent{Type: NodeAdded, Path: path, Data: data, Stat: st})
	case st.Mzxid != n.stat.Mzxid:
		r.mu.Lock()
		n.data, n.stat = data, st
		r.mu.Unlock()
		r.emit(TreeEvent{Type: NodeUpdated, Path: path, Data: data, Stat: st})
	default:
		r.mu.Lock()
		n.stat = st
		r.mu.Unlock()
	}
	if ch != nil {
		n.dataWatch = true
		r.arm(ch, path, wData, n)
	}
	if r.leaf(path) {
		return nil
	}
	if isNew || deep || !n.childWatch {
		return r.refreshChildren(path, n, deep)
	}
	return nil
}

// refreshChildren re-lists path (arming a child watch if none is armed),
// reads new children (all children when deep) and drops vanished ones.
func (r *treeRun) refreshChildren(path string, n *cnode, deep bool) error {
	var (
		names []string
		st    Stat
		ch    <-chan WatchEvent
		err   error
	)
	if n.childWatch {
		names, err = r.c.Children(r.ctx, path)
	} else {
		names, st, ch, err = r.c.ChildrenW(r.ctx, path)
	}
	if errors.Is(err, ErrNoNode) {
		return r.refreshData(path, false)
	}
	if err != nil {
		return err
	}
	n.listedPzxid = 0
	if ch != nil {
		n.childWatch = true
		n.listedPzxid = st.Pzxid
		r.arm(ch, path, wChild, n)
	}
	seen := make(map[string]struct{}, len(names))
	for _, name := range names {
		seen[name] = struct{}{}
	}
	for name := range n.children {
		if _, ok := seen[name]; !ok {
			r.removeSubtree(childPath(path, name))
		}
	}
	sort.Strings(names)
	for _, name := range names {
		// A child joins the cache (and n.children) only once read: one that
		// vanished before its read is picked up by the next child event.
		known := r.nodes[childPath(path, name)] != nil
		if !known || deep {
			if err := r.refreshData(childPath(path, name), deep); err != nil {
				return err
			}
		}
	}
	return nil
}

// removeSubtree drops path and its descendants, children first, emitting
// NodeDeleted with the last known data.
func (r *treeRun) removeSubtree(path string) {
	n := r.nodes[path]
	if n == nil {
		return
	}
	names := make([]string, 0, len(n.children))
	for c := range n.children {
		names = append(names, c)
	}
	sort.Strings(names)
	for _, c := range names {
		r.removeSubtree(childPath(path, c))
	}
	r.mu.Lock()
	delete(r.nodes, path)
	if p := r.nodes[Parent(path)]; p != nil && path != r.root {
		delete(p.children, Base(path))
	}
	r.mu.Unlock()
	r.emit(TreeEvent{Type: NodeDeleted, Path: path, Data: n.data, Stat: n.stat})
}

func childPath(parent, name string) string {
	if parent == "/" {
		return "/" + name
	}
	return parent + "/" + name
}
