package recipe

import (
	"context"
	"errors"
	"regexp"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ejob-io/ejob/core/reg"
	"github.com/ejob-io/ejob/core/reg/embedded"
)

func TestUUIDFormat(t *testing.T) {
	re := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	seen := map[string]bool{}
	for range 100 {
		u, err := newUUID()
		if err != nil || !re.MatchString(u) || seen[u] {
			t.Fatalf("uuid %q %v", u, err)
		}
		seen[u] = true
	}
}

func TestSortLatchNodes(t *testing.T) {
	in := []string{
		"_c_b-latch-0000000003",
		"x-latch-0000000001",
		"_c_a-latch-0000000002",
		"zzz",
		"aaa",
	}
	SortLatchNodes(in)
	want := []string{"x-latch-0000000001", "_c_a-latch-0000000002", "_c_b-latch-0000000003", "aaa", "zzz"}
	if !slices.Equal(in, want) {
		t.Fatalf("sorted %v, want %v", in, want)
	}
}

// TestReleaseWhileAcquiring: a Release while Acquire waits for its turn
// ends that Acquire with ErrNotLeader and leaves none of its nodes behind.
// In a synctest bubble, so "Acquire waits" is the state every goroutine
// has reached once the bubble is idle, not a poll.
func TestReleaseWhileAcquiring(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute) // fake time
		defer cancel()
		srv := embedded.NewServer()
		a, _ := srv.Connect("ns")
		b, _ := srv.Connect("ns")
		defer a.Close()
		defer b.Close()
		la, lb := NewLatch(a, "/l", "a"), NewLatch(b, "/l", "b")
		if err := la.Acquire(ctx); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- lb.Acquire(ctx) }()
		synctest.Wait()
		select {
		case err := <-done:
			t.Fatalf("acquire returned early: %v", err)
		default:
		}
		if lb.NodePath() == "" {
			t.Fatal("b waits for the latch without a node of its own")
		}
		if err := lb.Release(ctx); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-done:
			if !errors.Is(err, ErrNotLeader) {
				t.Fatalf("acquire after release = %v", err)
			}
		case <-ctx.Done():
			t.Fatal("acquire did not return after the release")
		}
		if names, _ := a.Children(ctx, "/l"); len(names) != 1 {
			t.Fatalf("latch nodes %v", names)
		}
		if _, err := FencedMulti(ctx, b, Fence{}, reg.CheckOp("/", reg.AnyVersion)); !errors.Is(err, ErrFenced) {
			t.Fatalf("zero fence: %v", err)
		}
	})
}
