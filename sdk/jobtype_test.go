package sdk_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ejob-io/ejob/sdk"
	"github.com/ejob-io/ejob/sdk/sdktest"
	"github.com/ejob-io/ejob/spi"
	"github.com/ejob-io/ejob/spi/spitest"
)

// modeValidate accepts props whose "mode" is ok, fail or block.
func modeValidate(_ context.Context, req spi.ValidatePropsRequest) error {
	switch req.Props["mode"] {
	case "ok", "fail", "block":
		return nil
	}
	return fmt.Errorf("property `mode` is %q, want ok, fail or block: %w", req.Props["mode"], spi.ErrInvalidConfig)
}

// modeSimple succeeds, fails or waits for ctx, by props["mode"].
func modeSimple(ctx context.Context, sc spi.ShardingContext, props map[string]string) error {
	switch props["mode"] {
	case "ok":
		return nil
	case "block":
		<-ctx.Done()
		return errors.New("interrupted") // deliberately not wrapping ctx.Err()
	}
	return fmt.Errorf("item %d failed", sc.ShardingItem)
}

// modeDataflow streams: in mode ok it fetches two batches per item and then
// nothing; in mode block every fetch waits for ctx; in mode fail Process
// fails. It keeps no state across calls (the batch index travels in the
// data), so concurrent executions are independent.
func modeDataflow() sdk.DataflowFuncs[int] {
	return sdk.DataflowFuncs[int]{
		Fetch: func(ctx context.Context, sc spi.ShardingContext, props map[string]string) ([]int, error) {
			if props["mode"] == "block" {
				<-ctx.Done()
				return nil, ctx.Err()
			}
			return []int{sc.ShardingItem}, nil
		},
		Process: func(_ context.Context, sc spi.ShardingContext, props map[string]string, data []int) error {
			if props["mode"] == "fail" {
				return fmt.Errorf("item %d: cannot process %v", sc.ShardingItem, data)
			}
			return nil
		},
		Validate: modeValidate,
	}
}

func conformanceOptions(props map[string]string) *spitest.JobExecutorOptions {
	req := func(mode string) *spi.ExecuteRequest {
		p := map[string]string{"mode": mode}
		for k, v := range props {
			p[k] = v
		}
		return &spi.ExecuteRequest{
			Context: spi.ShardingContext{JobName: "test_job", TaskID: "t", ShardingTotalCount: 3},
			Props:   p,
		}
	}
	return &spitest.JobExecutorOptions{
		ValidProps:   []map[string]string{{"mode": "ok"}, {"mode": "block"}},
		InvalidProps: map[string]map[string]string{"missing_mode": {}, "unknown_mode": {"mode": "x"}},
		Succeed:      req("ok"),
		Fail:         req("fail"),
		Blocking:     req("block"),
		RunFor:       20 * time.Millisecond,
		Grace:        2 * time.Second,
	}
}

func TestJobTypeConformance(t *testing.T) {
	t.Parallel()
	simple := sdk.SimpleJobTypeWithValidate(modeSimple, modeValidate)
	// Non-streaming, Succeed fetches one batch; Fail is a process error.
	dataflow := sdk.DataflowJobType(modeDataflow())
	p := sdktest.Connect(t, sdk.Plugins{Version: "test", JobTypes: map[string]spi.JobExecutor{
		"SIMPLE_TEST": simple, "DATAFLOW_TEST": dataflow,
	}})
	nonStreaming := conformanceOptions(nil)
	// modeDataflow's ok mode never runs dry, so a streaming Succeed request
	// would not end; streaming conformance uses a fetch that runs dry
	// (TestDataflowStreamingConformance).
	tests := map[string]struct {
		impl spi.JobExecutor
		opts *spitest.JobExecutorOptions
	}{
		"simple/in-process":   {simple, nonStreaming},
		"simple/grpc":         {p.JobExecutor("simple_test"), nonStreaming},
		"dataflow/in-process": {dataflow, nonStreaming},
		"dataflow/grpc":       {p.JobExecutor("dataflow_test"), nonStreaming},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			spitest.TestJobExecutor(t, tt.impl, tt.opts)
		})
	}
}

// countdown is a streaming dataflow whose item i has i+1 batches of data
// left, tracked per (mode, job, item) as a real type would track an offset.
type countdown struct {
	mu   sync.Mutex
	left map[string]int
}

