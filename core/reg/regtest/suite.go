package regtest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ejob-io/ejob/core/reg"
	"github.com/ejob-io/ejob/core/reg/recipe"
)

// Harness adapts an implementation to the suite.
type Harness struct {
	// Connect returns a new client (one simulated instance) of the shared
	// backend under namespace; the suite closes it (closing twice is fine).
	// Clients must implement reg.Expirer.
	Connect func(t testing.TB, namespace string) reg.Client
	// Disconnect drops c's connection without ending its session, and
	// Reconnect lets it back (nil Reconnect: it reconnects by itself). Nil
	// Disconnect skips the suspension test.
	Disconnect func(t testing.TB, c reg.Client)
	Reconnect  func(t testing.TB, c reg.Client)
	// Wait bounds every poll for an observable state (default 10 s).
	Wait time.Duration
}

type suite struct {
	h    Harness
	tree treeKind // what the TreeCache tests mirror subtrees with
	// inline: the Recursive tests arm their watches with
	// WatchRecursiveInline (reg.InlineRecursiveWatcher).
	inline bool
	// shared holds the SharedCache of each client of the running test
	// (tree kinds other than kindTreeCache).
	shared sharedFor
}

// Run runs the whole suite as subtests of t.
func Run(t *testing.T, h Harness) {
	if h.Wait == 0 {
		h.Wait = 10 * time.Second
	}
	s := &suite{h: h}
	tests := map[string]func(t *testing.T){
		"CRUD":                  s.testCRUD,
		"Namespace":             s.testNamespace,
		"Versions":              s.testVersions,
		"Sequential":            s.testSequential,
		"Ephemeral":             s.testEphemeral,
		"EphemeralClose":        s.testEphemeralClose,
		"SessionExpiry":         s.testSessionExpiry,
		"Suspension":            s.testSuspension,
		"Parents":               s.testParents,
		"EmptyNotNull":          s.testEmptyNotNull,
		"Containers":            s.testContainers,
		"MultiSuccess":          s.testMultiSuccess,
		"MultiAtomic":           s.testMultiAtomic,
		"MultiContainer":        s.testMultiContainer,
		"MultiCreateZxid":       s.testMultiCreateZxid,
		"MultiRead":             s.testMultiRead,
		"MultiReadLarge":        s.testMultiReadLarge,
		"MultiReadReconnect":    s.testMultiReadReconnect,
		"Watches":               s.testWatches,
		"Upstream/Query":        s.testUpstreamQuery,
		"Upstream/Modify":       s.testUpstreamModify,
		"Upstream/Time":         s.testUpstreamTime,
		"Upstream/Watch":        s.testUpstreamWatch,
		"Upstream/InLeader":     s.testExecuteInLeader,
		"LatchNodeFormat":       s.testLatchFormat,
		"LatchHandover":         s.testLatchHandover,
		"LatchCancel":           s.testLatchCancel,
		"ElectLeader":           func(t *testing.T) { s.testElect(t, recipe.Elect) },
		"ElectLeaderVacant":     func(t *testing.T) { s.testElect(t, recipe.ElectVacant) },
		"FencedWrite":           s.testFenced,
		"FencedWriteOnLeaderNS": s.testFencedLeaderNode,
	}
	for _, k := range []struct {
		name string
		kind treeKind
	}{{"SharedCache", kindShared}, {"SharedCacheFallback", kindSharedFallback}} {
		ks := &suite{h: h, tree: k.kind}
		for name, f := range ks.treeTests() {
			tests[k.name+"/"+name] = f
		}
	}
	for name, f := range s.treeTests() {
		tests["TreeCache"+name] = f
	}
	for n, f := range s.recursiveTests() {
		tests[n] = f
	}
	is := &suite{h: h, inline: true}
	for n, f := range is.recursiveTests() {
		if n == "Recursive/FnHoldsNoLock" {
			continue // an inline fn runs under the registry's lock by design
		}
		tests["Inline"+n] = f
	}
	tests["InlineRecursive/BeforeTheWriteReturns"] = is.testInlineBeforeReturn
	names := make([]string, 0, len(tests))
	for n := range tests {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		t.Run(n, tests[n])
	}
}

// client connects a client in namespace and closes it at the end of t.
func (s *suite) client(t *testing.T, ns string) reg.Client {
	t.Helper()
	c := s.h.Connect(t, ns)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// namespace returns a namespace unique to t.
func namespace(t *testing.T) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	n := strings.NewReplacer("/", "-", " ", "_").Replace(t.Name())
	return "regtest-" + n + "-" + hex.EncodeToString(b[:])
}

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func str(t *testing.T) func(string, error) string {
	return func(v string, err error) string {
		t.Helper()
		noErr(t, err)
		return v
	}
}

func stat(t *testing.T) func(reg.Stat, error) reg.Stat {
	return func(v reg.Stat, err error) reg.Stat {
		t.Helper()
		noErr(t, err)
		return v
	}
}

func names(t *testing.T) func([]string, error) []string {
	return func(v []string, err error) []string {
		t.Helper()
		noErr(t, err)
		return v
	}
}

func noErr(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func wantErr(t *testing.T, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("error = %v, want %v", err, want)
	}
}

// eventually polls cond every 10 ms until it holds or the harness's wait ends.
func (s *suite) eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(s.h.Wait)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", s.h.Wait, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (s *suite) exists(t *testing.T, c reg.Client, path string) bool {
	t.Helper()
	_, ok, err := c.Exists(ctxFor(t), path)
	noErr(t, err)
	return ok
}

// nextConn waits for the next connection event with the wanted state.
func (s *suite) nextConn(t *testing.T, ch <-chan reg.ConnEvent, want reg.ConnState) reg.ConnEvent {
	t.Helper()
	timer := time.NewTimer(s.h.Wait)
	defer timer.Stop()
	for {
		select {
		case ev, ok := <-ch:
			if !ok {
				t.Fatalf("connection events closed while waiting for %v", want)
			}
			if ev.State == want {
				return ev
			}
		case <-timer.C:
			t.Fatalf("no %v connection event within %v", want, s.h.Wait)
		}
	}
}

func sorted(in []string) []string {
	out := slices.Clone(in)
	sort.Strings(out)
	return out
}

func (s *suite) testCRUD(t *testing.T) {
	ctx := ctxFor(t)
	c := s.client(t, namespace(t))
	p := str(t)(c.Create(ctx, "/a", []byte("1"), reg.Persistent))
	if p != "/a" {
		t.Fatalf("created path %q", p)
	}
	_, err := c.Create(ctx, "/a", nil, reg.Persistent)
	wantErr(t, err, reg.ErrNodeExists)
	_, err = c.Create(ctx, "/missing/child", nil, reg.Persistent)
	wantErr(t, err, reg.ErrNoNode)
	data, st, err := c.Get(ctx, "/a")
	noErr(t, err)
	if string(data) != "1" || st.Version != 0 || st.DataLength != 1 {
		t.Fatalf("get = %q %+v", data, st)
	}
	_, _, err = c.Get(ctx, "/none")
	wantErr(t, err, reg.ErrNoNode)
	var oe *reg.OpError
	if !errors.As(err, &oe) || oe.Op != "get" || oe.Path != "/none" {
		t.Fatalf("error %v is not an OpError naming get /none", err)
	}
	if _, ok, err := c.Exists(ctx, "/none"); ok || err != nil {
		t.Fatalf("exists(/none) = %v, %v", ok, err)
	}
	st = stat(t)(c.Set(ctx, "/a", []byte("2"), 0))
	if st.Version != 1 {
		t.Fatalf("version after set = %d", st.Version)
	}
	_, err = c.Set(ctx, "/a", []byte("3"), 0)
	wantErr(t, err, reg.ErrBadVersion)
	_ = stat(t)(c.Set(ctx, "/a", []byte("3"), reg.AnyVersion))
	_, err = c.Set(ctx, "/none", nil, reg.AnyVersion)
	wantErr(t, err, reg.ErrNoNode)
	str(t)(c.Create(ctx, "/a/b", nil, reg.Persistent))
	str(t)(c.Create(ctx, "/a/c", []byte{}, reg.Persistent))
	names := names(t)(c.Children(ctx, "/a"))
	if got := sorted(names); !slices.Equal(got, []string{"b", "c"}) {
		t.Fatalf("children = %v", names)
	}
	_, err = c.Children(ctx, "/none")
	wantErr(t, err, reg.ErrNoNode)
	wantErr(t, c.Delete(ctx, "/a", reg.AnyVersion), reg.ErrNotEmpty)
	wantErr(t, c.Delete(ctx, "/a/b", 7), reg.ErrBadVersion)
	noErr(t, c.Delete(ctx, "/a/b", 0))
	wantErr(t, c.Delete(ctx, "/a/b", reg.AnyVersion), reg.ErrNoNode)
	noErr(t, reg.DeleteRecursive(ctx, c, "/a"))
	if s.exists(t, c, "/a") {
		t.Fatal("/a survived DeleteRecursive")
	}
	noErr(t, reg.DeleteRecursive(ctx, c, "/a")) // missing is fine
	for _, bad := range []string{"", "a", "/a/", "//a", "/a/./b", "/a/../b"} {
		_, err := c.Create(ctx, bad, nil, reg.Persistent)
		wantErr(t, err, reg.ErrInvalidArgument)
	}
	_, err = c.Create(ctx, "/x", nil, reg.CreateMode(99))
	wantErr(t, err, reg.ErrInvalidArgument)
	// The namespace root is "/".
	if _, ok, err := c.Exists(ctx, "/"); !ok || err != nil {
		t.Fatalf("namespace root: %v %v", ok, err)
	}
	// Data round-trips byte for byte, empty stays empty.
	bin := []byte{0, 1, 2, 255}
	str(t)(c.Create(ctx, "/bin", bin, reg.Persistent))
	if got, _ := must2(t)(c.Get(ctx, "/bin")); !slices.Equal(got, bin) {
		t.Fatalf("binary data = %v", got)
	}
	if got, _ := must2(t)(c.Get(ctx, "/a")); got != nil && len(got) != 0 {
		t.Fatalf("deleted node data %v", got)
	}
}

func must2(t *testing.T) func([]byte, reg.Stat, error) ([]byte, reg.Stat) {
	return func(b []byte, st reg.Stat, err error) ([]byte, reg.Stat) {
		t.Helper()
		if err != nil && !errors.Is(err, reg.ErrNoNode) {
			t.Fatal(err)
		}
		return b, st
	}
}

