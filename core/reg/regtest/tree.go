package regtest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/ejob-io/ejob/core/reg"
	"github.com/ejob-io/ejob/core/reg/regcount"
)

// treeKind is what the suite's TreeCache tests mirror a subtree with.
type treeKind int

const (
	// kindTreeCache: a TreeCache per subtree.
	kindTreeCache treeKind = iota
	// kindShared: a view of a SharedCache over the client as it is (one
	// recursive watch when the client can).
	kindShared
	// kindSharedFallback: a view of a SharedCache over the client with its
	// RecursiveWatcher hidden (a TreeCache per view).
	kindSharedFallback
)

// treeTests are the tests of a mirrored subtree, run for every tree kind
// (with the SharedCache's own for its kinds).
func (s *suite) treeTests() map[string]func(t *testing.T) {
	tests := map[string]func(t *testing.T){
		"Snapshot":    s.testTreeSnapshot,
		"QuietLoad":   s.testTreeQuietLoad,
		"Burst":       s.testTreeBurst,
		"Churn":       s.testTreeChurn,
		"Leaves":      s.testTreeLeaves,
		"Large":       s.testTreeLarge,
		"Subtree":     s.testTreeSubtree,
		"SessionLoss": s.testTreeSessionLoss,
		"Recreate":    s.testTreeRecreate,
	}
	if s.tree != kindTreeCache {
		tests["ManySubtrees"] = s.testSharedMany
		tests["CloseWhileEventsFlow"] = s.testSharedClose
		tests["Reconnect"] = s.testSharedReconnect
		tests["EventsMatchCache"] = s.testSharedEventsMatch
		tests["ClientClosed"] = s.testSharedClientClosed
		tests["UntrackedIgnored"] = s.testSharedUntracked
		tests["TrackDisconnected"] = s.testSharedTrackDisconnected
		tests["LeavesNotListed"] = s.testSharedLeavesNotListed
		tests["ChurnReconnects"] = s.testSharedChurnReconnects
		tests["Counted"] = s.testSharedCounted
	}
	if s.tree == kindShared {
		tests["DeletionNotReadBack"] = s.testSharedDeletionNotReadBack
		tests["DeletionBeforeReadReply"] = s.testSharedDeletionBeforeReadReply
		tests["WatchesOwnRoots"] = s.testSharedWatchesOwnRoots
		tests["RewatchAfterClose"] = s.testSharedRewatchAfterClose
	}
	return tests
}

// noRecursive hides a client's RecursiveWatcher (it keeps its Expirer): a
// SharedCache over it falls back to a TreeCache per subtree.
type noRecursive struct{ reg.Client }

func (c noRecursive) Expire(ctx context.Context) error { return c.Client.(reg.Expirer).Expire(ctx) }

// newShared returns a SharedCache over c after the suite's tree kind (not
// yet running).
func (s *suite) newShared(c reg.Client) *reg.SharedCache {
	if s.tree == kindSharedFallback {
		c = noRecursive{c}
	}
	return reg.NewSharedCache(c)
}

// runShared runs sc until the test ends (Run must then return nil).
func runShared(t *testing.T, sc *reg.SharedCache) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- sc.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("SharedCache.Run: %v", err)
		}
	})
}

// sharedFor keeps one running SharedCache per client of a test, so that a
// test's subtrees share it.
type sharedFor struct {
	mu     sync.Mutex
	caches map[reg.Client]*reg.SharedCache
}

// track tracks root on the test's SharedCache of c (started on first use)
// until the test ends.
func (s *suite) track(t *testing.T, c reg.Client, root string, fn func(reg.TreeEvent), opts ...reg.TreeCacheOption) *reg.CacheView {
	s.shared.mu.Lock()
	sc := s.shared.caches[c]
	if sc == nil {
		sc = s.newShared(c)
		if s.shared.caches == nil {
			s.shared.caches = make(map[reg.Client]*reg.SharedCache)
		}
		s.shared.caches[c] = sc
		runShared(t, sc)
		t.Cleanup(func() {
			s.shared.mu.Lock()
			delete(s.shared.caches, c)
			s.shared.mu.Unlock()
		})
	}
	s.shared.mu.Unlock()
	v := sc.Track(root, fn, opts...)
	t.Cleanup(v.Close)
	return v
}

