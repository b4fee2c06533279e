package executor_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/ejob-io/ejob/core/executor"
	"github.com/ejob-io/ejob/spi"
)

// outputJob is a job type that prints "item N" and fails item 1.
type outputJob struct{}

func (outputJob) Execute(_ context.Context, req spi.ExecuteRequest) (spi.ExecuteResponse, error) {
	resp := spi.ExecuteResponse{Output: spi.Output{Text: fmt.Sprintf("out| item %d\n", req.Context.ShardingItem)}}
	if req.Context.ShardingItem == 1 {
		return resp, errors.New("boom")
	}
	return resp, nil
}

func (outputJob) Validate(context.Context, spi.ValidatePropsRequest) error { return nil }

// outputEvents keeps the completions' outputs by item.
type outputEvents struct {
	executor.NopEvents
	mu  sync.Mutex
	out map[int]spi.Output
}

func (e *outputEvents) ItemCompleted(_ context.Context, ev executor.ItemEvent) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.out[ev.Item] = ev.Output
}

// TestCompletionCarriesOutput checks that a typed item's output, a failed
// item's included, reaches its completion event, and that a runner that
// returns none completes without output.
func TestCompletionCarriesOutput(t *testing.T) {
	for name, runner := range map[string]executor.ItemRunner{
		"typed":  executor.Typed{Executor: outputJob{}},
		"simple": executor.SimpleFunc(func(context.Context, spi.ShardingContext) error { return nil }),
	} {
		t.Run(name, func(t *testing.T) {
			h := newHarness([]int{0, 1}, "LOG", "")
			ev := &outputEvents{out: map[int]spi.Output{}}
			h.opts.Events, h.opts.Runner = ev, runner
			_ = h.execute(t)
			for item := range 2 {
				want := spi.Output{}
				if name == "typed" {
					want.Text = fmt.Sprintf("out| item %d\n", item)
				}
				if got := ev.out[item]; got != want {
					t.Errorf("item %d completed with output %+v, want %+v", item, got, want)
				}
			}
		})
	}
}
