package zookeeper_test

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/ejob-io/ejob/core/reg"
)

// TestLibraryVersion pins go-zookeeper at the version library.go describes
// (the module's go.mod): another version must be checked against every item
// there first.
func TestLibraryVersion(t *testing.T) {
	mod, err := os.ReadFile(filepath.Join("..", "..", "..", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for line := range strings.Lines(string(mod)) {
		if f := strings.Fields(line); len(f) >= 2 && strings.HasPrefix(f[0], "github.com/go-zookeeper/zk") ||
			len(f) >= 3 && f[0] == "replace" && strings.HasPrefix(f[1], "github.com/go-zookeeper/zk") {
			got = append(got, strings.TrimSpace(line))
		}
	}
	if want := []string{"github.com/go-zookeeper/zk v1.0.4"}; !slices.Equal(got, want) {
		t.Fatalf("go.mod has %q, want %q: library.go describes v1.0.4", got, want)
	}
}

// TestLibraryWatchTable: the table of go-zookeeper's one-shot watches the
// connection keeps (library.go) follows go-zookeeper's own: after a
// reconnection the setWatches request go-zookeeper writes lists exactly the
// table (each kind of watch armed: data by getData and exists, exist by an
// exists of a missing node, child by getChildren), and a notification
// disarms what it fires. With a digest, go-zookeeper's setAuth answer
// reaches it while the connection waits for the setWatches.
func TestLibraryWatchTable(t *testing.T) {
	for _, digest := range []string{"", "digest:password"} {
		t.Run(fmt.Sprintf("digest=%v", digest != ""), func(t *testing.T) { testLibraryWatchTable(t, digest) })
	}
}

func testLibraryWatchTable(t *testing.T, digest string) {
	cfg := testConfig(t, server.Addr(), fmt.Sprintf("lib-watches-%d", time.Now().UnixNano()))
	cfg.Digest = digest
	c := connect(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, p := range []string{"/d", "/e"} {
		if _, err := c.Create(ctx, p, nil, reg.Persistent); err != nil {
			t.Fatal(err)
		}
	}
	zc := c.LibConn()
	d, e, missing, root := c.Abs("/d"), c.Abs("/e"), c.Abs("/missing"), c.Abs("/")
	_, _, dataCh, err := zc.GetW(d)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := zc.ExistsW(e); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := zc.ExistsW(missing); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := zc.ChildrenW(root); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{d: "data", e: "data", missing: "exist", root: "child"}
	if got := c.WatchTable(); !maps.Equal(got, want) {
		t.Fatalf("watch table %v, want %v", got, want)
	}

	events := c.WatchConnection(ctx)
	c.DropConnection()
	waitState(ctx, t, events, reg.StateSuspended)
	waitState(ctx, t, events, reg.StateReconnected)
	// A reply on the new connection reaches go-zookeeper once its
	// setWatches is written.
	if _, _, err := zc.Get(d); err != nil {
		t.Fatal(err)
	}
	if n := c.Deviations(); n != 0 {
		t.Fatalf("go-zookeeper's setWatches differs from the watch table (%d deviations, see the log)", n)
	}

	if _, err := c.Set(ctx, "/d", []byte("x"), reg.AnyVersion); err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-dataCh:
		if ev.Type != zk.EventNodeDataChanged {
			t.Fatalf("data watch fired with %v", ev)
		}
	case <-ctx.Done():
		t.Fatal("the re-set data watch never fired")
	}
	delete(want, d)
	if got := c.WatchTable(); !maps.Equal(got, want) {
		t.Fatalf("watch table after the data change %v, want %v", got, want)
	}
}

// TestLibrarySplitSetWatches: a watch table over 128 KiB goes out in
// several setWatches requests (go-zookeeper splits it); the connection
// waits for the first, and the table matches what they list.
func TestLibrarySplitSetWatches(t *testing.T) {
	c := connect(t, testConfig(t, server.Addr(), fmt.Sprintf("lib-split-%d", time.Now().UnixNano())))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	zc := c.LibConn()
	long := strings.Repeat("x", 200)
	const n = 700 // 700 paths of ~230 bytes: two requests
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			if _, _, _, err := zc.ExistsW(c.Abs(fmt.Sprintf("/%s-%d", long, i))); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if got := len(c.WatchTable()); got != n {
		t.Fatalf("%d watches in the table, want %d", got, n)
	}
	events := c.WatchConnection(ctx)
	c.DropConnection()
	waitState(ctx, t, events, reg.StateSuspended)
	waitState(ctx, t, events, reg.StateReconnected)
	// go-zookeeper writes the second request once the first is answered.
	for c.SetWatchesSent() < 2 {
		select {
		case <-ctx.Done():
			t.Fatalf("%d setWatches requests written, want 2", c.SetWatchesSent())
		case <-time.After(5 * time.Millisecond):
		}
	}
	if _, _, err := zc.Exists(c.Abs("/")); err != nil {
		t.Fatal(err)
	}
	if d := c.Deviations(); d != 0 {
		t.Fatalf("%d deviations from library.go (see the log)", d)
	}
}
