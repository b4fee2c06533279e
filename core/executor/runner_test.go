package executor_test

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ejob-io/ejob/core/executor"
	"github.com/ejob-io/ejob/spi"
)

// batches is a DataflowJob that always has another batch, journaling calls.
type batches struct {
	h       *harness
	fetches atomic.Int32
	limit   int32 // fetch returns empty after this many batches; 0 = never
}

func (b *batches) Fetch(ctx context.Context, sc spi.ShardingContext) ([]int, error) {
	n := b.fetches.Add(1)
	b.h.j.add("fetch %d", n)
	if b.limit > 0 && n > b.limit {
		return nil, nil
	}
	return []int{int(n)}, nil
}

func (b *batches) Process(ctx context.Context, sc spi.ShardingContext, data []int) error {
	b.h.j.add("process %v", data)
	return nil
}

func dataflowCalls(h *harness) []string {
	var out []string
	for _, l := range h.j.get() {
		if l == "NeedSharding" || l[:min(len(l), 5)] == "fetch" || l[:min(len(l), 7)] == "process" {
			out = append(out, l)
		}
	}
	return out
}

func TestDataflow(t *testing.T) {
	tests := map[string]struct {
		streaming string
		limit     int32
		needAfter int32 // NeedSharding true once this many were asked; 0 = never
		want      []string
	}{
		"one-off":       {"false", 0, 0, []string{"fetch 1", "process [1]"}},
		"unset":         {"", 0, 0, []string{"fetch 1", "process [1]"}},
		"not java true": {" true", 0, 0, []string{"fetch 1", "process [1]"}},
		"streaming stops on NeedSharding": {"TRUE", 0, 3, []string{
			"fetch 1", "process [1]", "NeedSharding", "fetch 2", "process [2]", "NeedSharding",
			"fetch 3", "process [3]", "NeedSharding",
		}},
		"streaming stops on empty fetch": {"true", 2, 0, []string{
			"fetch 1", "process [1]", "NeedSharding", "fetch 2", "process [2]", "NeedSharding", "fetch 3",
		}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			h := newHarness([]int{0}, "", "")
			h.f.cfg.Props[executor.PropStreamingProcess] = tc.streaming
			var asked atomic.Int32
			h.f.needSharding = func() bool { return tc.needAfter > 0 && asked.Add(1) >= tc.needAfter }
			h.opts.Runner = executor.NewDataflow[int](&batches{h: h, limit: tc.limit}, h.f)
			if err := h.execute(t); err != nil {
				t.Fatal(err)
			}
			if got := dataflowCalls(h); !slices.Equal(got, tc.want) {
				t.Errorf("calls = %q, want %q", got, tc.want)
			}
			if len(h.reqs) != 0 {
				t.Errorf("item failed: %+v", <-h.reqs)
			}
		})
	}
}

func TestDataflowStreamingStopsOnCancel(t *testing.T) {
	h := newHarness([]int{0}, "", "")
	h.f.cfg.Props[executor.PropStreamingProcess] = "true"
	b := &batches{h: h}
	var err error
	h.opts.Runner = executor.SimpleFunc(func(ctx context.Context, sc spi.ShardingContext) error {
		ctx, cancel := context.WithCancel(ctx) // keeps the trigger's JobConfig
		defer cancel()
		err = executor.NewDataflow[int](cancelAfter{b, cancel, 2}, h.f).RunItem(ctx, sc)
		return err
	})
	if xerr := h.execute(t); xerr != nil {
		t.Fatal(xerr)
	}
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("RunItem = %v, want Canceled", err)
	}
	if n := b.fetches.Load(); n != 2 {
		t.Errorf("fetches %d, want 2", n)
	}
}

// cancelAfter cancels ctx in the n-th Process.
type cancelAfter struct {
	*batches
	cancel context.CancelFunc
	n      int
}

func (c cancelAfter) Process(ctx context.Context, sc spi.ShardingContext, data []int) error {
	if data[0] == c.n {
		c.cancel()
	}
	return c.batches.Process(ctx, sc, data)
}

type typedExec struct {
	got chan spi.ExecuteRequest
	err error
}

func (x typedExec) Execute(ctx context.Context, req spi.ExecuteRequest) (spi.ExecuteResponse, error) {
	x.got <- req
	return spi.ExecuteResponse{}, x.err
}

func (typedExec) Validate(context.Context, spi.ValidatePropsRequest) error { return nil }

func TestTypedRunnerGetsProps(t *testing.T) {
	h := newHarness([]int{1}, "", "")
	h.f.cfg.Props["script.command.line"] = "echo hi"
	x := typedExec{got: make(chan spi.ExecuteRequest, 1), err: errors.New("exit 1")}
	h.opts.Runner = executor.Typed{Executor: x}
	if err := h.execute(t); err != nil {
		t.Fatal(err)
	}
	req := <-x.got
	if req.Props["script.command.line"] != "echo hi" || req.Context.ShardingItem != 1 || *req.Context.ShardingParameter != "B" {
		t.Errorf("request = %+v", req)
	}
	// The handler hears each fact once: the job and item from the
	// pipeline, then the job type's own error.
	if herr := <-h.reqs; herr.ShardingItem != 1 || herr.Error.Message != `job "job" item 1: exit 1` {
		t.Errorf("handler request = %+v, want item 1 with message %q", herr, `job "job" item 1: exit 1`)
	}
}

// blockingExec blocks in Execute until its ctx ends, then returns ctx.Err().
type blockingExec struct{ calls atomic.Int32 }

func (b *blockingExec) Execute(ctx context.Context, _ spi.ExecuteRequest) (spi.ExecuteResponse, error) {
	b.calls.Add(1)
	<-ctx.Done()
	return spi.ExecuteResponse{}, ctx.Err()
}

func (b *blockingExec) Validate(context.Context, spi.ValidatePropsRequest) error { return nil }

// flagAfter reports resharding pending from its n-th check on.
type flagAfter struct {
	n      int32
	checks atomic.Int32
}

func (f *flagAfter) NeedSharding(context.Context) (bool, error) {
	return f.checks.Add(1) >= f.n, nil
}

func TestTypedStreamingItemStopsOnResharding(t *testing.T) {
	flag := &flagAfter{n: 3}
	x := &blockingExec{}
	r := executor.Typed{Executor: x, Sharding: flag, PollInterval: time.Millisecond}
	ctx := executor.WithJobConfigForTest(context.Background(), map[string]string{"streaming.process": "True"})
	if err := r.RunItem(ctx, spi.ShardingContext{JobName: "j", ShardingItem: 0}); err != nil {
		t.Fatalf("a streaming item stopped for resharding must complete normally, got %v", err)
	}
	if flag.checks.Load() < 3 || x.calls.Load() != 1 {
		t.Fatalf("checks %d, calls %d", flag.checks.Load(), x.calls.Load())
	}
}

func TestTypedNonStreamingItemIsNotStoppedByResharding(t *testing.T) {
	flag := &flagAfter{n: 1}
	x := &blockingExec{}
	r := executor.Typed{Executor: x, Sharding: flag, PollInterval: time.Millisecond}
	ctx, cancel := context.WithTimeout(executor.WithJobConfigForTest(context.Background(), map[string]string{}), 50*time.Millisecond)
	defer cancel()
	err := r.RunItem(ctx, spi.ShardingContext{JobName: "j"})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want the item's own deadline", err)
	}
	if flag.checks.Load() != 0 {
		t.Fatalf("a non-streaming item polled resharding %d times", flag.checks.Load())
	}
}