func (s *suite) testNamespace(t *testing.T) {
	ctx := ctxFor(t)
	ns := namespace(t)
	a := s.client(t, ns+"/inner")
	root := s.client(t, ns)
	if a.Namespace() != ns+"/inner" {
		t.Fatalf("Namespace() = %q", a.Namespace())
	}
	str(t)(a.Create(ctx, "/x", []byte("v"), reg.Persistent))
	data, _, err := root.Get(ctx, "/inner/x")
	noErr(t, err)
	if string(data) != "v" {
		t.Fatalf("data through the outer namespace = %q", data)
	}
	p := str(t)(a.Create(ctx, "/x/s-", nil, reg.PersistentSequential))
	if !strings.HasPrefix(p, "/x/s-") {
		t.Fatalf("sequential path %q is not namespace-relative", p)
	}
	ch := func() <-chan reg.WatchEvent {
		_, _, ch, err := a.GetW(ctx, "/x")
		noErr(t, err)
		return ch
	}()
	stat(t)(root.Set(ctx, "/inner/x", nil, reg.AnyVersion))
	ev := <-ch
	if ev.Path != "/x" || ev.Type != reg.EventNodeDataChanged {
		t.Fatalf("watch event %+v", ev)
	}
}

func (s *suite) testVersions(t *testing.T) {
	ctx := ctxFor(t)
	c := s.client(t, namespace(t))
	before := time.Now().Add(-5 * time.Second)
	str(t)(c.Create(ctx, "/v", []byte("x"), reg.Persistent))
	_, st0, err := c.Get(ctx, "/v")
	noErr(t, err)
	if st0.Ctime != st0.Mtime || st0.Czxid != st0.Mzxid || st0.CreateTime().Before(before) || st0.EphemeralOwner != 0 {
		t.Fatalf("fresh stat %+v", st0)
	}
	st1 := stat(t)(c.Set(ctx, "/v", []byte("yy"), reg.AnyVersion))
	if st1.Version != 1 || st1.Mzxid <= st0.Mzxid || st1.Czxid != st0.Czxid || st1.Mtime < st0.Mtime || st1.DataLength != 2 {
		t.Fatalf("stat after set %+v (before %+v)", st1, st0)
	}
	str(t)(c.Create(ctx, "/v/a", nil, reg.Persistent))
	str(t)(c.Create(ctx, "/v/b", nil, reg.Persistent))
	noErr(t, c.Delete(ctx, "/v/a", reg.AnyVersion))
	_, st2, err := c.Get(ctx, "/v")
	noErr(t, err)
	if st2.Cversion != 3 || st2.NumChildren != 1 || st2.Version != 1 || st2.Pzxid <= st1.Mzxid {
		t.Fatalf("parent stat after child changes %+v", st2)
	}
	st3, ok, err := c.Exists(ctx, "/v")
	if !ok || err != nil || st3 != st2 {
		t.Fatalf("exists stat %+v != get stat %+v (%v)", st3, st2, err)
	}
}

func (s *suite) testSequential(t *testing.T) {
	ctx := ctxFor(t)
	c := s.client(t, namespace(t))
	str(t)(c.Create(ctx, "/q", nil, reg.Persistent))
	p0 := str(t)(c.Create(ctx, "/q/n-", []byte("0"), reg.PersistentSequential))
	p1 := str(t)(c.Create(ctx, "/q/n-", []byte("1"), reg.PersistentSequential))
	if p0 != "/q/n-0000000000" || p1 != "/q/n-0000000001" {
		t.Fatalf("sequential names %q %q", p0, p1)
	}
	// The counter counts the parent's child creates (any name, deleted or
	// not); deletes do not advance it though they count in cversion.
	str(t)(c.Create(ctx, "/q/plain", nil, reg.Persistent))
	noErr(t, c.Delete(ctx, "/q/plain", reg.AnyVersion))
	_, st, err := c.Get(ctx, "/q")
	noErr(t, err)
	if st.Cversion != 4 {
		t.Fatalf("cversion after 3 creates and a delete = %d", st.Cversion)
	}
	p3 := str(t)(c.Create(ctx, "/q/other", nil, reg.EphemeralSequential))
	if p3 != "/q/other0000000003" {
		t.Fatalf("ephemeral sequential name %q", p3)
	}
	p4 := str(t)(c.Create(ctx, "/q/", nil, reg.PersistentSequential))
	if p4 != "/q/0000000004" {
		t.Fatalf("bare sequential name %q", p4)
	}
	_, st, err = c.Get(ctx, p3)
	noErr(t, err)
	if st.EphemeralOwner != c.Session().ID() {
		t.Fatalf("ephemeral-sequential owner %x, session %x", st.EphemeralOwner, c.Session().ID())
	}
	// The server does not skip a name someone took: NodeExists.
	str(t)(c.Create(ctx, "/q/n-0000000006", nil, reg.Persistent))
	_, err = c.Create(ctx, "/q/n-", nil, reg.PersistentSequential)
	wantErr(t, err, reg.ErrNodeExists)
}

func (s *suite) testEphemeral(t *testing.T) {
	ctx := ctxFor(t)
	c := s.client(t, namespace(t))
	str(t)(c.Create(ctx, "/e", []byte("me"), reg.Ephemeral))
	_, st, err := c.Get(ctx, "/e")
	noErr(t, err)
	if st.EphemeralOwner == 0 || st.EphemeralOwner != c.Session().ID() {
		t.Fatalf("ephemeral owner %x, session %x", st.EphemeralOwner, c.Session().ID())
	}
	_, err = c.Create(ctx, "/e/child", nil, reg.Persistent)
	wantErr(t, err, reg.ErrNoChildrenForEphemerals)
	// Ephemeral nodes with persistent parents.
	str(t)(c.Create(ctx, "/p/q/e", nil, reg.Ephemeral, reg.WithParents()))
	_, st, err = c.Get(ctx, "/p/q")
	noErr(t, err)
	if st.EphemeralOwner != 0 {
		t.Fatalf("parent of an ephemeral is not persistent: %+v", st)
	}
}

func (s *suite) testEphemeralClose(t *testing.T) {
	ctx := ctxFor(t)
	ns := namespace(t)
	a := s.client(t, ns)
	b := s.client(t, ns)
	str(t)(a.Create(ctx, "/inst", nil, reg.Ephemeral))
	str(t)(a.Create(ctx, "/keep", nil, reg.Persistent))
	sess := a.Session()
	noErr(t, a.Close())
	select {
	case <-sess.Done():
	default:
		t.Fatal("session Done not closed by Close")
	}
	wantErr(t, sess.Err(), reg.ErrClosed)
	if s.exists(t, b, "/inst") {
		t.Fatal("ephemeral survived its client's Close")
	}
	if !s.exists(t, b, "/keep") {
		t.Fatal("persistent node lost")
	}
	_, _, err := a.Get(ctx, "/keep")
	wantErr(t, err, reg.ErrClosed)
}

func (s *suite) testSessionExpiry(t *testing.T) {
	ctx := ctxFor(t)
	ns := namespace(t)
	a := s.client(t, ns)
	b := s.client(t, ns)
	conn := a.WatchConnection(ctx)
	if ev := s.nextConn(t, conn, reg.StateConnected); ev.Session != a.Session() {
		t.Fatal("first event does not carry the current session")
	}
	old := a.Session()
	str(t)(a.Create(ctx, "/inst", nil, reg.Ephemeral))
	_, _, dataW, err := a.GetW(ctx, "/inst")
	noErr(t, err)
	_, _, otherW, err := b.GetW(ctx, "/inst")
	noErr(t, err)

	noErr(t, a.(reg.Expirer).Expire(ctx))

	lost := s.nextConn(t, conn, reg.StateLost)
	if lost.Session != old {
		t.Fatal("StateLost names another session")
	}
	select {
	case <-old.Done():
	case <-time.After(s.h.Wait):
		t.Fatal("session Done not closed on expiry")
	}
	wantErr(t, old.Err(), reg.ErrSessionLost)
	fresh := s.nextConn(t, conn, reg.StateNewSession)
	if fresh.Session == old || fresh.Session.ID() == old.ID() || fresh.Session.Err() != nil {
		t.Fatalf("new session %v after %v", fresh.Session, old)
	}
	if a.Session() != fresh.Session {
		t.Fatal("Session() does not return the new session")
	}
	// The expired session's watch ends (ZooKeeper may first deliver the
	// deletion of its own ephemeral, when the expiry races the connection).
	if ev := <-dataW; !(ev.Type == reg.EventNotWatching && errors.Is(ev.Err, reg.ErrSessionLost)) && ev.Type != reg.EventNodeDeleted {
		t.Fatalf("watch of the expired session got %+v", ev)
	}
	if ev := <-otherW; ev.Type != reg.EventNodeDeleted || ev.Path != "/inst" {
		t.Fatalf("another client's watch got %+v", ev)
	}
	if s.exists(t, b, "/inst") {
		t.Fatal("ephemeral survived its session")
	}
	// The client works in the new session.
	str(t)(a.Create(ctx, "/inst", nil, reg.Ephemeral))
	_, st, err := b.Get(ctx, "/inst")
	noErr(t, err)
	if st.EphemeralOwner != fresh.Session.ID() {
		t.Fatalf("re-created ephemeral owned by %x, want %x", st.EphemeralOwner, fresh.Session.ID())
	}
	// A context derived from the lost session is cancelled.
	sctx, cancel := old.Context(ctx)
	defer cancel()
	if sctx.Err() == nil || !errors.Is(context.Cause(sctx), reg.ErrSessionLost) {
		t.Fatalf("session context: %v / %v", sctx.Err(), context.Cause(sctx))
	}
}

func (s *suite) testSuspension(t *testing.T) {
	if s.h.Disconnect == nil {
		t.Skip("harness cannot drop connections")
	}
	ctx := ctxFor(t)
	ns := namespace(t)
	a := s.client(t, ns)
	b := s.client(t, ns)
	conn := a.WatchConnection(ctx)
	s.nextConn(t, conn, reg.StateConnected)
	sess := a.Session()
	str(t)(a.Create(ctx, "/inst", nil, reg.Ephemeral))
	_, _, w, err := a.GetW(ctx, "/inst")
	noErr(t, err)
	s.h.Disconnect(t, a)
	s.nextConn(t, conn, reg.StateSuspended)
	stat(t)(b.Set(ctx, "/inst", []byte("changed while away"), reg.AnyVersion))
	if s.h.Reconnect != nil {
		s.h.Reconnect(t, a)
	}
	ev := s.nextConn(t, conn, reg.StateReconnected)
	if ev.Session != sess || sess.Err() != nil {
		t.Fatal("reconnected with another session")
	}
	select {
	case we := <-w:
		if we.Type != reg.EventNodeDataChanged {
			t.Fatalf("watch after reconnect: %+v", we)
		}
	case <-time.After(s.h.Wait):
		t.Fatal("change made while disconnected never reached the watch")
	}
	if !s.exists(t, b, "/inst") {
		t.Fatal("ephemeral lost over a reconnect")
	}
}