// sameTree reports how the view's copy of the subtree at root differs from
// the registry's ("" when it does not): data, Czxid, Mzxid and children of
// every node.
func sameTree(ctx context.Context, c reg.Client, v reg.TreeView, root string, leaf func(string) bool) (string, error) {
	data, st, err := c.Get(ctx, root)
	if errors.Is(err, reg.ErrNoNode) {
		if _, _, ok := v.Get(root); ok {
			return root + " cached but absent", nil
		}
		return "", nil
	}
	if err != nil {
		return "", err
	}
	cd, cst, ok := v.Get(root)
	if cv, isView := v.(*reg.CacheView); isView {
		if pd, pst, pok := cv.Peek(root); pok != ok || string(pd) != string(cd) || pst != cst {
			return fmt.Sprintf("%s: Peek %q %+v %v, Get %q %+v %v", root, pd, pst, pok, cd, cst, ok), nil
		}
	}
	switch {
	case !ok:
		return root + " not cached", nil
	case string(cd) != string(data):
		return fmt.Sprintf("%s data %q, want %q", root, cd, data), nil
	case cst.Czxid != st.Czxid || cst.Mzxid != st.Mzxid:
		return fmt.Sprintf("%s stat czxid/mzxid %d/%d, want %d/%d", root, cst.Czxid, cst.Mzxid, st.Czxid, st.Mzxid), nil
	}
	if leaf != nil && leaf(root) {
		return "", nil
	}
	kids, err := c.Children(ctx, root)
	if errors.Is(err, reg.ErrNoNode) {
		return root + " vanished", nil
	}
	if err != nil {
		return "", err
	}
	slices.Sort(kids)
	if ck, _ := v.Children(root); !slices.Equal(ck, kids) {
		return fmt.Sprintf("%s children %v, want %v", root, ck, kids), nil
	}
	if cv, isView := v.(*reg.CacheView); isView {
		var each []string
		cv.EachChild(root, func(name string) bool { each = append(each, name); return true })
		if !slices.Equal(each, kids) {
			return fmt.Sprintf("%s EachChild %v, want %v", root, each, kids), nil
		}
	}
	for _, k := range kids {
		if d, err := sameTree(ctx, c, v, reg.Join(root, k), leaf); d != "" || err != nil {
			return d, err
		}
	}
	return "", nil
}

// eventuallySame waits until v mirrors the registry's subtree at root.
func (s *suite) eventuallySame(t *testing.T, c reg.Client, v reg.TreeView, root string) {
	t.Helper()
	ctx := ctxFor(t)
	var diff string
	s.eventually(t, "the view mirrors "+root, func() bool {
		var err error
		diff, err = sameTree(ctx, c, v, root, nil)
		noErr(t, err)
		return diff == ""
	})
}

// jobTree creates a job-shaped subtree at root (about a job's nodes:
// config, instances, servers, sharding items, leader).
func jobTree(t *testing.T, c reg.Client, root string) {
	ctx := ctxFor(t)
	for _, p := range []struct{ path, data string }{
		{root + "/config", strings.Repeat("c", 700)},
		{root + "/instances/10.0.0.1@-@1", "jobInstanceId: 10.0.0.1@-@1\nserverIp: 10.0.0.1\n"},
		{root + "/servers/10.0.0.1", "ENABLED"},
		{root + "/sharding/0/instance", "10.0.0.1@-@1"},
		{root + "/sharding/1/instance", "10.0.0.1@-@1"},
		{root + "/leader/election/instance", "10.0.0.1@-@1"},
		{root + "/leader/sharding", ""},
	} {
		str(t)(c.Create(ctx, p.path, []byte(p.data), reg.Persistent, reg.WithParents()))
	}
}

// recorder collects a view's events; fn may be installed before the view
// exists.
type recorder struct {
	mu  sync.Mutex
	evs []reg.TreeEvent
}

