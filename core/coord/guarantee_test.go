package coord_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/ejob-io/ejob/core/coord"
	"github.com/ejob-io/ejob/core/executor"
	"github.com/ejob-io/ejob/internal/testkit"
)

func onceContexts(in *instance, total int, items ...int) executor.ShardingContexts {
	return executor.ShardingContexts{TaskID: testJob + "@-@x@-@READY@-@" + in.id, JobName: testJob,
		ShardingTotalCount: total, Items: items, ShardingItemParameters: map[int]string{}}
}

type hookCalls struct {
	mu    sync.Mutex
	calls []string // instance ids, in call order
}

func (h *hookCalls) hook(id string) func(context.Context) error {
	return func(context.Context) error {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.calls = append(h.calls, id)
		return nil
	}
}

func (h *hookCalls) get() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.calls...)
}

// testDistributeOnce: three instances with one item each; two register
// and wait, the third completes the set and runs the hook exactly once;
// the waiters are woken by the root's deletion (no timeout set), for
// several triggers in a row, for the started and the completed phases
// (DistributeOnceElasticJobListenerTest.assertBeforeJobExecutedWhenIsAllStarted
// and the after/completed twin, GuaranteeServiceTest.assertExecuteInLeaderForLastStarted).
func testDistributeOnce(t *testing.T, cl *cluster) {
	ins := []*instance{
		cl.start("192.168.1.1", 100, testConfig(3)),
		cl.start("192.168.1.2", 200, testConfig(3)),
		cl.start("192.168.1.3", 300, testConfig(3)),
	}
	for round := range 3 {
		for _, ph := range []struct {
			name string
			root string
			at   func(j *coord.Job) func(context.Context, executor.ShardingContexts, time.Duration, func(context.Context) error) error
		}{
			{"started", "guarantee/started", func(j *coord.Job) func(context.Context, executor.ShardingContexts, time.Duration, func(context.Context) error) error {
				return j.AtLastStarted
			}},
			{"completed", "guarantee/completed", func(j *coord.Job) func(context.Context, executor.ShardingContexts, time.Duration, func(context.Context) error) error {
				return j.AtLastCompleted
			}},
		} {
			var h hookCalls
			errs := make([]error, len(ins))
			var wg sync.WaitGroup
			// The first two register and wait.
			for i := range 2 {
				wg.Go(func() { errs[i] = ph.at(ins[i].job)(ctxT(t), onceContexts(ins[i], 3, i), 0, h.hook(ins[i].id)) })
			}
			testkit.Eventually(t, waitFor, "first two registered", func() bool {
				_, a := cl.get(jp(ph.root, "0"))
				_, b := cl.get(jp(ph.root, "1"))
				return a && b
			})
			// The last one completes the set and runs the hook.
			errs[2] = ph.at(ins[2].job)(ctxT(t), onceContexts(ins[2], 3, 2), 0, h.hook(ins[2].id))
			wg.Wait()
			for i, err := range errs {
				if err != nil {
					t.Errorf("round %d %s: instance %d: %v", round, ph.name, i, err)
				}
			}
			// Normally the last instance runs it; a waiter still between its
			// registration and its first check may also see the set complete
			// and win the latch (as upstream): exactly once either way.
			if got := h.get(); len(got) != 1 {
				t.Fatalf("round %d %s: hook calls %v, want exactly one", round, ph.name, got)
			} else if got[0] != ins[2].id {
				t.Logf("round %d %s: hook ran on %s, which was still checking when the set completed", round, ph.name, got[0])
			}
			if _, ok := cl.get(jp(ph.root)); ok {
				t.Errorf("round %d %s: %s not removed", round, ph.name, ph.root)
			}
		}
	}
}

// testDistributeOnceConcurrent: the three call at once; whoever completes
// the set runs the hook, exactly once per trigger.
func testDistributeOnceConcurrent(t *testing.T, cl *cluster) {
	ins := []*instance{
		cl.start("192.168.1.1", 100, testConfig(4)),
		cl.start("192.168.1.2", 200, testConfig(4)),
		cl.start("192.168.1.3", 300, testConfig(4)),
	}
	items := [][]int{{0, 1}, {2}, {3}}
	for round := range 5 {
		var h hookCalls
		errs := make([]error, len(ins))
		var wg sync.WaitGroup
		for i, in := range ins {
			wg.Go(func() {
				errs[i] = in.job.AtLastStarted(ctxT(t), onceContexts(in, 4, items[i]...), 0, h.hook(in.id))
			})
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Errorf("round %d: instance %d: %v", round, i, err)
			}
		}
		if got := h.get(); len(got) != 1 {
			t.Fatalf("round %d: hook calls %v, want exactly one", round, got)
		}
	}
}