// testEmptyNotNull: nil data is written as empty data, never as
// ZooKeeper's null (Curator never writes null, and Java's getDirectly
// dereferences what it reads): on every write path, for the node and every
// parent a create makes, and for the namespace node.
func (s *suite) testEmptyNotNull(t *testing.T) {
	ctx := ctxFor(t)
	c := s.client(t, namespace(t))
	str(t)(c.Create(ctx, "/plain", nil, reg.Persistent))
	str(t)(c.Create(ctx, "/eph", nil, reg.Ephemeral))
	seq := str(t)(c.Create(ctx, "/plain/s-", nil, reg.PersistentSequential))
	str(t)(c.Create(ctx, "/box", nil, reg.Container))
	str(t)(c.Create(ctx, "/box/x", nil, reg.Persistent))
	str(t)(c.Create(ctx, "/p/q/leaf", nil, reg.Persistent, reg.WithParents()))
	str(t)(c.Create(ctx, "/k/l/leaf", nil, reg.Ephemeral, reg.WithParentContainers()))
	str(t)(c.Create(ctx, "/set", []byte("v"), reg.Persistent))
	stat(t)(c.Set(ctx, "/set", nil, reg.AnyVersion))
	str(t)(c.Create(ctx, "/mset", []byte("v"), reg.Persistent))
	_, err := c.Multi(ctx, reg.CreateOp("/multi", nil, reg.Persistent), reg.SetOp("/mset", nil, reg.AnyVersion))
	noErr(t, err)
	_, err = reg.Persist(ctx, c, "/persist/a/b", nil)
	noErr(t, err)
	_, err = reg.ServerTime(ctx, c, "/job/systemTime/current")
	noErr(t, err)
	for _, p := range []string{"/", "/plain", "/eph", seq, "/box", "/box/x", "/p", "/p/q", "/p/q/leaf",
		"/k", "/k/l", "/k/l/leaf", "/set", "/multi", "/mset", "/persist", "/persist/a", "/persist/a/b",
		"/job", "/job/systemTime", "/job/systemTime/current"} {
		data, st, err := c.Get(ctx, p)
		noErr(t, err)
		if data == nil || len(data) != 0 || st.DataLength != 0 {
			t.Errorf("%s: data %#v (length %d), want empty, not null", p, data, st.DataLength)
		}
	}
}

func (s *suite) testParents(t *testing.T) {
	ctx := ctxFor(t)
	c := s.client(t, namespace(t))
	str(t)(c.Create(ctx, "/a/b/c", []byte("x"), reg.Persistent, reg.WithParents()))
	for _, p := range []string{"/a", "/a/b"} {
		data, st, err := c.Get(ctx, p)
		noErr(t, err)
		if len(data) != 0 || st.EphemeralOwner != 0 {
			t.Fatalf("parent %s: %q %+v", p, data, st)
		}
	}
	// Existing parents are fine.
	str(t)(c.Create(ctx, "/a/b/d", nil, reg.Persistent, reg.WithParents()))
	// Container parents: reaped once emptied (ZooKeeper shows containers
	// with EphemeralOwner 0, so behaviour is what tells them apart).
	str(t)(c.Create(ctx, "/k/l/m", nil, reg.Persistent, reg.WithParentContainers()))
	_, st, err := c.Get(ctx, "/k/l")
	noErr(t, err)
	if st.EphemeralOwner != 0 {
		t.Fatalf("container parent owner = %x", st.EphemeralOwner)
	}
	noErr(t, c.Delete(ctx, "/k/l/m", reg.AnyVersion))
	s.eventually(t, "container parents reaped", func() bool { return !s.exists(t, c, "/k") })
	if !s.exists(t, c, "/a/b") {
		t.Fatal("persistent parents reaped")
	}
}

func (s *suite) testContainers(t *testing.T) {
	ctx := ctxFor(t)
	c := s.client(t, namespace(t))
	str(t)(c.Create(ctx, "/box", nil, reg.Container))
	str(t)(c.Create(ctx, "/box/x", nil, reg.Persistent))
	str(t)(c.Create(ctx, "/deep/a/b/leaf", nil, reg.Ephemeral, reg.WithParentContainers()))
	noErr(t, c.Delete(ctx, "/box/x", reg.AnyVersion))
	s.eventually(t, "empty container reaped", func() bool { return !s.exists(t, c, "/box") })
	// An ephemeral's death empties a chain of containers: all reaped.
	noErr(t, c.(reg.Expirer).Expire(ctx))
	s.eventually(t, "container chain reaped", func() bool { return !s.exists(t, c, "/deep") })
	// A container that never had children stays.
	str(t)(c.Create(ctx, "/never", nil, reg.Container))
	str(t)(c.Create(ctx, "/sentinel", nil, reg.Container))
	str(t)(c.Create(ctx, "/sentinel/x", nil, reg.Persistent))
	noErr(t, c.Delete(ctx, "/sentinel/x", reg.AnyVersion))
	s.eventually(t, "sentinel container reaped", func() bool { return !s.exists(t, c, "/sentinel") })
	if !s.exists(t, c, "/never") {
		t.Fatal("a container that never had children was reaped")
	}
}

func (s *suite) testMultiSuccess(t *testing.T) {
	ctx := ctxFor(t)
	c := s.client(t, namespace(t))
	str(t)(c.Create(ctx, "/m", nil, reg.Persistent))
	str(t)(c.Create(ctx, "/m/old", nil, reg.Persistent))
	res, err := c.Multi(ctx,
		reg.CheckOp("/", reg.AnyVersion),
		reg.CheckOp("/m", 0),
		reg.CreateOp("/m/new", []byte("n"), reg.Persistent),
		reg.CreateOp("/m/seq-", nil, reg.PersistentSequential),
		reg.CreateOp("/m/eph", nil, reg.Ephemeral),
		reg.SetOp("/m", []byte("set"), 0),
		reg.DeleteOp("/m/old", 0),
	)
	noErr(t, err)
	if len(res) != 7 || res[2].Path != "/m/new" || res[3].Path != "/m/seq-0000000002" || res[5].Stat.Version != 1 {
		t.Fatalf("results %+v", res)
	}
	got := sorted(names(t)(c.Children(ctx, "/m")))
	if !slices.Equal(got, []string{"eph", "new", "seq-0000000002"}) {
		t.Fatalf("children after multi %v", got)
	}
	_, _, err = c.Get(ctx, "/m/eph")
	noErr(t, err)
	// One zxid for the whole transaction.
	_, stNew, _ := c.Get(ctx, "/m/new")
	_, stM, _ := c.Get(ctx, "/m")
	if stNew.Czxid != stM.Mzxid {
		t.Fatalf("multi ops have different zxids: %x %x", stNew.Czxid, stM.Mzxid)
	}
}

// testMultiCreateZxid: each create of a transaction reports the created
// node's Czxid, as a Get of it shows it: the transaction's zxid, so a
// node deleted and created again reports a higher one (what a fencing
// token is made of).
func (s *suite) testMultiCreateZxid(t *testing.T) {
	ctx := ctxFor(t)
	c := s.client(t, namespace(t))
	str(t)(c.Create(ctx, "/f", nil, reg.Persistent))
	res, err := c.Multi(ctx,
		reg.CheckOp("/f", 0),
		reg.CreateOp("/f/eph", []byte("run"), reg.Ephemeral),
		reg.CreateOp("/f/p", nil, reg.Persistent),
		reg.CreateOp("/f/seq-", []byte("s"), reg.PersistentSequential),
		reg.CreateOp("/f/box", nil, reg.Container),
		reg.SetOp("/f", []byte("x"), 0),
	)
	noErr(t, err)
	if len(res) != 6 {
		t.Fatalf("results %+v", res)
	}
	zxid := res[5].Stat.Mzxid
	for i := 1; i <= 4; i++ {
		_, st, err := c.Get(ctx, res[i].Path)
		noErr(t, err)
		if res[i].Czxid == 0 || res[i].Czxid != zxid || res[i].Czxid != st.Czxid {
			t.Errorf("op %d (%s): Czxid %x, Get shows %x, the transaction's zxid %x", i, res[i].Path, res[i].Czxid, st.Czxid, zxid)
		}
	}
	if res[0].Czxid != 0 || res[5].Czxid != 0 {
		t.Errorf("a check or a set reports a Czxid: %+v", res)
	}
	// Deleted and created again, in a transaction of its own, then in one
	// with other ops, after a write elsewhere: each time a higher Czxid.
	last := res[1].Czxid
	for round := range 3 {
		noErr(t, c.Delete(ctx, "/f/eph", reg.AnyVersion))
		_, err := c.Set(ctx, "/f", nil, reg.AnyVersion)
		noErr(t, err)
		ops := []reg.Op{reg.CreateOp("/f/eph", nil, reg.Ephemeral)}
		at := 0
		if round > 0 {
			ops = []reg.Op{reg.CheckOp("/f", reg.AnyVersion), ops[0], reg.SetOp("/f/p", nil, reg.AnyVersion)}
			at = 1
		}
		res, err := c.Multi(ctx, ops...)
		noErr(t, err)
		_, st, err := c.Get(ctx, "/f/eph")
		noErr(t, err)
		if got := res[at].Czxid; got <= last || got != st.Czxid {
			t.Fatalf("round %d: re-created node's Czxid %x (Get shows %x), the last %x", round, got, st.Czxid, last)
		}
		last = res[at].Czxid
	}
}

