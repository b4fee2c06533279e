package embedded_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ejob-io/ejob/core/reg"
	"github.com/ejob-io/ejob/core/reg/embedded"
	"github.com/ejob-io/ejob/core/reg/regcount"
	"github.com/ejob-io/ejob/core/reg/regtest"
	"github.com/ejob-io/ejob/internal/testkit"
)

// connector connects clients of srv.
func connector(srv *embedded.Server) func(tb testing.TB, ns string) reg.Client {
	return func(tb testing.TB, ns string) reg.Client {
		c, err := srv.Connect(ns)
		if err != nil {
			tb.Fatal(err)
		}
		return c
	}
}

func TestSuite(t *testing.T) {
	regtest.Run(t, regtest.Harness{
		Connect:    connector(embedded.NewServer()),
		Disconnect: func(t testing.TB, c reg.Client) { c.(*embedded.Client).Suspend() },
		Reconnect:  func(t testing.TB, c reg.Client) { c.(*embedded.Client).Resume() },
		Wait:       5 * time.Second,
	})
}

// TestMain fails the binary if goroutines outlive the tests (clients closed,
// caches stopped, subscriptions ended).
func TestMain(m *testing.M) { testkit.Main(m) }

func BenchmarkSharedCache(b *testing.B) {
	regtest.BenchSharedCache(b, connector(embedded.NewServer()), 100, 1000, 10000)
}

// TestSharedData: the registry keeps the written slice and hands it to
// readers (reg.Client: data written and read is not modified in place),
// and nothing the contract allows changes a node: appending to the slice
// a read returned or to the written one (past its length), reading data
// while a set replaces it.
func TestSharedData(t *testing.T) {
	ctx := context.Background()
	c, err := embedded.NewServer().Connect("shared")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	buf := make([]byte, 0, 64)
	buf = append(buf, "value"...)
	if _, err := c.Create(ctx, "/n", buf, reg.Persistent); err != nil {
		t.Fatal(err)
	}
	_ = append(buf, "WRITER"...) // into buf's spare capacity, past the data written
	got, _, err := c.Get(ctx, "/n")
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != "value" || cap(got) != len(got) {
		t.Fatalf("get = %q, cap %d; want %q, cap %d", got, cap(got), "value", len("value"))
	}
	grown := append(got, "READER"...)
	rs, err := c.MultiRead(ctx, reg.GetOp("/n"))
	if err != nil {
		t.Fatal(err)
	}
	if again := rs[0].Data; string(again) != "value" || cap(again) != len(again) {
		t.Fatalf("after appends: multiread = %q, cap %d; want %q, cap %d", again, cap(again), "value", len("value"))
	}
	if string(grown) != "valueREADER" {
		t.Fatalf("reader's append = %q", grown)
	}
	if _, err := c.Set(ctx, "/n", []byte("new"), reg.AnyVersion); err != nil {
		t.Fatal(err)
	}
	if string(got) != "value" {
		t.Fatalf("a set changed data read before it: %q", got)
	}
	if now, _, err := c.Get(ctx, "/n"); err != nil || string(now) != "new" {
		t.Fatalf("after set: %q %v", now, err)
	}
	// Empty data reads back empty, not nil (never ZooKeeper's null).
	if _, err := c.Create(ctx, "/empty", make([]byte, 0, 8), reg.Persistent); err != nil {
		t.Fatal(err)
	}
	if e, _, err := c.Get(ctx, "/empty"); err != nil || e == nil || len(e) != 0 {
		t.Fatalf("empty node = %#v %v", e, err)
	}
}

// twoClients connects a writer and a reader of ns on a new server, closed
// when the test ends.
func twoClients(t *testing.T, ns string) (w, c *embedded.Client) {
	t.Helper()
	srv := embedded.NewServer()
	for _, p := range []**embedded.Client{&w, &c} {
		cl, err := srv.Connect(ns)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cl.Close() })
		*p = cl
	}
	return w, c
}

// eventLog records a view's events, from its cache's goroutine.
type eventLog struct {
	mu  sync.Mutex
	evs []string
}

func (l *eventLog) add(ev string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.evs = append(l.evs, ev)
}

