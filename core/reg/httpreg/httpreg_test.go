package httpreg_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/ejob-io/ejob/core/reg"
	"github.com/ejob-io/ejob/core/reg/embedded"
	"github.com/ejob-io/ejob/core/reg/httpreg"
)

// serve returns the embedded registry behind a real HTTP server of
// Handler, and a client of it.
func serve(t *testing.T, opts httpreg.HandlerOptions) (direct reg.Client, remote *httpreg.Client, base string) {
	t.Helper()
	direct, err := embedded.NewServer().Connect("ns")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { direct.Close() })
	srv := httptest.NewServer(httpreg.Handler(direct, opts))
	t.Cleanup(srv.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	remote, err = httpreg.New(ctx, srv.Client(), srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { remote.Close() })
	return direct, remote, srv.URL
}

func ctx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// TestCallsReachTheRegistry: every read and write the client sends is
// applied to the registry behind the handler, with its results.
func TestCallsReachTheRegistry(t *testing.T) {
	direct, c, _ := serve(t, httpreg.HandlerOptions{})
	ctx := ctx(t)
	if c.Namespace() != "ns" {
		t.Errorf("Namespace = %q, want ns", c.Namespace())
	}
	if p, err := c.Create(ctx, "/job/config", []byte("cron: x"), reg.Persistent, reg.WithParents()); err != nil || p != "/job/config" {
		t.Fatalf("Create = %q, %v", p, err)
	}
	if data, _, err := direct.Get(ctx, "/job/config"); err != nil || string(data) != "cron: x" {
		t.Fatalf("the registry has %q, %v; want the created data", data, err)
	}
	seq, err := c.Create(ctx, "/job/seq-", nil, reg.PersistentSequential)
	if err != nil || !strings.HasPrefix(seq, "/job/seq-") || len(seq) != len("/job/seq-")+10 {
		t.Fatalf("sequential Create = %q, %v", seq, err)
	}
	st, err := c.Set(ctx, "/job/config", []byte("cron: y"), 0)
	if err != nil || st.Version != 1 {
		t.Fatalf("Set = %+v, %v; want version 1", st, err)
	}
	data, st2, err := c.Get(ctx, "/job/config")
	if err != nil || string(data) != "cron: y" || st2 != st {
		t.Fatalf("Get = %q %+v, %v; want the set data and stat %+v", data, st2, err, st)
	}
	// Empty data stays empty (not ZooKeeper's null).
	if data, _, err := c.Get(ctx, seq); err != nil || data == nil || len(data) != 0 {
		t.Errorf("Get of a node created with nil data = %#v, %v; want empty, non-nil data", data, err)
	}
	if _, ok, err := c.Exists(ctx, "/job/config"); !ok || err != nil {
		t.Errorf("Exists = %v, %v", ok, err)
	}
	if _, ok, err := c.Exists(ctx, "/nosuch"); ok || err != nil {
		t.Errorf("Exists of an absent node = %v, %v", ok, err)
	}
	names, err := c.Children(ctx, "/job")
	if err != nil || len(names) != 2 {
		t.Errorf("Children = %v, %v", names, err)
	}
	res, err := c.MultiRead(ctx, reg.GetOp("/job/config"), reg.ChildrenOp("/job"), reg.GetOp("/nosuch"))
	if err != nil || len(res) != 3 || string(res[0].Data) != "cron: y" || len(res[1].Children) != 2 || !errors.Is(res[2].Err, reg.ErrNoNode) {
		t.Fatalf("MultiRead = %+v, %v", res, err)
	}
	out, err := c.Multi(ctx, reg.CheckOp("/job/config", 1), reg.CreateOp("/job/a", []byte("1"), reg.Persistent),
		reg.SetOp("/job/config", []byte("cron: z"), 1), reg.DeleteOp(seq, reg.AnyVersion))
	if err != nil || len(out) != 4 || out[1].Path != "/job/a" || out[2].Stat.Version != 2 {
		t.Fatalf("Multi = %+v, %v", out, err)
	}
	if _, st, err := direct.Get(ctx, "/job/a"); err != nil || out[1].Czxid == 0 || out[1].Czxid != st.Czxid {
		t.Fatalf("Multi's create reports Czxid %x; the registry has %+v, %v", out[1].Czxid, st, err)
	}
	if _, ok, _ := direct.Exists(ctx, seq); ok {
		t.Error("the transaction's delete was not applied")
	}
	if err := c.Delete(ctx, "/job/a", 0); err != nil {
		t.Fatal(err)
	}
	if err := reg.DeleteRecursive(ctx, c, "/job"); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := direct.Exists(ctx, "/job"); ok {
		t.Error("DeleteRecursive through the client left /job")
	}
}

