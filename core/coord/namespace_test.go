package coord

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/ejob-io/ejob/core/reg"
	"github.com/ejob-io/ejob/core/reg/embedded"
	"github.com/ejob-io/ejob/internal/testkit"
)

// connLog records what a subscription hears.
type connLog struct {
	mu  sync.Mutex
	evs []reg.ConnState
}

func (l *connLog) add(ce reg.ConnEvent) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.evs = append(l.evs, ce.State)
}

func (l *connLog) get() []reg.ConnState {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]reg.ConnState(nil), l.evs...)
}

// TestNamespaceFanOut: every subscriber hears the current state first, as
// a WatchConnection subscription of its own would (a late one never hears
// a stale Reconnected), then every change in order; unsubscribed, it hears
// nothing more.
func TestNamespaceFanOut(t *testing.T) {
	srv := embedded.NewServer()
	c, err := srv.Connect("ns")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	ns := NewNamespace(c, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ns.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run = %v", err)
		}
	}()
	const wait = 5 * time.Second
	heard := func(l *connLog, want ...reg.ConnState) {
		t.Helper()
		testkit.Eventually(t, wait, "events "+statesString(want), func() bool { return statesString(l.get()) == statesString(want) })
	}

	var early connLog
	earlySub := &funcSub{conn: early.add}
	ns.subscribe(earlySub)
	heard(&early, reg.StateConnected)

	c.Suspend()
	heard(&early, reg.StateConnected, reg.StateSuspended)
	var late connLog
	ns.subscribe(&funcSub{conn: late.add})
	heard(&late, reg.StateSuspended)

	c.Resume()
	heard(&early, reg.StateConnected, reg.StateSuspended, reg.StateReconnected)
	heard(&late, reg.StateSuspended, reg.StateReconnected)
	var later connLog
	ns.subscribe(&funcSub{conn: later.add})
	heard(&later, reg.StateConnected)

	ns.unsubscribe(earlySub)
	c.Suspend()
	heard(&late, reg.StateSuspended, reg.StateReconnected, reg.StateSuspended)
	heard(&later, reg.StateConnected, reg.StateSuspended)
	if got := early.get(); len(got) != 3 {
		t.Errorf("an unsubscribed job heard %v", got)
	}
	c.Resume()
}

// funcSub is a subscriber made of a func (a job is one of its own).
type funcSub struct{ conn func(reg.ConnEvent) }

func (f *funcSub) nsConn(ce reg.ConnEvent) { f.conn(ce) }
func (f *funcSub) nsEnd(error)             {}

func statesString(s []reg.ConnState) string {
	var out string
	for _, st := range s {
		out += st.String() + " "
	}
	return out
}
