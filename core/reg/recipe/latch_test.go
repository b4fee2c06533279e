package recipe

import (
	"context"
	"errors"
	"fmt"
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

// hopClient is a client whose first create goes out in a later session
// than the one it was made in: the session expires (the embedded client
// opens a new one at once) before the create reaches the server. A
// ZooKeeper client does this with the requests it queued while
// disconnected: it sends them on its next connection, a new session's
// when the old one expired meanwhile. With late set, the create returns
// the session's loss at once and reaches the server a moment later, as a
// request abandoned by its caller does.
type hopClient struct {
	*embedded.Client
	late   bool
	hopped bool
}

func (c *hopClient) Create(ctx context.Context, path string, data []byte, mode reg.CreateMode, opts ...reg.CreateOption) (string, error) {
	if c.hopped {
		return c.Client.Create(ctx, path, data, mode, opts...)
	}
	c.hopped = true
	old := c.Session()
	if err := c.Expire(ctx); err != nil {
		return "", err
	}
	if !c.late {
		return c.Client.Create(ctx, path, data, mode, opts...)
	}
	go func() {
		time.Sleep(100 * time.Millisecond)
		_, _ = c.Client.Create(context.Background(), path, data, mode, opts...)
	}()
	return "", fmt.Errorf("create %s: %w", path, old.Err())
}

// TestAbandonedLatchNodeDoesNotHoldTheLatch: a participant whose latch
// node is created in a session other than the one its Acquire made it in
// (its session expired in between) leaves no node behind, so the others
// acquire the latch. Found by the chaos suite: a host frozen during an
// election resumed after its session's expiry; its queued create made a
// latch node in its new session, which the failed Acquire did not delete
// (it took the node for the old session's), and every host's election of
// that job, its own included, waited behind that node until the new
// session ended, about a minute later.
func TestAbandonedLatchNodeDoesNotHoldTheLatch(t *testing.T) {
	for _, late := range []bool{false, true} {
		t.Run(fmt.Sprintf("late=%v", late), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx, cancel := context.WithTimeout(t.Context(), time.Minute) // fake time
				defer cancel()
				srv := embedded.NewServer()
				a, _ := srv.Connect("ns")
				b, _ := srv.Connect("ns")
				defer a.Close()
				defer b.Close()
				la := NewLatch(&hopClient{Client: a, late: late}, "/l", "a")
				if err := la.Acquire(ctx); !errors.Is(err, reg.ErrSessionLost) {
					t.Fatalf("acquire across a session change: %v, want ErrSessionLost", err)
				}
				time.Sleep(200 * time.Millisecond) // the late create has landed
				lb := NewLatch(b, "/l", "b")
				if err := lb.Acquire(ctx); err != nil {
					names, _ := b.Children(context.Background(), "/l")
					t.Fatalf("b's acquire: %v (latch nodes %v)", err, names)
				}
				time.Sleep(2 * reapGrace) // the reaper's looks
				synctest.Wait()
				if names, _ := b.Children(ctx, "/l"); len(names) != 1 {
					t.Fatalf("latch nodes %v, want b's alone", names)
				}
				if err := lb.Release(ctx); err != nil {
					t.Fatal(err)
				}
				// a acquires again in its new session.
				if err := la.Acquire(ctx); err != nil {
					t.Fatalf("a's second acquire: %v", err)
				}
			})
		})
	}
}