func (c *countdown) funcs() sdk.DataflowFuncs[string] {
	key := func(sc spi.ShardingContext, props map[string]string) string {
		return fmt.Sprintf("%s/%s/%d", props["mode"], sc.JobName, sc.ShardingItem)
	}
	return sdk.DataflowFuncs[string]{
		Fetch: func(ctx context.Context, sc spi.ShardingContext, props map[string]string) ([]string, error) {
			if props["mode"] == "block" {
				<-ctx.Done()
				return nil, ctx.Err()
			}
			c.mu.Lock()
			defer c.mu.Unlock()
			k := key(sc, props)
			if _, ok := c.left[k]; !ok {
				c.left[k] = sc.ShardingItem + 1
			}
			if c.left[k] <= 0 {
				return nil, nil
			}
			return []string{fmt.Sprintf("%s#%d", k, c.left[k])}, nil
		},
		Process: func(_ context.Context, sc spi.ShardingContext, props map[string]string, data []string) error {
			if props["mode"] == "fail" {
				return errors.New("process failed")
			}
			c.mu.Lock()
			defer c.mu.Unlock()
			// Concurrent calls for one item may fetch the same batch;
			// it is consumed once.
			if k := key(sc, props); c.left[k] > 0 {
				c.left[k]--
			}
			return nil
		},
		Validate: modeValidate,
	}
}

func TestDataflowStreamingConformance(t *testing.T) {
	t.Parallel()
	c := &countdown{left: map[string]int{}}
	df := sdk.DataflowJobType(c.funcs())
	p := sdktest.Connect(t, sdk.Plugins{JobTypes: map[string]spi.JobExecutor{"COUNTDOWN": df}})
	opts := conformanceOptions(map[string]string{sdk.PropStreamingProcess: "TRUE"})
	t.Run("in-process", func(t *testing.T) { spitest.TestJobExecutor(t, df, opts) })
	t.Run("grpc", func(t *testing.T) { spitest.TestJobExecutor(t, p.JobExecutor("countdown"), opts) })
}

// recorder is a DataflowFuncs whose fetches return the scripted batches
// in order (then nothing) and which records every call.
type recorder struct {
	batches    [][]int
	fetchErrAt int // fetch number (1-based) that fails; 0: none
	procErrAt  int // process number (1-based) that fails; 0: none
	// cancelAt cancels the execution's ctx during this process call.
	cancelAt int
	cancel   context.CancelFunc

	calls   []string
	fetches int
	procs   int
}

func (r *recorder) funcs() sdk.DataflowFuncs[int] {
	return sdk.DataflowFuncs[int]{
		Fetch: func(context.Context, spi.ShardingContext, map[string]string) ([]int, error) {
			r.fetches++
			r.calls = append(r.calls, "fetch")
			if r.fetches == r.fetchErrAt {
				return nil, errors.New("source down")
			}
			if r.fetches > len(r.batches) {
				return nil, nil
			}
			return r.batches[r.fetches-1], nil
		},
		Process: func(_ context.Context, _ spi.ShardingContext, _ map[string]string, data []int) error {
			r.procs++
			r.calls = append(r.calls, fmt.Sprint("process", data))
			if r.procs == r.cancelAt {
				r.cancel()
			}
			if r.procs == r.procErrAt {
				return errors.New("sink down")
			}
			return nil
		},
	}
}

func TestDataflowLoop(t *testing.T) {
	t.Parallel()
	three := [][]int{{1, 2}, {3}, {4}}
	tests := map[string]struct {
		streaming string // the streaming.process prop; "-" leaves it out
		rec       recorder
		wantCalls []string
		wantErr   string // substring; "" means success
		canceled  bool   // the error must wrap context.Canceled
	}{
		"one-off fetches once and processes": {
			streaming: "-", rec: recorder{batches: three},
			wantCalls: []string{"fetch", "process[1 2]"},
		},
		"one-off with nothing to do": {
			streaming: "false", rec: recorder{},
			wantCalls: []string{"fetch"},
		},
		"streaming runs until a fetch is empty": {
			streaming: "true", rec: recorder{batches: three},
			wantCalls: []string{"fetch", "process[1 2]", "fetch", "process[3]", "fetch", "process[4]", "fetch"},
		},
		"streaming is parsed ignoring case": {
			streaming: "True", rec: recorder{batches: three[:1]},
			wantCalls: []string{"fetch", "process[1 2]", "fetch"},
		},
		"anything but true is off, as Java's parseBoolean": {
			streaming: "yes", rec: recorder{batches: three},
			wantCalls: []string{"fetch", "process[1 2]"},
		},
		"an empty batch ends streaming even with more data behind it": {
			streaming: "true", rec: recorder{batches: [][]int{{1}, {}, {2}}},
			wantCalls: []string{"fetch", "process[1]", "fetch"},
		},
		"fetch error ends the item": {
			streaming: "true", rec: recorder{batches: three, fetchErrAt: 2},
			wantCalls: []string{"fetch", "process[1 2]", "fetch"},
			wantErr:   "item 4: fetch: source down",
		},
		"process error ends the item": {
			streaming: "true", rec: recorder{batches: three, procErrAt: 2},
			wantCalls: []string{"fetch", "process[1 2]", "fetch", "process[3]"},
			wantErr:   "item 4: process: sink down",
		},
		"cancellation stops streaming after the batch in progress": {
			streaming: "true", rec: recorder{batches: three, cancelAt: 2},
			wantCalls: []string{"fetch", "process[1 2]", "fetch", "process[3]"},
			wantErr:   "streaming stopped after 2 batches", canceled: true,
		},
		"a process error after cancellation is reported as cancelled": {
			streaming: "true", rec: recorder{batches: three, cancelAt: 1, procErrAt: 1},
			wantCalls: []string{"fetch", "process[1 2]"},
			wantErr:   "process: sink down", canceled: true,
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			rec := tt.rec
			rec.cancel = cancel
			props := map[string]string{}
			if tt.streaming != "-" {
				props[sdk.PropStreamingProcess] = tt.streaming
			}
			_, err := sdk.DataflowJobType(rec.funcs()).Execute(ctx, spi.ExecuteRequest{
				Context: spi.ShardingContext{JobName: "j", ShardingTotalCount: 5, ShardingItem: 4},
				Props:   props,
			})
			if !slices.Equal(rec.calls, tt.wantCalls) {
				t.Errorf("calls = %q\nwant    %q", rec.calls, tt.wantCalls)
			}
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("Execute error: %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("Execute error = %v, want one containing %q", err, tt.wantErr)
			case errors.Is(err, context.Canceled) != tt.canceled:
				t.Errorf("Execute error = %v; wraps context.Canceled: %v, want %v", err, !tt.canceled, tt.canceled)
			}
		})
	}
}

