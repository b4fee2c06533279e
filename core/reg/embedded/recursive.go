package embedded

import (
	"context"
	"slices"

	"github.com/ejob-io/ejob/core/reg"
)

// A recursive watch (reg.RecursiveWatcher) belongs to its Client, not to a
// session: it stays until its ctx ends or the client closes. It is armed on
// the server (Server.rwatches) in the client's current session, and behaves
// as ZooKeeper's persistent recursive watch does for a client whose
// connection or session drops:
//
//   - While the client is suspended (its simulated connection is down) the
//     server delivers nothing to it; on Resume with the same session fn gets
//     EventResync, since changes may have happened meanwhile (held one-shot
//     events are delivered instead, as ZooKeeper's setWatches would).
//   - When the session ends (Expire, a timeout while suspended), the watch
//     ends with that session as one-shot watches do (they get
//     EventNotWatching) but, unlike them, is armed again in the new session,
//     and fn gets EventResync then. Changes between the two sessions (the
//     old session's ephemerals deleted, for one) are not delivered: the
//     caller re-reads on EventResync.
//
// WatchRecursive's fn is never called under Server.mu: the server queues
// the events on the client (in the order the transactions committed) and
// one goroutine per client, started when the queue goes non-empty and gone
// when it drains (notify.Queue), calls fn. An idle client has no such
// goroutine. WatchRecursiveInline's fn is called under Server.mu, in the
// commit order, by the goroutine whose call caused the event (see
// reg.InlineRecursiveWatcher).
type rwatch struct {
	c      *Client
	path   string // full server path
	fn     func(reg.WatchEvent)
	inline bool // fn is called under srv.mu (WatchRecursiveInline)
	store  bool // fn is told EventPaused (WatchStore)
	// Guarded by srv.mu.
	sess  *session // the session it is armed in; nil while disarmed
	ended bool     // EventNotWatching queued: nothing more for fn
	stop  func() bool
}

type rdelivery struct {
	w  *rwatch
	ev reg.WatchEvent
}

var _ reg.StoreWatcher = (*Client)(nil)

// WatchRecursive implements reg.RecursiveWatcher. The watch is armed when it
// returns: every change committed afterwards reaches fn. It fails with
// ErrConnectionLoss while the client is suspended and ErrClosed once closed.
func (c *Client) WatchRecursive(ctx context.Context, path string, fn func(reg.WatchEvent)) error {
	return c.watchRecursive(ctx, path, fn, false, false)
}

// WatchRecursiveInline implements reg.InlineRecursiveWatcher: as
// WatchRecursive, with fn called under the server's lock by the call that
// caused each event.
func (c *Client) WatchRecursiveInline(ctx context.Context, path string, fn func(reg.WatchEvent)) error {
	return c.watchRecursive(ctx, path, fn, true, false)
}

// WatchStore implements reg.StoreWatcher: WatchRecursiveInline on "/",
// with fn told EventPaused when Suspend or the session's end stops its
// events (Close does not: the watch ends then).
func (c *Client) WatchStore(ctx context.Context, fn func(reg.WatchEvent)) (reg.Store, error) {
	if err := c.watchRecursive(ctx, "/", fn, true, true); err != nil {
		return nil, err
	}
	return treeStore{c}, nil
}

func (c *Client) watchRecursive(ctx context.Context, path string, fn func(reg.WatchEvent), inline, store bool) error {
	if err := c.begin(ctx, "watchrecursive", path, false); err != nil {
		return err
	}
	defer c.srv.mu.Unlock()
	w := &rwatch{c: c, path: c.abs(path), fn: fn, inline: inline, store: store}
	c.rwatches = append(c.rwatches, w)
	c.srv.armRecursive(w, c.sess)
	// The func runs on a goroutine of its own once ctx ends, and waits for
	// srv.mu: it cannot run before this call has returned the lock.
	w.stop = context.AfterFunc(ctx, func() {
		c.srv.mu.Lock()
		defer c.srv.mu.Unlock()
		c.endRecursive(w, ctx.Err())
	})
	return nil
}

// endRecursive removes w and queues its EventNotWatching (once). Caller holds
// srv.mu.
func (c *Client) endRecursive(w *rwatch, cause error) {
	if w.ended {
		return
	}
	w.ended = true
	w.stop()
	c.srv.disarmRecursive(w)
	c.rwatches = slices.DeleteFunc(c.rwatches, func(x *rwatch) bool { return x == w })
	c.enqueue(w, reg.WatchEvent{Type: reg.EventNotWatching, Path: c.rel(w.path), Err: cause})
}

// resyncRecursive arms every recursive watch of c in its current session
// (again) and queues EventResync for each. Caller holds srv.mu.
func (c *Client) resyncRecursive() {
	for _, w := range c.rwatches {
		if w.sess != c.sess {
			c.srv.disarmRecursive(w)
			c.srv.armRecursive(w, c.sess)
		}
		c.enqueue(w, reg.WatchEvent{Type: reg.EventResync, Path: c.rel(w.path)})
	}
}

