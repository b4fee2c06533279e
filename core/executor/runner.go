package executor

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/ejob-io/ejob/core/config"
	"github.com/ejob-io/ejob/spi"
)

// ItemRunner runs one sharding item of one execution. It is called from
// several goroutines at once (one per pool worker) and must return soon
// after ctx is cancelled (execution timeout, job removal, shutdown).
type ItemRunner interface {
	RunItem(ctx context.Context, sc spi.ShardingContext) error
}

// OutputRunner is an ItemRunner that also returns the item's output (what
// it printed or returned, see spi.Output), whether the item succeeded or
// failed. The pipeline calls RunItemOutput instead of RunItem and records
// the output of an item's last try with its completion event
// (ItemEvent.Output).
type OutputRunner interface {
	ItemRunner
	RunItemOutput(ctx context.Context, sc spi.ShardingContext) (spi.Output, error)
}

type configKey struct{}

// JobConfig returns a copy of the job configuration the current trigger
// loaded (it is in the ctx the pipeline gives an ItemRunner), or nil
// outside one. Item runners read props from it rather than from the
// registry, so a trigger sees one configuration throughout (as upstream's
// DataflowJobExecutor reads streaming.process from the config the trigger
// loaded). A copy: the trigger's own is shared with the coordinator (see
// Facade.Config), and a runner may modify what it gets.
func JobConfig(ctx context.Context) *config.JobConfiguration {
	if cfg := sharedJobConfig(ctx); cfg != nil {
		return cfg.Clone()
	}
	return nil
}

// sharedJobConfig is JobConfig without the copy, for the pipeline's own
// readers, which never modify it.
func sharedJobConfig(ctx context.Context) *config.JobConfiguration {
	cfg, _ := ctx.Value(configKey{}).(*config.JobConfiguration)
	return cfg
}

func withJobConfig(ctx context.Context, cfg *config.JobConfiguration) context.Context {
	return context.WithValue(ctx, configKey{}, cfg)
}

// SimpleFunc is an in-process SIMPLE job: called once per item.
type SimpleFunc func(ctx context.Context, sc spi.ShardingContext) error

var _ ItemRunner = SimpleFunc(nil)

// RunItem implements ItemRunner.
func (f SimpleFunc) RunItem(ctx context.Context, sc spi.ShardingContext) error { return f(ctx, sc) }

// ErrResharding is the cancellation cause of a streaming typed item stopped
// because resharding became pending.
var ErrResharding = errors.New("resharding pending: streaming stopped")

// DefaultReshardingPoll is how often a streaming typed item checks for
// pending resharding.
const DefaultReshardingPoll = time.Second

// Typed runs items through a job-type SPI implementation (SCRIPT, HTTP, a
// plugin's type), passing the trigger's props.
//
// A plugin's DATAFLOW type runs its whole fetch/process loop inside one
// Execute call, so it cannot ask the registry whether resharding is
// pending. When Sharding is set and the props turn streaming.process on,
// Typed polls Sharding every PollInterval during the call and cancels the
// item's ctx with cause ErrResharding once resharding is pending; an item
// stopped that way completes normally, as upstream's streaming loop breaks
// on needSharding() and the item succeeds.
type Typed struct {
	Executor     spi.JobExecutor
	Sharding     ShardingChecker
	PollInterval time.Duration
}

var _ OutputRunner = Typed{}

// RunItem implements ItemRunner.
func (t Typed) RunItem(ctx context.Context, sc spi.ShardingContext) error {
	_, err := t.RunItemOutput(ctx, sc)
	return err
}

