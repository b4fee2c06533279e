package executor

import (
	"context"
	"maps"
	"slices"
	"time"

	"github.com/ejob-io/ejob/spi"
)

// DistributeOnce runs a hook once per cluster-wide trigger, on the last
// instance to start (AtLastStarted) or to complete (AtLastCompleted), and
// makes the others wait for it up to timeout (<= 0: no timeout). It is
// upstream's GuaranteeService (behind
// AbstractDistributeOnceElasticJobListener); package coord implements it
// on the registry (coord.Job).
type DistributeOnce interface {
	AtLastStarted(ctx context.Context, sc ShardingContexts, timeout time.Duration, hook func(context.Context) error) error
	AtLastCompleted(ctx context.Context, sc ShardingContexts, timeout time.Duration, hook func(context.Context) error) error
}

// SPIListener adapts an spi.JobListener to Listener, with the description
// its Describe gave for the job.
//
// A common listener's Before/After are called directly on every trigger. A
// distribute-once listener (desc.DistributeOnce) goes through guarantee:
// its BeforeJobExecuted runs only on the last instance to start and its
// AfterJobExecuted only on the last to complete (upstream's
// AbstractDistributeOnceElasticJobListener); a wait that times out returns
// the guarantee's error (coord.TimeoutError, upstream's "Job timeout.
// timeout mills is %s."), which the pipeline reports to the error handler.
type SPIListener struct {
	// Listener is called with the job's current props (JobConfig(ctx)).
	Listener spi.JobListener
	Desc     spi.ListenerDescription
	// Guarantee is required when Desc.DistributeOnce.
	Guarantee DistributeOnce
}

var _ Listener = SPIListener{}

// Order implements Listener.
func (l SPIListener) Order() int { return l.Desc.Order }

// BeforeJobExecuted implements Listener.
func (l SPIListener) BeforeJobExecuted(ctx context.Context, sc ShardingContexts) error {
	call := func(ctx context.Context) error { return l.Listener.BeforeJobExecuted(ctx, l.request(ctx, sc)) }
	if !l.Desc.DistributeOnce {
		return call(ctx)
	}
	return l.Guarantee.AtLastStarted(ctx, sc, l.Desc.StartedTimeout, call)
}

// AfterJobExecuted implements Listener.
func (l SPIListener) AfterJobExecuted(ctx context.Context, sc ShardingContexts) error {
	call := func(ctx context.Context) error { return l.Listener.AfterJobExecuted(ctx, l.request(ctx, sc)) }
	if !l.Desc.DistributeOnce {
		return call(ctx)
	}
	return l.Guarantee.AtLastCompleted(ctx, sc, l.Desc.CompletedTimeout, call)
}

func (l SPIListener) request(ctx context.Context, sc ShardingContexts) spi.ListenerRequest {
	var props map[string]string
	if cfg := sharedJobConfig(ctx); cfg != nil {
		props = maps.Clone(cfg.Props) // the listener may keep or modify them
	}
	return spi.ListenerRequest{JobName: sc.JobName, Props: props, Contexts: SPIContexts(sc)}
}

// SPIContexts converts sc to its spi form (copies; the listener may keep
// them).
func SPIContexts(sc ShardingContexts) spi.ShardingContexts {
	return spi.ShardingContexts{
		TaskID:                 sc.TaskID,
		JobName:                sc.JobName,
		ShardingTotalCount:     sc.ShardingTotalCount,
		JobParameter:           sc.JobParameter,
		Items:                  slices.Clone(sc.Items),
		ShardingItemParameters: maps.Clone(sc.ShardingItemParameters),
	}
}