// enqueue queues an event for w's fn, or calls fn for an inline watch.
// Caller holds srv.mu.
func (c *Client) enqueue(w *rwatch, ev reg.WatchEvent) {
	if w.inline {
		w.fn(ev)
		return
	}
	c.rq.Push(rdelivery{w, ev})
}

func deliverRecursive(d rdelivery) { d.w.fn(d.ev) }

// armRecursive registers w on the server in sess. Caller holds mu.
func (s *Server) armRecursive(w *rwatch, sess *session) {
	w.sess = sess
	s.rwatches[w.path] = append(s.rwatches[w.path], w)
	s.rdepth.Add(w.path)
}

// disarmRecursive removes w from the server. Caller holds mu.
func (s *Server) disarmRecursive(w *rwatch) {
	if w.sess == nil {
		return
	}
	w.sess = nil
	s.rdepth.Remove(w.path)
	ws := slices.DeleteFunc(s.rwatches[w.path], func(x *rwatch) bool { return x == w })
	if len(ws) == 0 {
		delete(s.rwatches, w.path)
	} else {
		s.rwatches[w.path] = ws
	}
}

// disarmSession removes the recursive watches armed in sess (it ends),
// telling a store watch that its events stop (a suspended client's was
// told at Suspend). Caller holds mu.
func (s *Server) disarmSession(sess *session) {
	c := sess.client
	for _, w := range c.rwatches {
		if w.sess == sess {
			if !c.suspended {
				c.pauseStore(w)
			}
			s.disarmRecursive(w)
		}
	}
}

// pauseStore tells w, if it is a store watch, that no change reaches it
// from now on until its EventResync. Caller holds srv.mu.
func (c *Client) pauseStore(w *rwatch) {
	if w.store && !w.ended && w.sess != nil {
		w.fn(reg.WatchEvent{Type: reg.EventPaused, Path: c.rel(w.path), Store: heldStore{c}})
	}
}

// treeStore is a Client's tree as reg.Store: reads under srv.mu, of the
// client's namespace, that are no requests (they do not fail while the
// client is suspended or closed: a cache's copy would not either).
type treeStore struct{ c *Client }

var _ reg.Store = treeStore{}

func (s treeStore) ReadNode(path string) ([]byte, reg.Stat, bool) {
	s.c.srv.mu.Lock()
	defer s.c.srv.mu.Unlock()
	return heldStore(s).ReadNode(path)
}

func (s treeStore) EachChild(path string, f func(string) bool) bool {
	s.c.srv.mu.Lock()
	defer s.c.srv.mu.Unlock()
	return heldStore(s).EachChild(path, f)
}

func (s treeStore) Atomically(f func(reg.StoreReader)) {
	s.c.srv.mu.Lock()
	defer s.c.srv.mu.Unlock()
	f(heldStore(s))
}

// heldStore reads as treeStore does, for a caller that holds srv.mu.
type heldStore struct{ c *Client }

func (s heldStore) ReadNode(path string) ([]byte, reg.Stat, bool) {
	n := s.c.lookup(path)
	if n == nil {
		return nil, reg.Stat{}, false
	}
	return n.dataOf(), n.statCopy(), true
}

func (s heldStore) EachChild(path string, f func(string) bool) bool {
	n := s.c.lookup(path)
	if n == nil {
		return false
	}
	n.eachKid(func(name string, _ *node) bool { return f(name) })
	return true
}

func (s treeStore) Walk(path string, leaf func(string) bool, f func(string, []byte, reg.Stat)) {
	s.c.srv.mu.Lock()
	defer s.c.srv.mu.Unlock()
	heldStore(s).Walk(path, leaf, f)
}

func (s heldStore) Walk(path string, leaf func(string) bool, f func(string, []byte, reg.Stat)) {
	if n := s.c.lookup(path); n != nil {
		walkNode(path, n, leaf, f)
	}
}

// walkNode is Walk from n, the node at path.
func walkNode(path string, n *node, leaf func(string) bool, f func(string, []byte, reg.Stat)) {
	f(path, n.dataOf(), n.statCopy())
	if leaf(path) {
		return
	}
	prefix := path
	if path == "/" {
		prefix = ""
	}
	n.eachKid(func(name string, c *node) bool {
		walkNode(prefix+"/"+name, c, leaf, f) // one concatenation a node
		return true
	})
}

// fireRecursive queues a change of path for the recursive watches on path
// and on its ancestors. Caller holds mu.
func (s *Server) fireRecursive(ch change) {
	if len(s.rwatches) == 0 {
		return
	}
	// The node as the committed transaction left it (or as it was when
	// deleted): the event carries it (WatchEvent.Known).
	data, st := ch.n.dataOf(), ch.n.statCopy()
	for p, k := ch.path, reg.PathDepth(ch.path); ; p, k = parentOf(p), k-1 {
		if s.rdepth.Has(k) {
			for _, w := range s.rwatches[p] {
				if !w.c.suspended {
					w.c.enqueue(w, reg.WatchEvent{Type: ch.typ, Path: w.c.rel(ch.path), Known: true, Data: data, Stat: st})
				}
			}
		}
		if p == "/" {
			return
		}
	}
}
