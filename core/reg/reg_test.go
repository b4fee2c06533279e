package reg_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/ejob-io/ejob/core/reg"
	"github.com/ejob-io/ejob/core/reg/embedded"
)

func TestPathHelpers(t *testing.T) {
	t.Parallel()
	joins := map[string][]string{
		"/":                {},
		"/a":               {"a"},
		"/job/leader/x":    {"/job", "leader/", "", "x"},
		"/job/sharding/0":  {"job", "sharding", "0"},
		"/ns/inner/config": {"/ns/inner", "/config"},
	}
	for want, in := range joins {
		if got := reg.Join(in...); got != want {
			t.Errorf("Join(%q) = %q, want %q", in, got, want)
		}
	}
	for path, want := range map[string][2]string{
		"/":        {"/", ""},
		"/a":       {"/", "a"},
		"/a/b/c":   {"/a/b", "c"},
		"/a/b/c-/": {"/a/b/c-", ""},
	} {
		if p, b := reg.Parent(path), reg.Base(path); p != want[0] || b != want[1] {
			t.Errorf("Parent/Base(%q) = %q %q, want %q %q", path, p, b, want[0], want[1])
		}
	}
	valid := map[string]bool{
		"/": true, "/a": true, "/a/b": true, "/a.b/..c": true, "/é": true,
		"": false, "a": false, "/a/": false, "//": false, "/a//b": false, "/.": false,
		"/a/..": false, "/a/\x00": false, "/a\x01": false,
	}
	for p, ok := range valid {
		err := reg.ValidatePath(p, false)
		if (err == nil) != ok {
			t.Errorf("ValidatePath(%q) = %v, want ok=%v", p, err, ok)
		}
		if err != nil && !errors.Is(err, reg.ErrInvalidArgument) {
			t.Errorf("ValidatePath(%q) error %v is not ErrInvalidArgument", p, err)
		}
	}
	if err := reg.ValidatePath("/a/", true); err != nil {
		t.Errorf("sequential prefix ending in /: %v", err)
	}
}

func TestSession(t *testing.T) {
	t.Parallel()
	s := reg.NewSession(42)
	ctx, cancel := s.Context(context.Background())
	defer cancel()
	if s.ID() != 42 || s.Err() != nil || ctx.Err() != nil {
		t.Fatal("fresh session not alive")
	}
	s.End(fmt.Errorf("gone: %w", reg.ErrSessionLost))
	s.End(reg.ErrClosed) // later ends are ignored
	<-s.Done()
	<-ctx.Done()
	if !errors.Is(s.Err(), reg.ErrSessionLost) || !errors.Is(context.Cause(ctx), reg.ErrSessionLost) {
		t.Fatalf("err %v, cause %v", s.Err(), context.Cause(ctx))
	}
	// A context derived after the end is already cancelled.
	ctx2, cancel2 := s.Context(context.Background())
	defer cancel2()
	if !errors.Is(context.Cause(ctx2), reg.ErrSessionLost) {
		t.Fatalf("late context cause %v", context.Cause(ctx2))
	}
}

// CauseContext: the first cause wins, the cancel's or the session's; a
// cancelled one no longer follows the session.
func TestSessionCauseContext(t *testing.T) {
	t.Parallel()
	s := reg.NewSession(43)
	mine := errors.New("mine")
	ctx, cancel := s.CauseContext(context.Background())
	cancel(mine)
	live, cancelLive := s.CauseContext(context.Background())
	defer cancelLive(nil)
	s.End(fmt.Errorf("gone: %w", reg.ErrSessionLost))
	<-live.Done()
	if context.Cause(ctx) != mine || !errors.Is(context.Cause(live), reg.ErrSessionLost) {
		t.Fatalf("causes %v, %v", context.Cause(ctx), context.Cause(live))
	}
	late, cancelLate := s.CauseContext(context.Background())
	cancelLate(mine)
	if !errors.Is(context.Cause(late), reg.ErrSessionLost) {
		t.Fatalf("late context cause %v", context.Cause(late))
	}
}

func TestErrors(t *testing.T) {
	t.Parallel()
	me := &reg.MultiError{Index: 1, Op: reg.CheckOp("/x", 3), Err: reg.ErrBadVersion}
	err := error(&reg.OpError{Op: "multi", Path: "/x", Err: me})
	var got *reg.MultiError
	if !errors.Is(err, reg.ErrBadVersion) || !errors.As(err, &got) || got.Index != 1 {
		t.Fatalf("unwrap chain broken: %v", err)
	}
	if !reg.IsRetryable(fmt.Errorf("x: %w", reg.ErrConnectionLoss)) || reg.IsRetryable(reg.ErrSessionLost) {
		t.Fatal("IsRetryable")
	}
}

// ExampleTreeCache follows a job's subtree on the embedded registry.
func ExampleTreeCache() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv := embedded.NewServer()
	c, _ := srv.Connect("demo")
	defer c.Close()
	_, _ = c.Create(ctx, "/job/config", []byte("cron: 0/5 * * * * ?"), reg.Persistent, reg.WithParents())

	tc := reg.NewTreeCache(c, "/job")
	done := make(chan error)
	go func() { done <- tc.Run(ctx) }()
	events := tc.Events()
	next := func() reg.TreeEvent { return <-events }
	for ev := next(); ev.Type != reg.TreeInitialized; ev = next() {
		fmt.Println(ev.Type, ev.Path)
	}
	_, _ = c.Set(ctx, "/job/config", []byte("cron: 0/10 * * * * ?"), reg.AnyVersion)
	ev := next()
	fmt.Println(ev.Type, ev.Path, string(ev.Data))
	_ = c.Delete(ctx, "/job/config", reg.AnyVersion)
	ev = next()
	fmt.Println(ev.Type, ev.Path, string(ev.Data))
	cancel()
	<-done
	// Output:
	// added /job
	// added /job/config
	// updated /job/config cron: 0/10 * * * * ?
	// deleted /job/config cron: 0/10 * * * * ?
}