// wait waits (5 s at most) until the log holds as many events as want,
// and fails the test unless they are want.
func (l *eventLog) wait(t *testing.T, want []string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		l.mu.Lock()
		got := slices.Clone(l.evs)
		l.mu.Unlock()
		if len(got) >= len(want) || time.Now().After(deadline) {
			if !slices.Equal(got, want) {
				t.Fatalf("events %q, want %q", got, want)
			}
			return
		}
		time.Sleep(time.Millisecond) // polling an observable log, with a deadline
	}
}

// must fails the test on err.
func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestSharedCacheAppliesKnownEvents: over the embedded registry, whose
// recursive watch events carry their nodes (reg.WatchEvent.Known), a
// SharedCache follows the creates, changes and deletes below a loaded
// subtree without reading anything back: an event for every change (reads
// back coalesce the changes made before they answer: here all but the
// set), and the data and stats a read shows.
func TestSharedCacheAppliesKnownEvents(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w, c := twoClients(t, "known")
	_, err := w.Create(ctx, "/j", nil, reg.Persistent)
	must(t, err)
	_, err = w.Create(ctx, "/j/a", []byte("1"), reg.Persistent)
	must(t, err)
	rc := regcount.New(c)
	sc := reg.NewSharedCache(rc)
	var log eventLog
	v := sc.Track("/j", func(ev reg.TreeEvent) {
		if ev.Type != reg.TreeInitialized {
			log.add(fmt.Sprintf("%v %s %q", ev.Type, ev.Path, ev.Data))
		}
	}, reg.WithoutInitialEvents())
	done := make(chan error, 1)
	go func() { done <- sc.Run(ctx) }()
	defer func() { cancel(); <-done }()
	<-v.Initialized()
	before := rc.Counts()

	_, err = w.Create(ctx, "/j/b", []byte("x"), reg.Persistent)
	must(t, err)
	_, err = w.Set(ctx, "/j/a", []byte("2"), reg.AnyVersion)
	must(t, err)
	_, err = w.Multi(ctx, reg.CreateOp("/j/c", nil, reg.Ephemeral), reg.DeleteOp("/j/b", reg.AnyVersion))
	must(t, err)
	_, err = w.Create(ctx, "/j/c/d", []byte("y"), reg.Persistent)
	if err == nil {
		t.Fatal("an ephemeral node took a child")
	}
	must(t, w.Delete(ctx, "/j/c", reg.AnyVersion))
	log.wait(t, []string{
		`added /j/b "x"`,
		`updated /j/a "2"`,
		`added /j/c ""`,
		`deleted /j/b "x"`,
		`deleted /j/c ""`,
	})
	if d := rc.Counts().Sub(before); d.Reads != 0 {
		t.Errorf("the cache read %d times to follow the changes; want none (the events carry the nodes)", d.Reads)
	}
	data, st, ok := v.Get("/j/a")
	_, wst, err := w.Get(ctx, "/j/a")
	must(t, err)
	if !ok || string(data) != "2" || st != wst {
		t.Errorf("cached /j/a: %q %+v %v; the registry has \"2\" %+v", data, st, ok, wst)
	}
	if kids, _ := v.Children("/j"); !slices.Equal(kids, []string{"a"}) {
		t.Errorf("cached children of /j: %v, want [a]", kids)
	}
}

// TestZxidsIncreaseAcrossServers: a server started after another (a
// standalone host restarted) gives zxids above every one the earlier
// server gave, so fencing tokens keep increasing across the restart.
func TestZxidsIncreaseAcrossServers(t *testing.T) {
	ctx := context.Background()
	create := func(srv *embedded.Server, n int) (first, last int64) {
		c, err := srv.Connect("ns")
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		for i := range n {
			res, err := c.Multi(ctx, reg.CreateOp(fmt.Sprintf("/n%d", i), nil, reg.Persistent))
			if err != nil {
				t.Fatal(err)
			}
			if i == 0 {
				first = res[0].Czxid
			}
			last = res[0].Czxid
		}
		return first, last
	}
	_, before := create(embedded.NewServer(), 1000)
	after, _ := create(embedded.NewServer(), 1)
	if after <= before {
		t.Fatalf("the later server's first zxid %d is not above the earlier server's last %d", after, before)
	}
	// The clock sets where a server's zxids start.
	at := time.UnixMicro(5_000_000)
	first, _ := create(embedded.NewServer(embedded.WithClock(func() time.Time { return at })), 1)
	if first <= 5_000_000 || first > 5_000_010 {
		t.Fatalf("first zxid of a server started at %v = %d, want just above 5000000", at, first)
	}
}