// TestErrorsKeepTheirSentinels: a registry error crosses as the same
// sentinel inside an *reg.OpError with its op and path, and a failed
// transaction names its failing op.
func TestErrorsKeepTheirSentinels(t *testing.T) {
	_, c, _ := serve(t, httpreg.HandlerOptions{})
	ctx := ctx(t)
	if _, err := c.Create(ctx, "/a", nil, reg.Persistent); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Create(ctx, "/a/b", nil, reg.Persistent); err != nil {
		t.Fatal(err)
	}
	var oe *reg.OpError
	_, _, err := c.Get(ctx, "/nosuch")
	if !errors.Is(err, reg.ErrNoNode) || !errors.As(err, &oe) || oe.Op != "get" || oe.Path != "/nosuch" {
		t.Errorf("Get of an absent node: %v; want an OpError get /nosuch wrapping ErrNoNode", err)
	}
	for name, err := range map[string]error{
		"exists":  func() error { _, err := c.Create(ctx, "/a", nil, reg.Persistent); return err }(),
		"version": func() error { _, err := c.Set(ctx, "/a", nil, 7); return err }(),
		"empty":   c.Delete(ctx, "/a", reg.AnyVersion),
		"path":    func() error { _, err := c.Children(ctx, "no-slash"); return err }(),
	} {
		want := map[string]error{"exists": reg.ErrNodeExists, "version": reg.ErrBadVersion, "empty": reg.ErrNotEmpty, "path": reg.ErrInvalidArgument}[name]
		if !errors.Is(err, want) {
			t.Errorf("%s: %v; want %v", name, err, want)
		}
	}
	_, err = c.Multi(ctx, reg.CreateOp("/c", nil, reg.Persistent), reg.SetOp("/a", nil, 9))
	var me *reg.MultiError
	if !errors.Is(err, reg.ErrBadVersion) || !errors.As(err, &me) || me.Index != 1 || me.Op.Path != "/a" {
		t.Errorf("failed Multi: %v; want a MultiError naming op 1 (/a) wrapping ErrBadVersion", err)
	}
	if _, ok, _ := c.Exists(ctx, "/c"); ok {
		t.Error("a failed transaction's create was applied")
	}
}

// TestEphemeralsAndWatchesAreRefused: an ephemeral node would belong to
// the serving process's session, and watches are not carried: each is
// refused with a clear error, and nothing is created.
func TestEphemeralsAndWatchesAreRefused(t *testing.T) {
	direct, c, _ := serve(t, httpreg.HandlerOptions{})
	ctx := ctx(t)
	for _, mode := range []reg.CreateMode{reg.Ephemeral, reg.EphemeralSequential} {
		_, err := c.Create(ctx, "/e", nil, mode)
		if !errors.Is(err, reg.ErrInvalidArgument) || !strings.Contains(err.Error(), "host's session") {
			t.Errorf("Create %v: %v; want ErrInvalidArgument saying why", mode, err)
		}
	}
	if _, err := c.Multi(ctx, reg.CreateOp("/p", nil, reg.Persistent), reg.CreateOp("/e", nil, reg.Ephemeral)); !errors.Is(err, reg.ErrInvalidArgument) {
		t.Errorf("Multi with an ephemeral create: %v; want ErrInvalidArgument", err)
	}
	for _, p := range []string{"/e", "/p"} {
		if _, ok, _ := direct.Exists(ctx, p); ok {
			t.Errorf("%s was created", p)
		}
	}
	if _, _, _, err := c.GetW(ctx, "/"); !errors.Is(err, reg.ErrUnimplemented) {
		t.Errorf("GetW: %v; want ErrUnimplemented", err)
	}
	if _, _, _, err := c.ChildrenW(ctx, "/"); !errors.Is(err, reg.ErrUnimplemented) {
		t.Errorf("ChildrenW: %v; want ErrUnimplemented", err)
	}
}

// TestHostileRequestsAreBounded: a body over the limit is refused with
// 413, a transaction over the op limit and a body that is not the
// protocol's with 400, and the handler goes on serving.
func TestHostileRequestsAreBounded(t *testing.T) {
	_, c, base := serve(t, httpreg.HandlerOptions{MaxBody: 1 << 10, MaxOps: 3})
	ctx := ctx(t)
	if _, err := c.Create(ctx, "/big", bytes.Repeat([]byte("x"), 4<<10), reg.Persistent); !errors.Is(err, reg.ErrInvalidArgument) ||
		!strings.Contains(err.Error(), "request body over 1024 bytes") {
		t.Errorf("Create of 4 KiB through a 1 KiB limit: %v", err)
	}
	ops := []reg.Op{reg.CheckOp("/", -1), reg.CheckOp("/", -1), reg.CheckOp("/", -1), reg.CheckOp("/", -1)}
	if _, err := c.Multi(ctx, ops...); !errors.Is(err, reg.ErrInvalidArgument) || !strings.Contains(err.Error(), "at most 3") {
		t.Errorf("Multi of 4 ops through a limit of 3: %v", err)
	}
	for body, want := range map[string]int{
		`{"path": "/", "extra": 1}`: http.StatusBadRequest,
		`{"path": "/"} {}`:          http.StatusBadRequest,
		`[`:                         http.StatusBadRequest,
		strings.Repeat(" ", 2<<10):  http.StatusRequestEntityTooLarge,
	} {
		resp, err := http.Post(base+httpreg.PathPrefix+"get", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("POST get %.20q: status %d, want %d", body, resp.StatusCode, want)
		}
	}
	if _, _, err := c.Get(ctx, "/"); err != nil {
		t.Errorf("the handler stopped serving: %v", err)
	}
}

// TestClosedClient: calls after Close fail with reg.ErrClosed, and the
// client's session has ended.
func TestClosedClient(t *testing.T) {
	_, c, _ := serve(t, httpreg.HandlerOptions{})
	c.Close()
	if _, _, err := c.Get(ctx(t), "/"); !errors.Is(err, reg.ErrClosed) {
		t.Errorf("Get after Close: %v; want ErrClosed", err)
	}
	if !errors.Is(c.Session().Err(), reg.ErrClosed) {
		t.Errorf("session after Close: %v", c.Session().Err())
	}
}