func (r *recorder) record(ev reg.TreeEvent) {
	r.mu.Lock()
	r.evs = append(r.evs, ev)
	r.mu.Unlock()
}

func (r *recorder) events() []reg.TreeEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.evs)
}

// replay folds events into the tree they describe (path → data), checking
// the stream's own rules: NodeAdded only for an absent node, NodeUpdated
// and NodeDeleted only for a present one, NodeDeleted only once the
// node's children are gone, TreeInitialized once, after the initial
// NodeAddeds.
func replay(evs []reg.TreeEvent) (map[string]string, error) {
	tree := map[string]string{}
	initialized := false
	for i, ev := range evs {
		_, present := tree[ev.Path]
		switch ev.Type {
		case reg.TreeInitialized:
			if initialized {
				return nil, fmt.Errorf("event %d: TreeInitialized twice", i)
			}
			initialized = true
			continue
		case reg.NodeAdded:
			if present {
				return nil, fmt.Errorf("event %d: %s added twice", i, ev.Path)
			}
		case reg.NodeUpdated, reg.NodeDeleted:
			if !initialized {
				return nil, fmt.Errorf("event %d: %v %s before TreeInitialized", i, ev.Type, ev.Path)
			}
			if !present {
				return nil, fmt.Errorf("event %d: %v %s, never added", i, ev.Type, ev.Path)
			}
		}
		if ev.Type == reg.NodeDeleted {
			for p := range tree {
				if strings.HasPrefix(p, ev.Path+"/") {
					return nil, fmt.Errorf("event %d: %s deleted before its child %s", i, ev.Path, p)
				}
			}
			delete(tree, ev.Path)
			continue
		}
		tree[ev.Path] = string(ev.Data)
	}
	return tree, nil
}

// viewTree is the view's subtree at root as path → data.
func viewTree(v reg.TreeView, root string) map[string]string {
	out := map[string]string{}
	var walk func(string)
	walk = func(p string) {
		d, _, ok := v.Get(p)
		if !ok {
			return
		}
		out[p] = string(d)
		kids, _ := v.Children(p)
		for _, k := range kids {
			walk(reg.Join(p, k))
		}
	}
	walk(root)
	return out
}

// eventuallyReplays waits until rec's events, replayed, give v's subtree
// at root (failing at once if they break the stream's rules).
func (s *suite) eventuallyReplays(t *testing.T, rec *recorder, v reg.TreeView, root string) {
	t.Helper()
	s.eventually(t, root+"'s events replay to its view", func() bool {
		got, err := replay(rec.events())
		noErr(t, err)
		return maps2str(got) == maps2str(viewTree(v, root))
	})
}

// disconnect drops c's connection (the harness's Disconnect) and waits until
// c says so; the func it returns lets c back and waits until it has
// reconnected.
func (s *suite) disconnect(t *testing.T, c reg.Client) (reconnect func()) {
	t.Helper()
	ctx := ctxFor(t)
	conn := c.WatchConnection(ctx)
	s.nextConn(t, conn, reg.StateConnected)
	s.h.Disconnect(t, c)
	s.nextConn(t, conn, reg.StateSuspended)
	return func() {
		t.Helper()
		if s.h.Reconnect != nil {
			s.h.Reconnect(t, c)
		}
		s.nextConn(t, conn, reg.StateReconnected)
	}
}

