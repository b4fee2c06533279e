package spitest_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ejob-io/ejob/spi"
	"github.com/ejob-io/ejob/spi/spitest"
)

// refHandler is a correct error handler that rejects the prop "bad"; the
// function fields break one behaviour each.
type refHandler struct {
	propagate bool
	validate  func(req spi.ValidatePropsRequest) error
	handle    func(req spi.HandleErrorRequest) (spi.HandleErrorResponse, error)
}

var _ spi.ErrorHandler = (*refHandler)(nil)

func (h *refHandler) HandleError(ctx context.Context, req spi.HandleErrorRequest) (spi.HandleErrorResponse, error) {
	if h.handle != nil {
		return h.handle(req)
	}
	return spi.HandleErrorResponse{Propagate: h.propagate}, nil
}

func (h *refHandler) Validate(ctx context.Context, req spi.ValidatePropsRequest) error {
	if h.validate != nil {
		return h.validate(req)
	}
	if _, ok := req.Props["bad"]; ok {
		return fmt.Errorf("property `bad`: %w", spi.ErrInvalidConfig)
	}
	return nil
}

func handlerOptions() *spitest.ErrorHandlerOptions {
	return &spitest.ErrorHandlerOptions{
		ValidProps:   []map[string]string{nil, {}, {"good": "1"}},
		InvalidProps: map[string]map[string]string{"bad_prop": {"bad": "1"}},
		Request: &spi.HandleErrorRequest{
			JobName: "test_job", InstanceID: "192.168.1.1@-@100", TaskID: "test_job@-@0@-@READY@-@192.168.1.1@-@100",
			ShardingItem: 0, Error: spi.JobError{Message: "boom", Detail: "stack"},
		},
		Propagate: true,
	}
}

func TestErrorHandlerSuitePassesReference(t *testing.T) {
	t.Parallel()
	spitest.TestErrorHandler(t, &refHandler{propagate: true}, handlerOptions())
	expectAllChecksPass[spi.ErrorHandler](t, &refHandler{propagate: true}, spitest.ErrorHandlerChecks(handlerOptions()))
}

// TestErrorHandlerSuiteSkipsWithoutOptions: without options every check
// but the one that needs none skips, saying why.
func TestErrorHandlerSuiteSkipsWithoutOptions(t *testing.T) {
	t.Parallel()
	expectSkipsWithoutOptions[spi.ErrorHandler](t, &refHandler{}, spitest.ErrorHandlerChecks(nil), "validate_errors_wrap_invalid_config")
}

func TestErrorHandlerChecksCatchBrokenImplementations(t *testing.T) {
	t.Parallel()
	var inflight atomic.Int64
	tests := map[string]struct {
		impl      spi.ErrorHandler
		wantFails string
	}{
		"rejects_valid_props": {
			impl:      &refHandler{propagate: true, validate: func(spi.ValidatePropsRequest) error { return spi.ErrInvalidConfig }},
			wantFails: "validate_accepts_valid_props",
		},
		"accepts_invalid_props": {
			impl:      &refHandler{propagate: true, validate: func(spi.ValidatePropsRequest) error { return nil }},
			wantFails: "validate_rejects_invalid_props",
		},
		"rejects_without_sentinel": {
			impl: &refHandler{propagate: true, validate: func(req spi.ValidatePropsRequest) error {
				if req.Props["bad"] != "" {
					return errors.New("bad prop")
				}
				return nil
			}},
			wantFails: "validate_rejects_invalid_props",
		},
		"plain_validate_error": {
			impl: &refHandler{propagate: true, validate: func(req spi.ValidatePropsRequest) error {
				if req.Props["address"] == "" {
					return errors.New("address is required")
				}
				return nil
			}},
			wantFails: "validate_errors_wrap_invalid_config",
		},
		"handle_fails": {
			impl: &refHandler{handle: func(spi.HandleErrorRequest) (spi.HandleErrorResponse, error) {
				return spi.HandleErrorResponse{}, errors.New("mail server down")
			}},
			wantFails: "handle_error",
		},
		"wrong_propagate": {
			impl:      &refHandler{propagate: false},
			wantFails: "handle_error",
		},
		"fails_outside_execution": {
			impl: &refHandler{handle: func(req spi.HandleErrorRequest) (spi.HandleErrorResponse, error) {
				if req.ShardingItem < 0 {
					return spi.HandleErrorResponse{}, errors.New("negative item")
				}
				return spi.HandleErrorResponse{Propagate: true}, nil
			}},
			wantFails: "handle_error",
		},
		"wrong_under_concurrency": {
			impl: &refHandler{handle: func(spi.HandleErrorRequest) (spi.HandleErrorResponse, error) {
				n := inflight.Add(1)
				defer inflight.Add(-1)
				time.Sleep(time.Millisecond) // widen the window in which calls overlap
				if n > 1 || inflight.Load() > 1 {
					return spi.HandleErrorResponse{}, errors.New("busy")
				}
				return spi.HandleErrorResponse{Propagate: true}, nil
			}},
			wantFails: "concurrent_calls",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			expectCheckFails(t, tc.impl, spitest.ErrorHandlerChecks(handlerOptions()), tc.wantFails)
		})
	}
}
