package reg_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/ejob-io/ejob/core/reg"
)

// An OpError says "reg:" once, and keeps the sentinel for errors.Is.
func TestOpErrorSaysEachFactOnce(t *testing.T) {
	err := &reg.OpError{Op: "get", Path: "/j1", Err: fmt.Errorf("%w (zk: not authenticated)", reg.ErrNoAuth)}
	if got, want := err.Error(), "reg: get /j1: not authorized (zk: not authenticated)"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if !errors.Is(err, reg.ErrNoAuth) {
		t.Error("errors.Is(err, ErrNoAuth) = false")
	}
}
