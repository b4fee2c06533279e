package regtest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ejob-io/ejob/core/reg"
)

// recursiveTests are the cases of reg.RecursiveWatcher, run for clients
// that implement it (skipped when the server answers ErrUnimplemented).
func (s *suite) recursiveTests() map[string]func(t *testing.T) {
	return map[string]func(t *testing.T){
		"Recursive/Order":            s.testRecursiveOrder,
		"Recursive/Namespace":        s.testRecursiveNamespace,
		"Recursive/Cancel":           s.testRecursiveCancel,
		"Recursive/Close":            s.testRecursiveClose,
		"Recursive/Reconnect":        s.testRecursiveReconnect,
		"Recursive/SessionExpiry":    s.testRecursiveExpiry,
		"Recursive/OneShotAlongside": s.testRecursiveOneShot,
		"Recursive/FloodAndDrop":     s.testRecursiveFlood,
		"Recursive/FnHoldsNoLock":    s.testRecursiveFnHoldsNoLock,
		"Recursive/KnownNodes":       s.testRecursiveKnown,
	}
}

// recRecorder collects what a recursive watch's fn gets.
type recRecorder struct {
	mu   sync.Mutex
	evs  []reg.WatchEvent // without what a Known event carries
	full []reg.WatchEvent
}

func (r *recRecorder) fn(ev reg.WatchEvent) {
	r.mu.Lock()
	r.full = append(r.full, ev)
	r.evs = append(r.evs, reg.WatchEvent{Type: ev.Type, Path: ev.Path, Err: ev.Err})
	r.mu.Unlock()
}

// events returns the events recorded, as Type, Path and Err.
func (r *recRecorder) events() []reg.WatchEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.evs)
}

// fullEvents returns the events recorded, whole.
func (r *recRecorder) fullEvents() []reg.WatchEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.full)
}

// sameEvents compares events by Type, Path and Err.
func sameEvents(a, b []reg.WatchEvent) bool {
	return slices.EqualFunc(a, b, func(x, y reg.WatchEvent) bool {
		return x.Type == y.Type && x.Path == y.Path && x.Err == y.Err
	})
}

func (r *recRecorder) len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.evs)
}

func fmtEvents(evs []reg.WatchEvent) string {
	s := ""
	for _, ev := range evs {
		s += fmt.Sprintf("\n  %v %s", ev.Type, ev.Path)
		if ev.Err != nil {
			s += fmt.Sprintf(" (%v)", ev.Err)
		}
	}
	return s
}

// watchRec arms a recursive watch on path of c, recording into a new
// recorder; it skips t when c cannot.
// watching returns a ctx for the test, a client c watching path
// recursively (r records the events) and another client o of the same
// namespace to write with.
func (s *suite) watching(t *testing.T, path string) (ctx context.Context, c, o reg.Client, r *recRecorder) {
	t.Helper()
	ctx = ctxFor(t)
	ns := namespace(t)
	c = s.client(t, ns)
	o = s.client(t, ns)
	return ctx, c, o, s.watchRec(t, ctx, c, path)
}

func (s *suite) watchRec(t *testing.T, ctx context.Context, c reg.Client, path string) *recRecorder {
	t.Helper()
	rw, ok := c.(reg.RecursiveWatcher)
	if !ok {
		t.Skip("client has no recursive watches")
	}
	r := &recRecorder{}
	watch := rw.WatchRecursive
	if s.inline {
		in, ok := c.(reg.InlineRecursiveWatcher)
		if !ok {
			t.Skip("client has no inline recursive watches")
		}
		watch = in.WatchRecursiveInline
	}
	err := watch(ctx, path, r.fn)
	if errors.Is(err, reg.ErrUnimplemented) {
		t.Skip("server has no recursive watches")
	}
	noErr(t, err)
	return r
}

// waitFor waits until r has recorded an event matching ok, and returns the
// index of the first such event.
func (s *suite) waitFor(t *testing.T, r *recRecorder, what string, ok func(reg.WatchEvent) bool) int {
	t.Helper()
	return s.waitAfter(t, r, -1, what, ok)
}

