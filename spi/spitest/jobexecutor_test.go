package spitest_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/ejob-io/ejob/spi"
	"github.com/ejob-io/ejob/spi/spitest"
)

// refExecutor runs by props["mode"]: "ok" succeeds, "fail" fails, "block"
// waits for ctx. The fields break one behaviour each.
type refExecutor struct {
	// release ends a block that ignores ctx; closed by the test's cleanup.
	release        <-chan struct{}
	ignoreCtx      bool
	plainCancelErr bool
	alwaysCanceled bool
	noopIfDone     bool
	invert         bool
	plainInvalid   bool // Validate's errors do not wrap spi.ErrInvalidConfig
}

var _ spi.JobExecutor = (*refExecutor)(nil)

func (e *refExecutor) Execute(ctx context.Context, req spi.ExecuteRequest) (spi.ExecuteResponse, error) {
	mode := req.Props["mode"]
	if e.invert {
		mode = map[string]string{"ok": "fail", "fail": "ok"}[mode]
	}
	switch mode {
	case "ok":
		return spi.ExecuteResponse{}, nil
	case "block":
		if e.noopIfDone && ctx.Err() != nil {
			return spi.ExecuteResponse{}, nil
		}
		if e.ignoreCtx {
			<-e.release
			return spi.ExecuteResponse{}, nil
		}
		<-ctx.Done()
		switch {
		case e.plainCancelErr:
			return spi.ExecuteResponse{}, errors.New("stopped")
		case e.alwaysCanceled:
			return spi.ExecuteResponse{}, fmt.Errorf("stopped: %w", context.Canceled)
		}
		return spi.ExecuteResponse{}, fmt.Errorf("item %d stopped: %w", req.Context.ShardingItem, ctx.Err())
	}
	return spi.ExecuteResponse{}, fmt.Errorf("item %d failed", req.Context.ShardingItem)
}

func (e *refExecutor) Validate(ctx context.Context, req spi.ValidatePropsRequest) error {
	switch req.Props["mode"] {
	case "ok", "fail", "block":
		return nil
	}
	if e.plainInvalid {
		return fmt.Errorf("property `mode` is %q", req.Props["mode"])
	}
	return fmt.Errorf("property `mode` is %q: %w", req.Props["mode"], spi.ErrInvalidConfig)
}

func executorOptions() *spitest.JobExecutorOptions {
	req := func(mode string) *spi.ExecuteRequest {
		return &spi.ExecuteRequest{
			Context: spi.ShardingContext{JobName: "test_job", TaskID: "t", ShardingTotalCount: 3},
			Props:   map[string]string{"mode": mode},
		}
	}
	return &spitest.JobExecutorOptions{
		ValidProps:   []map[string]string{{"mode": "ok"}, {"mode": "block"}},
		InvalidProps: map[string]map[string]string{"missing_mode": {}, "unknown_mode": {"mode": "x"}},
		Succeed:      req("ok"),
		Fail:         req("fail"),
		Blocking:     req("block"),
		RunFor:       20 * time.Millisecond,
		Grace:        300 * time.Millisecond,
	}
}

func TestJobExecutorSuitePassesReference(t *testing.T) {
	t.Parallel()
	spitest.TestJobExecutor(t, &refExecutor{}, executorOptions())
	expectAllChecksPass[spi.JobExecutor](t, &refExecutor{}, spitest.JobExecutorChecks(executorOptions()))
}

func TestJobExecutorSuiteSkipsWithoutOptions(t *testing.T) {
	t.Parallel()
	expectSkipsWithoutOptions[spi.JobExecutor](t, &refExecutor{}, spitest.JobExecutorChecks(nil), "validate_errors_wrap_invalid_config")
}

func TestJobExecutorChecksCatchBrokenImplementations(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	tests := map[string]struct {
		impl      spi.JobExecutor
		wantFails string
	}{
		"inverted_results_fail_succeed": {impl: &refExecutor{invert: true}, wantFails: "execute_succeeds"},
		"inverted_results_pass_fail":    {impl: &refExecutor{invert: true}, wantFails: "execute_fails"},
		"inverted_results_concurrent":   {impl: &refExecutor{invert: true}, wantFails: "concurrent_calls"},
		"ignores_cancel":                {impl: &refExecutor{ignoreCtx: true, release: release}, wantFails: "execute_cancelled"},
		"ignores_deadline":              {impl: &refExecutor{ignoreCtx: true, release: release}, wantFails: "execute_deadline"},
		"ignores_precancel":             {impl: &refExecutor{ignoreCtx: true, release: release}, wantFails: "execute_precancelled"},
		"cancel_error_unwrapped":        {impl: &refExecutor{plainCancelErr: true}, wantFails: "execute_cancelled"},
		"deadline_reported_as_cancel":   {impl: &refExecutor{alwaysCanceled: true}, wantFails: "execute_deadline"},
		"succeeds_when_already_done":    {impl: &refExecutor{noopIfDone: true}, wantFails: "execute_precancelled"},
		"plain_validate_error":          {impl: &refExecutor{plainInvalid: true}, wantFails: "validate_errors_wrap_invalid_config"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			expectCheckFails(t, tc.impl, spitest.JobExecutorChecks(executorOptions()), tc.wantFails)
		})
	}
	t.Run("validate", func(t *testing.T) {
		t.Parallel()
		opts := executorOptions()
		opts.ValidProps = append(opts.ValidProps, map[string]string{"mode": "nope"})
		expectCheckFails[spi.JobExecutor](t, &refExecutor{}, spitest.JobExecutorChecks(opts), "validate_accepts_valid_props")
		opts = executorOptions()
		opts.InvalidProps["actually_valid"] = map[string]string{"mode": "ok"}
		expectCheckFails[spi.JobExecutor](t, &refExecutor{}, spitest.JobExecutorChecks(opts), "validate_rejects_invalid_props")
	})
}
