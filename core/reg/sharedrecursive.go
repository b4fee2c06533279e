package reg

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unique"
)

// The recursive mode of SharedCache (see its doc): one recursive watch,
// one goroutine (Run) for every tracked subtree.

// maxRoundOps bounds the reads of one round (the views beyond it wait for
// the next round).
const maxRoundOps = 8192

// snode is a cached node: kept small (10,000 idle jobs of ~13 nodes fit
// in 100 MiB: IdleJobs in core/kernel), no map per node.
type snode struct {
	data []byte
	stat nstat
	kids []skid // sorted by name
}

// skid is a child of an snode, with its name: the last path element, a
// handle, so the names that repeat across jobs ("config", "leader",
// instance ids) are one copy. The names sit in the parent's array rather
// than in the children: a lookup's binary search reads them from one or
// two cache lines and touches only the child it finds (a trigger looks up
// about thirty nodes of its job, cold in the cache a second after the last
// trigger; with the names in the children each comparison was a miss).
type skid struct {
	name unique.Handle[string]
	n    *snode
}

// nstat is a Stat without DataLength (len(data)): 64 bytes, so that an
// snode takes 112 bytes (a size class) rather than 128.
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

// addRecursive registers v for the watch callback and hands it to Run to
// load. Called with s.mu held. The registration comes first: every change
// notified from then on is queued, and the load's reads come after it.
//
// On a StoreWatcher client whose store watch has not paused, v is loaded
// in place instead: registered and read in one step under the registry's
// lock (Store.Atomically), so that every change notified from then on is
// newer than what the load saw. It holds no copy: its reads go to the
// store, and Run turns the store watch's events into v's (noteInPlace).
// The first pause (a suspended connection, a session's end) gives every
// such view a copy of its subtree as it is then (pause), and from then on
// the cache follows it as on any registry (a resync reports the
// differences from that copy).
func (s *SharedCache) addRecursive(v *CacheView) {
	v.opts = nil // only a fallback TreeCache needs them
	if s.store != nil && s.inplace.Load() {
		loaded := false
		s.store.Atomically(func(r StoreReader) {
			if !s.inplace.Load() {
				return // paused meanwhile
			}
			loaded = true
			s.tmu.Lock()
			s.roots[v.root] = append(s.roots[v.root], v)
			s.depth.Add(v.root)
			s.tmu.Unlock()
			s.loadInPlace(v, r)
			s.imu.Lock()
			s.inbox = append(s.inbox, WatchEvent{Type: eventLoaded, Path: v.root})
			s.marks = append(s.marks, storeMark{v: v})
			s.imu.Unlock()
		})
		if loaded {
			s.poke()
			return
		}
	}
	s.tmu.Lock()
	s.roots[v.root] = append(s.roots[v.root], v)
	s.depth.Add(v.root)
	s.tmu.Unlock()
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
	case EventPaused:
		s.pause(ev.Store)
		return
	case EventNodeCreated, EventNodeDeleted, EventNodeDataChanged:
		s.tmu.RLock()
		tracked := s.tracked(ev.Path)
		if tracked && ev.Type != EventNodeDataChanged && s.inplace.Load() {
			s.countInPlace(&ev)
		}
		s.tmu.RUnlock()
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
// Caller holds tmu.
func (s *SharedCache) tracked(path string) bool {
	if len(s.roots) == 0 {
		return false
	}
	for p, k := path, PathDepth(path); ; p, k = Parent(p), k-1 {
		if s.depth.Has(k) && len(s.roots[p]) > 0 {
			return true
		}
		if p == "/" {
			return false
		}
	}
}

// viewsOf calls f for each view whose subtree holds path. Caller holds tmu.
func (s *SharedCache) viewsOf(path string, f func(*CacheView)) {
	if len(s.roots) == 0 {
		return
	}
	for p, k := path, PathDepth(path); ; p, k = Parent(p), k-1 {
		if s.depth.Has(k) {
			for _, v := range s.roots[p] {
				f(v)
			}
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
		evs, readMark, marks, added, closed := s.takeInbox()
		for _, v := range closed {
			s.free(v)
		}
		for _, r := range s.takeArmed() {
			if err := s.armedRoot(ctx, r); err != nil {
				return err
			}
		}
		for i, ev := range evs {
			switch ev.Type {
			case eventLoaded:
				s.loadedInPlace(marks[0].v)
				marks = marks[1:]
			case EventPaused:
				paused(marks[0].copied)
				marks = marks[1:]
			case EventNotWatching:
				if ctx.Err() != nil || ev.Err == nil {
					return nil
				}
				return fmt.Errorf("shared cache: recursive watch ended: %w", ev.Err)
			case EventResync:
				s.log.Debug("shared cache: resync", "root", ev.Path)
				s.tmu.RLock()
				if s.perRoot {
					// The watch of one root: its views.
					for _, v := range s.roots[ev.Path] {
						s.resync(v)
					}
				} else {
					for _, vs := range s.roots {
						for _, v := range vs {
							s.resync(v)
						}
					}
				}
				s.tmu.RUnlock()
			default:
				s.tmu.RLock()
				afterReads := s.ordered && i >= readMark
				s.viewsOf(ev.Path, func(v *CacheView) {
					if v.inPlace {
						s.noteInPlace(v, &ev)
					} else {
						s.noteEvent(v, &ev, afterReads)
					}
				})
				s.tmu.RUnlock()
			}
		}
		s.recycleInbox(evs)
		s.deliverKnown()
		for _, v := range added {
			if !v.closed.Load() && (!s.perRoot || s.watchFor(ctx, v)) {
				s.mark(v, v.root, dirtyList)
			}
		}
		if len(s.work) == 0 {
			if cap(s.res) > maxSpareResults {
				s.res = nil // a load's array, not held while idle
			}
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

// takeInbox takes the events queued since the last call, with readMark:
// the events before it came before the last round's replies (0 when no
// round ran since the last call), those from it on after them.
func (s *SharedCache) takeInbox() (evs []WatchEvent, readMark int, marks []storeMark, added, closed []*CacheView) {
	s.imu.Lock()
	defer s.imu.Unlock()
	added, closed, marks = s.added, s.closed, s.marks
	s.added, s.closed, s.marks = nil, nil, nil
	readMark, s.readMark = s.readMark, 0
	if len(s.inbox) == 0 {
		return nil, 0, marks, added, closed // the empty inbox keeps its array
	}
	evs = s.inbox
	s.inbox, s.spare = s.spare, nil
	return evs, readMark, marks, added, closed
}

// maxSpareResults bounds the results array the cache keeps while it is
// idle (a round of a large load reuses a larger one until it ends).
const maxSpareResults = 256

// maxSpareInbox bounds the array the cache keeps between inboxes.
const maxSpareInbox = 256

// recycleInbox hands back the array of an inbox whose events are applied,
// so that the next events reuse it.
func (s *SharedCache) recycleInbox(evs []WatchEvent) {
	if cap(evs) > maxSpareInbox {
		return
	}
	clear(evs)
	s.imu.Lock()
	if s.spare == nil {
		s.spare = evs[:0]
	}
	s.imu.Unlock()
}

// free drops a closed view's nodes.
func (s *SharedCache) free(v *CacheView) {
	if v.watch != nil {
		s.unwatch(v)
	}
	s.rmu.Lock()
	v.node = nil
	v.count.Store(0)
	s.rmu.Unlock()
	v.dirty, v.out = nil, nil
}

// noteEvent applies ev to v at once when ev carries its node (Known: an
// in-process registry's event) and v has nothing waiting to be read;
// otherwise it marks the path dirty for the next round (noteChange). A
// read waiting for v may return a state newer than ev's, so v's events
// keep their order only if ev waits for it too. Applied at once, a
// trigger's running-node create and delete cost no read back (on the
// embedded registry, with 100 jobs firing each second, the reads were
// about a tenth of the bytes a trigger allocated).
//
// A deletion notified after the last round's replies (afterReads, see
// applyDeleted) is applied at once too, without a read: on ZooKeeper every
// host that follows a job would otherwise read each running node's
// deletion back (with 10 hosts, a third of the registry's requests per
// item-run).
func (s *SharedCache) noteEvent(v *CacheView, ev *WatchEvent, afterReads bool) {
	if !ev.Known {
		if ev.Type == EventNodeDeleted && afterReads && v.initialized && ev.Path != v.root &&
			!v.closed.Load() && s.applyDeleted(v, ev.Path) {
			s.noteKnown(v)
			return
		}
		s.noteChange(v, ev.Path)
		return
	}
	if v.dirty != nil || !v.initialized || ev.Path == v.root || v.closed.Load() {
		s.noteChange(v, ev.Path)
		return
	}
	s.rmu.Lock()
	s.applyKnown(v, ev)
	s.rmu.Unlock()
	s.noteKnown(v)
}

// noteKnown queues v's events, if any, for deliverKnown.
func (s *SharedCache) noteKnown(v *CacheView) {
	if len(v.out) > 0 && !v.known {
		v.known = true
		s.known = append(s.known, v)
	}
}

// applyDeleted applies the deletion of path, notified after every reply of
// the last round, to v without reading it back: it drops the cached node
// and its subtree, and the paths at and below it waiting to be read. It
// reports false, and does nothing, when v has other paths waiting to be
// read: the deletion then waits for their reads (noteChange), so that v's
// events keep their order.
//
// Why no read is needed: the server sends a connection the notification
// of a change before any reply that reflects it, and a reply that does
// not reflect it before the notification (ZooKeeper applies a write while
// no read is in progress, and queues its notifications then). With an
// inline watch the notifications sent before a reply are in the inbox
// when the read waiting for it returns, so an event from readMark on came
// after every reply applied so far: every read v's copy stands on saw the
// node before its deletion, and that node is what the cache holds at path
// (a re-creation in between would have been notified, and read, before
// this event). A re-creation after it is notified after it, and read. An
// event before readMark may reflect a state the round's reads have
// already passed (the node deleted and re-created before the read): it is
// read back, as without an inline watch.
func (s *SharedCache) applyDeleted(v *CacheView, path string) bool {
	for p := range v.dirty {
		if p != path && !isBelow(p, path) {
			return false
		}
	}
	s.dropDirty(v)
	if n := v.lookup(path); n != nil {
		s.rmu.Lock()
		v.remove(path, n)
		s.rmu.Unlock()
	}
	return true
}

// isBelow reports whether p is a descendant of path.
func isBelow(p, path string) bool {
	if path == "/" {
		return p != "/"
	}
	return len(p) > len(path) && p[len(path)] == '/' && strings.HasPrefix(p, path)
}

// applyKnown applies ev, which carries its node, to v's copy of the tree,
// as apply would have applied a read of the node made right after ev's
// transaction. The zxids keep it from undoing what v shows of a later
// state (a read of the parent after a later change). Caller holds rmu.
func (s *SharedCache) applyKnown(v *CacheView, ev *WatchEvent) {
	n := v.lookup(ev.Path)
	if ev.Type == EventNodeDeleted {
		if n != nil && n.stat.czxid == ev.Stat.Czxid {
			v.remove(ev.Path, n)
		}
		return
	}
	if n != nil && n.stat.czxid != ev.Stat.Czxid {
		if n.stat.czxid > ev.Stat.Czxid {
			return // a later node at that path is cached
		}
		v.remove(ev.Path, n) // deleted and re-created since it was cached
		n = nil
	}
	if n != nil {
		if ev.Stat.Mzxid > n.stat.mzxid {
			n.data, n.stat = ev.Data, packStat(ev.Stat)
			v.emit(NodeUpdated, ev.Path, n)
		}
		return
	}
	ppath := Parent(ev.Path)
	parent := v.lookup(ppath)
	if parent == nil || v.leaf(ppath) || parent.stat.pzxid > ev.Stat.Czxid {
		// Its parent's appearance lists it, or the parent was read after
		// a later change of its children (a listing at this node's
		// creation would have marked it to be read: v.dirty), without
		// it: deleted since. (Equal: the parent's stat is that of this
		// node's own transaction.)
		return
	}
	n = &snode{data: ev.Data, stat: packStat(ev.Stat)}
	name := Base(ev.Path)
	i, _ := slices.BinarySearchFunc(parent.kids, name, func(k skid, name string) int { return strings.Compare(k.name.Value(), name) })
	parent.kids = slices.Insert(parent.kids, i, skid{name: unique.Make(name), n: n})
	v.countNode(ev.Path, 1)
	v.emit(NodeAdded, ev.Path, n)
	// A node has no children when it is created; later ones come as
	// their own events, after this one.
}

// deliverKnown delivers the events of the views noteEvent applied events
// to.
func (s *SharedCache) deliverKnown() {
	for i, v := range s.known {
		v.known = false
		s.known[i] = nil
		v.deliver()
	}
	s.known = s.known[:0]
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
	if v.closed.Load() || v.inPlace {
		return // in place: the store is current, and its events are delivered
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
		walk(childPath(path, k.name.Value()), k.n, f)
	}
}

func (s *SharedCache) mark(v *CacheView, path string, flags uint8) {
	if v.dirty == nil {
		if n := len(s.freeDirty); n > 0 {
			v.dirty = s.freeDirty[n-1]
			s.freeDirty[n-1] = nil
			s.freeDirty = s.freeDirty[:n-1]
		} else {
			v.dirty = make(map[string]uint8)
		}
	}
	v.dirty[path] |= flags
	if !v.queued {
		v.queued = true
		s.work = append(s.work, v)
	}
}

// Bounds of the dirty maps kept for reuse (freeDirty): how many, and how
// many paths a kept map held (a small map's one group; a larger one keeps
// its larger table when cleared). Jobs firing together dirty their views
// in the same round (100 jobs every second: 100 maps a round), so the
// pool holds enough for such a burst; it holds nothing more while fewer
// views change.
const (
	maxFreeDirty     = 128
	maxFreeDirtySize = 8
)

// Bounds of the event buffers kept for reuse (freeOut), as freeDirty's.
const (
	maxFreeOut     = 128
	maxFreeOutSize = 8
)

// dropDirty takes v's dirty map, keeping it for reuse when small.
func (s *SharedCache) dropDirty(v *CacheView) {
	if d := v.dirty; d != nil && len(d) <= maxFreeDirtySize && len(s.freeDirty) < maxFreeDirty {
		clear(d)
		s.freeDirty = append(s.freeDirty, d)
	}
	v.dirty = nil
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
	ops, reads, views, res := s.ops[:0], s.reads[:0], s.views[:0], s.res[:0]
	defer func() {
		// Kept for the next round, without what they point to (on an
		// in-process registry, the results' array too: a load of 10,000
		// jobs read 3 KB a job into arrays made for one round).
		s.ops, s.reads, s.views, s.paths = clearSlice(ops), clearSlice(reads), clearSlice(views), clearSlice(s.paths)
		s.res = clearSlice(res)
	}()
	taken := 0
	for _, v := range s.work {
		if len(ops) >= maxRoundOps {
			break
		}
		taken++
		v.queued = false
		if v.closed.Load() {
			s.dropDirty(v)
			continue
		}
		views = append(views, v)
		paths := s.paths[:0]
		for p := range v.dirty {
			paths = append(paths, p)
		}
		slices.Sort(paths) // parents first
		s.paths = paths
		for _, p := range paths {
			r := read{v: v, path: p, get: len(ops), kids: -1}
			ops = append(ops, GetOp(p))
			if !v.leaf(p) && (v.dirty[p]&dirtyList != 0 || v.lookup(p) == nil) {
				r.kids = len(ops)
				ops = append(ops, ChildrenOp(p))
			}
			reads = append(reads, r)
		}
		s.dropDirty(v)
	}
	s.work = slices.Delete(s.work, 0, taken)
	if len(ops) == 0 {
		return nil
	}
	res, err := ReadManyAppend(ctx, s.c, res, ops...)
	s.imu.Lock()
	s.readMark = len(s.inbox) // the events after the round's replies come after it
	s.imu.Unlock()
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
			if v.node != nil && v.fn != nil && !v.quietLoad {
				walk(v.root, v.node, func(path string, n *snode) {
					v.out = append(v.out, TreeEvent{Type: NodeAdded, Path: path, Data: n.data, Stat: n.Stat()})
				})
			}
			v.out = append(v.out, TreeEvent{Type: TreeInitialized})
			v.setInitialized()
		}
		v.deliver()
	}
	return nil
}

// clearSlice zeroes in's elements and returns it emptied.
func clearSlice[T any](in []T) []T {
	clear(in)
	return in[:0]
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
// Run's goroutine calls it, after the round's apply.
func (v *CacheView) deliver() {
	out := v.out
	v.out = nil
	defer v.s.recycleOut(out)
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

// recycleOut keeps a delivered event buffer for the next view's events
// (Run's goroutine only, as emit).
func (s *SharedCache) recycleOut(out []TreeEvent) {
	if cap(out) == 0 || cap(out) > maxFreeOutSize || len(s.freeOut) >= maxFreeOut {
		return
	}
	clear(out) // what the events point to
	s.freeOut = append(s.freeOut, out[:0])
}

func (v *CacheView) emit(typ TreeEventType, path string, n *snode) {
	if v.initialized && v.fn != nil {
		if v.out == nil {
			if k := len(v.s.freeOut); k > 0 {
				v.out = v.s.freeOut[k-1]
				v.s.freeOut[k-1] = nil
				v.s.freeOut = v.s.freeOut[:k-1]
			}
		}
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
		n = &snode{data: get.Data, stat: packStat(get.Stat)}
		if parent == nil {
			v.node = n
		} else {
			name := Base(path)
			i, _ := slices.BinarySearchFunc(parent.kids, name, func(k skid, name string) int { return strings.Compare(k.name.Value(), name) })
			parent.kids = slices.Insert(parent.kids, i, skid{name: unique.Make(name), n: n})
		}
		v.countNode(path, 1)
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
	// New children are read (and listed). A cached child the listing lacks
	// is left alone: its deletion is notified, or read on a resync.
	for _, name := range kids.Children {
		if n.child(name) == nil {
			s.mark(v, childPath(path, name), 0)
		}
	}
}

// remove drops the cached node n at path and its subtree, children first,
// reporting each NodeDeleted with its last data. Caller holds rmu.
func (v *CacheView) remove(path string, n *snode) {
	if v.initialized && v.fn != nil {
		v.drop(path, n)
	}
	if v.counted != nil {
		v.uncount(path, n)
	}
	if path == v.root {
		v.node = nil
	} else if p := v.lookup(Parent(path)); p != nil {
		p.kids = slices.DeleteFunc(p.kids, func(k skid) bool { return k.n == n })
	}
}

// uncount takes the subtree at n (path) out of v's count. Caller holds
// rmu.
func (v *CacheView) uncount(path string, n *snode) {
	v.countNode(path, -1)
	for _, k := range n.kids {
		v.uncount(childPath(path, k.name.Value()), k.n)
	}
}

// drop reports the subtree at n deleted, children first.
func (v *CacheView) drop(path string, n *snode) {
	for _, k := range n.kids {
		v.drop(childPath(path, k.name.Value()), k.n)
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

// child returns n's child name, or nil: a binary search written out (a
// trigger looks up about ten nodes; slices.BinarySearchFunc's comparison
// func was 60% of the search).
func (n *snode) child(name string) *snode {
	lo, hi := 0, len(n.kids)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if n.kids[m].name.Value() < name {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo < len(n.kids) && n.kids[lo].name.Value() == name {
		return n.kids[lo].n
	}
	return nil
}
