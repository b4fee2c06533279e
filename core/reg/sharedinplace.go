package reg

import (
	"strings"
	"unique"
)

// A SharedCache's views loaded in place (see addRecursive): on a
// StoreWatcher client the cache reads the registry's own tree rather than
// a copy, and makes its views' events from the store watch's, each of
// which carries its node (WatchEvent.Known) in the order the changes
// committed. A view's reads then show the registry's state, which is at
// least as new as its last event, as a copy's are once the round that
// read them is applied.

// eventLoaded marks in the inbox where a view loaded in place begins: its
// load's events come before every later change's.
const eventLoaded WatchEventType = -1

// storeMark is what an inbox marker stands for: the view loaded
// (eventLoaded), or the views a pause gave a copy (EventPaused).
type storeMark struct {
	v      *CacheView
	copied []*CacheView
}

// loadInPlace reads v's subtree through r (under the registry's lock) for
// its load's events and its count, and makes its reads go to the store.
func (s *SharedCache) loadInPlace(v *CacheView, r StoreReader) {
	var count int64
	events := v.fn != nil && !v.quietLoad
	r.Walk(v.root, v.leaf, func(path string, data []byte, st Stat) {
		if v.counted != nil && v.counted(path) {
			count++
		}
		if events {
			v.preload = append(v.preload, TreeEvent{Type: NodeAdded, Path: path, Data: data, Stat: st})
		}
	})
	v.count.Store(count)
	v.inStore.Store(true)
}

// loadedInPlace delivers v's load (Run's goroutine, at its marker): the
// store watch's events are v's from now on, until a pause's marker.
func (s *SharedCache) loadedInPlace(v *CacheView) {
	pre := v.preload
	v.preload = nil
	if v.closed.Load() || v.initialized {
		return
	}
	v.initialized, v.inPlace = true, true
	if v.fn != nil {
		v.out = append(v.out, pre...)
		v.out = append(v.out, TreeEvent{Type: TreeInitialized})
	}
	v.setInitialized()
	s.addKnown(v)
}

// pause is the store watch's EventPaused (under the registry's lock, r
// reading the tree as it is then): from now on the cache follows its
// views as on any registry. Each view loaded in place gets a copy of its
// subtree as it is now, which its reads show from now on; the events
// queued before the pause are still turned into its events (noteInPlace)
// up to the pause's marker, then they are applied to the copy, and a
// resync reports the differences from it.
func (s *SharedCache) pause(r StoreReader) {
	if r == nil || !s.inplace.Load() {
		return
	}
	s.inplace.Store(false)
	var copied []*CacheView
	s.tmu.RLock()
	for _, vs := range s.roots {
		for _, v := range vs {
			if !v.inStore.Load() || v.closed.Load() {
				continue
			}
			var count int64
			n := v.copyStore(r, &count)
			s.rmu.Lock()
			v.node = n
			v.count.Store(count)
			v.inStore.Store(false)
			s.rmu.Unlock()
			copied = append(copied, v)
		}
	}
	s.tmu.RUnlock()
	s.imu.Lock()
	s.inbox = append(s.inbox, WatchEvent{Type: EventPaused})
	s.marks = append(s.marks, storeMark{copied: copied})
	s.imu.Unlock()
	s.poke()
}

// copyStore copies v's subtree as r holds it (nil when its root is
// absent), counting the nodes WithCounted's func counts.
func (v *CacheView) copyStore(r StoreReader, count *int64) *snode {
	var root *snode
	var branch []*snode // the nodes from root to the last one copied
	var paths []string  // their paths
	r.Walk(v.root, v.leaf, func(path string, data []byte, st Stat) {
		n := &snode{data: data, stat: packStat(st)}
		if v.counted != nil && v.counted(path) {
			*count++
		}
		parent := Parent(path)
		for len(paths) > 0 && paths[len(paths)-1] != parent {
			branch, paths = branch[:len(branch)-1], paths[:len(paths)-1]
		}
		if len(branch) == 0 {
			root = n
		} else {
			p := branch[len(branch)-1]
			p.kids = append(p.kids, skid{name: unique.Make(Base(path)), n: n}) // in order: Walk's
		}
		branch, paths = append(branch, n), append(paths, path)
	})
	return root
}

// paused ends the store watch's events for the views a pause copied
// (Run's goroutine, at the pause's marker): later ones are applied to
// their copies.
func paused(copied []*CacheView) {
	for _, v := range copied {
		v.inPlace = false
	}
}

// countInPlace counts a created or deleted node in the views loaded in
// place that hold it, as the change commits (under the registry's lock),
// so that Counted agrees with the store. Caller holds tmu.
func (s *SharedCache) countInPlace(ev *WatchEvent) {
	d := int64(1)
	if ev.Type == EventNodeDeleted {
		d = -1
	}
	s.viewsOf(ev.Path, func(v *CacheView) {
		if v.counted != nil && v.inStore.Load() && v.counted(ev.Path) && v.holds(ev.Path) {
			v.count.Add(d)
		}
	})
}

// noteInPlace turns a store watch's event into v's (Run's goroutine).
func (s *SharedCache) noteInPlace(v *CacheView, ev *WatchEvent) {
	if v.closed.Load() || !v.initialized || v.fn == nil || !v.holds(ev.Path) {
		return
	}
	var typ TreeEventType
	switch ev.Type {
	case EventNodeCreated:
		typ = NodeAdded
	case EventNodeDeleted:
		typ = NodeDeleted
	case EventNodeDataChanged:
		typ = NodeUpdated
	default:
		return
	}
	if v.out == nil {
		if k := len(s.freeOut); k > 0 {
			v.out = s.freeOut[k-1]
			s.freeOut[k-1] = nil
			s.freeOut = s.freeOut[:k-1]
		}
	}
	v.out = append(v.out, TreeEvent{Type: typ, Path: ev.Path, Data: ev.Data, Stat: ev.Stat})
	s.addKnown(v)
}

// addKnown queues v's events for deliverKnown.
func (s *SharedCache) addKnown(v *CacheView) {
	if len(v.out) > 0 && !v.known {
		v.known = true
		s.known = append(s.known, v)
	}
}

// holds reports whether path is in v's subtree as v shows it: v's root,
// or below it with no leaf above it.
func (v *CacheView) holds(path string) bool {
	if path == v.root {
		return true
	}
	if v.root != "/" && (!strings.HasPrefix(path, v.root) || len(path) <= len(v.root) || path[len(v.root)] != '/') {
		return false
	}
	for p := Parent(path); ; p = Parent(p) {
		if v.leaf(p) {
			return false
		}
		if p == v.root || p == "/" {
			return true
		}
	}
}

// readStore is Peek for a view loaded in place.
func (v *CacheView) readStore(path string) ([]byte, Stat, bool) {
	if v.closed.Load() || !v.holds(path) {
		return nil, Stat{}, false
	}
	return v.s.store.ReadNode(path)
}

// eachStoreChild is EachChild for a view loaded in place.
func (v *CacheView) eachStoreChild(path string, f func(string) bool) bool {
	if v.closed.Load() || !v.holds(path) {
		return false
	}
	if v.leaf(path) {
		_, _, ok := v.s.store.ReadNode(path)
		return ok
	}
	return v.s.store.EachChild(path, f)
}