// testDistributeOnceTimeout: one of three instances registers; the others
// never come; it times out with upstream's message, the started root is
// removed, and the hook does not run
// (DistributeOnceElasticJobListenerTest ...IsNotAllStartedAndTimeout).
func testDistributeOnceTimeout(t *testing.T, cl *cluster) {
	in := cl.start("192.168.1.1", 100, testConfig(3))
	var h hookCalls
	start := time.Now()
	err := in.job.AtLastStarted(ctxT(t), onceContexts(in, 3, 0), 150*time.Millisecond, h.hook(in.id))
	var te *coord.TimeoutError
	if !errors.As(err, &te) {
		t.Fatalf("err = %v, want a *coord.TimeoutError", err)
	}
	if want := "Job timeout. timeout mills is 150."; err.Error() != want {
		t.Errorf("message %q, want %q", err.Error(), want)
	}
	if el := time.Since(start); el < 150*time.Millisecond {
		t.Errorf("returned after %v, before the timeout", el)
	}
	if _, ok := cl.get(jp("guarantee/started")); ok {
		t.Error("guarantee/started not removed after the timeout")
	}
	if got := h.get(); len(got) != 0 {
		t.Errorf("hook ran %v", got)
	}
	// Completed: same with >=.
	err = in.job.AtLastCompleted(ctxT(t), onceContexts(in, 3, 0), 50*time.Millisecond, h.hook(in.id))
	if !errors.As(err, &te) || err.Error() != "Job timeout. timeout mills is 50." {
		t.Errorf("completed err = %v", err)
	}
	if _, ok := cl.get(jp("guarantee/completed")); ok {
		t.Error("guarantee/completed not removed after the timeout")
	}
}

func TestDistributeOnceEmbedded(t *testing.T) {
	t.Parallel()
	t.Run("LastInstanceRunsHookOnce", func(t *testing.T) { testDistributeOnce(t, newEmbeddedCluster(t)) })
	t.Run("Concurrent", func(t *testing.T) { testDistributeOnceConcurrent(t, newEmbeddedCluster(t)) })
	t.Run("Timeout", func(t *testing.T) { testDistributeOnceTimeout(t, newEmbeddedCluster(t)) })
	t.Run("NoItems", func(t *testing.T) {
		cl := newEmbeddedCluster(t)
		in := cl.start("192.168.1.1", 100, testConfig(3))
		var h hookCalls
		if err := in.job.AtLastStarted(ctxT(t), onceContexts(in, 3), time.Millisecond, h.hook(in.id)); err != nil {
			t.Fatal(err)
		}
		if _, ok := cl.get(jp("guarantee/started")); ok || len(h.get()) != 0 {
			t.Error("an instance without items took part")
		}
	})
	t.Run("NotAllStartedAndNotTimeout", func(t *testing.T) {
		// A waiter cancelled before the timeout leaves its registration
		// (no clear), as upstream's wait that has not timed out.
		cl := newEmbeddedCluster(t)
		in := cl.start("192.168.1.1", 100, testConfig(3))
		ctx, cancel := context.WithCancel(ctxT(t))
		done := make(chan error, 1)
		go func() {
			done <- in.job.AtLastStarted(ctx, onceContexts(in, 3, 0), time.Hour, func(context.Context) error { return nil })
		}()
		testkit.Eventually(t, waitFor, "registered", func() bool { _, ok := cl.get(jp("guarantee/started", "0")); return ok })
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("err = %v, want context.Canceled", err)
		}
		if _, ok := cl.get(jp("guarantee/started", "0")); !ok {
			t.Error("registration cleared without a timeout")
		}
	})
	t.Run("HookError", func(t *testing.T) {
		cl := newEmbeddedCluster(t)
		in := cl.start("192.168.1.1", 100, testConfig(1))
		boom := errors.New("boom")
		err := in.job.AtLastStarted(ctxT(t), onceContexts(in, 1, 0), 0, func(context.Context) error { return boom })
		if !errors.Is(err, boom) {
			t.Errorf("err = %v, want the hook's", err)
		}
		if _, ok := cl.get(jp("guarantee/started")); ok {
			t.Error("root not removed after a failing hook")
		}
	})
	t.Run("CompletedAtLeastTotal", func(t *testing.T) {
		// A stale extra child (an item beyond the total) still counts for
		// completed (>=) but not for started (==).
		cl := newEmbeddedCluster(t)
		in := cl.start("192.168.1.1", 100, testConfig(1))
		cl.persist(jp("guarantee/completed", "7"), "")
		var h hookCalls
		if err := in.job.AtLastCompleted(ctxT(t), onceContexts(in, 1, 0), time.Second, h.hook(in.id)); err != nil {
			t.Fatal(err)
		}
		if len(h.get()) != 1 {
			t.Errorf("completed hook calls %v", h.get())
		}
		cl.persist(jp("guarantee/started", "7"), "")
		err := in.job.AtLastStarted(ctxT(t), onceContexts(in, 1, 0), 100*time.Millisecond, h.hook(in.id))
		var te *coord.TimeoutError
		if !errors.As(err, &te) {
			t.Errorf("started with %d children of 1: err = %v, want timeout", 2, err)
		}
	})
}
