package executor_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/ejob-io/ejob/core/executor"
)

type remoteError struct{ msg string }

func (e *remoteError) Error() string { return e.msg }

// The chain the error handler gets says each fact once: every level shows
// only the text it adds to its cause, as plain text without Go type names
// (no "*fmt.wrapError").
func TestDetailSaysEachFactOnce(t *testing.T) {
	root := &remoteError{msg: "script: Execute script failure: exit 3"}
	mid := fmt.Errorf("plugin builtin: execute %q: %w", "SCRIPT", root)
	top := fmt.Errorf("job %q item %d: %w", "orders", 1, mid)
	opaque := fmt.Errorf("timed out: %w", errors.New("deadline"))

	got := executor.Detail(top)
	want := "caused by: plugin builtin: execute \"SCRIPT\"\n" +
		"caused by: script: Execute script failure: exit 3\n"
	if got != want {
		t.Errorf("detail =\n%s\nwant\n%s", got, want)
	}
	if strings.Contains(got, "*") {
		t.Errorf("detail names Go types:\n%s", got)
	}
	for _, fact := range []string{"SCRIPT", "exit 3"} {
		if n := strings.Count(got, fact); n != 1 {
			t.Errorf("%q appears %d times in\n%s", fact, n, got)
		}
	}
	// A wrapper whose text does not end with its cause's keeps its whole text.
	if got, want := executor.Detail(fmt.Errorf("x: %w", fmt.Errorf("%w (while stopping)", opaque))),
		"caused by: timed out: deadline (while stopping)\ncaused by: timed out\ncaused by: deadline\n"; got != want {
		t.Errorf("detail =\n%s\nwant\n%s", got, want)
	}
}
