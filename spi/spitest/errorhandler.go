package spitest

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"testing"

	"github.com/ejob-io/ejob/spi"
)

// ErrorHandlerOptions tells the error-handler suite what the implementation
// accepts and how it answers. A nil *ErrorHandlerOptions, or a zero field,
// skips the checks that need it, with the reason in the skip message.
type ErrorHandlerOptions struct {
	// ValidProps are props Validate must accept.
	ValidProps []map[string]string
	// InvalidProps are named props Validate must reject with an error
	// wrapping spi.ErrInvalidConfig.
	InvalidProps map[string]map[string]string
	// Request is a failure report HandleError must handle without error.
	// Leave it nil for a handler that cannot run in a test (one that needs
	// a live mail server, say).
	Request *spi.HandleErrorRequest
	// Propagate is the Propagate answer expected for Request.
	Propagate bool
}

// TestErrorHandler runs every check of ErrorHandlerChecks(opts) against h,
// each as a subtest of t.
func TestErrorHandler(t *testing.T, h spi.ErrorHandler, opts *ErrorHandlerOptions) {
	t.Helper()
	RunChecks(t, h, ErrorHandlerChecks(opts))
}

// ErrorHandlerChecks returns the conformance checks of the spi.ErrorHandler
// contract:
//
//   - validate_accepts_valid_props: Validate accepts each of opts.ValidProps;
//   - validate_rejects_invalid_props: Validate rejects each of
//     opts.InvalidProps with an error wrapping spi.ErrInvalidConfig;
//   - validate_errors_wrap_invalid_config: Validate of no props, empty
//     props and an unknown property answers nil or an error wrapping
//     spi.ErrInvalidConfig, never another error (needs no options);
//   - handle_error: HandleError handles opts.Request, and variants of it
//     reported outside an execution (no task id, item -1), without error
//     and with the expected Propagate;
//   - concurrent_calls: many goroutines calling HandleError and Validate at
//     once get the lone caller's answers.
func ErrorHandlerChecks(opts *ErrorHandlerOptions) []Check[spi.ErrorHandler] {
	var o ErrorHandlerOptions
	if opts != nil {
		o = *opts
	}
	return []Check[spi.ErrorHandler]{
		{Name: "validate_accepts_valid_props", Run: func(ctx context.Context, h spi.ErrorHandler) error {
			return validateAccepts(ctx, h.Validate, o.ValidProps, "ErrorHandlerOptions.ValidProps")
		}},
		{Name: "validate_rejects_invalid_props", Run: func(ctx context.Context, h spi.ErrorHandler) error {
			return validateRejects(ctx, h.Validate, o.InvalidProps, "ErrorHandlerOptions.InvalidProps")
		}},
		{Name: "validate_errors_wrap_invalid_config", Run: func(ctx context.Context, h spi.ErrorHandler) error {
			return errorsWrapInvalidConfig(ctx, "Validate", h.Validate)
		}},
		{Name: "handle_error", Run: func(ctx context.Context, h spi.ErrorHandler) error {
			if o.Request == nil {
				return Skip("no ErrorHandlerOptions.Request given (the handler cannot be called in a test)")
			}
			for _, v := range handleErrorVariants(*o.Request) {
				name, req := v.name, v.req
				resp, err := h.HandleError(ctx, req)
				if err != nil {
					return caseErr(name, "HandleError returned error: %v", err)
				}
				if resp.Propagate != o.Propagate {
					return caseErr(name, "HandleError answered Propagate=%t, want %t", resp.Propagate, o.Propagate)
				}
			}
			return nil
		}},
		{Name: "concurrent_calls", Run: func(ctx context.Context, h spi.ErrorHandler) error {
			if o.Request == nil && len(o.ValidProps) == 0 {
				return Skip("neither ErrorHandlerOptions.Request nor ValidProps given")
			}
			errs := make([]error, concurrency)
			var wg sync.WaitGroup
			for g := range concurrency {
				wg.Go(func() {
					cname := fmt.Sprintf("goroutine=%d", g)
					if len(o.ValidProps) > 0 {
						props := o.ValidProps[g%len(o.ValidProps)]
						if err := h.Validate(ctx, spi.ValidatePropsRequest{JobName: "test_job", Props: props}); err != nil {
							errs[g] = caseErr(cname, "Validate(%v) returned error: %v", props, err)
							return
						}
					}
					if o.Request != nil {
						req := *o.Request
						req.ShardingItem = g
						resp, err := h.HandleError(ctx, req)
						if err != nil {
							errs[g] = caseErr(cname, "HandleError returned error: %v", err)
							return
						}
						if resp.Propagate != o.Propagate {
							errs[g] = caseErr(cname, "HandleError answered Propagate=%t, want %t", resp.Propagate, o.Propagate)
						}
					}
				})
			}
			wg.Wait()
			return errors.Join(errs...)
		}},
	}
}

// handleErrorVariants returns req as given plus the forms the kernel sends
// for failures that are not tied to an item or an execution.
func handleErrorVariants(req spi.HandleErrorRequest) []struct {
	name string
	req  spi.HandleErrorRequest
} {
	outside := req
	outside.TaskID, outside.ShardingItem = "", -1
	noDetail := req
	noDetail.Error.Detail = ""
	return []struct {
		name string
		req  spi.HandleErrorRequest
	}{
		{"as_given", req},
		{"outside_execution", outside},
		{"no_detail", noDetail},
	}
}

type validateFunc func(context.Context, spi.ValidatePropsRequest) error

func validateAccepts(ctx context.Context, validate validateFunc, props []map[string]string, field string) error {
	if len(props) == 0 {
		return Skip("no " + field + " given")
	}
	for i, p := range props {
		if err := validate(ctx, spi.ValidatePropsRequest{JobName: "test_job", Props: p}); err != nil {
			return caseErr(fmt.Sprintf("%s[%d]", field, i), "Validate(%v) returned error: %v", p, err)
		}
	}
	return nil
}

func validateRejects(ctx context.Context, validate validateFunc, props map[string]map[string]string, field string) error {
	if len(props) == 0 {
		return Skip("no " + field + " given")
	}
	names := make([]string, 0, len(props))
	for name := range props {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		p := props[name]
		err := validate(ctx, spi.ValidatePropsRequest{JobName: "test_job", Props: p})
		if !errors.Is(err, spi.ErrInvalidConfig) {
			return caseErr(name, "Validate(%v) returned %v, want an error wrapping spi.ErrInvalidConfig", p, err)
		}
	}
	return nil
}

// contractProps are the props errorsWrapInvalidConfig passes: none, empty,
// and a property no type knows.
func contractProps() map[string]map[string]string {
	return map[string]map[string]string{
		"nil_props":        nil,
		"empty_props":      {},
		"unknown_property": {"ejob.spitest.unknown": "?"},
	}
}

// errorsWrapInvalidConfig calls validate (Validate, or a listener's
// Describe) with each of contractProps and requires nil or an error
// wrapping spi.ErrInvalidConfig: the host tells a job's wrong config from
// a broken plugin by that sentinel.
func errorsWrapInvalidConfig(ctx context.Context, method string, validate validateFunc) error {
	props := contractProps()
	for _, name := range sortedKeys(props) {
		p := props[name]
		if err := validate(ctx, spi.ValidatePropsRequest{JobName: "test_job", Props: p}); err != nil && !errors.Is(err, spi.ErrInvalidConfig) {
			return caseErr(name, "%s(%v) returned %v; its errors must wrap spi.ErrInvalidConfig", method, p, err)
		}
	}
	return nil
}