// TestManyChildren: a node with thousands of children (a namespace's
// jobs, which the server holds in sorted chunks past a few hundred) lists
// them sorted, finds each, counts them in its stat and cversion, and is
// deletable once they are gone, whatever the order of the creates and
// deletes.
func TestManyChildren(t *testing.T) {
	c, err := embedded.NewServer().Connect("many")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	if _, err := c.Create(ctx, "/p", nil, reg.Persistent); err != nil {
		t.Fatal(err)
	}
	const n = 3000
	names := make([]string, n)
	for i := range n {
		names[i] = fmt.Sprintf("k-%d", (i*7919)%n) // every name once, out of order
	}
	want := map[string]bool{}
	check := func(step string) {
		t.Helper()
		kids, err := c.Children(ctx, "/p")
		if err != nil {
			t.Fatal(err)
		}
		sorted := slices.Sorted(func(yield func(string) bool) {
			for k := range want {
				if !yield(k) {
					return
				}
			}
		})
		if !slices.Equal(kids, sorted) {
			t.Fatalf("%s: %d children listed, want %d (sorted, equal)", step, len(kids), len(sorted))
		}
		if _, st, err := c.Get(ctx, "/p"); err != nil || int(st.NumChildren) != len(want) {
			t.Fatalf("%s: stat %+v, %v; want %d children", step, st, err, len(want))
		}
	}
	for i, name := range names {
		if _, err := c.Create(ctx, "/p/"+name, []byte(name), reg.Persistent); err != nil {
			t.Fatal(err)
		}
		want[name] = true
		if i%500 == 0 {
			check(fmt.Sprintf("after %d creates", i+1))
		}
	}
	check("created")
	if _, err := c.Create(ctx, "/p/"+names[17], nil, reg.Persistent); !errors.Is(err, reg.ErrNodeExists) {
		t.Fatalf("create of an existing child: %v, want ErrNodeExists", err)
	}
	for _, name := range names {
		if data, _, err := c.Get(ctx, "/p/"+name); err != nil || string(data) != name {
			t.Fatalf("get %s = %q, %v", name, data, err)
		}
	}
	// Delete every other one from the end, then the rest from the start.
	for i := len(names) - 1; i >= 0; i -= 2 {
		if err := c.Delete(ctx, "/p/"+names[i], reg.AnyVersion); err != nil {
			t.Fatal(err)
		}
		delete(want, names[i])
	}
	check("half deleted")
	if err := c.Delete(ctx, "/p", reg.AnyVersion); !errors.Is(err, reg.ErrNotEmpty) {
		t.Fatalf("delete of /p with children: %v, want ErrNotEmpty", err)
	}
	for i := 0; i < len(names); i++ {
		if !want[names[i]] {
			continue
		}
		if err := c.Delete(ctx, "/p/"+names[i], reg.AnyVersion); err != nil {
			t.Fatal(err)
		}
		delete(want, names[i])
	}
	check("all deleted")
	if _, st, err := c.Get(ctx, "/p"); err != nil || st.Cversion != 2*n {
		t.Fatalf("stat of /p after %d creates and deletes: %+v, %v; want cversion %d", n, st, err, 2*n)
	}
	if _, err := c.Create(ctx, "/p/again", nil, reg.Persistent); err != nil {
		t.Fatal(err)
	}
	want["again"] = true
	check("re-created")
	if err := c.Delete(ctx, "/p/again", reg.AnyVersion); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(ctx, "/p", reg.AnyVersion); err != nil {
		t.Fatal(err)
	}
}

