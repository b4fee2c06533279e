package sdk

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/ejob-io/ejob/spi"
)

// PropStreamingProcess is the DATAFLOW prop that turns streaming on. As
// upstream ElasticJob reads it (Java's Boolean.parseBoolean), "true" in
// any case means on; anything else, or no value, means off.
const PropStreamingProcess = "streaming.process"

// ValidateFunc checks a job's props when the job is configured; it returns
// an error wrapping spi.ErrInvalidConfig that names the offending property.
type ValidateFunc func(ctx context.Context, req spi.ValidatePropsRequest) error

// SimpleFunc is the logic of a SIMPLE job type: it runs one sharding item
// of one execution (upstream's SimpleJob.execute) with the job's props. It
// is called concurrently for the items of an execution and for different
// jobs, and must return soon after ctx is cancelled.
type SimpleFunc func(ctx context.Context, sc spi.ShardingContext, props map[string]string) error

type outputKey struct{}

// Output returns the writer of the running item's output: what a job
// type's function writes to it (fmt.Fprintln(sdk.Output(ctx), ...)) is
// returned to the host as the item's output, whether the item succeeds or
// fails, and shown by the console, the REST API and `ejob history
// --output`. It keeps the last spi.MaxOutputBytes bytes and is safe for
// concurrent use. Outside an item of SimpleJobType or DataflowJobType it
// discards what it is given.
func Output(ctx context.Context) io.Writer {
	if b, ok := ctx.Value(outputKey{}).(*spi.OutputBuffer); ok {
		return b
	}
	return io.Discard
}

// withOutput returns ctx carrying the item's output buffer for Output:
// the ctx's spi.LiveOutput (the host may show it while the item runs), or
// a new one.
func withOutput(ctx context.Context) (context.Context, *spi.OutputBuffer) {
	b := new(spi.OutputBuffer)
	if live := spi.LiveOutputFrom(ctx); live != nil {
		b = &live.OutputBuffer
	}
	return context.WithValue(ctx, outputKey{}, b), b
}

// SimpleJobType returns a job type that runs execute once per item and
// accepts any props. Serve it under a type name in Plugins.JobTypes.
//
// An item whose ctx has already ended is not started: Execute returns the
// ctx's error. An error from execute fails the item; when ctx has ended by
// then, the returned error wraps ctx.Err() too, so the host can tell a
// cancelled item from a failed one. It panics if execute is nil.
func SimpleJobType(execute SimpleFunc) spi.JobExecutor {
	return SimpleJobTypeWithValidate(execute, nil)
}

// SimpleJobTypeWithValidate is SimpleJobType with props checked by
// validate (nil accepts any props).
func SimpleJobTypeWithValidate(execute SimpleFunc, validate ValidateFunc) spi.JobExecutor {
	if execute == nil {
		panic("sdk: SimpleJobType: nil execute func")
	}
	return simpleJobType{execute: execute, validate: validate}
}

type simpleJobType struct {
	execute  SimpleFunc
	validate ValidateFunc
}

func (s simpleJobType) Execute(ctx context.Context, req spi.ExecuteRequest) (spi.ExecuteResponse, error) {
	if err := ctx.Err(); err != nil {
		return spi.ExecuteResponse{}, fmt.Errorf("item %d not started: %w", req.Context.ShardingItem, err)
	}
	ctx, out := withOutput(ctx)
	err := s.execute(ctx, req.Context, req.Props)
	resp := spi.ExecuteResponse{Output: out.Output()}
	if err != nil {
		return resp, withCtxErr(ctx, err)
	}
	return resp, nil
}

func (s simpleJobType) Validate(ctx context.Context, req spi.ValidatePropsRequest) error {
	return validateWith(ctx, s.validate, req)
}

