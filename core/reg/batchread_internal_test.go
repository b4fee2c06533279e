package reg

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ejob-io/ejob/internal/testkit"
)

// mapReader is a Reader of fixed nodes whose MultiRead waits for gate and
// counts its calls.
type mapReader struct {
	nodes map[string]string
	gate  chan struct{}
	calls atomic.Int32
	fail  error
}

func (m *mapReader) Get(_ context.Context, p string) ([]byte, Stat, error) {
	if v, ok := m.nodes[p]; ok {
		return []byte(v), Stat{}, nil
	}
	return nil, Stat{}, &OpError{Op: "get", Path: p, Err: ErrNoNode}
}

func (m *mapReader) Exists(_ context.Context, p string) (Stat, bool, error) {
	_, ok := m.nodes[p]
	return Stat{}, ok, nil
}

func (m *mapReader) Children(context.Context, string) ([]string, error) { return nil, nil }

func (m *mapReader) MultiRead(ctx context.Context, ops ...ReadOp) ([]ReadResult, error) {
	m.calls.Add(1)
	<-m.gate
	if m.fail != nil {
		return nil, m.fail
	}
	return ReadEach(ctx, m, ops...)
}

// TestBatchReader: the calls made while a batch is in flight go out
// together as the next one, and each gets its own ops' results, in order,
// absent nodes as their op's error; a failed batch fails its calls.
func TestBatchReader(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := &mapReader{nodes: map[string]string{}, gate: make(chan struct{})}
	for i := range 50 {
		m.nodes["/n"+strconv.Itoa(i)] = "v" + strconv.Itoa(i)
	}
	b := NewBatchReader(m)
	first := make(chan error, 1)
	go func() {
		_, err := b.Read(ctx, GetOp("/n0"))
		first <- err
	}()
	testkit.Eventually(t, 10*time.Second, "the first batch in flight", func() bool { return m.calls.Load() > 0 })
	const n = 100
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			k := strconv.Itoa(i % 50)
			res, err := b.Read(ctx, GetOp("/n"+k), GetOp("/missing"+k))
			switch {
			case err != nil:
				errs <- err
			case len(res) != 2 || string(res[0].Data) != "v"+k || !errors.Is(res[1].Err, ErrNoNode):
				errs <- errors.New("call " + strconv.Itoa(i) + ": wrong results")
			}
		}()
	}
	testkit.Eventually(t, 10*time.Second, "every call queued behind the first batch", func() bool { return b.q.queued() >= n })
	close(m.gate)
	wg.Wait()
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if c := m.calls.Load(); c != 2 {
		t.Errorf("%d MultiReads for 1 + %d calls, want 2 (the first alone, then the rest together)", c, n)
	}
	// An invalid op fails its own call; a cancelled ctx its own.
	if _, err := b.Read(ctx, GetOp("no-slash")); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("invalid op: %v", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := b.Read(cctx, GetOp("/n1")); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
	// A batch's error is every one of its calls'.
	m.fail = ErrClosed
	if _, err := b.Read(ctx, GetOp("/n1")); !errors.Is(err, ErrClosed) {
		t.Errorf("failed batch: %v", err)
	}
}
