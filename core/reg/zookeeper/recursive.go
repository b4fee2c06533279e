package zookeeper

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/ejob-io/ejob/core/reg"
	"github.com/ejob-io/ejob/core/reg/internal/notify"
	"github.com/ejob-io/ejob/core/reg/zookeeper/internal/zkwire"
)

// Recursive watches (reg.RecursiveWatcher) on ZooKeeper 3.6+'s addWatch.
//
// go-zookeeper v1.0.4 has no addWatch, so ejob sends it on go-zookeeper's
// connection (sniffConn, as multiRead) and reads the notifications before
// go-zookeeper does. A server sends a connection ONE notification per change
// of a node however many of its watches match (its WatchManager collects the
// connection's watchers of the path and of its recursively watched ancestors
// into one set), so each notification (xid -1, WatcherEvent{int type, int
// state, ustring path}) is
//
//   - routed to the recursive watches on the path or an ancestor that are
//     armed on this connection (never a child event: recursive watches have
//     none), and
//   - passed on to go-zookeeper when go-zookeeper holds a one-shot watch it
//     would fire (by the table of its watches the connection keeps,
//     libWatches in library.go, which then disarms what it fires), and
//     whenever no recursive watch took it (the server sent it for some
//     watch; if not ours, go-zookeeper's: so a client without recursive
//     watches passes everything on).
//     go-zookeeper hands every notification it reads to its event callback
//     and to a small channel that drops events when full; a flood of
//     recursive notifications has no business there. State events do not
//     depend on it (onEvent reads them from the callback, which sees every
//     one), but it would cost a callback and a channel send per notification
//     for nothing.
//
// A standard and a recursive watch on the SAME path of one connection do not
// mix on ZooKeeper before 3.9 (ZOOKEEPER-4466: the server keeps one mode per
// path and connection, the last one set; a one-shot getData/exists watch set
// after the recursive one turns it into a one-shot watch, which then ends at
// the path's next change). So a watching getData/exists go-zookeeper writes
// on a path ejob's addWatch was written for on the same connection goes out
// with watch=false: the recursive watch already notifies every create, data
// change and delete of that path, and the notification is passed on to
// go-zookeeper as above. (Child watches live in the server's other table and
// do not interfere.) After a reconnection the addWatch for such a path is
// written after go-zookeeper's setWatches, for the same reason.
//
// Server-side watches are per connection: after a reconnection (same
// session or a new one) every live recursive watch is armed again with
// addWatch, and its fn gets EventResync when that reply is read, so before
// any notification of the new connection reaches it. A watch whose ctx
// ended is not removed from the server (a removeWatches could race an
// addWatch for the same path, and may serve a one-shot watch as above):
// until the connection ends, its notifications go to go-zookeeper, which
// has no watch for them (a cost, not an error).

// rwatch is one WatchRecursive call.
type rwatch struct {
	full string // server path
	rel  string // namespace-relative, for events
	fn   func(reg.WatchEvent)
	// inline: fn is called where its event arises (the connection's
	// reader, arm's and end's callers) with recursive.mu held, instead of
	// from the queue (WatchRecursiveInline).
	inline bool
	// Guarded by recursive.mu.
	conn  *sniffConn // the connection it is armed on; nil: not yet armed
	ended bool       // EventNotWatching queued, or never armed
	stop  func() bool
}

type rdelivery struct {
	w  *rwatch
	ev reg.WatchEvent
}

// recursive is a client's recursive watches.
type recursive struct {
	ns string
	q  *notify.Queue[rdelivery]

	lib *libWatches // go-zookeeper's one-shot watches

	mu    sync.Mutex
	live  map[*rwatch]struct{} // not ended (a SharedCache holds one a job)
	table map[string][]*rwatch // live watches by server path (routing)

	wg         sync.WaitGroup // re-arming goroutines
	noAddWatch atomic.Bool    // the server answered UNIMPLEMENTED
}

func newRecursive(ns string, lib *libWatches) *recursive {
	return &recursive{
		ns:    ns,
		lib:   lib,
		q:     notify.NewQueue(func(d rdelivery) { d.w.fn(d.ev) }),
		live:  make(map[*rwatch]struct{}),
		table: make(map[string][]*rwatch),
	}
}

var _ reg.InlineRecursiveWatcher = (*Client)(nil)

// WatchRecursive implements reg.RecursiveWatcher with addWatch (mode
// PERSISTENT_RECURSIVE). A server before 3.6 answers UNIMPLEMENTED and
// drops the connection (once: later calls fail at once, and the session
// survives): ErrUnimplemented.
func (c *Client) WatchRecursive(ctx context.Context, path string, fn func(reg.WatchEvent)) error {
	return c.watchRecursive(ctx, path, fn, false)
}

