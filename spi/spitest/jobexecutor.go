package spitest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/ejob-io/ejob/spi"
)

// JobExecutorOptions tells the job-executor suite what the implementation
// accepts and which requests succeed, fail or block. A nil
// *JobExecutorOptions, or a zero field, skips the checks that need it, with
// the reason in the skip message; a type that cannot block (one that runs
// a quick computation) leaves Blocking nil.
type JobExecutorOptions struct {
	// ValidProps are props Validate must accept.
	ValidProps []map[string]string
	// InvalidProps are named props Validate must reject with an error
	// wrapping spi.ErrInvalidConfig.
	InvalidProps map[string]map[string]string
	// Succeed is a request Execute must complete without error.
	Succeed *spi.ExecuteRequest
	// Fail is a request Execute must report as a failed item (an error).
	Fail *spi.ExecuteRequest
	// Blocking is a request that runs far longer than the check waits (a
	// script that sleeps a minute, an HTTP call to a server that never
	// answers). The suite cancels it and requires a prompt return.
	Blocking *spi.ExecuteRequest
	// RunFor is how long Blocking runs before the suite cancels it;
	// default 100ms.
	RunFor time.Duration
	// Grace is how soon after cancellation Execute must return; default 5s.
	Grace time.Duration
}

// TestJobExecutor runs every check of JobExecutorChecks(opts) against e,
// each as a subtest of t.
func TestJobExecutor(t *testing.T, e spi.JobExecutor, opts *JobExecutorOptions) {
	t.Helper()
	RunChecks(t, e, JobExecutorChecks(opts))
}

// JobExecutorChecks returns the conformance checks of the spi.JobExecutor
// contract:
//
//   - validate_accepts_valid_props / validate_rejects_invalid_props /
//     validate_errors_wrap_invalid_config: as for error handlers, with
//     spi.ErrInvalidConfig for rejected props;
//   - execute_succeeds: opts.Succeed returns no error;
//   - execute_fails: opts.Fail returns an error;
//   - execute_precancelled: opts.Blocking under an already-cancelled ctx
//     returns within Grace with an error wrapping context.Canceled;
//   - execute_cancelled: opts.Blocking cancelled after RunFor returns within
//     Grace with an error wrapping context.Canceled;
//   - execute_deadline: opts.Blocking under a RunFor deadline returns within
//     Grace of it with an error wrapping context.DeadlineExceeded;
//   - concurrent_calls: many goroutines running opts.Succeed at once all
//     succeed.
func JobExecutorChecks(opts *JobExecutorOptions) []Check[spi.JobExecutor] {
	var o JobExecutorOptions
	if opts != nil {
		o = *opts
	}
	if o.RunFor <= 0 {
		o.RunFor = 100 * time.Millisecond
	}
	if o.Grace <= 0 {
		o.Grace = 5 * time.Second
	}
	needBlocking := func() error {
		if o.Blocking == nil {
			return Skip("no JobExecutorOptions.Blocking given (the type has no request that runs long enough to cancel)")
		}
		return nil
	}
	return []Check[spi.JobExecutor]{
		{Name: "validate_accepts_valid_props", Run: func(ctx context.Context, e spi.JobExecutor) error {
			return validateAccepts(ctx, e.Validate, o.ValidProps, "JobExecutorOptions.ValidProps")
		}},
		{Name: "validate_rejects_invalid_props", Run: func(ctx context.Context, e spi.JobExecutor) error {
			return validateRejects(ctx, e.Validate, o.InvalidProps, "JobExecutorOptions.InvalidProps")
		}},
		{Name: "validate_errors_wrap_invalid_config", Run: func(ctx context.Context, e spi.JobExecutor) error {
			return errorsWrapInvalidConfig(ctx, "Validate", e.Validate)
		}},
		{Name: "execute_succeeds", Run: func(ctx context.Context, e spi.JobExecutor) error {
			if o.Succeed == nil {
				return Skip("no JobExecutorOptions.Succeed given")
			}
			if _, err := e.Execute(ctx, *o.Succeed); err != nil {
				return caseErr("succeed", "Execute returned error: %v", err)
			}
			return nil
		}},
		{Name: "execute_fails", Run: func(ctx context.Context, e spi.JobExecutor) error {
			if o.Fail == nil {
				return Skip("no JobExecutorOptions.Fail given")
			}
			if _, err := e.Execute(ctx, *o.Fail); err == nil {
				return caseErr("fail", "Execute returned no error for a request that must fail")
			}
			return nil
		}},
		{Name: "execute_precancelled", Run: func(ctx context.Context, e spi.JobExecutor) error {
			if err := needBlocking(); err != nil {
				return err
			}
			cctx, cancel := context.WithCancel(ctx)
			cancel()
			return executeReturnsPromptly(ctx, e, cctx, *o.Blocking, time.Now(), o.Grace, context.Canceled, "precancelled")
		}},
		{Name: "execute_cancelled", Run: func(ctx context.Context, e spi.JobExecutor) error {
			if err := needBlocking(); err != nil {
				return err
			}
			cctx, cancel := context.WithCancel(ctx)
			defer cancel()
			cancelAt := time.Now().Add(o.RunFor)
			stop := time.AfterFunc(o.RunFor, cancel)
			defer stop.Stop()
			return executeReturnsPromptly(ctx, e, cctx, *o.Blocking, cancelAt, o.Grace, context.Canceled, "cancelled_while_running")
		}},
		{Name: "execute_deadline", Run: func(ctx context.Context, e spi.JobExecutor) error {
			if err := needBlocking(); err != nil {
				return err
			}
			deadline := time.Now().Add(o.RunFor)
			dctx, cancel := context.WithDeadline(ctx, deadline)
			defer cancel()
			return executeReturnsPromptly(ctx, e, dctx, *o.Blocking, deadline, o.Grace, context.DeadlineExceeded, "deadline")
		}},
		{Name: "concurrent_calls", Run: func(ctx context.Context, e spi.JobExecutor) error {
			if o.Succeed == nil {
				return Skip("no JobExecutorOptions.Succeed given")
			}
			errs := make([]error, concurrency)
			var wg sync.WaitGroup
			for g := range concurrency {
				wg.Go(func() {
					req := *o.Succeed
					req.Context.ShardingItem = g % max(1, req.Context.ShardingTotalCount)
					if _, err := e.Execute(ctx, req); err != nil {
						errs[g] = caseErr(fmt.Sprintf("goroutine=%d", g), "Execute returned error: %v", err)
					}
				})
			}
			wg.Wait()
			return errors.Join(errs...)
		}},
	}
}

// executeReturnsPromptly runs Execute under callCtx, which ends at endAt,
// and requires it to return within grace of endAt with an error wrapping
// want. suiteCtx bounds the whole wait.
func executeReturnsPromptly(suiteCtx context.Context, e spi.JobExecutor, callCtx context.Context, req spi.ExecuteRequest, endAt time.Time, grace time.Duration, want error, name string) error {
	done := make(chan error, 1)
	go func() {
		_, err := e.Execute(callCtx, req)
		done <- err
	}()
	limit := time.NewTimer(time.Until(endAt.Add(grace)))
	defer limit.Stop()
	select {
	case err := <-done:
		if !errors.Is(err, want) {
			return caseErr(name, "Execute returned %v, want an error wrapping %v", err, want)
		}
		return nil
	case <-limit.C:
		return caseErr(name, "Execute still running %v after its context ended", grace)
	case <-suiteCtx.Done():
		return caseErr(name, "suite context ended while Execute was running: %v", suiteCtx.Err())
	}
}