// RunItemOutput implements OutputRunner: the output is the job type's
// (spi.ExecuteResponse.Output).
func (t Typed) RunItemOutput(ctx context.Context, sc spi.ShardingContext) (spi.Output, error) {
	var props map[string]string
	if cfg := sharedJobConfig(ctx); cfg != nil {
		props = maps.Clone(cfg.Props) // the job type may keep or modify them
	}
	if t.Sharding != nil && parseJavaBool(props[PropStreamingProcess]) {
		var stop func()
		ctx, stop = t.stopOnResharding(ctx)
		defer stop()
	}
	resp, err := t.Executor.Execute(ctx, spi.ExecuteRequest{Context: sc, Props: props})
	if err != nil {
		if errors.Is(context.Cause(ctx), ErrResharding) {
			return resp.Output, nil
		}
		return resp.Output, err // the pipeline names the job and item; the transport, the plugin and type
	}
	return resp.Output, nil
}

// stopOnResharding returns a ctx cancelled with ErrResharding once
// resharding is pending, and a func that ends the watch.
func (t Typed) stopOnResharding(parent context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(parent)
	every := t.PollInterval
	if every <= 0 {
		every = DefaultReshardingPoll
	}
	done := make(chan struct{})
	go func() {
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-tick.C:
				if need, err := t.Sharding.NeedSharding(ctx); err == nil && need {
					cancel(ErrResharding)
					return
				}
			}
		}
	}()
	return ctx, func() {
		close(done)
		cancel(nil)
	}
}

// PropStreamingProcess is the DATAFLOW prop that turns on streaming.
const PropStreamingProcess = "streaming.process"

// DataflowJob is an in-process DATAFLOW job (upstream's DataflowJob<T>).
type DataflowJob[T any] interface {
	Fetch(ctx context.Context, sc spi.ShardingContext) ([]T, error)
	Process(ctx context.Context, sc spi.ShardingContext, data []T) error
}

// ShardingChecker reports pending resharding; Facade satisfies it.
type ShardingChecker interface {
	NeedSharding(ctx context.Context) (bool, error)
}

// Dataflow runs a DataflowJob per item with the semantics of upstream's
// DataflowJobExecutor: fetch; if data, process; with streaming.process
// ("true" in any case, Java's Boolean.parseBoolean) fetch again until a
// fetch is empty, resharding is pending, or ctx is cancelled. Streaming is
// read from the trigger's configuration (JobConfig), so a config change
// does not stop a running loop.
type Dataflow[T any] struct {
	Job      DataflowJob[T]
	Sharding ShardingChecker
}

var _ ItemRunner = Dataflow[int]{}

// NewDataflow returns a Dataflow runner for job.
func NewDataflow[T any](job DataflowJob[T], sharding ShardingChecker) Dataflow[T] {
	return Dataflow[T]{Job: job, Sharding: sharding}
}

// parseJavaBool is Java's Boolean.parseBoolean: "true", ignoring case.
func parseJavaBool(s string) bool { return strings.EqualFold(s, "true") }

// RunItem implements ItemRunner.
func (d Dataflow[T]) RunItem(ctx context.Context, sc spi.ShardingContext) error {
	streaming := false
	if cfg := sharedJobConfig(ctx); cfg != nil {
		streaming = parseJavaBool(cfg.Props[PropStreamingProcess])
	}
	data, err := d.Job.Fetch(ctx, sc)
	if err != nil {
		return fmt.Errorf("dataflow fetch: %w", err)
	}
	for len(data) > 0 {
		if err := d.Job.Process(ctx, sc, data); err != nil {
			return fmt.Errorf("dataflow process: %w", err)
		}
		// Upstream asks needSharding() first even when not streaming; it
		// cannot change the outcome, so ejob saves the registry read.
		if !streaming {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("dataflow streaming stopped: %w", context.Cause(ctx))
		}
		if d.Sharding != nil {
			need, err := d.Sharding.NeedSharding(ctx)
			if err != nil {
				return fmt.Errorf("dataflow streaming: need sharding: %w", err)
			}
			if need {
				return nil
			}
		}
		if data, err = d.Job.Fetch(ctx, sc); err != nil {
			return fmt.Errorf("dataflow fetch: %w", err)
		}
	}
	return nil
}