func TestJobTypeNotStartedWhenCtxEnded(t *testing.T) {
	t.Parallel()
	called := false
	simple := sdk.SimpleJobType(func(context.Context, spi.ShardingContext, map[string]string) error { called = true; return nil })
	rec := &recorder{batches: [][]int{{1}}}
	dataflow := sdk.DataflowJobType(rec.funcs())
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	for name, e := range map[string]spi.JobExecutor{"simple": simple, "dataflow": dataflow} {
		if _, err := e.Execute(ctx, spi.ExecuteRequest{}); !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "not started") {
			t.Errorf("%s: Execute = %v, want a not-started error wrapping context.Canceled", name, err)
		}
	}
	if called || len(rec.calls) != 0 {
		t.Errorf("user code ran under an ended ctx: simple %v, dataflow %q", called, rec.calls)
	}
}

func TestJobTypeValidateDefaultsToAccept(t *testing.T) {
	t.Parallel()
	noop := func(context.Context, spi.ShardingContext, map[string]string) error { return nil }
	rec := &recorder{}
	for name, e := range map[string]spi.JobExecutor{"simple": sdk.SimpleJobType(noop), "dataflow": sdk.DataflowJobType(rec.funcs())} {
		if err := e.Validate(t.Context(), spi.ValidatePropsRequest{JobName: "j", Props: map[string]string{"any": "thing"}}); err != nil {
			t.Errorf("%s: Validate = %v", name, err)
		}
	}
}

func TestJobTypeConstructorsRejectNilFuncs(t *testing.T) {
	t.Parallel()
	for name, build := range map[string]func(){
		"simple":           func() { sdk.SimpleJobType(nil) },
		"dataflow/fetch":   func() { sdk.DataflowJobType(sdk.DataflowFuncs[int]{Process: modeDataflow().Process}) },
		"dataflow/process": func() { sdk.DataflowJobType(sdk.DataflowFuncs[int]{Fetch: modeDataflow().Fetch}) },
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "sdk:") {
					t.Errorf("recovered %v, want an sdk panic", r)
				}
			}()
			build()
		})
	}
}

// TestFencingTokenReachesTheJobType: a SimpleJobType served through the
// real gRPC transport receives the item's fencing token.
func TestFencingTokenReachesTheJobType(t *testing.T) {
	t.Parallel()
	got := make(chan int64, 2)
	simple := sdk.SimpleJobType(func(_ context.Context, sc spi.ShardingContext, _ map[string]string) error {
		got <- sc.FencingToken
		return nil
	})
	p := sdktest.Connect(t, sdk.Plugins{JobTypes: map[string]spi.JobExecutor{"FENCED": simple}})
	for _, tok := range []int64{1<<40 + 9, 0} {
		req := spi.ExecuteRequest{Context: spi.ShardingContext{JobName: "j", ShardingTotalCount: 1, FencingToken: tok}}
		if _, err := p.JobExecutor("FENCED").Execute(t.Context(), req); err != nil {
			t.Fatal(err)
		}
		if g := <-got; g != tok {
			t.Errorf("the job type got fencing token %d, want %d", g, tok)
		}
	}
}
