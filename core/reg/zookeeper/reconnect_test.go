package zookeeper_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/ejob-io/ejob/core/reg"
)

// TestReconnectWithWatchesAndQueuedRequests reconnects a client that holds a
// one-shot watch while requests wait to be sent. go-zookeeper re-sets its
// watches with the last zxid it saw (sendSetWatches, on its loop goroutine)
// while its reader, already started, records the zxids of the queued
// requests' replies: without the connection holding those replies back
// until the setWatches request is written, the race detector reports the
// two goroutines.
func TestReconnectWithWatchesAndQueuedRequests(t *testing.T) {
	c := connect(t, testConfig(t, server.Addr(), fmt.Sprintf("reconnect-race-%d", time.Now().UnixNano())))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := c.Create(ctx, "/w", []byte("x"), reg.Persistent); err != nil {
		t.Fatal(err)
	}
	events := c.WatchConnection(ctx)
	zc, path := c.LibConn(), c.Abs("/w")
	if _, _, _, err := zc.GetW(path); err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		release := c.HoldDials()
		c.DropConnection()
		waitState(ctx, t, events, reg.StateSuspended)
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		for k := range 8 {
			wg.Go(func() {
				var err error
				if k%2 == 0 {
					_, _, err = zc.Get(path)
				} else {
					_, _, _, err = zc.GetW(path) // its reply arms a watch
				}
				errs <- err
			})
		}
		release()
		waitState(ctx, t, events, reg.StateReconnected)
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Logf("round %d: a queued read failed: %v", i, err)
			}
		}
	}
	if n := c.Deviations(); n != 0 {
		t.Fatalf("go-zookeeper deviated from library.go %d times", n)
	}
}

func waitState(ctx context.Context, t *testing.T, events <-chan reg.ConnEvent, want reg.ConnState) {
	t.Helper()
	for {
		select {
		case ev := <-events:
			if ev.State == want {
				return
			}
		case <-ctx.Done():
			t.Fatalf("no %v", want)
		}
	}
}
