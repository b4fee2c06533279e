package regcount_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/ejob-io/ejob/core/reg"
	"github.com/ejob-io/ejob/core/reg/embedded"
	"github.com/ejob-io/ejob/core/reg/regcount"
)

func TestCountsEachCallOnceByClass(t *testing.T) {
	inner, err := embedded.NewServer().Connect("count")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var calls []regcount.Call
	c := regcount.New(inner, regcount.WithObserver(func(call regcount.Call) {
		mu.Lock()
		calls = append(calls, call)
		mu.Unlock()
	}))
	defer c.Close()
	ctx := context.Background()

	// Writes: a create with parents is one request at this interface.
	if _, err := c.Create(ctx, "/a/b", []byte("x"), reg.Persistent, reg.WithParents()); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Set(ctx, "/a/b", []byte("y"), reg.AnyVersion); err != nil {
		t.Fatal(err)
	}
	// A failed request still counts.
	if err := c.Delete(ctx, "/missing", reg.AnyVersion); err == nil {
		t.Fatal("deleting a missing node succeeded")
	}
	// Reads.
	c.Get(ctx, "/a/b")
	c.Exists(ctx, "/a")
	c.Children(ctx, "/a")
	// One read of two ops, one of them failing.
	if res, err := c.MultiRead(ctx, reg.GetOp("/a/b"), reg.ChildrenOp("/missing")); err != nil || string(res[0].Data) != "y" || res[1].Err == nil {
		t.Fatalf("MultiRead = %+v, %v", res, err)
	}
	// Watches.
	c.GetW(ctx, "/a/b")
	c.ExistsW(ctx, "/a/c")
	c.ChildrenW(ctx, "/a")
	// One multi of three ops.
	if _, err := c.Multi(ctx, reg.CheckOp("/a", reg.AnyVersion), reg.CreateOp("/a/c", nil, reg.Persistent), reg.DeleteOp("/a/c", reg.AnyVersion)); err != nil {
		t.Fatal(err)
	}
	// Not requests.
	c.Session()
	c.Namespace()

	got := c.Counts()
	want := regcount.Counts{Reads: 4, Writes: 3, Multis: 1, Watches: 3}
	if got != want {
		t.Fatalf("counts = %+v, want %+v", got, want)
	}
	if got.Total() != 11 {
		t.Fatalf("total = %d, want 11", got.Total())
	}
	if d := got.Sub(regcount.Counts{Reads: 1}); d.Reads != 3 || d.Total() != 10 {
		t.Fatalf("Sub = %+v", d)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(calls) != 11 {
		t.Fatalf("observer saw %d calls, want 11", len(calls))
	}
	if mr := calls[6]; mr.Kind != regcount.Read || mr.Ops != 2 || mr.Path != "/a/b" || mr.Method != "MultiRead" {
		t.Fatalf("multiread call = %+v", mr)
	}
	last := calls[len(calls)-1]
	if last.Kind != regcount.Multi || last.Ops != 3 || last.Path != "/a" || last.Method != "Multi" {
		t.Fatalf("multi call = %+v", last)
	}
	if c.Unwrap() != reg.Client(inner) {
		t.Fatal("Unwrap does not return the wrapped client")
	}
}

// WatchRecursive passes through (fn gets the wrapped client's events) and
// counts as one watch request however many events it delivers; a wrapped
// client without recursive watches answers ErrUnimplemented.
func TestWatchRecursiveCountsOnce(t *testing.T) {
	inner, err := embedded.NewServer().Connect("count")
	if err != nil {
		t.Fatal(err)
	}
	c := regcount.New(inner)
	defer c.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	evs := make(chan reg.WatchEvent, 10)
	if err := c.WatchRecursive(ctx, "/r", func(ev reg.WatchEvent) { evs <- ev }); err != nil {
		t.Fatal(err)
	}
	before := c.Counts()
	if _, err := inner.Create(ctx, "/r", nil, reg.Persistent); err != nil {
		t.Fatal(err)
	}
	if _, err := inner.Create(ctx, "/r/x", nil, reg.Persistent); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"/r", "/r/x"} {
		if ev := <-evs; ev.Type != reg.EventNodeCreated || ev.Path != want {
			t.Fatalf("event %+v, want created %s", ev, want)
		}
	}
	if got := c.Counts(); got != (regcount.Counts{Watches: 1}) || before != got {
		t.Fatalf("counts = %+v (before the events %+v), want one watch", got, before)
	}
	plain := regcount.New(noRecursive{inner})
	if err := plain.WatchRecursive(ctx, "/r", func(reg.WatchEvent) {}); !errors.Is(err, reg.ErrUnimplemented) {
		t.Fatalf("WatchRecursive on a client without it = %v", err)
	}
}

// noRecursive hides the wrapped client's WatchRecursive.
type noRecursive struct{ reg.Client }

// MultiReadAppend is one read request, as MultiRead, with the wrapped
// client's results appended after what dst holds.
func TestMultiReadAppendCountsOnce(t *testing.T) {
	inner, err := embedded.NewServer().Connect("count")
	if err != nil {
		t.Fatal(err)
	}
	c := regcount.New(inner)
	defer c.Close()
	ctx := context.Background()
	if _, err := c.Create(ctx, "/a", []byte("x"), reg.Persistent); err != nil {
		t.Fatal(err)
	}
	before := c.Counts()
	res, err := c.MultiReadAppend(ctx, make([]reg.ReadResult, 1), reg.GetOp("/a"), reg.ChildrenOp("/missing"))
	if err != nil || len(res) != 3 || string(res[1].Data) != "x" || res[2].Err == nil {
		t.Fatalf("MultiReadAppend = %+v, %v", res, err)
	}
	if d := c.Counts().Sub(before); d != (regcount.Counts{Reads: 1}) {
		t.Fatalf("MultiReadAppend counted %+v, want one read", d)
	}
}