// TestSharedCacheReadsInPlace: over the embedded registry (a
// reg.StoreWatcher) a SharedCache loads a subtree and answers its reads
// from the registry's own tree: no read request for the load, and the
// view shows what the registry has. A suspension gives the view a copy of
// its subtree as it was, and the resync after Resume reports what changed
// meanwhile from that copy (it reads then, as on any registry).
func TestSharedCacheReadsInPlace(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w, c := twoClients(t, "inplace")
	for _, p := range []string{"/j", "/j/a", "/j/a/x", "/j/b"} {
		_, err := w.Create(ctx, p, []byte(p), reg.Persistent)
		must(t, err)
	}
	rc := regcount.New(c)
	sc := reg.NewSharedCache(rc)
	var log eventLog
	done := make(chan error, 1)
	go func() { done <- sc.Run(ctx) }()
	defer func() { cancel(); <-done }()
	before := rc.Counts()
	v := sc.Track("/j", func(ev reg.TreeEvent) { log.add(fmt.Sprintf("%v %s", ev.Type, ev.Path)) })
	<-v.Initialized()
	if d := rc.Counts().Sub(before); d.Reads != 0 {
		t.Errorf("the load read %d times; want none (the cache reads the registry's tree)", d.Reads)
	}
	log.wait(t, []string{"added /j", "added /j/a", "added /j/a/x", "added /j/b", "initialized "})
	_, err := w.Set(ctx, "/j/b", []byte("2"), reg.AnyVersion)
	must(t, err)
	if data, st, ok := v.Get("/j/b"); !ok || string(data) != "2" || st.Version != 1 {
		t.Errorf("cached /j/b: %q version %d %v; want \"2\" version 1", data, st.Version, ok)
	}
	if kids, ok := v.Children("/j"); !ok || !slices.Equal(kids, []string{"a", "b"}) {
		t.Errorf("cached children of /j: %v %v, want [a b]", kids, ok)
	}

	c.Suspend()
	must(t, w.Delete(ctx, "/j/a/x", reg.AnyVersion))
	_, err = w.Create(ctx, "/j/c", nil, reg.Persistent)
	must(t, err)
	if _, _, ok := v.Get("/j/a/x"); !ok {
		t.Error("while suspended the view no longer shows /j/a/x: it reads the registry, not its copy")
	}
	atResume := rc.Counts()
	c.Resume()
	log.wait(t, []string{"added /j", "added /j/a", "added /j/a/x", "added /j/b", "initialized ",
		"updated /j/b", "deleted /j/a/x", "added /j/c"})
	if d := rc.Counts().Sub(atResume); d.Reads == 0 {
		t.Error("the resync read nothing: the view did not follow its copy")
	}
	if kids, ok := v.Children("/j"); !ok || !slices.Equal(kids, []string{"a", "b", "c"}) {
		t.Errorf("cached children of /j after the resync: %v %v, want [a b c]", kids, ok)
	}
}