// waitAfter is waitFor for the events after index from.
func (s *suite) waitAfter(t *testing.T, r *recRecorder, from int, what string, ok func(reg.WatchEvent) bool) int {
	t.Helper()
	deadline := time.Now().Add(s.h.Wait)
	for {
		evs := r.events()
		if from+1 <= len(evs) {
			if i := slices.IndexFunc(evs[from+1:], ok); i >= 0 {
				return from + 1 + i
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s; got:%s", s.h.Wait, what, fmtEvents(r.events()))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func isEv(typ reg.WatchEventType, path string) func(reg.WatchEvent) bool {
	return func(ev reg.WatchEvent) bool { return ev.Type == typ && ev.Path == path }
}

// wantEvents checks that r recorded exactly want (waiting for the last).
func (s *suite) wantEvents(t *testing.T, r *recRecorder, want []reg.WatchEvent) {
	t.Helper()
	last := want[len(want)-1]
	s.waitFor(t, r, fmt.Sprintf("%v %s", last.Type, last.Path), isEv(last.Type, last.Path))
	got := r.events()
	if !sameEvents(got, want) {
		t.Fatalf("recursive watch got:%s\nwant:%s", fmtEvents(got), fmtEvents(want))
	}
}

// testRecursiveOrder: creates, data changes and deletes of the watched node
// and below arrive in order, with their types and paths, and nothing else
// (no child events, nothing of a sibling that shares the prefix).
func (s *suite) testRecursiveOrder(t *testing.T) {
	ctx, _, o, r := s.watching(t, "/a")
	str(t)(o.Create(ctx, "/a", nil, reg.Persistent))
	str(t)(o.Create(ctx, "/a/b", nil, reg.Persistent))
	str(t)(o.Create(ctx, "/ab", nil, reg.Persistent))   // same prefix, not below
	str(t)(o.Create(ctx, "/ab/x", nil, reg.Persistent)) // ditto
	str(t)(o.Create(ctx, "/a/b/c", []byte("1"), reg.Ephemeral))
	stat(t)(o.Set(ctx, "/a/b/c", []byte("2"), reg.AnyVersion))
	stat(t)(o.Set(ctx, "/ab", []byte("2"), reg.AnyVersion))
	_, err := o.Multi(ctx,
		reg.CreateOp("/a/m", nil, reg.Persistent),
		reg.SetOp("/a/b", []byte("x"), reg.AnyVersion),
		reg.DeleteOp("/a/b/c", reg.AnyVersion))
	noErr(t, err)
	noErr(t, o.Delete(ctx, "/ab/x", reg.AnyVersion))
	noErr(t, o.Delete(ctx, "/a/m", reg.AnyVersion))
	stat(t)(o.Set(ctx, "/a", []byte("end"), reg.AnyVersion))
	s.wantEvents(t, r, []reg.WatchEvent{
		{Type: reg.EventNodeCreated, Path: "/a"},
		{Type: reg.EventNodeCreated, Path: "/a/b"},
		{Type: reg.EventNodeCreated, Path: "/a/b/c"},
		{Type: reg.EventNodeDataChanged, Path: "/a/b/c"},
		{Type: reg.EventNodeCreated, Path: "/a/m"},
		{Type: reg.EventNodeDataChanged, Path: "/a/b"},
		{Type: reg.EventNodeDeleted, Path: "/a/b/c"},
		{Type: reg.EventNodeDeleted, Path: "/a/m"},
		{Type: reg.EventNodeDataChanged, Path: "/a"},
	})
}

// testRecursiveKnown: an event that carries its node (WatchEvent.Known, an
// in-process registry's) carries it as a read right after the write shows
// it: the data and stat of a created or changed node, the stat a deleted
// node had. A cache applies such events without reading the nodes back.
// A registry that sets Known on no event passes.
func (s *suite) testRecursiveKnown(t *testing.T) {
	ctx, c, o, r := s.watching(t, "/k")
	str(t)(o.Create(ctx, "/k", []byte("a"), reg.Persistent))
	_, created, err := o.Get(ctx, "/k")
	noErr(t, err)
	str(t)(o.Create(ctx, "/k/x", nil, reg.Ephemeral))
	_, err = o.Multi(ctx, reg.SetOp("/k", []byte("b"), reg.AnyVersion), reg.DeleteOp("/k/x", reg.AnyVersion))
	noErr(t, err)
	data, changed, err := o.Get(ctx, "/k")
	noErr(t, err)
	noErr(t, o.Delete(ctx, "/k", reg.AnyVersion))
	s.waitFor(t, r, "deleted /k", isEv(reg.EventNodeDeleted, "/k"))
	evs := r.fullEvents()
	if !reg.IsInProcess(c) && !evs[0].Known {
		return // the registry's events carry no node (ZooKeeper's)
	}
	type want struct {
		typ  reg.WatchEventType
		path string
		data string
		czx  int64
		mzx  int64
	}
	wants := []want{
		{reg.EventNodeCreated, "/k", "a", created.Czxid, created.Mzxid},
		{reg.EventNodeCreated, "/k/x", "", 0, 0},
		{reg.EventNodeDataChanged, "/k", string(data), changed.Czxid, changed.Mzxid},
		{reg.EventNodeDeleted, "/k/x", "", 0, 0},
		{reg.EventNodeDeleted, "/k", string(data), changed.Czxid, changed.Mzxid},
	}
	if len(evs) != len(wants) {
		t.Fatalf("events:%s\nwant %d", fmtEvents(evs), len(wants))
	}
	for i, w := range wants {
		ev := evs[i]
		if ev.Type != w.typ || ev.Path != w.path || !ev.Known {
			t.Fatalf("event %d: %v %s known=%v, want %v %s known", i, ev.Type, ev.Path, ev.Known, w.typ, w.path)
		}
		if string(ev.Data) != w.data {
			t.Errorf("event %d (%v %s): data %q, want %q", i, ev.Type, ev.Path, ev.Data, w.data)
		}
		if w.czx != 0 && (ev.Stat.Czxid != w.czx || ev.Stat.Mzxid != w.mzx) {
			t.Errorf("event %d (%v %s): czxid/mzxid %d/%d, want %d/%d as read", i, ev.Type, ev.Path, ev.Stat.Czxid, ev.Stat.Mzxid, w.czx, w.mzx)
		}
	}
	// The ephemeral child's events carry its own stat: created and deleted
	// with one identity, younger than its parent.
	if x, y := evs[1].Stat.Czxid, evs[3].Stat.Czxid; x == 0 || x != y || x <= created.Czxid {
		t.Errorf("/k/x: czxid %d at its creation, %d at its deletion (parent %d)", x, y, created.Czxid)
	}
}

// testRecursiveNamespace: a watch on the namespace root sees the
// namespace's nodes with namespace-relative paths, and nothing of another
// namespace whose name shares the prefix.
func (s *suite) testRecursiveNamespace(t *testing.T) {
	ctx := ctxFor(t)
	ns := namespace(t)
	c := s.client(t, ns)
	sib := s.client(t, ns+"x")
	r := s.watchRec(t, ctx, c, "/")
	str(t)(sib.Create(ctx, "/n", nil, reg.Persistent))
	str(t)(c.Create(ctx, "/n", nil, reg.Persistent))
	stat(t)(sib.Set(ctx, "/n", []byte("1"), reg.AnyVersion))
	stat(t)(c.Set(ctx, "/", []byte("root"), reg.AnyVersion))
	s.wantEvents(t, r, []reg.WatchEvent{
		{Type: reg.EventNodeCreated, Path: "/n"},
		{Type: reg.EventNodeDataChanged, Path: "/"},
	})
}

// testRecursiveCancel: when ctx ends, fn gets EventNotWatching once and
// nothing after it (another watch on the same path, armed before, still
// delivers).
func (s *suite) testRecursiveCancel(t *testing.T) {
	ctx := ctxFor(t)
	ns := namespace(t)
	c := s.client(t, ns)
	o := s.client(t, ns)
	wctx, cancel := context.WithCancel(ctx)
	r := s.watchRec(t, wctx, c, "/a")
	keep := s.watchRec(t, ctx, c, "/a")
	str(t)(o.Create(ctx, "/a", nil, reg.Persistent))
	s.waitFor(t, r, "the create", isEv(reg.EventNodeCreated, "/a"))
	cancel()
	s.waitFor(t, r, "not-watching", func(ev reg.WatchEvent) bool { return ev.Type == reg.EventNotWatching })
	str(t)(o.Create(ctx, "/a/after", nil, reg.Persistent))
	s.waitFor(t, keep, "the other watch's event", isEv(reg.EventNodeCreated, "/a/after"))
	got := r.events()
	if len(got) != 2 || got[1].Type != reg.EventNotWatching || got[1].Path != "/a" || !errors.Is(got[1].Err, context.Canceled) {
		t.Fatalf("cancelled watch got:%s", fmtEvents(got))
	}
	// Arming with an ended ctx fails.
	if err := c.(reg.RecursiveWatcher).WatchRecursive(wctx, "/a", func(reg.WatchEvent) {}); !errors.Is(err, context.Canceled) {
		t.Fatalf("WatchRecursive with an ended ctx = %v", err)
	}
}

// testRecursiveClose: closing the client ends the watch with ErrClosed,
// once; arming on a closed client fails with ErrClosed.
func (s *suite) testRecursiveClose(t *testing.T) {
	ctx := ctxFor(t)
	c := s.client(t, namespace(t))
	r := s.watchRec(t, ctx, c, "/")
	noErr(t, c.Close())
	s.waitFor(t, r, "not-watching", func(ev reg.WatchEvent) bool { return ev.Type == reg.EventNotWatching })
	got := r.events()
	if len(got) != 1 || !errors.Is(got[0].Err, reg.ErrClosed) {
		t.Fatalf("watch of a closed client got:%s", fmtEvents(got))
	}
	err := c.(reg.RecursiveWatcher).WatchRecursive(ctx, "/", func(reg.WatchEvent) {})
	wantErr(t, err, reg.ErrClosed)
}

// testRecursiveReconnect: after a dropped connection (same session) fn gets
// EventResync, and the watch delivers again afterwards.
func (s *suite) testRecursiveReconnect(t *testing.T) {
	if s.h.Disconnect == nil {
		t.Skip("harness cannot drop connections")
	}
	ctx := ctxFor(t)
	ns := namespace(t)
	c := s.client(t, ns)
	o := s.client(t, ns)
	conn := c.WatchConnection(ctx)
	s.nextConn(t, conn, reg.StateConnected)
	r := s.watchRec(t, ctx, c, "/a")
	str(t)(o.Create(ctx, "/a", nil, reg.Persistent))
	s.waitFor(t, r, "the create", isEv(reg.EventNodeCreated, "/a"))
	sess := c.Session()
	s.h.Disconnect(t, c)
	s.nextConn(t, conn, reg.StateSuspended)
	str(t)(o.Create(ctx, "/a/away", nil, reg.Persistent))
	if s.h.Reconnect != nil {
		s.h.Reconnect(t, c)
	}
	s.nextConn(t, conn, reg.StateReconnected)
	i := s.waitFor(t, r, "resync", isEv(reg.EventResync, "/a"))
	str(t)(o.Create(ctx, "/a/back", nil, reg.Persistent))
	s.waitAfter(t, r, i, "a change after the resync", isEv(reg.EventNodeCreated, "/a/back"))
	if c.Session() != sess {
		t.Fatal("the session changed")
	}
	if n := countType(r.events(), reg.EventResync); n != 1 {
		t.Fatalf("%d resyncs:%s", n, fmtEvents(r.events()))
	}
}

func countType(evs []reg.WatchEvent, typ reg.WatchEventType) int {
	n := 0
	for _, ev := range evs {
		if ev.Type == typ {
			n++
		}
	}
	return n
}

// testRecursiveExpiry: a session expiry gives EventResync (no
// EventNotWatching: the watch is armed again in the new session), and
// delivery continues in the new session.
func (s *suite) testRecursiveExpiry(t *testing.T) {
	ctx := ctxFor(t)
	ns := namespace(t)
	c := s.client(t, ns)
	o := s.client(t, ns)
	conn := c.WatchConnection(ctx)
	s.nextConn(t, conn, reg.StateConnected)
	r := s.watchRec(t, ctx, c, "/")
	str(t)(c.Create(ctx, "/mine", nil, reg.Ephemeral))
	s.waitFor(t, r, "the create", isEv(reg.EventNodeCreated, "/mine"))
	noErr(t, c.(reg.Expirer).Expire(ctx))
	s.nextConn(t, conn, reg.StateNewSession)
	i := s.waitFor(t, r, "resync", isEv(reg.EventResync, "/"))
	str(t)(o.Create(ctx, "/new", nil, reg.Persistent))
	str(t)(c.Create(ctx, "/mine", nil, reg.Ephemeral))
	j := s.waitAfter(t, r, i, "the create in the new session", isEv(reg.EventNodeCreated, "/mine"))
	got := r.events()
	if j <= i || !slices.ContainsFunc(got[i:j], isEv(reg.EventNodeCreated, "/new")) {
		t.Fatalf("after the resync:%s", fmtEvents(got))
	}
	if n := countType(got, reg.EventNotWatching); n != 0 {
		t.Fatalf("the watch ended on expiry:%s", fmtEvents(got))
	}
}

// testRecursiveOneShot: one-shot watches on paths a recursive watch covers
// still fire (each once, with its own event type), and the recursive watch
// gets each change exactly once. (On ZooKeeper this checks that the server
// sends a connection one notification per change however many of its
// watches match: a second one would show here as a duplicate event.)
func (s *suite) testRecursiveOneShot(t *testing.T) {
	ctx := ctxFor(t)
	ns := namespace(t)
	c := s.client(t, ns)
	o := s.client(t, ns)
	str(t)(o.Create(ctx, "/a/b", nil, reg.Persistent, reg.WithParents()))
	r := s.watchRec(t, ctx, c, "/a")
	for round := range 2 {
		_, _, dataW, err := c.GetW(ctx, "/a/b")
		noErr(t, err)
		_, _, rootW, err := c.GetW(ctx, "/a")
		noErr(t, err)
		_, ok, existW, err := c.ExistsW(ctx, "/a/c")
		noErr(t, err)
		if ok {
			t.Fatal("/a/c exists")
		}
		_, _, childW, err := c.ChildrenW(ctx, "/a")
		noErr(t, err)
		_, _, leafChildW, err := c.ChildrenW(ctx, "/a/b")
		noErr(t, err)
		stat(t)(o.Set(ctx, "/a/b", []byte(fmt.Sprint(round)), reg.AnyVersion))
		str(t)(o.Create(ctx, "/a/c", nil, reg.Persistent))
		stat(t)(o.Set(ctx, "/a", []byte(fmt.Sprint(round)), reg.AnyVersion))
		noErr(t, o.Delete(ctx, "/a/c", reg.AnyVersion))
		str(t)(o.Create(ctx, "/a/b/d", nil, reg.Persistent))
		noErr(t, o.Delete(ctx, "/a/b/d", reg.AnyVersion))
		if ev := s.recv(t, dataW); ev.Type != reg.EventNodeDataChanged || ev.Path != "/a/b" {
			t.Fatalf("round %d: GetW /a/b got %+v", round, ev)
		}
		if ev := s.recv(t, rootW); ev.Type != reg.EventNodeDataChanged || ev.Path != "/a" {
			t.Fatalf("round %d: GetW /a got %+v", round, ev)
		}
		if ev := s.recv(t, existW); ev.Type != reg.EventNodeCreated || ev.Path != "/a/c" {
			t.Fatalf("round %d: ExistsW /a/c got %+v", round, ev)
		}
		if ev := s.recv(t, childW); ev.Type != reg.EventNodeChildrenChanged || ev.Path != "/a" {
			t.Fatalf("round %d: ChildrenW /a got %+v", round, ev)
		}
		if ev := s.recv(t, leafChildW); ev.Type != reg.EventNodeChildrenChanged || ev.Path != "/a/b" {
			t.Fatalf("round %d: ChildrenW /a/b got %+v", round, ev)
		}
	}
	// A one-shot watch on the watched path itself, armed after the
	// recursive one, must not end the recursive watch when it fires.
	_, _, w, err := c.GetW(ctx, "/a")
	noErr(t, err)
	stat(t)(o.Set(ctx, "/a", []byte("x"), reg.AnyVersion))
	s.recv(t, w)
	str(t)(o.Create(ctx, "/a/z", nil, reg.Persistent))
	one := []reg.WatchEvent{
		{Type: reg.EventNodeDataChanged, Path: "/a/b"},
		{Type: reg.EventNodeCreated, Path: "/a/c"},
		{Type: reg.EventNodeDataChanged, Path: "/a"},
		{Type: reg.EventNodeDeleted, Path: "/a/c"},
		{Type: reg.EventNodeCreated, Path: "/a/b/d"},
		{Type: reg.EventNodeDeleted, Path: "/a/b/d"},
	}
	want := append(slices.Clone(one), one...)
	want = append(want,
		reg.WatchEvent{Type: reg.EventNodeDataChanged, Path: "/a"},
		reg.WatchEvent{Type: reg.EventNodeCreated, Path: "/a/z"})
	s.wantEvents(t, r, want)
}

// testRecursiveFlood: connection-state events are not lost or held up
// behind a flood of recursive notifications: thousands of writes under
// the watch while the connection drops; Suspended and Reconnected are
// reported, then the watch resyncs and delivers again.
func (s *suite) testRecursiveFlood(t *testing.T) {
	if s.h.Disconnect == nil {
		t.Skip("harness cannot drop connections")
	}
	ctx := ctxFor(t)
	ns := namespace(t)
	c := s.client(t, ns)
	o := s.client(t, ns)
	conn := c.WatchConnection(ctx)
	s.nextConn(t, conn, reg.StateConnected)
	str(t)(o.Create(ctx, "/f", nil, reg.Persistent))
	r := s.watchRec(t, ctx, c, "/f")
	const batch, batches = 100, 30
	write := func(b int) error {
		ops := make([]reg.Op, batch)
		for i := range ops {
			ops[i] = reg.CreateOp(fmt.Sprintf("/f/n%d-%d", b, i), nil, reg.Persistent)
		}
		_, err := o.Multi(ctx, ops...)
		return err
	}
	// A first flood, wholly delivered: one event per create, in order.
	for b := range batches {
		noErr(t, write(b))
	}
	s.eventually(t, "the flood's events", func() bool { return r.len() >= batch*batches })
	for i, ev := range r.events() {
		if want := fmt.Sprintf("/f/n%d-%d", i/batch, i%batch); ev.Type != reg.EventNodeCreated || ev.Path != want {
			t.Fatalf("event %d = %v %s, want created %s", i, ev.Type, ev.Path, want)
		}
	}
	// A second flood while the connection drops.
	done := make(chan struct{})
	go func() {
		defer close(done)
		for b := batches; b < 2*batches; b++ {
			if err := write(b); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	s.eventually(t, "the second flood to begin", func() bool { return r.len() > batch*batches })
	s.h.Disconnect(t, c)
	s.nextConn(t, conn, reg.StateSuspended)
	if s.h.Reconnect != nil {
		s.h.Reconnect(t, c)
	}
	s.nextConn(t, conn, reg.StateReconnected)
	<-done
	i := s.waitFor(t, r, "resync", isEv(reg.EventResync, "/f"))
	stat(t)(o.Set(ctx, "/f", []byte("after"), reg.AnyVersion))
	s.waitAfter(t, r, i, "a change after the flood", isEv(reg.EventNodeDataChanged, "/f"))
}

// testInlineBeforeReturn: when a call of the watching client returns, its
// inline watch's fn has had the events of every write the registry
// applied before answering it, in order: the client's own writes, and
// another client's writes applied before a read (plain or MultiRead) or a
// write of the watching client.
func (s *suite) testInlineBeforeReturn(t *testing.T) {
	ctx, c, o, r := s.watching(t, "/i")
	str(t)(c.Create(ctx, "/i", nil, reg.Persistent))
	want := []reg.WatchEvent{{Type: reg.EventNodeCreated, Path: "/i"}}
	if got := r.events(); !sameEvents(got, want) {
		t.Fatalf("events when the create returned:%s\nwant:%s", fmtEvents(got), fmtEvents(want))
	}
	_, err := o.Multi(ctx, reg.CreateOp("/i/x", nil, reg.Persistent), reg.SetOp("/i", []byte("v"), reg.AnyVersion))
	noErr(t, err)
	_, _, err = c.Get(ctx, "/i")
	noErr(t, err)
	want = append(want, reg.WatchEvent{Type: reg.EventNodeCreated, Path: "/i/x"}, reg.WatchEvent{Type: reg.EventNodeDataChanged, Path: "/i"})
	if got := r.events(); !sameEvents(got, want) {
		t.Fatalf("events when a read after another client's writes returned:%s\nwant:%s", fmtEvents(got), fmtEvents(want))
	}
	stat(t)(o.Set(ctx, "/i/x", []byte("w"), reg.AnyVersion))
	_, err = reg.ReadMany(ctx, c, reg.GetOp("/i"), reg.ChildrenOp("/i"))
	noErr(t, err)
	want = append(want, reg.WatchEvent{Type: reg.EventNodeDataChanged, Path: "/i/x"})
	if got := r.events(); !sameEvents(got, want) {
		t.Fatalf("events when a MultiRead after another client's write returned:%s\nwant:%s", fmtEvents(got), fmtEvents(want))
	}
	noErr(t, o.Delete(ctx, "/i/x", reg.AnyVersion))
	str(t)(c.Create(ctx, "/i/y", nil, reg.Persistent))
	want = append(want, reg.WatchEvent{Type: reg.EventNodeDeleted, Path: "/i/x"}, reg.WatchEvent{Type: reg.EventNodeCreated, Path: "/i/y"})
	if got := r.events(); !sameEvents(got, want) {
		t.Fatalf("events when a write after another client's write returned:%s\nwant:%s", fmtEvents(got), fmtEvents(want))
	}
}

// testRecursiveFnHoldsNoLock: fn runs under no lock of the client's: while
// it waits for another goroutine, that goroutine's calls to the same client
// (and to another client of the same registry) go through, and the events
// they cause arrive once fn returns.
func (s *suite) testRecursiveFnHoldsNoLock(t *testing.T) {
	ctx := ctxFor(t)
	ns := namespace(t)
	c := s.client(t, ns)
	o := s.client(t, ns)
	inFn, proceed := make(chan struct{}), make(chan struct{})
	var once sync.Once
	r := &recRecorder{}
	rw, ok := c.(reg.RecursiveWatcher)
	if !ok {
		t.Skip("client has no recursive watches")
	}
	err := rw.WatchRecursive(ctx, "/a", func(ev reg.WatchEvent) {
		once.Do(func() {
			close(inFn)
			select {
			case <-proceed:
			case <-time.After(s.h.Wait):
				t.Error("client calls made while fn ran did not return: fn holds a lock they need")
			}
		})
		r.fn(ev)
	})
	if errors.Is(err, reg.ErrUnimplemented) {
		t.Skip("server has no recursive watches")
	}
	noErr(t, err)
	str(t)(o.Create(ctx, "/a", nil, reg.Persistent))
	select {
	case <-inFn:
	case <-time.After(s.h.Wait):
		t.Fatal("fn was not called")
	}
	cctx, cancel := context.WithTimeout(ctx, s.h.Wait)
	defer cancel()
	_, err = c.Create(cctx, "/a/by-c", nil, reg.Persistent)
	noErr(t, err)
	_, _, err = c.Get(cctx, "/a")
	noErr(t, err)
	_, err = o.Create(cctx, "/a/by-o", nil, reg.Persistent)
	noErr(t, err)
	close(proceed)
	s.wantEvents(t, r, []reg.WatchEvent{
		{Type: reg.EventNodeCreated, Path: "/a"},
		{Type: reg.EventNodeCreated, Path: "/a/by-c"},
		{Type: reg.EventNodeCreated, Path: "/a/by-o"},
	})
}