// testMultiContainer: a transaction creates containers (reaped once
// emptied, as Create's) with other nodes, reports each op's result, and
// fails whole, naming the failing op, when one of them fails.
func (s *suite) testMultiContainer(t *testing.T) {
	ctx := ctxFor(t)
	c := s.client(t, namespace(t))
	str(t)(c.Create(ctx, "/m", []byte("m"), reg.Persistent))
	res, err := c.Multi(ctx,
		reg.CheckOp("/m", 0),
		reg.CreateOp("/m/box", nil, reg.Container),
		reg.CreateOp("/m/box/inner", []byte("in"), reg.Container),
		reg.CreateOp("/m/box/inner/eph", []byte("e"), reg.Ephemeral),
		reg.CreateOp("/m/box/p", nil, reg.Persistent),
		reg.CreateOp("/m/box/seq-", nil, reg.PersistentSequential),
		reg.SetOp("/m", []byte("set"), 0),
	)
	noErr(t, err)
	if len(res) != 7 || res[1].Path != "/m/box" || res[2].Path != "/m/box/inner" || res[3].Path != "/m/box/inner/eph" ||
		res[5].Path != "/m/box/seq-0000000002" || res[6].Stat.Version != 1 {
		t.Fatalf("results %+v", res)
	}
	data, st, err := c.Get(ctx, "/m/box/inner")
	noErr(t, err)
	if string(data) != "in" || st.EphemeralOwner != 0 {
		t.Fatalf("container /m/box/inner = %q %+v (ZooKeeper shows containers as persistent)", data, st)
	}
	if data, st, err := c.Get(ctx, "/m/box/inner/eph"); err != nil || string(data) != "e" || st.EphemeralOwner != c.Session().ID() {
		t.Fatalf("ephemeral = %q %+v %v", data, st, err)
	}
	// A failed op fails the whole transaction: nothing is created.
	_, err = c.Multi(ctx,
		reg.CreateOp("/m/box2", nil, reg.Container),
		reg.CreateOp("/m/box2/x", nil, reg.Persistent),
		reg.CreateOp("/m/box", nil, reg.Container),
	)
	wantErr(t, err, reg.ErrNodeExists)
	var me *reg.MultiError
	if !errors.As(err, &me) || me.Index != 2 {
		t.Fatalf("failing op: %v", err)
	}
	if s.exists(t, c, "/m/box2") {
		t.Fatal("a failed transaction created a container")
	}
	// They are containers: emptied, they are reaped (inner once its
	// ephemeral is gone, box once inner is).
	noErr(t, c.Delete(ctx, "/m/box/p", reg.AnyVersion))
	noErr(t, c.Delete(ctx, "/m/box/seq-0000000002", reg.AnyVersion))
	noErr(t, c.Delete(ctx, "/m/box/inner/eph", reg.AnyVersion))
	s.eventually(t, "containers of a transaction reaped", func() bool { return !s.exists(t, c, "/m/box") })
	if !s.exists(t, c, "/m") {
		t.Fatal("a persistent node was reaped")
	}
}

// testMultiRead: each op of a MultiRead returns what Get or Children
// returns for it, absent nodes are that op's error, and an invalid op
// fails the whole call.
func (s *suite) testMultiRead(t *testing.T) {
	ctx := ctxFor(t)
	c := s.client(t, namespace(t))
	str(t)(c.Create(ctx, "/mr/a/c2", []byte("two"), reg.Persistent, reg.WithParents()))
	str(t)(c.Create(ctx, "/mr/a/c1", nil, reg.Ephemeral))
	stat(t)(c.Set(ctx, "/mr/a", []byte("data of a"), reg.AnyVersion))
	str(t)(c.Create(ctx, "/mr/empty", nil, reg.Persistent))
	ops := []reg.ReadOp{
		reg.GetOp("/mr/a"), reg.ChildrenOp("/mr/a"), reg.GetOp("/missing"), reg.ChildrenOp("/mr/missing"),
		reg.GetOp("/mr/empty"), reg.ChildrenOp("/mr/empty"), reg.GetOp("/"), reg.ChildrenOp("/"), reg.GetOp("/mr/a/c1"),
	}
	res, err := c.MultiRead(ctx, ops...)
	noErr(t, err)
	if len(res) != len(ops) {
		t.Fatalf("%d results for %d ops", len(res), len(ops))
	}
	for i, op := range ops {
		r := res[i]
		switch op.Kind {
		case reg.ReadGet:
			data, st, err := c.Get(ctx, op.Path)
			if !errors.Is(r.Err, reg.ErrNoNode) != (err == nil) || string(r.Data) != string(data) || r.Stat != st || (r.Data == nil) != (data == nil) {
				t.Errorf("op %d get %s = %q %+v %v; Get = %q %+v %v", i, op.Path, r.Data, r.Stat, r.Err, data, st, err)
			}
		case reg.ReadChildren:
			kids, err := c.Children(ctx, op.Path)
			if !errors.Is(r.Err, reg.ErrNoNode) != (err == nil) || !slices.Equal(sorted(r.Children), sorted(kids)) {
				t.Errorf("op %d children %s = %v %v; Children = %v %v", i, op.Path, r.Children, r.Err, kids, err)
			}
		}
	}
	if string(res[0].Data) != "data of a" || res[0].Stat.Version != 1 || res[0].Stat.NumChildren != 2 {
		t.Errorf("get /mr/a = %q %+v", res[0].Data, res[0].Stat)
	}
	if !slices.Equal(sorted(res[1].Children), []string{"c1", "c2"}) {
		t.Errorf("children /mr/a = %v", res[1].Children)
	}
	var oe *reg.OpError
	if !errors.As(res[2].Err, &oe) || oe.Path != "/missing" || !errors.Is(res[3].Err, reg.ErrNoNode) {
		t.Errorf("absent nodes: %v, %v", res[2].Err, res[3].Err)
	}
	if res[4].Data == nil || len(res[4].Data) != 0 || res[5].Children == nil && res[5].Err != nil {
		t.Errorf("empty node: %q (nil %v), children %v %v", res[4].Data, res[4].Data == nil, res[5].Children, res[5].Err)
	}
	if res[8].Stat.EphemeralOwner == 0 {
		t.Errorf("ephemeral node's stat has no owner: %+v", res[8].Stat)
	}
	// A MultiReadAppender appends the same results after what dst holds,
	// and leaves dst as it was on an error.
	if m, ok := c.(reg.MultiReadAppender); ok {
		head := reg.ReadResult{Data: []byte("kept")}
		got, err := m.MultiReadAppend(ctx, []reg.ReadResult{head}, ops...)
		noErr(t, err)
		if len(got) != 1+len(ops) || string(got[0].Data) != "kept" {
			t.Fatalf("MultiReadAppend: %d results, first %q; want %d, \"kept\"", len(got), got[0].Data, 1+len(ops))
		}
		for i, r := range got[1:] {
			w := res[i]
			if string(r.Data) != string(w.Data) || (r.Data == nil) != (w.Data == nil) || r.Stat != w.Stat ||
				!slices.Equal(r.Children, w.Children) || (r.Err == nil) != (w.Err == nil) {
				t.Errorf("MultiReadAppend op %d = %q %+v %v %v; MultiRead %q %+v %v %v", i, r.Data, r.Stat, r.Children, r.Err, w.Data, w.Stat, w.Children, w.Err)
			}
		}
		dst := make([]reg.ReadResult, 1, 4)
		if got, err := m.MultiReadAppend(ctx, dst, reg.GetOp("no-slash")); !errors.Is(err, reg.ErrInvalidArgument) || len(got) != 1 {
			t.Errorf("MultiReadAppend of an invalid op = %d results, %v; want dst unchanged, ErrInvalidArgument", len(got), err)
		}
	}
	// Nothing to read is no request and no error.
	if res, err := c.MultiRead(ctx); err != nil || len(res) != 0 {
		t.Fatalf("empty MultiRead = %v, %v", res, err)
	}
	// An invalid op fails the call.
	_, err = c.MultiRead(ctx, reg.GetOp("/mr/a"), reg.GetOp("no-slash"))
	wantErr(t, err, reg.ErrInvalidArgument)
	_, err = c.MultiRead(ctx, reg.ReadOp{Kind: 99, Path: "/mr/a"})
	wantErr(t, err, reg.ErrInvalidArgument)
	// reg.ReadMany on a plain Reader (no MultiRead) gives the same.
	plain, err := reg.ReadMany(ctx, struct{ reg.Reader }{c}, ops...)
	noErr(t, err)
	for i := range ops {
		if string(plain[i].Data) != string(res[i].Data) || plain[i].Stat != res[i].Stat || !slices.Equal(sorted(plain[i].Children), sorted(res[i].Children)) || (plain[i].Err == nil) != (res[i].Err == nil) {
			t.Errorf("op %d: ReadMany on a plain Reader %+v, MultiRead %+v", i, plain[i], res[i])
		}
	}
	noErr(t, c.Close())
	_, err = c.MultiRead(ctx, reg.GetOp("/mr/a"))
	wantErr(t, err, reg.ErrClosed)
}

// testMultiReadLarge: more ops than one request carries, mixed with plain
// reads from other goroutines on the same client, come back in order.
func (s *suite) testMultiReadLarge(t *testing.T) {
	ctx := ctxFor(t)
	c := s.client(t, namespace(t))
	const n = 700
	var ops []reg.ReadOp
	var wg sync.WaitGroup
	var failed atomic.Bool
	sem := make(chan struct{}, 32)
	for i := range n {
		p := fmt.Sprintf("/big/n%03d", i)
		ops = append(ops, reg.GetOp(p), reg.ChildrenOp(p))
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if _, err := c.Create(ctx, p+"/k"+fmt.Sprint(i%3), nil, reg.Persistent, reg.WithParents()); err != nil {
				failed.Store(true)
			}
			if _, err := c.Set(ctx, p, []byte(p), reg.AnyVersion); err != nil {
				failed.Store(true)
			}
		}()
	}
	wg.Wait()
	if failed.Load() {
		t.Fatal("filling the tree failed")
	}
	stop := make(chan struct{})
	var plainErr atomic.Value
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := g; ; i = (i + 7) % n {
				select {
				case <-stop:
					return
				default:
				}
				p := fmt.Sprintf("/big/n%03d", i)
				if v, _, err := c.Get(ctx, p); err != nil || string(v) != p {
					plainErr.Store(fmt.Sprintf("Get %s = %q, %v", p, v, err))
				}
			}
		}()
	}
	for range 3 {
		res, err := c.MultiRead(ctx, ops...)
		noErr(t, err)
		if len(res) != len(ops) {
			t.Fatalf("%d results for %d ops", len(res), len(ops))
		}
		for i := range n {
			p := fmt.Sprintf("/big/n%03d", i)
			g, k := res[2*i], res[2*i+1]
			if g.Err != nil || string(g.Data) != p || g.Stat.NumChildren != 1 || k.Err != nil || !slices.Equal(k.Children, []string{"k" + fmt.Sprint(i%3)}) {
				t.Fatalf("ops %d, %d (%s): %q %+v %v / %v %v", 2*i, 2*i+1, p, g.Data, g.Stat, g.Err, k.Children, k.Err)
			}
		}
	}
	close(stop)
	wg.Wait()
	if v := plainErr.Load(); v != nil {
		t.Fatal(v)
	}
}