// TestSessionEndFindsItsEphemerals: a session that ends deletes exactly
// the ephemeral nodes it owns then, wherever they are in the tree (the
// server counts them and finds them by a walk): not those a failed
// transaction created and undid, not one deleted (by another session
// too), one whose deletion a failed transaction undid, and never another
// session's.
func TestSessionEndFindsItsEphemerals(t *testing.T) {
	srv := embedded.NewServer()
	ctx := context.Background()
	connect := func() reg.Client {
		c, err := srv.Connect("")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	a, b := connect(), connect()
	must := func(_ string, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(a.Create(ctx, "/a/b/deep", nil, reg.Ephemeral, reg.WithParents()))
	must(a.Create(ctx, "/a/kept", nil, reg.Ephemeral))
	must(a.Create(ctx, "/a/gone", nil, reg.Ephemeral))
	must(a.Create(ctx, "/z", nil, reg.Ephemeral))
	must(b.Create(ctx, "/a/other", nil, reg.Ephemeral))
	must(b.Create(ctx, "/a/theirs", nil, reg.Ephemeral))
	// Undone: a's create of /a/undone, a's delete of /z.
	if _, err := a.Multi(ctx, reg.CreateOp("/a/undone", nil, reg.Ephemeral), reg.DeleteOp("/z", reg.AnyVersion),
		reg.CheckOp("/nowhere", reg.AnyVersion)); err == nil {
		t.Fatal("a transaction with a failing check committed")
	}
	if err := a.Delete(ctx, "/a/gone", reg.AnyVersion); err != nil {
		t.Fatal(err)
	}
	// b deletes one of a's, a one of b's.
	if err := b.Delete(ctx, "/a/b/deep", reg.AnyVersion); err != nil {
		t.Fatal(err)
	}
	if err := a.Delete(ctx, "/a/theirs", reg.AnyVersion); err != nil {
		t.Fatal(err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	exists := func(p string) bool {
		t.Helper()
		_, ok, err := b.Exists(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	for _, p := range []string{"/a/kept", "/z", "/a/undone", "/a/gone", "/a/b/deep", "/a/theirs"} {
		if exists(p) {
			t.Errorf("%s exists after its session ended", p)
		}
	}
	for _, p := range []string{"/a/other", "/a/b"} {
		if !exists(p) {
			t.Errorf("%s is gone with the other session", p)
		}
	}
	must(b.Create(ctx, "/a/later", nil, reg.Ephemeral))
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	c := connect()
	for _, p := range []string{"/a/other", "/a/later"} {
		if _, ok, err := c.Exists(ctx, p); err != nil || ok {
			t.Errorf("%s after its session ended: exists %v, %v", p, ok, err)
		}
	}
}

// TestLookupsAfterChildrenChange: in a node with many children (whose
// lookups the server remembers), a read finds what the tree holds now:
// a child deleted is gone, one created again is the new node, a
// transaction rolled back leaves the old one, one committed the new one,
// and a delete and a create in one transaction are both seen.
func TestLookupsAfterChildrenChange(t *testing.T) {
	c, err := embedded.NewServer().Connect("memo")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	const n = 40
	for i := range n {
		if _, err := c.Create(ctx, fmt.Sprintf("/p/c-%d", i), []byte(fmt.Sprintf("v1-%d", i)), reg.Persistent, reg.WithParents()); err != nil {
			t.Fatal(err)
		}
	}
	get := func(i int) string {
		t.Helper()
		data, _, err := c.Get(ctx, fmt.Sprintf("/p/c-%d", i))
		if errors.Is(err, reg.ErrNoNode) {
			return "none"
		}
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	for i := range n {
		if got, want := get(i), fmt.Sprintf("v1-%d", i); got != want {
			t.Fatalf("c-%d = %q, want %q", i, got, want)
		}
	}
	if err := c.Delete(ctx, "/p/c-5", reg.AnyVersion); err != nil {
		t.Fatal(err)
	}
	if got := get(5); got != "none" {
		t.Fatalf("deleted c-5 read %q", got)
	}
	if _, err := c.Create(ctx, "/p/c-5", []byte("v2"), reg.Persistent); err != nil {
		t.Fatal(err)
	}
	if got := get(5); got != "v2" {
		t.Fatalf("re-created c-5 read %q, want v2", got)
	}
	get(7)
	if _, err := c.Multi(ctx, reg.DeleteOp("/p/c-7", reg.AnyVersion), reg.CreateOp("/p/c-7", []byte("v3"), reg.Persistent),
		reg.CheckOp("/nowhere", reg.AnyVersion)); err == nil {
		t.Fatal("a transaction with a failing check committed")
	}
	if got := get(7); got != "v1-7" {
		t.Fatalf("c-7 after a rolled-back replacement read %q, want v1-7", got)
	}
	if _, err := c.Multi(ctx, reg.DeleteOp("/p/c-8", reg.AnyVersion), reg.CreateOp("/p/c-8", []byte("v4"), reg.Persistent)); err != nil {
		t.Fatal(err)
	}
	if got := get(8); got != "v4" {
		t.Fatalf("c-8 after a committed replacement read %q, want v4", got)
	}
	get(9)
	if _, err := c.Multi(ctx, reg.DeleteOp("/p/c-9", reg.AnyVersion), reg.CreateOp("/p/d-9", nil, reg.Persistent)); err != nil {
		t.Fatal(err)
	}
	if got := get(9); got != "none" {
		t.Fatalf("c-9, deleted as d-9 was created, read %q", got)
	}
}
