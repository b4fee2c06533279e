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
// together; a call whose ops fail fails alone, with its own op's index,
// and the others of its batch commit in one more Multi; a batch larger
// than BatchMaxOps goes out in several Multis.
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
				var me *reg.MultiError
				if !errors.Is(err, reg.ErrNodeExists) || !errors.As(err, &me) || me.Index != 1 || me.Op.Path != "/taken" {
					t.Errorf("call %d: %v, want ErrNodeExists at its op 1 (/taken)", i, err)
				}
				continue
			}
			if err != nil {
				t.Errorf("call %d: %v", i, err)
			}
		}
		if multis != 3 {
			t.Errorf("%d Multis, want 3 (the first, the failed batch, the others again together)", multis)
		}
		for i := range n {
			_, ok, err := c.Exists(context.Background(), "/j"+strconv.Itoa(i))
			if err != nil || ok != (i != bad) {
				t.Errorf("/j%d exists = %v, %v", i, ok, err)
			}
		}
	})
	t.Run("two fail", func(t *testing.T) {
		t.Parallel()
		c := connectEmbedded(t)
		if _, err := c.Create(context.Background(), "/taken", nil, reg.Persistent); err != nil {
			t.Fatal(err)
		}
		const n = 12
		bad := map[int]bool{3: true, 9: true}
		errs, multis := batchWriterRun(t, c, n, func(i int) []reg.Op {
			ops := []reg.Op{reg.CreateOp("/j"+strconv.Itoa(i), nil, reg.Persistent)}
			if bad[i] {
				ops = append(ops, reg.CreateOp("/taken", nil, reg.Persistent))
			}
			return ops
		})
		for i, err := range errs {
			var me *reg.MultiError
			switch {
			case bad[i] && (!errors.As(err, &me) || me.Index != 1):
				t.Errorf("call %d: %v, want its op 1 failed", i, err)
			case !bad[i] && err != nil:
				t.Errorf("call %d: %v", i, err)
			}
		}
		if multis != 4 {
			t.Errorf("%d Multis, want 4 (the first, then one more for each failing call, the last committing the rest)", multis)
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

// lossyWriter is a real registry client whose first Multi waits for gate
// and whose second (the first batch of queued calls) is applied and then
// reported lost, as a connection lost before the reply would be.
type lossyWriter struct {
	reg.Client
	gate  chan struct{}
	calls atomic.Int32
}

func (g *lossyWriter) Multi(ctx context.Context, ops ...reg.Op) ([]reg.OpResult, error) {
	switch g.calls.Add(1) {
	case 1:
		<-g.gate
	case 2:
		if _, err := g.Client.Multi(ctx, ops...); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("multi: %w", reg.ErrConnectionLoss)
	}
	return g.Client.Multi(ctx, ops...)
}

// TestBatchWriterResults: MultiResults calls batched together each get
// their own ops' results; after an unknown outcome (a connection lost with
// the batch applied) a MultiResults call gets the error and is not sent
// again, while a Multi call of the same batch is; a call whose ctx ended
// before its batch went out is not sent.
func TestBatchWriterResults(t *testing.T) {
	t.Parallel()
	run := func(t *testing.T, w interface {
		reg.Writer
		open()
		multis() int
	}, calls func(b *reg.BatchWriter) []func()) int {
		b := reg.NewBatchWriter(w)
		first := make(chan error, 1)
		go func() { first <- b.Multi(context.Background(), reg.CreateOp("/first", nil, reg.Persistent)) }()
		testkit.Eventually(t, 10*time.Second, "the first batch in flight", func() bool { return w.multis() > 0 })
		fs := calls(b)
		var wg sync.WaitGroup
		for _, f := range fs {
			wg.Add(1)
			go func() { defer wg.Done(); f() }()
		}
		testkit.Eventually(t, 10*time.Second, "every call queued behind the first batch", func() bool {
			return reg.BatchWriterQueued(b) >= len(fs)
		})
		w.open()
		wg.Wait()
		if err := <-first; err != nil {
			t.Fatal(err)
		}
		return w.multis()
	}
	t.Run("own results", func(t *testing.T) {
		t.Parallel()
		c := connectEmbedded(t)
		w := &gatedWriter{Client: c, gate: make(chan struct{})}
		const n = 10
		res := make([][]reg.OpResult, n)
		errs := make([]error, n)
		multis := run(t, gated{w}, func(b *reg.BatchWriter) []func() {
			var fs []func()
			for i := range n {
				fs = append(fs, func() {
					p := "/r" + strconv.Itoa(i)
					res[i], errs[i] = b.MultiResults(context.Background(),
						reg.CreateOp(p, nil, reg.Persistent), reg.CreateOp(p+"/x", nil, reg.Ephemeral))
				})
			}
			return fs
		})
		if multis != 2 {
			t.Errorf("%d Multis for 1 + %d calls, want 2", multis, n)
		}
		for i := range n {
			p := "/r" + strconv.Itoa(i)
			if errs[i] != nil || len(res[i]) != 2 || res[i][0].Path != p || res[i][1].Path != p+"/x" || res[i][1].Czxid == 0 {
				t.Errorf("call %d: %+v, %v; want the results of %s and %s/x", i, res[i], errs[i], p, p)
			}
		}
	})
	t.Run("unknown outcome", func(t *testing.T) {
		t.Parallel()
		c := connectEmbedded(t)
		w := &lossyWriter{Client: c, gate: make(chan struct{})}
		var onceErr, plainErr error
		multis := run(t, lossy{w}, func(b *reg.BatchWriter) []func() {
			return []func(){
				func() { _, onceErr = b.MultiResults(context.Background(), reg.CreateOp("/once", nil, reg.Persistent)) },
				func() { plainErr = b.Multi(context.Background(), reg.SetOp("/first", []byte("again"), reg.AnyVersion)) },
			}
		})
		if !errors.Is(onceErr, reg.ErrConnectionLoss) {
			t.Errorf("MultiResults after an unknown outcome: %v, want ErrConnectionLoss", onceErr)
		}
		if plainErr != nil {
			t.Errorf("Multi after an unknown outcome: %v, want it sent again and applied", plainErr)
		}
		if multis != 3 {
			t.Errorf("%d Multis, want 3 (the first, the lost batch, the Multi call again alone)", multis)
		}
		if _, ok, err := c.Exists(context.Background(), "/once"); err != nil || !ok {
			t.Errorf("/once exists = %v, %v: the lost batch was applied once", ok, err)
		}
	})
	t.Run("ctx ended before sent", func(t *testing.T) {
		t.Parallel()
		c := connectEmbedded(t)
		w := &gatedWriter{Client: c, gate: make(chan struct{})}
		ctx, cancel := context.WithCancel(context.Background())
		var err error
		run(t, cancelling{gated{w}, cancel}, func(b *reg.BatchWriter) []func() {
			return []func(){func() { _, err = b.MultiResults(ctx, reg.CreateOp("/late", nil, reg.Persistent)) }}
		})
		if !errors.Is(err, context.Canceled) {
			t.Errorf("MultiResults with its ctx ended before sending: %v, want context.Canceled", err)
		}
		if _, ok, _ := c.Exists(context.Background(), "/late"); ok {
			t.Error("a call whose ctx ended before its batch went out was applied")
		}
	})
}

// gated and lossy give the writers the controls TestBatchWriterResults
// drives.
type gated struct{ *gatedWriter }

func (g gated) open()       { close(g.gate) }
func (g gated) multis() int { return int(g.calls.Load()) }

// cancelling ends the queued call's ctx before it opens the gate.
type cancelling struct {
	gated
	cancel func()
}

func (g cancelling) open() { g.cancel(); g.gated.open() }

type lossy struct{ *lossyWriter }

func (g lossy) open()       { close(g.gate) }
func (g lossy) multis() int { return int(g.calls.Load()) }