// DataflowFuncs is the logic of a DATAFLOW job type (upstream's
// DataflowJob<T>): Fetch returns the next batch of an item's data, Process
// handles one batch. Both are called for many items and jobs at once, and
// must return soon after ctx is cancelled.
//
// Calls are stateless: the plugin process may be relaunched (even in the
// middle of a batch, if it crashes), and an item may move to another host
// after resharding. Keep the item's progress where Fetch finds it again (a
// committed offset, a status column, files moved aside), not in memory.
type DataflowFuncs[T any] struct {
	// Fetch returns the next batch for sc's item; an empty batch means
	// there is nothing (more) to do. Required.
	Fetch func(ctx context.Context, sc spi.ShardingContext, props map[string]string) ([]T, error)
	// Process handles one non-empty batch. Required.
	Process func(ctx context.Context, sc spi.ShardingContext, props map[string]string, data []T) error
	// Validate checks the job's props; nil accepts any props.
	Validate ValidateFunc
}

// DataflowJobType returns a job type that runs upstream's DATAFLOW loop for
// each item inside one Execute call, so an execution costs one RPC per
// item however many batches it handles:
//
//   - without streaming: fetch once; process the batch if it is not empty;
//   - with streaming (PropStreamingProcess "true", any case): fetch and
//     process until a fetch returns an empty batch or ctx ends; ctx is
//     checked before every fetch.
//
// An error from Fetch or Process ends the item with that error. When ctx
// ends during streaming, the item returns an error wrapping ctx.Err() after
// the batch in progress; an item whose ctx ended before it started is not
// started. The host cancels ctx when the host shuts down (after
// ejob.drainTimeout), when the execution timeout
// (ejob.execution.timeout.seconds) passes, and, for a streaming item, when
// resharding becomes pending: the host then counts the item as completed,
// as upstream's streaming loop stops on needSharding() and the item
// succeeds. The props the loop sees are the ones the execution started
// with; a config change takes effect at the next execution.
//
// It panics if Fetch or Process is nil.
func DataflowJobType[T any](f DataflowFuncs[T]) spi.JobExecutor {
	if f.Fetch == nil || f.Process == nil {
		panic("sdk: DataflowJobType: Fetch and Process are required")
	}
	return dataflowJobType[T]{f: f}
}

type dataflowJobType[T any] struct {
	f DataflowFuncs[T]
}

func (d dataflowJobType[T]) Execute(ctx context.Context, req spi.ExecuteRequest) (spi.ExecuteResponse, error) {
	ctx, out := withOutput(ctx)
	err := d.loop(ctx, req)
	return spi.ExecuteResponse{Output: out.Output()}, err
}

func (d dataflowJobType[T]) loop(ctx context.Context, req spi.ExecuteRequest) error {
	sc, props := req.Context, req.Props
	streaming := strings.EqualFold(props[PropStreamingProcess], "true")
	for batch := 0; ; batch++ {
		if err := ctx.Err(); err != nil {
			if batch == 0 {
				return fmt.Errorf("item %d not started: %w", sc.ShardingItem, err)
			}
			return fmt.Errorf("item %d: streaming stopped after %d batches: %w", sc.ShardingItem, batch, err)
		}
		data, err := d.f.Fetch(ctx, sc, props)
		if err != nil {
			return withCtxErr(ctx, fmt.Errorf("item %d: fetch: %w", sc.ShardingItem, err))
		}
		if len(data) == 0 {
			return nil
		}
		if err := d.f.Process(ctx, sc, props, data); err != nil {
			return withCtxErr(ctx, fmt.Errorf("item %d: process: %w", sc.ShardingItem, err))
		}
		if !streaming {
			return nil
		}
	}
}

func (d dataflowJobType[T]) Validate(ctx context.Context, req spi.ValidatePropsRequest) error {
	return validateWith(ctx, d.f.Validate, req)
}

func validateWith(ctx context.Context, validate ValidateFunc, req spi.ValidatePropsRequest) error {
	if validate == nil {
		return nil
	}
	return validate(ctx, req)
}

// withCtxErr makes err wrap ctx.Err() as well when ctx has ended, so that a
// function that failed because it was cancelled (a closed connection, a
// killed command) is reported as cancelled.
func withCtxErr(ctx context.Context, err error) error {
	if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
		return fmt.Errorf("%w (%w)", err, cerr)
	}
	return err
}

var (
	_ spi.JobExecutor = simpleJobType{}
	_ spi.JobExecutor = dataflowJobType[int]{}
)