// WatchRecursiveInline implements reg.InlineRecursiveWatcher: fn is called
// on the connection's reader as each notification is read, so before the
// reader hands on any reply read after it (a read's caller returns only
// after fn has seen every change the server notified before answering),
// and EventResync and EventNotWatching where they arise. fn runs with the
// client's lock of recursive watches held: it must not block nor call the
// client.
func (c *Client) WatchRecursiveInline(ctx context.Context, path string, fn func(reg.WatchEvent)) error {
	return c.watchRecursive(ctx, path, fn, true)
}

func (c *Client) watchRecursive(ctx context.Context, path string, fn func(reg.WatchEvent), inline bool) error {
	const op = "watchrecursive"
	if err := reg.ValidatePath(path, false); err != nil {
		return invalid(op, path, err)
	}
	if c.rec.noAddWatch.Load() {
		return &reg.OpError{Op: op, Path: path, Err: errUnimplemented}
	}
	r := c.rec
	w := &rwatch{full: c.abs(path), rel: path, fn: fn, inline: inline}
	r.mu.Lock()
	r.live[w] = struct{}{}
	r.table[w.full] = append(r.table[w.full], w)
	r.mu.Unlock()
	_, err := call(ctx, c, op, path, true, func() (struct{}, error) {
		if r.noAddWatch.Load() {
			// Another call learnt it while this one waited for a
			// connection: an old server drops the connection on each.
			return struct{}{}, errUnimplemented
		}
		sc := c.wire.Load()
		if sc == nil {
			return struct{}{}, zk.ErrConnectionClosed
		}
		return struct{}{}, c.addWatch(sc, w)
	})
	r.mu.Lock()
	defer r.mu.Unlock()
	if err == nil && w.ended { // closed meanwhile
		err = &reg.OpError{Op: op, Path: path, Err: reg.ErrClosed}
	}
	if err != nil {
		r.remove(w)
		if errors.Is(err, reg.ErrUnimplemented) && r.noAddWatch.CompareAndSwap(false, true) {
			c.log.Info("the ZooKeeper server has no recursive watches (3.6+): callers fall back to one-shot watches", "error", err)
		}
		return err
	}
	w.stop = context.AfterFunc(ctx, func() { r.end(w, ctx.Err()) })
	return nil
}

// addWatch sends addWatch for w on sc and waits for the reply; the reply
// arms w (on the reader, see arm).
func (c *Client) addWatch(sc *sniffConn, w *rwatch) error {
	body := zkwire.W{}
	body.Int32(zkwire.OpAddWatch)
	body.String(w.full)
	body.Int32(zkwire.AddWatchPersistentRecursive)
	f, err := sc.roundTripHooks(c.ownXid(), body.B, ms(c.cfg.ConnectionTimeoutMilliseconds), c.closing,
		// Under sc.wmu: the one-shot reads written after it leave the
		// path to the recursive watch (see outgoing).
		func() { sc.noteAddWatch(w.full, true) },
		func(f []byte) {
			ok := zkwire.ReplyCode(f) == 0
			sc.noteAddWatch(w.full, ok) // a refusal armed nothing
			if ok {
				c.rec.arm(sc, w)
			}
		})
	if err != nil {
		return err
	}
	if code := zkwire.ReplyCode(f); code != 0 {
		return codeErr(code)
	}
	return nil
}

// arm records that w is armed on sc (from the addWatch reply, on sc's
// reader). Arming again after the first time (a new connection) queues
// EventResync before anything sc notifies.
func (r *recursive) arm(sc *sniffConn, w *rwatch) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if w.ended || w.conn == sc {
		return
	}
	again := w.conn != nil
	w.conn = sc
	if again {
		r.deliver(w, reg.WatchEvent{Type: reg.EventResync, Path: w.rel})
	}
}

// end removes w and queues its EventNotWatching, once.
func (r *recursive) end(w *rwatch, cause error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if w.ended {
		return
	}
	r.remove(w)
	r.deliver(w, reg.WatchEvent{Type: reg.EventNotWatching, Path: w.rel, Err: cause})
}

// deliver passes ev to w's fn: at once when w is inline, else through the
// queue. Caller holds mu.
func (r *recursive) deliver(w *rwatch, ev reg.WatchEvent) {
	if w.inline {
		w.fn(ev)
		return
	}
	r.q.Push(rdelivery{w, ev})
}

