package regtest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/ejob-io/ejob/core/reg"
)

// remoteEvents is a client whose inline recursive watch's events carry no
// node, as a remote registry's (ZooKeeper's) do, and which has no store to
// be read in place: a SharedCache over it reads back what it is notified
// of, on any registry. Before each MultiRead it calls beforeRead with the
// ops when set. It records the paths watched and the events delivered.
type remoteEvents struct {
	reg.Client
	in reg.InlineRecursiveWatcher

	mu         sync.Mutex
	beforeRead func(ops []reg.ReadOp)
	watched    []string         // each WatchRecursive call's path
	delivered  []reg.WatchEvent // every event passed to a watch's fn
}

func (c *remoteEvents) WatchRecursive(ctx context.Context, path string, fn func(reg.WatchEvent)) error {
	return c.WatchRecursiveInline(ctx, path, fn)
}

func (c *remoteEvents) WatchRecursiveInline(ctx context.Context, path string, fn func(reg.WatchEvent)) error {
	c.mu.Lock()
	c.watched = append(c.watched, path)
	c.mu.Unlock()
	return c.in.WatchRecursiveInline(ctx, path, func(ev reg.WatchEvent) {
		ev = reg.WatchEvent{Type: ev.Type, Path: ev.Path, Err: ev.Err}
		c.mu.Lock()
		c.delivered = append(c.delivered, ev)
		c.mu.Unlock()
		fn(ev)
	})
}

// record returns the paths watched and the events delivered so far.
func (c *remoteEvents) record() (watched []string, delivered []reg.WatchEvent) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.watched), slices.Clone(c.delivered)
}

func (c *remoteEvents) MultiRead(ctx context.Context, ops ...reg.ReadOp) ([]reg.ReadResult, error) {
	c.mu.Lock()
	f := c.beforeRead
	c.mu.Unlock()
	if f != nil {
		f(ops)
	}
	return reg.ReadMany(ctx, c.Client, ops...)
}

func (c *remoteEvents) setBeforeRead(f func(ops []reg.ReadOp)) {
	c.mu.Lock()
	c.beforeRead = f
	c.mu.Unlock()
}

// remote wraps c as remoteEvents, or skips t when c has no inline
// recursive watches (nothing then applies a notification unread).
func remote(t *testing.T, c reg.Client) *remoteEvents {
	t.Helper()
	in, ok := c.(reg.InlineRecursiveWatcher)
	if !ok {
		t.Skip("client has no inline recursive watches")
	}
	return &remoteEvents{Client: c, in: in}
}

// trackJob mirrors /job on a SharedCache of c of its own, loaded, until
// t ends, recording the view's events.
func trackJob(t *testing.T, c reg.Client) (*recorder, *reg.CacheView) {
	rec := &recorder{}
	sc := reg.NewSharedCache(c)
	v := sc.Track("/job", rec.record)
	t.Cleanup(v.Close)
	runShared(t, sc)
	<-v.Initialized()
	return rec, v
}

// eventsOf returns the events of path after the initial load, as
// "type path=data".
func eventsOf(rec *recorder, path string) []string {
	var out []string
	initialized := false
	for _, ev := range rec.events() {
		if initialized && ev.Path == path {
			out = append(out, fmt.Sprintf("%v %s=%s", ev.Type, ev.Path, ev.Data))
		}
		initialized = initialized || ev.Type == reg.TreeInitialized
	}
	return out
}

// testSharedDeletionNotReadBack: a deletion notified while nothing is
// being read is applied without reading the node back. Every host that
// follows a job read each of its running nodes' deletions back, a third
// of the registry's requests per item-run with 10 hosts.
func (s *suite) testSharedDeletionNotReadBack(t *testing.T) {
	ctx := ctxFor(t)
	ns := namespace(t)
	w := s.client(t, ns)
	jobTree(t, w, "/job")
	calls := &callLog{}
	c := remote(t, calls.wrap(s.client(t, ns)))
	rec, v := trackJob(t, c)
	const running = "/job/sharding/0/running"
	str(t)(w.Create(ctx, running, nil, reg.Ephemeral))
	s.eventually(t, "the running node", func() bool { _, _, ok := v.Get(running); return ok })
	calls.Take()
	noErr(t, w.Delete(ctx, running, reg.AnyVersion))
	s.eventually(t, "the running node gone", func() bool { _, _, ok := v.Get(running); return !ok })
	stat(t)(w.Set(ctx, "/job/config", []byte("barrier"), reg.AnyVersion))
	s.eventually(t, "the barrier", func() bool { d, _, _ := v.Get("/job/config"); return string(d) == "barrier" })
	for _, call := range calls.Take() {
		if call.Path == running || strings.HasPrefix(call.Path, running+"/") {
			t.Errorf("the deletion was read back: %+v", call)
		}
	}
	want := []string{"added " + running + "=", "deleted " + running + "="}
	if got := eventsOf(rec, running); !slices.Equal(got, want) {
		t.Errorf("events of the running node:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	s.eventuallySame(t, w, v, "/job")
}

// testSharedDeletionBeforeReadReply deletes and re-creates a node after
// the cache has sent no read yet but before the server answers the read
// it sends for that node: the read shows the new node, and the deletion's
// notification, which came before its reply, is older than what the
// cache holds then. The cache must not apply it to the new node: the
// events are the old node's deletion and the new one's addition, once.
func (s *suite) testSharedDeletionBeforeReadReply(t *testing.T) {
	ctx := ctxFor(t)
	ns := namespace(t)
	w := s.client(t, ns)
	jobTree(t, w, "/job")
	const p = "/job/sharding/0/instance"
	c := remote(t, s.client(t, ns))
	rec, v := trackJob(t, c)
	var once sync.Once
	c.setBeforeRead(func(ops []reg.ReadOp) {
		if !slices.ContainsFunc(ops, func(op reg.ReadOp) bool { return op.Path == p }) {
			return
		}
		once.Do(func() {
			noErr(t, w.Delete(ctx, p, reg.AnyVersion))
			str(t)(w.Create(ctx, p, []byte("new"), reg.Persistent))
		})
	})
	stat(t)(w.Set(ctx, p, []byte("changed"), reg.AnyVersion))
	s.eventually(t, "the new node", func() bool { d, _, _ := v.Get(p); return string(d) == "new" })
	c.setBeforeRead(nil)
	stat(t)(w.Set(ctx, "/job/config", []byte("barrier"), reg.AnyVersion))
	s.eventually(t, "the barrier", func() bool { d, _, _ := v.Get("/job/config"); return string(d) == "barrier" })
	want := []string{"deleted " + p + "=10.0.0.1@-@1", "added " + p + "=new"}
	if got := eventsOf(rec, p); !slices.Equal(got, want) {
		t.Errorf("events of %s:\n%s\nwant\n%s", p, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	s.eventuallySame(t, w, v, "/job")
}
