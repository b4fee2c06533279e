package zookeeper_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ejob-io/ejob/core/reg"
	"github.com/ejob-io/ejob/core/reg/zookeeper"
)

// recEvents collects a recursive watch's events for the tests here.
type recEvents struct {
	mu  sync.Mutex
	evs []reg.WatchEvent
}

func (r *recEvents) fn(ev reg.WatchEvent) {
	r.mu.Lock()
	r.evs = append(r.evs, ev)
	r.mu.Unlock()
}

// await waits for an event of typ on path after index from, and returns its
// index.
func (r *recEvents) await(t *testing.T, from int, typ reg.WatchEventType, path string) int {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		r.mu.Lock()
		for i := from + 1; i < len(r.evs); i++ {
			if r.evs[i].Type == typ && r.evs[i].Path == path {
				r.mu.Unlock()
				return i
			}
		}
		got := fmt.Sprint(r.evs)
		r.mu.Unlock()
		if time.Now().After(deadline) {
			t.Fatalf("no %v %s after event %d; got %s", typ, path, from, got)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestRecursiveOldServer: a server before 3.6 (UNIMPLEMENTED, then the
// connection closed) gives ErrUnimplemented, once on the wire: later calls
// fail at once; the session survives.
func TestRecursiveOldServer(t *testing.T) {
	proxy := startOldServerProxy(t, server.Addr())
	c := connect(t, testConfig(t, proxy.ln.Addr().String(), fmt.Sprintf("old-server-rec-%d", time.Now().UnixNano())))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sess := c.Session()
	for range 2 {
		err := c.WatchRecursive(ctx, "/", func(reg.WatchEvent) { t.Error("fn called") })
		if !errors.Is(err, reg.ErrUnimplemented) {
			t.Fatalf("WatchRecursive on an old server = %v", err)
		}
	}
	if n := proxy.addWatch.Load(); n != 1 {
		t.Fatalf("%d addWatch requests reached the old server, want 1", n)
	}
	if _, err := c.Create(ctx, "/after", nil, reg.Persistent); err != nil {
		t.Fatal(err)
	}
	if c.Session() != sess || sess.Err() != nil {
		t.Fatal("the session did not survive the old server's dropped connection")
	}
}

// TestRecursiveWithDigest: a recursive watch on a node only the digest may
// read resyncs and delivers across reconnections (its addWatch waits for
// go-zookeeper's setAuth, as every request of ejob's does; ZooKeeper 3.8.0
// checks no ACL on addWatch, so this does not prove the order, but newer
// servers filter notifications by ACL).
func TestRecursiveWithDigest(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cfg := testConfig(t, server.Addr(), fmt.Sprintf("rec-auth-%d", time.Now().UnixNano()))
	cfg.Digest = "digest:password"
	c := connect(t, cfg)
	o := connect(t, cfg)
	if _, err := c.Create(ctx, "/sec", nil, reg.Persistent); err != nil {
		t.Fatal(err)
	}
	r := &recEvents{}
	if err := c.WatchRecursive(ctx, "/sec", r.fn); err != nil {
		t.Fatal(err)
	}
	events := c.WatchConnection(ctx)
	expectState(t, events, reg.StateConnected)
	last := -1
	for i := range 5 {
		c.DropConnection()
		expectState(t, events, reg.StateSuspended)
		expectState(t, events, reg.StateReconnected)
		last = r.await(t, last, reg.EventResync, "/sec")
		p := fmt.Sprintf("/sec/n%d", i)
		if _, err := o.Create(ctx, p, nil, reg.Persistent); err != nil {
			t.Fatal(err)
		}
		last = r.await(t, last, reg.EventNodeCreated, p)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, ev := range r.evs {
		if ev.Type == reg.EventNotWatching {
			t.Fatalf("the watch ended: %+v", ev)
		}
	}
}

// TestRecursiveOneShotSamePathAcrossReconnect: a one-shot data watch on the
// recursively watched path itself, kept over a reconnection (go-zookeeper
// re-sends it with setWatches), neither ends the recursive watch (the
// server keeps one mode per path before 3.9, ZOOKEEPER-4466) nor misses its
// change.
func TestRecursiveOneShotSamePathAcrossReconnect(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ns := fmt.Sprintf("rec-same-%d", time.Now().UnixNano())
	c := connect(t, testConfig(t, server.Addr(), ns))
	o := connect(t, testConfig(t, server.Addr(), ns))
	if _, err := o.Create(ctx, "/a", nil, reg.Persistent); err != nil {
		t.Fatal(err)
	}
	r := &recEvents{}
	if err := c.WatchRecursive(ctx, "/a", r.fn); err != nil {
		t.Fatal(err)
	}
	events := c.WatchConnection(ctx)
	expectState(t, events, reg.StateConnected)
	last := -1
	for i := range 3 {
		_, _, w, err := c.GetW(ctx, "/a")
		if err != nil {
			t.Fatal(err)
		}
		_, _, ew, err := c.ExistsW(ctx, "/a")
		if err != nil {
			t.Fatal(err)
		}
		c.DropConnection()
		expectState(t, events, reg.StateSuspended)
		expectState(t, events, reg.StateReconnected)
		last = r.await(t, last, reg.EventResync, "/a")
		// Below the path: the recursive watch is still recursive.
		p := fmt.Sprintf("/a/n%d", i)
		if _, err := o.Create(ctx, p, nil, reg.Persistent); err != nil {
			t.Fatal(err)
		}
		last = r.await(t, last, reg.EventNodeCreated, p)
		// The path itself: both watch kinds fire.
		if _, err := o.Set(ctx, "/a", []byte(fmt.Sprint(i)), reg.AnyVersion); err != nil {
			t.Fatal(err)
		}
		for _, ch := range []<-chan reg.WatchEvent{w, ew} {
			select {
			case ev := <-ch:
				if ev.Type != reg.EventNodeDataChanged || ev.Path != "/a" {
					t.Fatalf("one-shot watch got %+v", ev)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("one-shot watch on the recursively watched path did not fire")
			}
		}
		last = r.await(t, last, reg.EventNodeDataChanged, "/a")
		// And the recursive watch goes on after the one-shot fired.
		p = fmt.Sprintf("/a/m%d", i)
		if _, err := o.Create(ctx, p, nil, reg.Persistent); err != nil {
			t.Fatal(err)
		}
		last = r.await(t, last, reg.EventNodeCreated, p)
	}
}

// BenchmarkRecursiveNotifications: 10,000 creates under a recursively
// watched path (as multis of 100, four in flight at a time, written by
// another client), and the time
// until the watch's fn has seen them all. Reported: notifications per
// second (from the first write to the last event), the writes' own time,
// and the lag from the last write's reply to the last event.
func BenchmarkRecursiveNotifications(b *testing.B) {
	const n, batch, writers = 10000, 100, 4
	ctx := context.Background()
	var total, writing, lag time.Duration
	for i := range b.N {
		ns := fmt.Sprintf("rec-bench-%d-%d", time.Now().UnixNano(), i)
		c := connect(b, testConfig(b, server.Addr(), ns))
		o := connect(b, testConfig(b, server.Addr(), ns))
		if _, err := o.Create(ctx, "/w", nil, reg.Persistent); err != nil {
			b.Fatal(err)
		}
		var seen atomic.Int64
		all := make(chan time.Time, 1)
		if err := c.WatchRecursive(ctx, "/w", func(ev reg.WatchEvent) {
			if ev.Type == reg.EventNodeCreated && seen.Add(1) == n {
				all <- time.Now()
			}
		}); err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		var g sync.WaitGroup
		for wr := range writers {
			g.Go(func() {
				for k := wr * batch; k < n; k += writers * batch {
					ops := make([]reg.Op, batch)
					for j := range ops {
						ops[j] = reg.CreateOp(fmt.Sprintf("/w/n%06d", k+j), nil, reg.Persistent)
					}
					if _, err := o.Multi(ctx, ops...); err != nil {
						b.Error(err)
						return
					}
				}
			})
		}
		g.Wait()
		wrote := time.Now()
		select {
		case done := <-all:
			total += done.Sub(start)
			writing += wrote.Sub(start)
			lag += max(done.Sub(wrote), 0)
		case <-time.After(60 * time.Second):
			b.Fatalf("fn saw %d of %d creates", seen.Load(), n)
		}
		b.StopTimer()
		_ = c.Close()
		_ = o.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(n)*float64(b.N)/total.Seconds(), "notifications/s")
	b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms/10k-seen")
	b.ReportMetric(float64(writing.Milliseconds())/float64(b.N), "ms/10k-written")
	b.ReportMetric(float64(lag.Microseconds())/1000/float64(b.N), "ms-lag-after-last-write")
}

var _ reg.RecursiveWatcher = (*zookeeper.Client)(nil)
