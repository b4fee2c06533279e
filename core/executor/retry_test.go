package executor_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ejob-io/ejob/core/config"
	"github.com/ejob-io/ejob/core/executor"
	"github.com/ejob-io/ejob/spi"
)

// tries is a runner whose item fails its first fail tries; it records
// when each try started, relative to the harness's start.
type tries struct {
	mu    sync.Mutex
	start time.Time
	fail  int
	at    []time.Duration
}

func (tr *tries) runner(h *harness) executor.ItemRunner {
	tr.start = time.Now()
	return executor.SimpleFunc(func(ctx context.Context, sc spi.ShardingContext) error {
		h.j.add("item %d", sc.ShardingItem)
		tr.mu.Lock()
		defer tr.mu.Unlock()
		tr.at = append(tr.at, time.Since(tr.start))
		if len(tr.at) <= tr.fail {
			return fmt.Errorf("boom %d", len(tr.at))
		}
		return nil
	})
}

func (tr *tries) times() []time.Duration {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.at
}

func retryProps(h *harness, retries, backoff, backoffMax string) {
	h.f.cfg.Props[config.PropRetryMax] = retries
	h.f.cfg.Props[config.PropRetryBackoff] = backoff
	h.f.cfg.Props[config.PropRetryBackoffMax] = backoffMax
}

// An item that fails twice, then succeeds, runs three times in place after
// waits of 1s then 2s (the backoff doubling), reports success, and the
// error handler is not told.
func TestRetryFailingTwiceThenSucceeding(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness([]int{0}, "LOG", "")
		h.opts.Events = recEvents{j: h.j, items: true}
		retryProps(h, "3", "1s", "")
		tr := &tries{fail: 2}
		h.opts.Runner = tr.runner(h)
		if err := h.execute(t); err != nil {
			t.Fatal(err)
		}
		if got, want := tr.times(), []time.Duration{0, time.Second, 3 * time.Second}; !slices.Equal(got, want) {
			t.Errorf("tries at %v, want %v", got, want)
		}
		// The waits ask whether resharding is pending (tested below).
		j := slices.DeleteFunc(h.j.get(), func(l string) bool { return l == "NeedSharding" })
		check(t, j, []string{
			"Config", "ShardingContexts", staging, "MisfireIfRunning [0]", "RegisterBegin [0]", running,
			"start 0 NORMAL_TRIGGER", "item 0", "item 0", "item 0", "complete 0 success=true",
			"RegisterCompleted failed=[]", done, "ExecuteMisfired",
		})
	})
}

// An item that fails max+1 times is reported once, after the last try,
// with the number of tries; the waits double up to backoffMax.
func TestRetryExhaustedReportsOnceWithTries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness([]int{0, 1}, "LOG", "SINGLE_THREAD")
		retryProps(h, "3", "1s", "1500ms")
		tr := &tries{fail: 100}
		h.opts.Runner = tr.runner(h)
		if err := h.execute(t); err != nil {
			t.Fatal(err)
		}
		s := 1500 * time.Millisecond
		if got, want := tr.times(), []time.Duration{0, time.Second, time.Second + s, time.Second + 2*s,
			time.Second + 2*s, 2*time.Second + 2*s, 2*time.Second + 3*s, 2*time.Second + 4*s}; !slices.Equal(got, want) {
			t.Errorf("tries at %v, want %v", got, want)
		}
		close(h.reqs)
		var got []string
		for req := range h.reqs {
			got = append(got, fmt.Sprintf("item %d tries %d: %s", req.ShardingItem, req.Tries, req.Error.Message))
		}
		want := []string{
			`item 0 tries 4: job "job" item 0 (try 4 of 4): boom 4`,
			`item 1 tries 4: job "job" item 1 (try 4 of 4): boom 8`,
		}
		if !slices.Equal(got, want) {
			t.Errorf("handler told\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		if j := h.j.get(); !slices.Contains(j, "RegisterCompleted failed=[0 1]") {
			t.Errorf("journal: %v", j)
		}
	})
}