// testSharedMany tracks many job-shaped subtrees on one cache, some before
// Run and some while it runs, changes all of them, deletes some: every view
// mirrors its subtree, and nothing else.
func (s *suite) testSharedMany(t *testing.T) {
	ctx := ctxFor(t)
	ns := namespace(t)
	c := s.client(t, ns)
	w := s.client(t, ns)
	const jobs = 30
	for j := range jobs {
		jobTree(t, w, fmt.Sprintf("/job%02d", j))
	}
	str(t)(w.Create(ctx, "/untracked/x", []byte("u"), reg.Persistent, reg.WithParents()))
	sc := s.newShared(c)
	views := make([]*reg.CacheView, jobs)
	recs := make([]*recorder, jobs)
	track := func(j int) {
		recs[j] = &recorder{}
		views[j] = sc.Track(fmt.Sprintf("/job%02d", j), recs[j].record)
		t.Cleanup(views[j].Close)
	}
	for j := range jobs / 2 {
		track(j)
	}
	runShared(t, sc)
	for j := jobs / 2; j < jobs; j++ {
		track(j)
	}
	for j, v := range views {
		<-v.Initialized()
		s.eventuallySame(t, w, v, fmt.Sprintf("/job%02d", j))
		if _, _, ok := v.Get("/untracked/x"); ok {
			t.Fatal("a view holds a node outside its root")
		}
		if _, _, ok := v.Get(fmt.Sprintf("/job%02d", (j+1)%jobs)); ok {
			t.Fatal("a view holds another view's root")
		}
	}
	for j := range jobs {
		root := fmt.Sprintf("/job%02d", j)
		stat(t)(w.Set(ctx, root+"/config", []byte("changed"), reg.AnyVersion))
		str(t)(w.Create(ctx, root+"/sharding/2", nil, reg.Persistent))
		noErr(t, w.Delete(ctx, root+"/sharding/0/instance", reg.AnyVersion))
		if j%3 == 0 {
			noErr(t, reg.DeleteRecursive(ctx, w, root))
		}
	}
	for j, v := range views {
		root := fmt.Sprintf("/job%02d", j)
		s.eventuallySame(t, w, v, root)
		s.eventuallyReplays(t, recs[j], v, root)
	}
}

func maps2str(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s=%q\n", k, m[k])
	}
	return b.String()
}

// testSharedClose closes a view while its subtree changes fast: fn is
// never called after Close returns, and the cache goes on serving the
// other views.
func (s *suite) testSharedClose(t *testing.T) {
	ctx := ctxFor(t)
	ns := namespace(t)
	c := s.client(t, ns)
	w := s.client(t, ns)
	str(t)(w.Create(ctx, "/busy/n", []byte("0"), reg.Persistent, reg.WithParents()))
	str(t)(w.Create(ctx, "/calm/n", []byte("0"), reg.Persistent, reg.WithParents()))
	var closed, late, seen atomic.Int64
	busy := s.track(t, c, "/busy", func(reg.TreeEvent) {
		seen.Add(1)
		if closed.Load() != 0 {
			late.Add(1)
		}
	})
	calm := s.track(t, c, "/calm", nil)
	<-busy.Initialized()
	<-calm.Initialized()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 1; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := w.Set(ctx, "/busy/n", fmt.Appendf(nil, "%d", i), reg.AnyVersion); err != nil {
				t.Error(err)
				return
			}
		}
	})
	s.eventually(t, "updates flowing", func() bool { return seen.Load() > 5 })
	busy.Close()
	closed.Store(1)
	before := seen.Load()
	// Let more updates happen after Close, then check none was delivered.
	v, _, err := w.Get(ctx, "/busy/n")
	noErr(t, err)
	s.eventually(t, "more updates after Close", func() bool {
		d, _, err := w.Get(ctx, "/busy/n")
		noErr(t, err)
		return len(d) > 0 && string(d) != string(v)
	})
	close(stop)
	wg.Wait()
	stat(t)(w.Set(ctx, "/calm/n", []byte("after"), reg.AnyVersion))
	s.eventually(t, "the other view still follows", func() bool {
		d, _, ok := calm.Get("/calm/n")
		return ok && string(d) == "after"
	})
	if n := late.Load(); n != 0 || seen.Load() != before {
		t.Fatalf("%d events delivered after Close returned", n)
	}
	if _, _, ok := busy.Get("/busy/n"); ok {
		t.Fatal("a closed view still holds its nodes")
	}
	busy.Close() // twice is fine
}

