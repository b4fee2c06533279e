package executor_test

import (
	"context"
	"testing"

	"github.com/ejob-io/ejob/core/config"
	"github.com/ejob-io/ejob/core/executor"
	"github.com/ejob-io/ejob/spi"
)

// nopFacade answers every call at once with no I/O.
type nopFacade struct {
	cfg *config.JobConfiguration
	sc  executor.ShardingContexts
}

func (f nopFacade) Config(context.Context) (*config.JobConfiguration, error) { return f.cfg, nil }
func (nopFacade) CheckEnvironment(context.Context) error                     { return nil }
func (f nopFacade) ShardingContexts(context.Context) (executor.ShardingContexts, error) {
	return f.sc, nil
}
func (nopFacade) MisfireIfRunning(context.Context, []int) (bool, error) { return false, nil }
func (nopFacade) RegisterBegin(context.Context, executor.ShardingContexts) error {
	return nil
}
func (nopFacade) RegisterCompleted(context.Context, executor.ShardingContexts, []int) error {
	return nil
}
func (nopFacade) ExecuteMisfired(context.Context, []int) (bool, error) { return false, nil }
func (nopFacade) ClearMisfire(context.Context, []int) error            { return nil }
func (nopFacade) SetMisfire(context.Context) error                     { return nil }
func (nopFacade) NeedSharding(context.Context) (bool, error)           { return false, nil }
func (nopFacade) FailoverIfNecessary(context.Context) error            { return nil }
func (nopFacade) SetMisfireExcept(context.Context, []int) error        { return nil }
func (nopFacade) JoinCatchUp(_ context.Context, sc executor.ShardingContexts) (executor.ShardingContexts, error) {
	return sc, nil
}
func (nopFacade) PreArm(context.Context) (executor.ShardingContexts, bool, error) {
	return executor.ShardingContexts{}, false, nil
}
func (nopFacade) ConfirmArmed(context.Context, executor.ShardingContexts) bool { return false }
func (nopFacade) Disarm(context.Context)                                       {}
func (nopFacade) Paused() (bool, <-chan struct{})                              { return false, nil }

// BenchmarkTrigger measures the pipeline's own cost per trigger with a
// no-op facade and no-op items: one item (inline) and eight (pooled).
func BenchmarkTrigger(b *testing.B) {
	for _, n := range []int{1, 8} {
		b.Run(map[int]string{1: "1item", 8: "8items"}[n], func(b *testing.B) {
			benchTrigger(b, n, executor.SimpleFunc(func(context.Context, spi.ShardingContext) error { return nil }))
		})
	}
}

// benchTrigger runs triggers of an n-item job whose items runner runs.
func benchTrigger(b *testing.B, n int, runner executor.ItemRunner) {
	items := make([]int, n)
	for i := range items {
		items[i] = i
	}
	cfg := config.New("job", n)
	f := nopFacade{cfg: cfg, sc: executor.ShardingContexts{
		TaskID: "job@-@x@-@READY@-@1@-@1", JobName: "job", ShardingTotalCount: n, Items: items,
	}}
	e, err := executor.New("job", executor.Options{Facade: f, AvailableCPUs: 2, Runner: runner})
	if err != nil {
		b.Fatal(err)
	}
	ctx := b.Context()
	b.ReportAllocs()
	for b.Loop() {
		if err := e.Execute(ctx, executor.NormalTrigger, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// nopJobType is an in-process job type that does nothing.
type nopJobType struct{}

func (nopJobType) Execute(context.Context, spi.ExecuteRequest) (spi.ExecuteResponse, error) {
	return spi.ExecuteResponse{}, nil
}
func (nopJobType) Validate(context.Context, spi.ValidatePropsRequest) error { return nil }

// BenchmarkTriggerTyped is BenchmarkTrigger's one item run through a job
// type (executor.Typed), as a host runs SCRIPT and HTTP items: with the
// item's output and its live output slot.
func BenchmarkTriggerTyped(b *testing.B) {
	benchTrigger(b, 1, executor.Typed{Executor: nopJobType{}})
}
