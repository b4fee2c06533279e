package kernel_test

import (
	"context"
	"testing"
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
// registry, at most 256 jobs are in Start; once the registry answers, all
// of them register.
func TestJobStartsAreBounded(t *testing.T) {
	const njobs, bound = 300, 256
	srv := embedded.NewServer()
	c, err := srv.Connect("starters")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	gc := gatedClient{Client: c, open: make(chan struct{})}
	s := newIdleScheduler(t, gc, hclog.Error, njobs)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	starting := func() int { return len(testkit.Goroutines([]string{"ejob/core/coord.(*Job).Start("}, nil)) }
	testkit.Eventually(t, 10*time.Second, "jobs in Start, waiting on the registry", func() bool { return starting() > 0 })
	time.Sleep(200 * time.Millisecond) // more starts, were they unbounded
	if n := starting(); n > bound {
		t.Errorf("%d jobs in Start at once, want at most %d", n, bound)
	}
	close(gc.open)
	rctx, rcancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer rcancel()
	if err := s.Ready(rctx); err != nil {
		t.Fatalf("not every job registered once the registry answered: %v", err)
	}
}