// testMultiReadReconnect: a MultiRead after a dropped connection (same
// session) is served on the new one. One issued while the connection is
// down either waits for the new connection (ZooKeeper queues it) or fails
// with a retryable connection loss (embedded fails fast): the contract
// allows both, never another error or a hang.
func (s *suite) testMultiReadReconnect(t *testing.T) {
	if s.h.Disconnect == nil {
		t.Skip("harness cannot drop connections")
	}
	ctx := ctxFor(t)
	c := s.client(t, namespace(t))
	str(t)(c.Create(ctx, "/r", []byte("v"), reg.Persistent))
	conn := c.WatchConnection(ctx)
	s.nextConn(t, conn, reg.StateConnected)
	s.h.Disconnect(t, c)
	s.nextConn(t, conn, reg.StateSuspended)
	done := make(chan error, 1)
	var res []reg.ReadResult
	go func() {
		var err error
		res, err = c.MultiRead(ctx, reg.GetOp("/r"), reg.ChildrenOp("/r"))
		done <- err
	}()
	if s.h.Reconnect != nil {
		s.h.Reconnect(t, c)
	}
	s.nextConn(t, conn, reg.StateReconnected)
	select {
	case err := <-done:
		switch {
		case reg.IsRetryable(err):
			// Failed fast while down: the retry must be served.
			if res, err = c.MultiRead(ctx, reg.GetOp("/r"), reg.ChildrenOp("/r")); err != nil {
				t.Fatalf("retry after reconnect: %v", err)
			}
		case err != nil:
			t.Fatalf("MultiRead issued while disconnected: %v, want success or a retryable connection loss", err)
		}
	case <-time.After(s.h.Wait):
		t.Fatal("MultiRead issued while disconnected never returned")
	}
	if string(res[0].Data) != "v" || res[1].Err != nil || len(res[1].Children) != 0 {
		t.Fatalf("after reconnect: %+v", res)
	}
	res, err := c.MultiRead(ctx, reg.GetOp("/r"))
	noErr(t, err)
	if string(res[0].Data) != "v" {
		t.Fatalf("second read after reconnect: %+v", res)
	}
}

func (s *suite) testMultiAtomic(t *testing.T) {
	ctx := ctxFor(t)
	c := s.client(t, namespace(t))
	str(t)(c.Create(ctx, "/m", []byte("orig"), reg.Persistent))
	cases := map[string]struct {
		ops   []reg.Op
		index int
		want  error
	}{
		"bad check version": {[]reg.Op{reg.CreateOp("/m/a", nil, reg.Persistent), reg.CheckOp("/m", 5)}, 1, reg.ErrBadVersion},
		"check missing":     {[]reg.Op{reg.SetOp("/m", []byte("x"), 0), reg.CheckOp("/nope", reg.AnyVersion)}, 1, reg.ErrNoNode},
		"create exists":     {[]reg.Op{reg.CreateOp("/m/a", nil, reg.Persistent), reg.CreateOp("/m", nil, reg.Persistent)}, 1, reg.ErrNodeExists},
		"delete not empty":  {[]reg.Op{reg.CreateOp("/m/a", nil, reg.Persistent), reg.DeleteOp("/m", reg.AnyVersion)}, 1, reg.ErrNotEmpty},
		"no parent":         {[]reg.Op{reg.CreateOp("/x/y", nil, reg.Persistent)}, 0, reg.ErrNoNode},
		"set bad version":   {[]reg.Op{reg.CreateOp("/m/a", nil, reg.Persistent), reg.SetOp("/m", nil, 9), reg.DeleteOp("/m/a", 0)}, 1, reg.ErrBadVersion},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := c.Multi(ctx, tc.ops...)
			wantErr(t, err, tc.want)
			var me *reg.MultiError
			if !errors.As(err, &me) || me.Index != tc.index {
				t.Fatalf("error %v: want MultiError at index %d", err, tc.index)
			}
			if s.exists(t, c, "/m/a") {
				t.Fatal("a failed transaction left /m/a")
			}
			data, st, err := c.Get(ctx, "/m")
			noErr(t, err)
			if string(data) != "orig" || st.Version != 0 || st.Cversion != 0 {
				t.Fatalf("a failed transaction changed /m: %q %+v", data, st)
			}
		})
	}
}

func (s *suite) recv(t *testing.T, ch <-chan reg.WatchEvent) reg.WatchEvent {
	t.Helper()
	select {
	case ev := <-ch:
		return ev
	case <-time.After(s.h.Wait):
		t.Fatal("watch did not fire")
	}
	return reg.WatchEvent{}
}

func (s *suite) testWatches(t *testing.T) {
	ctx := ctxFor(t)
	ns := namespace(t)
	c := s.client(t, ns)
	o := s.client(t, ns)
	// ExistsW on an absent node fires on create.
	_, ok, ch, err := c.ExistsW(ctx, "/w")
	noErr(t, err)
	if ok {
		t.Fatal("exists")
	}
	str(t)(o.Create(ctx, "/w", nil, reg.Persistent))
	if ev := s.recv(t, ch); ev.Type != reg.EventNodeCreated || ev.Path != "/w" {
		t.Fatalf("existsw: %+v", ev)
	}
	// GetW fires once on set.
	_, _, ch, err = c.GetW(ctx, "/w")
	noErr(t, err)
	stat(t)(o.Set(ctx, "/w", []byte("1"), reg.AnyVersion))
	stat(t)(o.Set(ctx, "/w", []byte("2"), reg.AnyVersion))
	if ev := s.recv(t, ch); ev.Type != reg.EventNodeDataChanged {
		t.Fatalf("getw: %+v", ev)
	}
	if _, open := <-ch; open {
		t.Fatal("one-shot watch delivered twice")
	}
	// ChildrenW fires on a child create, ExistsW on an existing node on delete.
	_, _, chw, err := c.ChildrenW(ctx, "/w")
	noErr(t, err)
	str(t)(o.Create(ctx, "/w/k", nil, reg.Persistent))
	if ev := s.recv(t, chw); ev.Type != reg.EventNodeChildrenChanged || ev.Path != "/w" {
		t.Fatalf("childrenw: %+v", ev)
	}
	_, ok, ch, err = c.ExistsW(ctx, "/w/k")
	noErr(t, err)
	if !ok {
		t.Fatal("exists /w/k")
	}
	_, _, chw, err = c.ChildrenW(ctx, "/w/k")
	noErr(t, err)
	noErr(t, o.Delete(ctx, "/w/k", reg.AnyVersion))
	if ev := s.recv(t, ch); ev.Type != reg.EventNodeDeleted {
		t.Fatalf("existsw delete: %+v", ev)
	}
	if ev := s.recv(t, chw); ev.Type != reg.EventNodeDeleted {
		t.Fatalf("childrenw on deleted node: %+v", ev)
	}
	// Close ends pending watches with ErrClosed.
	_, _, ch, err = c.GetW(ctx, "/w")
	noErr(t, err)
	noErr(t, c.Close())
	if ev := s.recv(t, ch); ev.Type != reg.EventNotWatching || !errors.Is(ev.Err, reg.ErrClosed) {
		t.Fatalf("watch after close: %+v", ev)
	}
}

// treeRecorder runs a mirror of a subtree (a TreeCache or a SharedCache
// view, after the suite's tree kind) and collects its events.
type treeRecorder struct {
	tc  mirror
	mu  sync.Mutex
	evs []reg.TreeEvent
}

func (r *treeRecorder) record(ev reg.TreeEvent) {
	r.mu.Lock()
	r.evs = append(r.evs, ev)
	r.mu.Unlock()
}

// startTree mirrors root, recording its events, until the test ends.
func (s *suite) startTree(t *testing.T, c reg.Client, root string, opts ...reg.TreeCacheOption) *treeRecorder {
	r := &treeRecorder{}
	if s.tree != kindTreeCache {
		r.tc = s.track(t, c, root, r.record, opts...)
		return r
	}
	ctx, cancel := context.WithCancel(context.Background())
	tc := reg.NewTreeCache(c, root, opts...)
	r.tc = tc
	runDone := make(chan error, 1)
	done := make(chan struct{})
	go func() { runDone <- tc.Run(ctx) }()
	go func() {
		defer close(done)
		for ev := range tc.Events() {
			r.record(ev)
		}
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-runDone; err != nil {
			t.Errorf("TreeCache.Run: %v", err)
		}
		<-done
	})
	return r
}

func (r *treeRecorder) events() []reg.TreeEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.evs)
}

func (r *treeRecorder) has(typ reg.TreeEventType, path, data string) bool {
	for _, ev := range r.events() {
		if ev.Type == typ && ev.Path == path && string(ev.Data) == data {
			return true
		}
	}
	return false
}

func (s *suite) testTreeSnapshot(t *testing.T) {
	ctx := ctxFor(t)
	c := s.client(t, namespace(t))
	str(t)(c.Create(ctx, "/job/config", []byte("cfg"), reg.Persistent, reg.WithParents()))
	str(t)(c.Create(ctx, "/job/servers/ip", []byte("ENABLED"), reg.Persistent, reg.WithParents()))
	str(t)(c.Create(ctx, "/other", nil, reg.Persistent))
	r := s.startTree(t, c, "/job")
	select {
	case <-r.tc.Initialized():
	case <-time.After(s.h.Wait):
		t.Fatal("not initialized")
	}
	s.eventually(t, "initialized event", func() bool { return r.has(reg.TreeInitialized, "", "") })
	evs := r.events()
	var added []string
	for _, ev := range evs {
		if ev.Type == reg.NodeAdded {
			added = append(added, ev.Path+"="+string(ev.Data))
		}
	}
	want := []string{"/job=", "/job/config=cfg", "/job/servers=", "/job/servers/ip=ENABLED"}
	if !slices.Equal(sorted(added), sorted(want)) {
		t.Fatalf("initial ADDED events %v, want %v", added, want)
	}
	if evs[len(evs)-1].Type != reg.TreeInitialized {
		t.Fatalf("last initial event %+v", evs[len(evs)-1])
	}
	if data, _, ok := r.tc.Get("/job/config"); !ok || string(data) != "cfg" {
		t.Fatalf("cache get %q %v", data, ok)
	}
	if kids, ok := r.tc.Children("/job"); !ok || !slices.Equal(kids, []string{"config", "servers"}) {
		t.Fatalf("cache children %v", kids)
	}
	if _, _, ok := r.tc.Get("/other"); ok {
		t.Fatal("cache holds a node outside its root")
	}
	// A root that does not exist yet is picked up when created.
	r2 := s.startTree(t, c, "/later")
	<-r2.tc.Initialized()
	str(t)(c.Create(ctx, "/later/x", []byte("1"), reg.Persistent, reg.WithParents()))
	s.eventually(t, "late root", func() bool { return r2.has(reg.NodeAdded, "/later/x", "1") })
	noErr(t, reg.DeleteRecursive(ctx, c, "/later"))
	s.eventually(t, "root deleted", func() bool { return r2.has(reg.NodeDeleted, "/later", "") })
	str(t)(c.Create(ctx, "/later", []byte("again"), reg.Persistent))
	s.eventually(t, "root re-created", func() bool { return r2.has(reg.NodeAdded, "/later", "again") })
}

