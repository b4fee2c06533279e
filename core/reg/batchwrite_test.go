package reg_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ejob-io/ejob/core/reg"
	"github.com/ejob-io/ejob/core/reg/embedded"
	"github.com/ejob-io/ejob/internal/testkit"
)

// gatedWriter is a real registry client whose first Multi waits for gate,
// and which counts its Multis.
type gatedWriter struct {
	reg.Client
	gate  chan struct{}
	calls atomic.Int32
}

func (g *gatedWriter) Multi(ctx context.Context, ops ...reg.Op) ([]reg.OpResult, error) {
	if g.calls.Add(1) == 1 {
		<-g.gate
	}
	return g.Client.Multi(ctx, ops...)
}

// batchWriterRun makes one call (creates /first) go out alone and wait at
// the gate, queues the calls ops gives (call i's ops), opens the gate and
// returns each call's error and the number of Multis sent.
func batchWriterRun(t *testing.T, c reg.Client, n int, ops func(i int) []reg.Op) ([]error, int) {
	t.Helper()
	ctx := context.Background()
	g := &gatedWriter{Client: c, gate: make(chan struct{})}
	b := reg.NewBatchWriter(g)
	first := make(chan error, 1)
	go func() { first <- b.Multi(ctx, reg.CreateOp("/first", nil, reg.Persistent)) }()
	testkit.Eventually(t, 10*time.Second, "the first batch in flight", func() bool { return g.calls.Load() > 0 })
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = b.Multi(ctx, ops(i)...)
		}()
	}
	testkit.Eventually(t, 10*time.Second, "every call queued behind the first batch", func() bool {
		return reg.BatchWriterQueued(b) >= n
	})
	close(g.gate)
	wg.Wait()
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	return errs, int(g.calls.Load())
}

// TestBatchWriter: the calls made while a batch is in flight commit
// together; a call whose ops fail fails alone, the others of its batch
// commit; a batch larger than BatchMaxOps goes out in several Multis.
func TestBatchWriter(t *testing.T) {
	t.Parallel()
	t.Run("together", func(t *testing.T) {
		t.Parallel()
		c := connectEmbedded(t)
		const n = 50
		errs, multis := batchWriterRun(t, c, n, func(i int) []reg.Op {
			p := "/j" + strconv.Itoa(i)
			return []reg.Op{reg.CreateOp(p, []byte(p), reg.Persistent), reg.CreateOp(p+"/x", nil, reg.Ephemeral)}
		})
		for i, err := range errs {
			if err != nil {
				t.Errorf("call %d: %v", i, err)
			}
		}
		if multis != 2 {
			t.Errorf("%d Multis for 1 + %d calls, want 2 (the first alone, then the rest together)", multis, n)
		}
		for i := range n {
			p := "/j" + strconv.Itoa(i)
			if data, _, err := c.Get(context.Background(), p); err != nil || string(data) != p {
				t.Errorf("%s = %q, %v", p, data, err)
			}
		}
	})
	t.Run("one fails", func(t *testing.T) {
		t.Parallel()
		c := connectEmbedded(t)
		if _, err := c.Create(context.Background(), "/taken", nil, reg.Persistent); err != nil {
			t.Fatal(err)
		}
		const n, bad = 20, 7
		errs, multis := batchWriterRun(t, c, n, func(i int) []reg.Op {
			p := "/j" + strconv.Itoa(i)
			ops := []reg.Op{reg.CreateOp(p, nil, reg.Persistent)}
			if i == bad {
				ops = append(ops, reg.CreateOp("/taken", nil, reg.Persistent))
			}
			return ops
		})
		for i, err := range errs {
			if i == bad {
				if !errors.Is(err, reg.ErrNodeExists) {
					t.Errorf("call %d: %v, want ErrNodeExists", i, err)
				}
				continue
			}
			if err != nil {
				t.Errorf("call %d: %v", i, err)
			}
		}
		if multis != 2+n {
			t.Errorf("%d Multis, want %d (the first, the failed batch, each call again alone)", multis, 2+n)
		}
		for i := range n {
			_, ok, err := c.Exists(context.Background(), "/j"+strconv.Itoa(i))
			if err != nil || ok != (i != bad) {
				t.Errorf("/j%d exists = %v, %v", i, ok, err)
			}
		}
	})
	t.Run("split", func(t *testing.T) {
		t.Parallel()
		c := connectEmbedded(t)
		const n, per = 3, reg.BatchMaxOps * 2 / 5
		errs, multis := batchWriterRun(t, c, n, func(i int) []reg.Op {
			ops := make([]reg.Op, 0, per)
			for k := range per {
				ops = append(ops, reg.CreateOp(fmt.Sprintf("/c%d-%d", i, k), nil, reg.Persistent))
			}
			return ops
		})
		for i, err := range errs {
			if err != nil {
				t.Errorf("call %d: %v", i, err)
			}
		}
		if multis != 3 {
			t.Errorf("%d Multis, want 3 (the first, then %d ops in two)", multis, n*per)
		}
	})
}

func connectEmbedded(t *testing.T) reg.Client {
	t.Helper()
	c, err := embedded.NewServer().Connect("batch")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}
