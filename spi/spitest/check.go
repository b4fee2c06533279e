package spitest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

// CheckTimeout bounds one check: RunChecks and Run give each check a
// context that expires after this long (or when the test or the caller's
// context ends).
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
			r := runCheck(t.Context(), impl, c)
			switch {
			case r.Passed():
			case r.Skipped():
				t.Skip(r.Err.(*SkipError).Reason)
			default:
				t.Errorf("check %s failed: %v", c.Name, r.Err)
			}
		})
	}
}

// Result is the outcome of one check.
type Result struct {
	Name string
	// Err is nil when the implementation conforms, a *SkipError when the
	// check did not run, and the check's error when it failed.
	Err error
}

// Passed reports whether the check ran and the implementation conforms.
func (r Result) Passed() bool { return r.Err == nil }

// Skipped reports whether the check did not run (Err says why).
func (r Result) Skipped() bool {
	var skip *SkipError
	return errors.As(r.Err, &skip)
}

// Failed reports whether the check found a contract break.
func (r Result) Failed() bool { return !r.Passed() && !r.Skipped() }

// Run runs each check against impl, one after another, each under a ctx
// derived from ctx that expires after CheckTimeout, and returns their
// results in order. It is RunChecks for callers outside package testing:
// `ejob plugins check` runs the suites through it against plugin binaries.
func Run[T any](ctx context.Context, impl T, checks []Check[T]) []Result {
	out := make([]Result, 0, len(checks))
	for _, c := range checks {
		out = append(out, runCheck(ctx, impl, c))
	}
	return out
}

func runCheck[T any](ctx context.Context, impl T, c Check[T]) Result {
	ctx, cancel := context.WithTimeout(ctx, CheckTimeout)
	defer cancel()
	return Result{Name: c.Name, Err: c.Run(ctx, impl)}
}

// caseErr prefixes err with the name of the case it came from.
func caseErr(name string, format string, args ...any) error {
	return fmt.Errorf("case %s: %s", name, fmt.Sprintf(format, args...))
}

// concurrency is how many goroutines the concurrency checks start.
const concurrency = 32
