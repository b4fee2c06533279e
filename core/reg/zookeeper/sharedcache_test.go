package zookeeper_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/ejob-io/ejob/core/reg"
)

// TestSharedCacheOldServer: against a server without recursive watches
// (before 3.6) a SharedCache falls back to a TreeCache per subtree, after
// one addWatch request, and its views follow their subtrees.
func TestSharedCacheOldServer(t *testing.T) {
	proxy := startOldServerProxy(t, server.Addr())
	ns := fmt.Sprintf("old-server-shared-%d", time.Now().UnixNano())
	c := connect(t, testConfig(t, proxy.ln.Addr().String(), ns))
	w := connect(t, testConfig(t, server.Addr(), ns))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, p := range []string{"/a/config", "/b/config"} {
		if _, err := w.Create(ctx, p, []byte("v1"), reg.Persistent, reg.WithParents()); err != nil {
			t.Fatal(err)
		}
	}
	sc := reg.NewSharedCache(c)
	a := sc.Track("/a", nil)
	defer a.Close()
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- sc.Run(runCtx) }()
	defer func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	b := sc.Track("/b", nil)
	defer b.Close()
	for _, v := range []*reg.CacheView{a, b} {
		select {
		case <-v.Initialized():
		case <-ctx.Done():
			t.Fatal("a view never loaded")
		}
	}
	if _, err := w.Set(ctx, "/b/config", []byte("v2"), reg.AnyVersion); err != nil {
		t.Fatal(err)
	}
	for {
		if d, _, ok := b.Get("/b/config"); ok && string(d) == "v2" {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("the change never reached the view")
		case <-time.After(10 * time.Millisecond):
		}
	}
	if d, _, ok := a.Get("/a/config"); !ok || string(d) != "v1" {
		t.Fatalf("a's config %q %v", d, ok)
	}
	if n := proxy.addWatch.Load(); n != 1 {
		t.Fatalf("%d addWatch requests reached the old server, want 1", n)
	}
}