// testSharedReconnect drops the cache's connection while its subtree
// changes: after the reconnection the view mirrors the registry and its
// events replay to it.
func (s *suite) testSharedReconnect(t *testing.T) {
	if s.h.Disconnect == nil {
		t.Skip("harness cannot drop connections")
	}
	ctx := ctxFor(t)
	ns := namespace(t)
	c := s.client(t, ns)
	w := s.client(t, ns)
	jobTree(t, w, "/job")
	rec := &recorder{}
	v := s.track(t, c, "/job", rec.record)
	<-v.Initialized()
	reconnect := s.disconnect(t, c)
	stat(t)(w.Set(ctx, "/job/config", []byte("while away"), reg.AnyVersion))
	noErr(t, reg.DeleteRecursive(ctx, w, "/job/sharding/1"))
	str(t)(w.Create(ctx, "/job/servers/10.0.0.2", []byte("DISABLED"), reg.Persistent))
	reconnect()
	s.eventuallySame(t, w, v, "/job")
	s.eventuallyReplays(t, rec, v, "/job")
	// It follows changes after the reconnection.
	stat(t)(w.Set(ctx, "/job/config", []byte("back"), reg.AnyVersion))
	s.eventuallySame(t, w, v, "/job")
}

// testSharedEventsMatch churns a job-shaped subtree from several writers
// (creates, deletes, re-creates, sets, ephemerals of a session that then
// expires): the view ends as the registry's subtree, and its events,
// replayed, give the view.
func (s *suite) testSharedEventsMatch(t *testing.T) {
	ctx := ctxFor(t)
	ns := namespace(t)
	c := s.client(t, ns)
	w := s.client(t, ns)
	e := s.client(t, ns)
	jobTree(t, w, "/job")
	rec := &recorder{}
	v := s.track(t, c, "/job", rec.record)
	<-v.Initialized()
	var wg sync.WaitGroup
	for g := range 3 {
		wg.Go(func() {
			for i := range 20 {
				p := fmt.Sprintf("/job/sharding/%d", g)
				var err error
				switch i % 4 {
				case 0:
					err = reg.DeleteRecursive(ctx, w, p)
				case 1:
					_, err = w.Create(ctx, p+"/running", nil, reg.Persistent, reg.WithParents())
				case 2:
					_, err = w.Set(ctx, p, fmt.Appendf(nil, "%d", i), reg.AnyVersion)
				case 3:
					_, err = e.Create(ctx, p+"/failover", []byte("e"), reg.Ephemeral)
				}
				if err != nil && !errors.Is(err, reg.ErrNoNode) && !errors.Is(err, reg.ErrNodeExists) && !errors.Is(err, reg.ErrNotEmpty) {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	noErr(t, e.(reg.Expirer).Expire(ctx))
	s.eventuallySame(t, w, v, "/job")
	s.eventuallyReplays(t, rec, v, "/job")
}

// testSharedClientClosed: Run returns an error wrapping ErrClosed when the
// client closes, after which no view gets events; Run twice is refused.
func (s *suite) testSharedClientClosed(t *testing.T) {
	ctx := ctxFor(t)
	ns := namespace(t)
	c := s.h.Connect(t, ns)
	w := s.client(t, ns)
	str(t)(w.Create(ctx, "/job/n", []byte("0"), reg.Persistent, reg.WithParents()))
	sc := s.newShared(c)
	var closed, late atomic.Int64
	v := sc.Track("/job", func(reg.TreeEvent) {
		if closed.Load() != 0 {
			late.Add(1)
		}
	})
	defer v.Close()
	done := make(chan error, 1)
	go func() { done <- sc.Run(context.Background()) }()
	<-v.Initialized()
	if err := sc.Run(ctx); !errors.Is(err, reg.ErrInvalidArgument) {
		t.Fatalf("second Run: %v, want ErrInvalidArgument", err)
	}
	noErr(t, c.Close())
	select {
	case err := <-done:
		if !errors.Is(err, reg.ErrClosed) {
			t.Fatalf("Run after the client closed: %v, want ErrClosed", err)
		}
	case <-ctx.Done():
		t.Fatal("Run did not return after the client closed")
	}
	closed.Store(1)
	stat(t)(w.Set(ctx, "/job/n", []byte("1"), reg.AnyVersion))
	// A view tracked now is never loaded, and the first one stays quiet.
	v2 := sc.Track("/job", func(reg.TreeEvent) { late.Add(1) })
	v2.Close()
	if late.Load() != 0 {
		t.Fatal("events after Run returned")
	}
}

// callLog records the requests made through a client.
type callLog struct{ regcount.Recorder }

// wrap returns c counted into l.
func (l *callLog) wrap(c reg.Client) reg.Client {
	return regcount.New(c, regcount.WithObserver(l.Observe))
}

// testSharedUntracked changes nodes no view holds, many times: the cache
// makes no request for them (counted with regcount). In the recursive mode
// the whole cache holds one recursive watch and no one-shot watch.
func (s *suite) testSharedUntracked(t *testing.T) {
	ctx := ctxFor(t)
	ns := namespace(t)
	c := s.client(t, ns)
	w := s.client(t, ns)
	const jobs = 3
	for j := range jobs {
		jobTree(t, w, fmt.Sprintf("/job%d", j))
		jobTree(t, w, fmt.Sprintf("/other%d", j))
	}
	calls := &callLog{}
	sc := s.newShared(calls.wrap(c))
	views := make([]*reg.CacheView, jobs)
	for j := range jobs {
		views[j] = sc.Track(fmt.Sprintf("/job%d", j), nil)
		t.Cleanup(views[j].Close)
	}
	runShared(t, sc)
	for _, v := range views {
		<-v.Initialized()
	}
	loading := calls.Take()
	recursive := slices.ContainsFunc(loading, func(c regcount.Call) bool { return c.Method == "WatchRecursive" })
	for _, c := range loading {
		if recursive && c.Kind == regcount.Watch && c.Method != "WatchRecursive" {
			t.Errorf("one-shot watch %s %s in the recursive mode", c.Method, c.Path)
		}
		if strings.HasPrefix(c.Path, "/other") {
			t.Errorf("loading read an untracked path: %+v", c)
		}
	}
	t.Logf("recursive mode: %v", recursive)
	if s.tree == kindSharedFallback && recursive {
		t.Fatal("the fallback armed a recursive watch")
	}
	for i := range 20 {
		for j := range jobs {
			root := fmt.Sprintf("/other%d", j)
			stat(t)(w.Set(ctx, root+"/config", fmt.Appendf(nil, "%d", i), reg.AnyVersion))
			str(t)(w.Create(ctx, root+"/sharding/0/running", nil, reg.Ephemeral))
			noErr(t, w.Delete(ctx, root+"/sharding/0/running", reg.AnyVersion))
		}
	}
	// A change of a tracked node after them: once the view has it, the
	// cache has handled the untracked notifications before it.
	stat(t)(w.Set(ctx, "/job0/config", []byte("barrier"), reg.AnyVersion))
	s.eventually(t, "the tracked change", func() bool {
		d, _, ok := views[0].Get("/job0/config")
		return ok && string(d) == "barrier"
	})
	after := calls.Take()
	ops := 0
	for _, c := range after {
		ops += c.Ops
		if c.Path != "/job0/config" {
			t.Errorf("request for another path than the tracked change's: %+v", c)
		}
	}
	if ops > 1 {
		t.Errorf("%d reads for one tracked change among %d untracked ones: %+v", ops, 60, after)
	}
}

// testTreeRecreate deletes and re-creates a node with a child in one
// transaction (the cache cannot see them absent): the old incarnation is
// reported deleted, then the new one added, never as an update.
func (s *suite) testTreeRecreate(t *testing.T) {
	ctx := ctxFor(t)
	ns := namespace(t)
	c := s.client(t, ns)
	w := s.client(t, ns)
	str(t)(w.Create(ctx, "/job/x/c", []byte("old"), reg.Persistent, reg.WithParents()))
	r := s.startTree(t, c, "/job")
	<-r.tc.Initialized()
	s.eventually(t, "initialized event", func() bool { return r.has(reg.TreeInitialized, "", "") })
	_, err := w.Multi(ctx,
		reg.DeleteOp("/job/x/c", reg.AnyVersion), reg.DeleteOp("/job/x", reg.AnyVersion),
		reg.CreateOp("/job/x", []byte("new"), reg.Persistent), reg.CreateOp("/job/x/c", []byte("new"), reg.Persistent))
	noErr(t, err)
	s.eventually(t, "the new incarnation", func() bool {
		tree, err := replay(r.events())
		noErr(t, err)
		return r.has(reg.NodeAdded, "/job/x", "new") && tree["/job/x/c"] == "new"
	})
	// x's events: deleted, then added with the new data (a TreeCache may
	// also see the new child under the old x first: the events of x/c then
	// include more, but still replay to the registry's state).
	var got []string
	initialized := false
	for _, ev := range r.events() {
		if initialized && ev.Path == "/job/x" {
			got = append(got, fmt.Sprintf("%v %s=%s", ev.Type, ev.Path, ev.Data))
		}
		initialized = initialized || ev.Type == reg.TreeInitialized
	}
	want := []string{"deleted /job/x=", "added /job/x=new"}
	if !slices.Equal(got, want) {
		t.Fatalf("events after a re-creation:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// testSharedTrackDisconnected tracks a subtree while the cache's connection
// is down: its load fails and is retried, and it completes once the client
// is back, as does a change made meanwhile in another tracked subtree.
func (s *suite) testSharedTrackDisconnected(t *testing.T) {
	if s.h.Disconnect == nil {
		t.Skip("harness cannot drop connections")
	}
	ctx := ctxFor(t)
	ns := namespace(t)
	c := s.client(t, ns)
	w := s.client(t, ns)
	jobTree(t, w, "/job1")
	jobTree(t, w, "/job2")
	v1 := s.track(t, c, "/job1", nil)
	<-v1.Initialized()
	reconnect := s.disconnect(t, c)
	rec := &recorder{}
	v2 := s.track(t, c, "/job2", rec.record)
	stat(t)(w.Set(ctx, "/job1/config", []byte("while away"), reg.AnyVersion))
	stat(t)(w.Set(ctx, "/job2/config", []byte("while away"), reg.AnyVersion))
	reconnect()
	select {
	case <-v2.Initialized():
	case <-ctx.Done():
		t.Fatal("a subtree tracked while disconnected never loaded")
	}
	s.eventuallySame(t, w, v1, "/job1")
	s.eventuallySame(t, w, v2, "/job2")
	s.eventuallyReplays(t, rec, v2, "/job2")
}

// testSharedLeavesNotListed: the paths WithLeaves names are read but never
// listed (counted with regcount).
func (s *suite) testSharedLeavesNotListed(t *testing.T) {
	ctx := ctxFor(t)
	ns := namespace(t)
	c := s.client(t, ns)
	str(t)(c.Create(ctx, "/job/leaf", []byte("l"), reg.Persistent, reg.WithParents()))
	str(t)(c.Create(ctx, "/job/inner/child", []byte("c"), reg.Persistent, reg.WithParents()))
	leaf := func(p string) bool { return p == "/job/leaf" || p == "/job/inner/child" }
	calls := &callLog{}
	sc := s.newShared(calls.wrap(c))
	v := sc.Track("/job", nil, reg.WithLeaves(leaf))
	t.Cleanup(v.Close)
	runShared(t, sc)
	<-v.Initialized()
	s.eventuallySame(t, c, v, "/job")
	loading := calls.Take()
	multiOps := 0
	for _, call := range loading {
		switch call.Method {
		case "MultiRead":
			multiOps += call.Ops
		case "Children", "ChildrenW":
			if leaf(call.Path) {
				t.Errorf("leaf %s listed", call.Path)
			}
		}
	}
	// The recursive mode reads all four nodes and lists the two others.
	if multiOps != 0 && multiOps != 6 {
		t.Errorf("%d reads to load 4 nodes of which 2 leaves, want 6 (4 gets, 2 listings): %+v", multiOps, loading)
	}
}

// testSharedChurnReconnects churns a subtree from another client while the
// cache's connection drops and comes back several times: the view ends as
// the registry's subtree, and its events replay to it.
func (s *suite) testSharedChurnReconnects(t *testing.T) {
	if s.h.Disconnect == nil {
		t.Skip("harness cannot drop connections")
	}
	ctx := ctxFor(t)
	ns := namespace(t)
	c := s.client(t, ns)
	w := s.client(t, ns)
	jobTree(t, w, "/job")
	rec := &recorder{}
	v := s.track(t, c, "/job", rec.record)
	<-v.Initialized()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	halt := sync.OnceFunc(func() {
		close(stop)
		wg.Wait()
	})
	t.Cleanup(halt)
	for g := range 3 {
		wg.Go(func() {
			p := fmt.Sprintf("/job/sharding/%d/running", g)
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				var err error
				switch i % 3 {
				case 0:
					_, err = w.Create(ctx, p, fmt.Appendf(nil, "%d", i), reg.Persistent, reg.WithParents())
				case 1:
					_, err = w.Set(ctx, p, fmt.Appendf(nil, "%d", i), reg.AnyVersion)
				case 2:
					err = w.Delete(ctx, p, reg.AnyVersion)
				}
				if err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	for range 3 {
		reconnect := s.disconnect(t, c)
		s.eventually(t, "changes while away", func() bool {
			_, st, err := w.Get(ctx, "/job/sharding/0")
			noErr(t, err)
			_, cst, _ := v.Get("/job/sharding/0")
			return st.Cversion > cst.Cversion+3
		})
		reconnect()
	}
	halt()
	s.eventuallySame(t, w, v, "/job")
	s.eventuallyReplays(t, rec, v, "/job")
}

// testSharedCounted: a view made WithCounted counts the cached nodes its
// func picks (here the items' "misfire" nodes) through creates, deletes,
// a subtree's deletion, a re-creation and, where the harness can, a
// dropped connection; the count is always what a walk of the view finds
// once the view mirrors the registry. A fallback view does not count.
func (s *suite) testSharedCounted(t *testing.T) {
	ctx := ctxFor(t)
	ns := namespace(t)
	c := s.client(t, ns)
	w := s.client(t, ns)
	jobTree(t, w, "/job")
	str(t)(w.Create(ctx, "/job/sharding/0/misfire", nil, reg.Persistent))
	picked := func(p string) bool { return strings.HasSuffix(p, "/misfire") }
	v := s.track(t, c, "/job", nil, reg.WithCounted(picked))
	<-v.Initialized()
	want := func(n int) {
		t.Helper()
		s.eventuallySame(t, w, v, "/job")
		got, ok := v.Counted()
		if s.tree == kindSharedFallback {
			if ok {
				t.Fatalf("a fallback view counts (%d)", got)
			}
			return
		}
		walked := 0
		var walk func(p string)
		walk = func(p string) {
			if picked(p) {
				walked++
			}
			kids, _ := v.Children(p)
			for _, k := range kids {
				walk(p + "/" + k)
			}
		}
		walk("/job")
		if !ok || got != n || walked != n {
			t.Fatalf("Counted() = %d, %v; want %d (a walk of the view finds %d)", got, ok, n, walked)
		}
	}
	want(1)
	str(t)(w.Create(ctx, "/job/sharding/1/misfire", nil, reg.Persistent))
	str(t)(w.Create(ctx, "/job/sharding/2/misfire", nil, reg.Persistent, reg.WithParents()))
	want(3)
	noErr(t, w.Delete(ctx, "/job/sharding/0/misfire", reg.AnyVersion))
	want(2)
	noErr(t, reg.DeleteRecursive(ctx, w, "/job/sharding/2"))
	want(1)
	_, err := w.Multi(ctx, reg.DeleteOp("/job/sharding/1/misfire", reg.AnyVersion), reg.CreateOp("/job/sharding/1/misfire", []byte("again"), reg.Persistent))
	noErr(t, err)
	want(1)
	if s.h.Disconnect != nil {
		reconnect := s.disconnect(t, c)
		str(t)(w.Create(ctx, "/job/sharding/0/misfire", nil, reg.Persistent))
		noErr(t, w.Delete(ctx, "/job/sharding/1/misfire", reg.AnyVersion))
		str(t)(w.Create(ctx, "/job/sharding/3/misfire", nil, reg.Persistent, reg.WithParents()))
		reconnect()
		want(2)
	}
	noErr(t, reg.DeleteRecursive(ctx, w, "/job"))
	want(0)
}
