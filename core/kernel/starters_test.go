package kernel_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ejob-io/ejob/core/reg"
	"github.com/ejob-io/ejob/core/reg/embedded"
	"github.com/ejob-io/ejob/internal/testkit"
)

// gatedClient is a registry client whose reads (Get, MultiRead) wait
// until open is closed.
type gatedClient struct {
	reg.Client
	open chan struct{}
}

func (g gatedClient) wait(ctx context.Context) error {
	select {
	case <-g.open:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (g gatedClient) Get(ctx context.Context, path string) ([]byte, reg.Stat, error) {
	if err := g.wait(ctx); err != nil {
		return nil, reg.Stat{}, err
	}
	return g.Client.Get(ctx, path)
}

func (g gatedClient) MultiRead(ctx context.Context, ops ...reg.ReadOp) ([]reg.ReadResult, error) {
	if err := g.wait(ctx); err != nil {
		return nil, err
	}
	return g.Client.MultiRead(ctx, ops...)
}

// The jobs of a scheduler start on a bounded number of goroutines: one
// goroutine per job in a 10,000-job start would leave descriptors the
// runtime keeps for good (~4.5 MB). With every startup stuck on the
// registry, 256 jobs are in Start (the bound, every starter busy); once
// the registry answers, all of them register. In a synctest bubble, so
// "stuck" is the state every goroutine has reached once the bubble is
// idle: an unbounded start has all its jobs in Start by then.
func TestJobStartsAreBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const njobs, bound = 300, 256
		srv := embedded.NewServer()
		c, err := srv.Connect("starters")
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		gc := gatedClient{Client: c, open: make(chan struct{})}
		s := newIdleScheduler(t, gc, hclog.Error, njobs)
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		done := make(chan error, 1)
		go func() { done <- s.Run(ctx) }()
		synctest.Wait()
		n := len(testkit.Goroutines([]string{"ejob/core/coord.(*Job).Start("}, nil))
		if n != bound {
			t.Errorf("%d jobs in Start once every startup waits on the registry, want %d (the bound)", n, bound)
		}
		close(gc.open)
		rctx, rcancel := context.WithTimeout(ctx, 30*time.Second) // fake time
		defer rcancel()
		if err := s.Ready(rctx); err != nil {
			t.Fatalf("not every job registered once the registry answered: %v", err)
		}
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(time.Minute): // fake time
			t.Error("Run did not return after its ctx ended")
		}
	})
}
