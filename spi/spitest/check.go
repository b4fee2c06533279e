package spitest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

// CheckTimeout bounds one check: RunChecks gives each check a context that
// expires after this long (or when the test ends).
const CheckTimeout = 60 * time.Second

// Check is one named conformance check of an implementation of type T.
//
// Run returns nil when impl conforms, an error naming the failing case when
// it does not, and an error made by Skip when the check cannot run with the
// options given (for instance a job executor with no blocking request).
type Check[T any] struct {
	Name string
	Run  func(ctx context.Context, impl T) error
}

// SkipError is returned by a check that did not run; Reason says why.
type SkipError struct {
	Reason string
}

func (e *SkipError) Error() string { return "skipped: " + e.Reason }

// Skip returns an error that makes RunChecks skip the check with reason.
func Skip(reason string) error { return &SkipError{Reason: reason} }

// RunChecks runs each check as a subtest of t named after the check. A
// failing check fails its subtest with the check's error; a check that
// returns a Skip error skips its subtest. The checks run one after another,
// so impl may be closed as soon as RunChecks returns.
func RunChecks[T any](t *testing.T, impl T, checks []Check[T]) {
	t.Helper()
	for _, c := range checks {
		t.Run(c.Name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), CheckTimeout)
			defer cancel()
			err := c.Run(ctx, impl)
			var skip *SkipError
			switch {
			case err == nil:
			case errors.As(err, &skip):
				t.Skip(skip.Reason)
			default:
				t.Errorf("check %s failed: %v", c.Name, err)
			}
		})
	}
}

// caseErr prefixes err with the name of the case it came from.
func caseErr(name string, format string, args ...any) error {
	return fmt.Errorf("case %s: %s", name, fmt.Sprintf(format, args...))
}

// concurrency is how many goroutines the concurrency checks start.
const concurrency = 32