// testTreeQuietLoad: with WithoutInitialEvents the initial load delivers
// TreeInitialized alone, the cache holds the tree all the same, and the
// changes after it are delivered as usual.
func (s *suite) testTreeQuietLoad(t *testing.T) {
	ctx := ctxFor(t)
	c := s.client(t, namespace(t))
	str(t)(c.Create(ctx, "/job/config", []byte("cfg"), reg.Persistent, reg.WithParents()))
	str(t)(c.Create(ctx, "/job/servers/ip", []byte("ENABLED"), reg.Persistent, reg.WithParents()))
	r := s.startTree(t, c, "/job", reg.WithoutInitialEvents())
	select {
	case <-r.tc.Initialized():
	case <-time.After(s.h.Wait):
		t.Fatal("not initialized")
	}
	s.eventually(t, "initialized event", func() bool { return r.has(reg.TreeInitialized, "", "") })
	if data, _, ok := r.tc.Get("/job/servers/ip"); !ok || string(data) != "ENABLED" {
		t.Fatalf("cache get %q %v", data, ok)
	}
	str(t)(c.Create(ctx, "/job/instances", []byte("new"), reg.Persistent))
	s.eventually(t, "a change after the load", func() bool { return r.has(reg.NodeAdded, "/job/instances", "new") })
	evs := r.events()
	if len(evs) != 2 || evs[0].Type != reg.TreeInitialized {
		t.Fatalf("events %+v, want TreeInitialized then the create", evs)
	}
}

// testTreeBurst checks that under a burst of writes from another client the
// cache reports, per path, an in-order subsequence of the writes that ends
// with the final state.
// A tree with more watches than a cache selects on itself (the rest are
// forwarded by goroutines) still sees every change: each node of 150
// (about 300 watches) is updated, then every other one deleted.
func (s *suite) testTreeLarge(t *testing.T) {
	ctx := ctxFor(t)
	ns := namespace(t)
	c := s.client(t, ns)
	w := s.client(t, ns)
	const n = 150
	for i := range n {
		str(t)(w.Create(ctx, fmt.Sprintf("/big/n%03d", i), []byte("0"), reg.Persistent, reg.WithParents()))
	}
	r := s.startTree(t, c, "/big")
	<-r.tc.Initialized()
	for i := range n {
		if _, err := w.Set(ctx, fmt.Sprintf("/big/n%03d", i), []byte("1"), reg.AnyVersion); err != nil {
			t.Fatal(err)
		}
	}
	s.eventually(t, "every update", func() bool {
		for i := range n {
			if d, _, ok := r.tc.Get(fmt.Sprintf("/big/n%03d", i)); !ok || string(d) != "1" {
				return false
			}
		}
		return true
	})
	for i := 0; i < n; i += 2 {
		if err := w.Delete(ctx, fmt.Sprintf("/big/n%03d", i), reg.AnyVersion); err != nil {
			t.Fatal(err)
		}
	}
	s.eventually(t, "every deletion", func() bool {
		names, _ := r.tc.Children("/big")
		return len(names) == n/2
	})
	for i := range n {
		_, _, ok := r.tc.Get(fmt.Sprintf("/big/n%03d", i))
		if ok != (i%2 == 1) {
			t.Fatalf("node %d cached = %v after deleting the even ones", i, ok)
		}
	}
}