// Without the retry props an item runs once and the handler is told the
// one try, in the message upstream's handlers expect.
func TestNoRetryByDefault(t *testing.T) {
	h := newHarness([]int{0}, "LOG", "")
	tr := &tries{fail: 1}
	h.opts.Runner = tr.runner(h)
	if err := h.execute(t); err != nil {
		t.Fatal(err)
	}
	req := <-h.reqs
	if len(tr.times()) != 1 || req.Tries != 1 || req.Error.Message != `job "job" item 0: boom 1` {
		t.Errorf("tries %d; handler told tries=%d %q", len(tr.times()), req.Tries, req.Error.Message)
	}
}

// Shutdown (the trigger's ctx cancelled) during a backoff wait ends it at
// once: Execute returns, and the handler is told about the tries made.
func TestRetryBackoffStopsOnShutdown(t *testing.T) {
	h := newHarness([]int{0}, "LOG", "")
	retryProps(h, "5", "1h", "")
	failed := make(chan struct{}, 1)
	h.opts.Runner = executor.SimpleFunc(func(ctx context.Context, sc spi.ShardingContext) error {
		failed <- struct{}{}
		return errors.New("boom")
	})
	e, err := executor.New("job", h.opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- e.Execute(ctx, executor.NormalTrigger, nil) }()
	<-failed
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Execute still waits 30s after its ctx was cancelled during a 1h backoff")
	}
	req := <-h.reqs
	if req.Tries != 1 || !strings.Contains(req.Error.Message, "(try 1 of 6): boom (retry stopped: context canceled)") {
		t.Errorf("handler told tries=%d %q", req.Tries, req.Error.Message)
	}
}

// The execution timeout ends a backoff wait too, and the failure says so.
func TestRetryBackoffStopsOnExecutionTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness([]int{0}, "LOG", "")
		retryProps(h, "2", "10s", "")
		h.f.cfg.Props[executor.PropExecutionTimeoutSeconds] = "3"
		tr := &tries{fail: 100}
		h.opts.Runner = tr.runner(h)
		start := time.Now()
		if err := h.execute(t); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d != 3*time.Second {
			t.Errorf("trigger took %v, want the 3s timeout", d)
		}
		req := <-h.reqs
		if req.Tries != 1 || req.Error.Message != `job "job" item 0 (try 1 of 3): boom 1 (retry stopped: execution timeout of 3s)` {
			t.Errorf("handler told tries=%d %q", req.Tries, req.Error.Message)
		}
	})
}

// A pending resharding stops the retries: the item may move, and the
// resharding waits for it.
func TestRetryStopsWhenReshardingIsPending(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness([]int{0}, "LOG", "")
		retryProps(h, "2", "10s", "")
		start := time.Now()
		// The leader flags resharding 2.5s into the 10s wait.
		h.f.needSharding = func() bool { return time.Since(start) >= 2500*time.Millisecond }
		tr := &tries{fail: 100}
		h.opts.Runner = tr.runner(h)
		if err := h.execute(t); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d != 3*time.Second {
			t.Errorf("trigger took %v, want 3s (the first poll after the flag)", d)
		}
		req := <-h.reqs
		if req.Tries != 1 || req.Error.Message != `job "job" item 0 (try 1 of 3): boom 1 (retry stopped: resharding pending)` {
			t.Errorf("handler told tries=%d %q", req.Tries, req.Error.Message)
		}
	})
}

// Invalid retry props in a configuration the executor loads (written by
// another tool; a local one is refused by config.Validate) turn retry off.
func TestInvalidRetryPropsDoNotRetry(t *testing.T) {
	h := newHarness([]int{0}, "LOG", "")
	retryProps(h, "-1", "1s", "")
	tr := &tries{fail: 1}
	h.opts.Runner = tr.runner(h)
	if err := h.execute(t); err != nil {
		t.Fatal(err)
	}
	if n := len(tr.times()); n != 1 {
		t.Errorf("%d tries, want 1", n)
	}
}