// remove forgets w without an event. Caller holds mu.
func (r *recursive) remove(w *rwatch) {
	w.ended = true
	if w.stop != nil {
		w.stop()
	}
	delete(r.live, w)
	ws := slices.DeleteFunc(r.table[w.full], func(x *rwatch) bool { return x == w })
	if len(ws) == 0 {
		delete(r.table, w.full)
	} else {
		r.table[w.full] = ws
	}
}

// closeAll ends every watch with ErrClosed and waits until the fns have had
// their last call (Close).
func (r *recursive) closeAll() {
	r.mu.Lock()
	live := make([]*rwatch, 0, len(r.live))
	for w := range r.live {
		live = append(live, w)
	}
	r.mu.Unlock()
	for _, w := range live {
		r.end(w, reg.ErrClosed)
	}
	r.wg.Wait()
	r.q.Wait()
}

// rearm arms every live recursive watch on sc, the connection of a
// reconnection or of a new session (from onSession). A connection failure
// leaves it to the next reconnection; a refusal ends the watch.
func (c *Client) rearm(sc *sniffConn) {
	r := c.rec
	r.mu.Lock()
	if sc == nil || len(r.live) == 0 {
		r.mu.Unlock()
		return
	}
	r.wg.Add(1)
	r.mu.Unlock()
	go func() {
		defer r.wg.Done()
		r.mu.Lock()
		var todo []*rwatch
		conflict := false
		for w := range r.live {
			// One never armed is still WatchRecursive's, which retries
			// on the new connection itself.
			if w.conn != nil && w.conn != sc {
				todo = append(todo, w)
				conflict = conflict || r.lib.has(w.full, stdData|stdExist)
			}
		}
		r.mu.Unlock()
		if conflict {
			// go-zookeeper's setWatches re-arms its one-shot watch on a
			// recursively watched path: write addWatch after it (see
			// the comment at the top).
			t := time.NewTimer(ms(c.cfg.ConnectionTimeoutMilliseconds))
			select {
			case <-sc.setWatches:
			case <-t.C:
			case <-sc.done:
			case <-c.closing:
			}
			t.Stop()
		}
		c.rearmAll(sc, todo)
	}()
}

// rearmParallel is how many addWatch requests a re-arming keeps in flight:
// a host's SharedCache holds a watch a job, and one request after another
// would take a round trip each (seconds for 10,000 jobs) before the last
// job heard of its changes again.
const rearmParallel = 32

// rearmAll arms todo on sc, rearmParallel at a time. A connection failure
// leaves the rest to the next reconnection; a refusal ends the watch.
func (c *Client) rearmAll(sc *sniffConn, todo []*rwatch) {
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		next int
		lost bool
	)
	take := func() *rwatch {
		mu.Lock()
		defer mu.Unlock()
		if lost || next == len(todo) {
			return nil
		}
		next++
		return todo[next-1]
	}
	for range min(rearmParallel, len(todo)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for w := take(); w != nil; w = take() {
				err := c.addWatch(sc, w)
				switch {
				case err == nil:
				case isConnErr(err) || c.isClosing():
					mu.Lock()
					lost = true // the next connection arms the rest
					mu.Unlock()
					return
				default:
					c.log.Warn("zookeeper: recursive watch refused on reconnection; it ends", "path", w.rel, "error", err)
					c.rec.end(w, mapErr(err))
				}
			}
		}()
	}
	wg.Wait()
}

// isConnErr: err says the connection failed, not the server.
func isConnErr(err error) bool {
	return errors.Is(mapErr(err), reg.ErrConnectionLoss)
}

// notification routes a watch notification read on sc and reports whether
// go-zookeeper gets it.
func (r *recursive) notification(sc *sniffConn, typ int32, path string) bool {
	if _, node := fires(typ); !node {
		return true // not a node event: go-zookeeper's business
	}
	armed := r.lib.armed(typ, path)
	r.mu.Lock()
	defer r.mu.Unlock()
	if typ == zkwire.EventNodeChildrenChanged || len(r.table) == 0 {
		return true
	}
	var et reg.WatchEventType
	switch typ {
	case zkwire.EventNodeCreated:
		et = reg.EventNodeCreated
	case zkwire.EventNodeDeleted:
		et = reg.EventNodeDeleted
	default:
		et = reg.EventNodeDataChanged
	}
	var rel string
	routed := false
	for p := path; ; p = reg.Parent(p) {
		for _, w := range r.table[p] {
			if w.conn != sc {
				continue
			}
			if rel == "" {
				rel = relPath(r.ns, path)
			}
			r.deliver(w, reg.WatchEvent{Type: et, Path: rel})
			routed = true
		}
		if p == "/" {
			break
		}
	}
	// What no recursive watch took, the server sent for a one-shot watch:
	// go-zookeeper's, whether the table knows it or not.
	return armed || !routed
}