func (s *suite) testTreeBurst(t *testing.T) {
	ctx := ctxFor(t)
	ns := namespace(t)
	c := s.client(t, ns)
	w := s.client(t, ns)
	str(t)(w.Create(ctx, "/job", nil, reg.Persistent))
	r := s.startTree(t, c, "/job")
	<-r.tc.Initialized()
	const paths, writes = 5, 40
	var wg sync.WaitGroup
	for p := range paths {
		wg.Add(1)
		go func() {
			defer wg.Done()
			path := fmt.Sprintf("/job/n%d", p)
			if _, err := w.Create(ctx, path, []byte("0"), reg.Persistent); err != nil {
				t.Error(err)
				return
			}
			for i := 1; i <= writes; i++ {
				if _, err := w.Set(ctx, path, fmt.Appendf(nil, "%d", i), reg.AnyVersion); err != nil {
					t.Error(err)
					return
				}
			}
			// A short-lived child, created and deleted.
			if _, err := w.Create(ctx, path+"/tmp", []byte("t"), reg.Persistent); err != nil {
				t.Error(err)
			}
			if err := w.Delete(ctx, path+"/tmp", reg.AnyVersion); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	final := fmt.Sprint(writes)
	s.eventually(t, "final values", func() bool {
		for p := range paths {
			d, _, ok := r.tc.Get(fmt.Sprintf("/job/n%d", p))
			if !ok || string(d) != final {
				return false
			}
			if _, _, ok := r.tc.Get(fmt.Sprintf("/job/n%d/tmp", p)); ok {
				return false
			}
		}
		return true
	})
	s.eventually(t, "final events", func() bool {
		for p := range paths {
			if !r.has(reg.NodeUpdated, fmt.Sprintf("/job/n%d", p), final) && !r.has(reg.NodeAdded, fmt.Sprintf("/job/n%d", p), final) {
				return false
			}
		}
		// The cache may apply the tmp deletions before the recorder has
		// received their events: wait until the last tmp event of each
		// path is not an add.
		tmpAlive := map[string]bool{}
		for _, ev := range r.events() {
			if strings.HasSuffix(ev.Path, "/tmp") {
				tmpAlive[ev.Path] = ev.Type != reg.NodeDeleted
			}
		}
		for _, alive := range tmpAlive {
			if alive {
				return false
			}
		}
		return true
	})
	last := map[string]int{}
	alive := map[string]bool{}
	for _, ev := range r.events() {
		if ev.Type == reg.TreeInitialized || ev.Path == "/job" {
			continue
		}
		switch ev.Type {
		case reg.NodeAdded:
			if alive[ev.Path] {
				t.Fatalf("%s added twice without a delete", ev.Path)
			}
			alive[ev.Path] = true
		case reg.NodeUpdated:
			if !alive[ev.Path] {
				t.Fatalf("%s updated before added", ev.Path)
			}
		case reg.NodeDeleted:
			if !alive[ev.Path] {
				t.Fatalf("%s deleted before added", ev.Path)
			}
			alive[ev.Path] = false
			continue
		}
		if strings.HasSuffix(ev.Path, "/tmp") {
			continue
		}
		var v int
		if _, err := fmt.Sscan(string(ev.Data), &v); err != nil {
			t.Fatalf("event data %q", ev.Data)
		}
		if prev, ok := last[ev.Path]; ok && v <= prev {
			t.Fatalf("%s: value %d after %d: out of order or repeated", ev.Path, v, prev)
		}
		last[ev.Path] = v
	}
	for p := range paths {
		if alive[fmt.Sprintf("/job/n%d/tmp", p)] {
			t.Fatalf("tmp child %d never reported deleted", p)
		}
	}
}

// mirror is a mirrored subtree: a TreeCache or a SharedCache view.
type mirror interface {
	reg.TreeView
	Initialized() <-chan struct{}
}

// mirror mirrors root without events until the test ends and returns it
// once its initial load is done.
func (s *suite) mirror(t *testing.T, c reg.Client, root string, opts ...reg.TreeCacheOption) mirror {
	if s.tree != kindTreeCache {
		v := s.track(t, c, root, nil, opts...)
		<-v.Initialized()
		return v
	}
	tc := reg.NewTreeCache(c, root, append(opts, reg.WithoutEvents())...)
	runCtx, cancel := context.WithCancel(context.Background())
	runDone := make(chan error, 1)
	go func() { runDone <- tc.Run(runCtx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-runDone; err != nil {
			t.Errorf("TreeCache.Run: %v", err)
		}
	})
	<-tc.Initialized()
	return tc
}

// testTreeChurn deletes and re-creates nodes under the cache's feet (in
// one transaction and in two requests), so that their deletion events and
// their parents' child events race with the re-creations: the cache must
// end up with every node's latest incarnation (Czxid) and data.
func (s *suite) testTreeChurn(t *testing.T) {
	ctx := ctxFor(t)
	ns := namespace(t)
	c := s.client(t, ns)
	w := s.client(t, ns)
	const paths, rounds = 4, 30
	for p := range paths {
		str(t)(w.Create(ctx, fmt.Sprintf("/job/p%d/x", p), []byte("0"), reg.Persistent, reg.WithParents()))
	}
	tc := s.mirror(t, c, "/job", reg.WithLeaves(func(path string) bool {
		return strings.HasSuffix(path, "/x")
	}))
	var wg sync.WaitGroup
	for p := range paths {
		wg.Go(func() {
			x := fmt.Sprintf("/job/p%d/x", p)
			for i := 1; i <= rounds; i++ {
				data := fmt.Appendf(nil, "%d", i)
				var err error
				if i%2 == 0 {
					_, err = w.Multi(ctx, reg.DeleteOp(x, reg.AnyVersion), reg.CreateOp(x, data, reg.Persistent))
				} else if err = w.Delete(ctx, x, reg.AnyVersion); err == nil {
					_, err = w.Create(ctx, x, data, reg.Persistent)
				}
				if err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	s.eventually(t, "the cache shows every node's last incarnation", func() bool {
		for p := range paths {
			x := fmt.Sprintf("/job/p%d/x", p)
			data, st, err := w.Get(ctx, x)
			if err != nil {
				t.Fatal(err)
			}
			cd, cst, ok := tc.Get(x)
			if !ok || string(cd) != string(data) || cst.Czxid != st.Czxid {
				return false
			}
		}
		return true
	})
}

// testTreeLeaves: a path WithLeaves names is cached with its data, but
// its children are not listed.
func (s *suite) testTreeLeaves(t *testing.T) {
	ctx := ctxFor(t)
	ns := namespace(t)
	c := s.client(t, ns)
	str(t)(c.Create(ctx, "/job/leaf/child", []byte("c"), reg.Persistent, reg.WithParents()))
	str(t)(c.Create(ctx, "/job/inner/child", []byte("c"), reg.Persistent, reg.WithParents()))
	tc := s.mirror(t, c, "/job", reg.WithLeaves(func(path string) bool { return path == "/job/leaf" }))
	if _, _, ok := tc.Get("/job/leaf"); !ok {
		t.Error("leaf not cached")
	}
	if _, _, ok := tc.Get("/job/inner/child"); !ok {
		t.Error("child of an inner node not cached")
	}
	if _, _, ok := tc.Get("/job/leaf/child"); ok {
		t.Error("child of a leaf cached")
	}
	noErr(t, c.Delete(ctx, "/job/leaf/child", reg.AnyVersion))
	noErr(t, c.Delete(ctx, "/job/leaf", reg.AnyVersion))
	s.eventually(t, "leaf deletion seen", func() bool { _, _, ok := tc.Get("/job/leaf"); return !ok })
}

func (s *suite) testTreeSubtree(t *testing.T) {
	ctx := ctxFor(t)
	c := s.client(t, namespace(t))
	str(t)(c.Create(ctx, "/job/a/b/c", []byte("leaf"), reg.Persistent, reg.WithParents()))
	r := s.startTree(t, c, "/job")
	<-r.tc.Initialized()
	noErr(t, reg.DeleteRecursive(ctx, c, "/job/a"))
	s.eventually(t, "subtree deleted", func() bool { return r.has(reg.NodeDeleted, "/job/a", "") })
	var order []string
	for _, ev := range r.events() {
		if ev.Type == reg.NodeDeleted {
			order = append(order, ev.Path+"="+string(ev.Data))
		}
	}
	if !slices.Equal(order, []string{"/job/a/b/c=leaf", "/job/a/b=", "/job/a="}) {
		t.Fatalf("delete events %v: want children first with last data", order)
	}
	// Delete and re-create quickly: the cache ends with the new node.
	for i := range 5 {
		str(t)(c.Create(ctx, "/job/x", fmt.Appendf(nil, "v%d", i), reg.Persistent))
		noErr(t, c.Delete(ctx, "/job/x", reg.AnyVersion))
	}
	str(t)(c.Create(ctx, "/job/x", []byte("final"), reg.Persistent))
	s.eventually(t, "re-created node", func() bool {
		d, _, ok := r.tc.Get("/job/x")
		return ok && string(d) == "final"
	})
}

func (s *suite) testTreeSessionLoss(t *testing.T) {
	ctx := ctxFor(t)
	ns := namespace(t)
	c := s.client(t, ns)
	o := s.client(t, ns)
	str(t)(c.Create(ctx, "/job/instances", nil, reg.Persistent, reg.WithParents()))
	str(t)(c.Create(ctx, "/job/instances/me", []byte("c"), reg.Ephemeral))
	str(t)(o.Create(ctx, "/job/instances/other", []byte("o"), reg.Ephemeral))
	r := s.startTree(t, c, "/job")
	<-r.tc.Initialized()
	// Another instance's session ends: its node is reported deleted.
	noErr(t, o.(reg.Expirer).Expire(ctx))
	s.eventually(t, "other's ephemeral deleted", func() bool { return r.has(reg.NodeDeleted, "/job/instances/other", "o") })
	// Our own session ends: the cache resyncs in the new session and reports
	// our ephemeral gone, then keeps following changes.
	noErr(t, c.(reg.Expirer).Expire(ctx))
	s.eventually(t, "own ephemeral deleted", func() bool { return r.has(reg.NodeDeleted, "/job/instances/me", "c") })
	s.eventually(t, "new session", func() bool { return c.Session().Err() == nil })

	str(t)(o.Create(ctx, "/job/instances/late", []byte("l"), reg.Ephemeral))
	s.eventually(t, "change after resync", func() bool { return r.has(reg.NodeAdded, "/job/instances/late", "l") })
	stat(t)(o.Set(ctx, "/job/instances", []byte("x"), reg.AnyVersion))
	s.eventually(t, "update after resync", func() bool { return r.has(reg.NodeUpdated, "/job/instances", "x") })
}

// --- upstream ports (ZookeeperRegistryCenter and its tests) ---

// testUpstreamQuery ports ZookeeperRegistryCenterQueryWithoutCacheTest.
func (s *suite) testUpstreamQuery(t *testing.T) {
	ctx := ctxFor(t)
	c := s.client(t, namespace(t))
	for _, p := range []string{"/test", "/test/deep/nested", "/test/child"} {
		_, err := reg.Persist(ctx, c, p, []byte(p[1:]))
		noErr(t, err)
	}
	// assertGetChildrenKeys: upstream sorts descending.
	keys := names(t)(c.Children(ctx, "/test"))
	sort.Sort(sort.Reverse(sort.StringSlice(keys)))
	if !slices.Equal(keys, []string{"deep", "child"}) {
		t.Fatalf("children keys %v", keys)
	}
	// assertGetNumChildren
	_, st, err := c.Get(ctx, "/test")
	noErr(t, err)
	if st.NumChildren != 2 {
		t.Fatalf("num children %d", st.NumChildren)
	}
	// assertIsExisted / assertGetFromServer / assertGetWithoutNode
	if !s.exists(t, c, "/test") || s.exists(t, c, "/notExisted") {
		t.Fatal("exists")
	}
	data, _, err := c.Get(ctx, "/test/deep/nested")
	noErr(t, err)
	if string(data) != "test/deep/nested" {
		t.Fatalf("get %q", data)
	}
	_, _, err = c.Get(ctx, "/notExisted")
	wantErr(t, err, reg.ErrNoNode)
}

// testUpstreamModify ports ZookeeperRegistryCenterModifyTest and the
// transaction tests.
func (s *suite) testUpstreamModify(t *testing.T) {
	ctx := ctxFor(t)
	ns := namespace(t)
	c := s.client(t, ns)
	// assertPersist: create then update.
	_, err := reg.Persist(ctx, c, "/test", []byte("test_ephemeral"))
	noErr(t, err)
	_, err = reg.Persist(ctx, c, "/test", []byte("test_update"))
	noErr(t, err)
	if d, _, _ := c.Get(ctx, "/test"); string(d) != "test_update" {
		t.Fatalf("persist: %q", d)
	}
	// assertPersistEphemeral: gone after the client closes.
	e := s.client(t, ns)
	str(t)(e.Create(ctx, "/persist/ephemeral", []byte("test"), reg.Ephemeral, reg.WithParents()))
	noErr(t, e.Close())
	if s.exists(t, c, "/persist/ephemeral") {
		t.Fatal("ephemeral survived close")
	}
	// assertPersistSequential / assertPersistEphemeralSequential.
	seqRE := regexp.MustCompile(`^/sequential/test_sequential\d{10}$`)
	for range 3 {
		p := str(t)(c.Create(ctx, "/sequential/test_sequential", []byte("test_value"), reg.PersistentSequential, reg.WithParents()))
		if !seqRE.MatchString(p) {
			t.Fatalf("sequential path %q", p)
		}
	}
	e2 := s.client(t, ns)
	for range 3 {
		str(t)(e2.Create(ctx, "/sequential/test_ephemeral_sequential", nil, reg.EphemeralSequential, reg.WithParents()))
	}
	noErr(t, e2.Close())
	if n := len(names(t)(c.Children(ctx, "/sequential"))); n != 3 {
		t.Fatalf("%d sequential children after the ephemeral ones' client closed", n)
	}
	// assertRemove: recursive.
	noErr(t, reg.DeleteRecursive(ctx, c, "/sequential"))
	if s.exists(t, c, "/sequential") {
		t.Fatal("remove")
	}
	// Transaction succeeded / failed (upstream prefixes check("/")).
	_, err = c.Multi(ctx, reg.CheckOp("/", reg.AnyVersion), reg.CreateOp("/tx", []byte("a"), reg.Persistent))
	noErr(t, err)
	_, err = c.Multi(ctx, reg.CheckOp("/", reg.AnyVersion), reg.CreateOp("/tx2", nil, reg.Persistent), reg.CreateOp("/tx/deep/x", nil, reg.Persistent))
	wantErr(t, err, reg.ErrNoNode)
	if s.exists(t, c, "/tx2") {
		t.Fatal("partial transaction applied")
	}
}

// testUpstreamTime ports assertGetRegistryCenterTime.
func (s *suite) testUpstreamTime(t *testing.T) {
	ctx := ctxFor(t)
	c := s.client(t, namespace(t))
	t1, err := reg.ServerTime(ctx, c, "/test_job/systemTime/current")
	noErr(t, err)
	if t1.After(time.Now().Add(time.Second)) || t1.Before(time.Now().Add(-time.Minute)) {
		t.Fatalf("registry time %v, now %v", t1, time.Now())
	}
	var t2 time.Time
	s.eventually(t, "registry time advancing", func() bool {
		t2, err = reg.ServerTime(ctx, c, "/test_job/systemTime/current")
		noErr(t, err)
		return t2.After(t1)
	})
	_, st, err := c.Get(ctx, "/test_job/systemTime/current")
	noErr(t, err)
	if st.Version < 1 {
		t.Fatal("registry time did not set the node")
	}
}

// testUpstreamWatch ports assertWatchWithoutExecutor: an UPDATED event with
// the new value.
func (s *suite) testUpstreamWatch(t *testing.T) {
	ctx := ctxFor(t)
	c := s.client(t, namespace(t))
	_, err := reg.Persist(ctx, c, "/test_job/config", []byte("v1"))
	noErr(t, err)
	r := s.startTree(t, c, "/test_job")
	<-r.tc.Initialized()
	_, err = reg.Persist(ctx, c, "/test_job/config", []byte("v2"))
	noErr(t, err)
	s.eventually(t, "UPDATED v2", func() bool { return r.has(reg.NodeUpdated, "/test_job/config", "v2") })
}

// testExecuteInLeader ports ZookeeperRegistryCenterExecuteInLeaderTest: ten
// concurrent callers never run the callback concurrently.
func (s *suite) testExecuteInLeader(t *testing.T) {
	ctx := ctxFor(t)
	ns := namespace(t)
	clients := []reg.Client{s.client(t, ns), s.client(t, ns), s.client(t, ns)}
	var inside, maxInside, runs atomic.Int32
	var wg sync.WaitGroup
	for i := range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := recipe.ExecuteInLeader(ctx, clients[i%len(clients)], "/leader", func(ctx context.Context) error {
				n := inside.Add(1)
				for {
					m := maxInside.Load()
					if n <= m || maxInside.CompareAndSwap(m, n) {
						break
					}
				}
				runs.Add(1)
				// Hold the latch across a registry round trip.
				_, _, err := clients[i%len(clients)].Exists(ctx, "/leader")
				inside.Add(-1)
				return err
			})
			if err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if runs.Load() != 10 || maxInside.Load() != 1 {
		t.Fatalf("runs %d, max concurrent %d", runs.Load(), maxInside.Load())
	}
}

var latchNodeRE = regexp.MustCompile(`^_c_[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}-latch-\d{10}$`)

func (s *suite) testLatchFormat(t *testing.T) {
	ctx := ctxFor(t)
	c := s.client(t, namespace(t))
	l := recipe.NewLatch(c, "/job/leader/election/latch", "participant-1")
	noErr(t, l.Acquire(ctx))
	if !l.IsOwner() {
		t.Fatal("not owner")
	}
	names := names(t)(c.Children(ctx, "/job/leader/election/latch"))
	if len(names) != 1 || !latchNodeRE.MatchString(names[0]) {
		t.Fatalf("latch nodes %v", names)
	}
	data, st, err := c.Get(ctx, "/job/leader/election/latch/"+names[0])
	noErr(t, err)
	if string(data) != "participant-1" || st.EphemeralOwner != c.Session().ID() {
		t.Fatalf("latch node data %q owner %x", data, st.EphemeralOwner)
	}
	noErr(t, l.Release(ctx))
	if l.IsOwner() {
		t.Fatal("owner after release")
	}
	// Empty latch containers are reaped, as with Curator.
	s.eventually(t, "latch containers reaped", func() bool { return !s.exists(t, c, "/job") })
	// Ordering is by the suffix after the last "latch-", not by UUID.
	in := []string{
		"_c_ffffffff-0000-4000-8000-000000000000-latch-0000000002",
		"_c_00000000-0000-4000-8000-000000000000-latch-0000000010",
		"_c_88888888-0000-4000-8000-000000000000-latch-0000000001",
		"foreign",
	}
	recipe.SortLatchNodes(in)
	if !strings.HasSuffix(in[0], "0000000001") || !strings.HasSuffix(in[1], "0000000002") || !strings.HasSuffix(in[2], "0000000010") || in[3] != "foreign" {
		t.Fatalf("sorted %v", in)
	}
}

func (s *suite) testLatchHandover(t *testing.T) {
	ctx := ctxFor(t)
	ns := namespace(t)
	const path = "/job/leader/failover/latch"
	var latches []*recipe.Latch
	var clients []reg.Client
	for i := range 3 {
		c := s.client(t, ns)
		clients = append(clients, c)
		latches = append(latches, recipe.NewLatch(c, path, fmt.Sprint("p", i)))
	}
	noErr(t, latches[0].Acquire(ctx))
	// The others queue in creation order.
	acquired := make(chan int, 3)
	errs := make(chan error, 3)
	for i := 1; i < 3; i++ {
		l := latches[i]
		// Wait until the previous contender's node exists, so order is fixed.
		s.eventually(t, "contender queued", func() bool { return len(names(t)(clients[0].Children(ctx, path))) == i })
		go func() {
			if err := l.Acquire(ctx); err != nil {
				errs <- err
				return
			}
			acquired <- i
		}()
	}
	s.eventually(t, "3 contenders", func() bool { return len(names(t)(clients[0].Children(ctx, path))) == 3 })
	if latches[1].IsOwner() || latches[2].IsOwner() {
		t.Fatal("two owners")
	}
	// Release: p1 takes over (not p2). Then p1's session expires: p2.
	noErr(t, latches[0].Release(ctx))
	if got := s.next(t, acquired, errs); got != 1 {
		t.Fatalf("handover to %d, want 1", got)
	}
	if latches[2].IsOwner() {
		t.Fatal("p2 owns while p1 does")
	}
	noErr(t, clients[1].(reg.Expirer).Expire(ctx))
	if got := s.next(t, acquired, errs); got != 2 {
		t.Fatalf("handover to %d, want 2", got)
	}
	s.eventually(t, "p1 sees its loss", func() bool { return !latches[1].IsOwner() })
	noErr(t, latches[2].Release(ctx))
}

func (s *suite) next(t *testing.T, acquired <-chan int, errs <-chan error) int {
	t.Helper()
	select {
	case i := <-acquired:
		return i
	case err := <-errs:
		t.Fatal(err)
	case <-time.After(s.h.Wait):
		t.Fatal("no handover")
	}
	return -1
}

func (s *suite) testLatchCancel(t *testing.T) {
	ctx := ctxFor(t)
	ns := namespace(t)
	a, b := s.client(t, ns), s.client(t, ns)
	la := recipe.NewLatch(a, "/l", "a")
	noErr(t, la.Acquire(ctx))
	lb := recipe.NewLatch(b, "/l", "b")
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- lb.Acquire(cctx) }()
	s.eventually(t, "b queued", func() bool { return len(names(t)(a.Children(ctx, "/l"))) == 2 })
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled acquire: %v", err)
	}
	s.eventually(t, "b's node removed", func() bool { return len(names(t)(a.Children(ctx, "/l"))) == 1 })
	noErr(t, la.Release(ctx))
	// A latch whose session is lost while waiting returns ErrSessionLost.
	noErr(t, la.Acquire(ctx))
	done2 := make(chan error, 1)
	go func() { done2 <- lb.Acquire(ctx) }()
	s.eventually(t, "b queued again", func() bool { return len(names(t)(a.Children(ctx, "/l"))) == 2 })
	noErr(t, b.(reg.Expirer).Expire(ctx))
	select {
	case err := <-done2:
		wantErr(t, err, reg.ErrSessionLost)
	case <-time.After(s.h.Wait):
		t.Fatal("acquire did not end with the session")
	}
}

// testElect: concurrent campaigns through elect (recipe.Elect, or
// ElectVacant, whose create and release go in one transaction) make one
// leader and leave no latch participant; a campaign again, either way,
// keeps it.
func (s *suite) testElect(t *testing.T, elect func(context.Context, reg.Client, string, string, []byte) (bool, error)) {
	ctx := ctxFor(t)
	ns := namespace(t)
	var clients []reg.Client
	for range 3 {
		clients = append(clients, s.client(t, ns))
	}
	const latch, leader = "/job/leader/election/latch", "/job/leader/election/instance"
	var leaders atomic.Int32
	var wg sync.WaitGroup
	for i, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ok, err := elect(ctx, c, latch, leader, fmt.Appendf(nil, "10.0.0.%d@-@1", i))
			if err != nil {
				t.Error(err)
			}
			if ok {
				leaders.Add(1)
			}
		}()
	}
	wg.Wait()
	if leaders.Load() != 1 {
		t.Fatalf("%d leaders", leaders.Load())
	}
	data, st, err := clients[0].Get(ctx, leader)
	noErr(t, err)
	var winner reg.Client
	for _, c := range clients {
		if c.Session().ID() == st.EphemeralOwner {
			winner = c
		}
	}
	if winner == nil || !strings.HasPrefix(string(data), "10.0.0.") {
		t.Fatalf("leader node %q owner %x", data, st.EphemeralOwner)
	}
	// Elect again, both ways: the existing leader stays.
	for _, again := range []func(context.Context, reg.Client, string, string, []byte) (bool, error){recipe.Elect, recipe.ElectVacant} {
		for _, c := range clients {
			ok, err := again(ctx, c, latch, leader, []byte("x"))
			noErr(t, err)
			if ok != (c == winner) {
				t.Fatal("re-election changed the leader")
			}
		}
	}
	if d, _, _ := clients[0].Get(ctx, leader); !bytes.Equal(d, data) {
		t.Fatalf("leader node %q after the re-elections, was %q", d, data)
	}
	names, err := clients[0].Children(ctx, latch)
	if !errors.Is(err, reg.ErrNoNode) { // the container may be reaped already
		noErr(t, err)
	}
	if len(names) != 0 {
		t.Fatalf("latch participants left: %v", names)
	}
}

func (s *suite) testFenced(t *testing.T) {
	ctx := ctxFor(t)
	ns := namespace(t)
	a, b := s.client(t, ns), s.client(t, ns)
	str(t)(a.Create(ctx, "/data", []byte("0"), reg.Persistent))
	la := recipe.NewLatch(a, "/latch", "a")
	_, err := la.Fence(ctx)
	wantErr(t, err, recipe.ErrNotLeader)
	noErr(t, la.Acquire(ctx))
	f, err := la.Fence(ctx)
	noErr(t, err)
	res, err := recipe.FencedMulti(ctx, a, f, reg.SetOp("/data", []byte("1"), reg.AnyVersion))
	noErr(t, err)
	if len(res) != 1 || res[0].Stat.Version != 1 {
		t.Fatalf("fenced results %+v", res)
	}
	// Deposed: the session expires, b takes the latch; a's old fence fails.
	lb := recipe.NewLatch(b, "/latch", "b")
	noErr(t, a.(reg.Expirer).Expire(ctx))
	noErr(t, lb.Acquire(ctx))
	s.eventually(t, "a's new session", func() bool { return a.Session() != f.Session && a.Session().Err() == nil })
	_, err = recipe.FencedMulti(ctx, a, f, reg.SetOp("/data", []byte("stale"), reg.AnyVersion))
	wantErr(t, err, recipe.ErrFenced)
	// Even a check forged for the new session is refused by the server: the
	// node is gone.
	forged := recipe.Fence{Path: f.Path, Version: f.Version, Session: a.Session()}
	_, err = recipe.FencedMulti(ctx, a, forged, reg.SetOp("/data", []byte("stale"), reg.AnyVersion))
	wantErr(t, err, recipe.ErrFenced)
	if d, _, _ := b.Get(ctx, "/data"); string(d) != "1" {
		t.Fatalf("fenced-out write applied: %q", d)
	}
	// The new owner writes; after Release its fence fails too.
	fb, err := lb.Fence(ctx)
	noErr(t, err)
	_, err = recipe.FencedMulti(ctx, b, fb, reg.SetOp("/data", []byte("2"), reg.AnyVersion))
	noErr(t, err)
	noErr(t, lb.Release(ctx))
	_, err = recipe.FencedMulti(ctx, b, fb, reg.SetOp("/data", []byte("3"), reg.AnyVersion))
	wantErr(t, err, recipe.ErrFenced)
}

// testFencedLeaderNode fences on an ElasticJob-style leader node.
func (s *suite) testFencedLeaderNode(t *testing.T) {
	ctx := ctxFor(t)
	ns := namespace(t)
	a, b := s.client(t, ns), s.client(t, ns)
	ok, err := recipe.Elect(ctx, a, "/job/leader/election/latch", "/job/leader/election/instance", []byte("a"))
	noErr(t, err)
	if !ok {
		t.Fatal("a not elected")
	}
	_, err = recipe.NewFence(ctx, b, "/job/leader/election/instance")
	wantErr(t, err, recipe.ErrNotLeader)
	f, err := recipe.NewFence(ctx, a, "/job/leader/election/instance")
	noErr(t, err)
	_, err = recipe.FencedMulti(ctx, a, f, reg.CreateOp("/job/sharding", nil, reg.Persistent))
	noErr(t, err)
	// Abdication (upstream deletes the node) fences the old leader out.
	noErr(t, a.Delete(ctx, "/job/leader/election/instance", reg.AnyVersion))
	_, err = recipe.FencedMulti(ctx, a, f, reg.DeleteOp("/job/sharding", reg.AnyVersion))
	wantErr(t, err, recipe.ErrFenced)
}
