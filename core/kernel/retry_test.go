package kernel_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ejob-io/ejob/core/config"
	"github.com/ejob-io/ejob/core/executor"
	"github.com/ejob-io/ejob/core/kernel"
	"github.com/ejob-io/ejob/core/reg"
	"github.com/ejob-io/ejob/core/reg/embedded"
	"github.com/ejob-io/ejob/internal/testkit"
	"github.com/ejob-io/ejob/spi"
)

// standalone returns a scheduler of one instance on a fresh embedded
// registry, and its registry client.
func standalone(t *testing.T, p spi.Plugins, log hclog.Logger) (*kernel.Kernel, reg.Client) {
	t.Helper()
	client, err := embedded.NewServer().Connect("standalone-test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	s, err := kernel.New(kernel.Options{Client: client, InstanceID: "127.0.0.1@-@1", ServerIP: "127.0.0.1", Plugins: p, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	return s, client
}

// told is an error handler that keeps what it is told.
type told struct {
	mu   sync.Mutex
	reqs []spi.HandleErrorRequest
}

func (h *told) HandleError(_ context.Context, req spi.HandleErrorRequest) (spi.HandleErrorResponse, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.reqs = append(h.reqs, req)
	return spi.HandleErrorResponse{}, nil
}

func (*told) Validate(context.Context, spi.ValidatePropsRequest) error { return nil }

func (h *told) get() []spi.HandleErrorRequest {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]spi.HandleErrorRequest(nil), h.reqs...)
}

// Retry through the whole scheduler on a registry: a one-off job whose
// item fails twice then succeeds runs three times and its error handler
// hears nothing; one whose item always fails is reported once, with the
// number of tries, and the registry records it as completed.
func TestRetryThroughTheScheduler(t *testing.T) {
	p := plugins()
	handler := &told{}
	p.ErrorHandlers["TOLD"] = handler
	s, client := standalone(t, p, hclog.New(&hclog.LoggerOptions{Level: hclog.Warn}))
	runs := map[string]*atomic.Int32{"flaky": {}, "broken": {}}
	// A warm-up trigger first: the instance's own registration events may
	// flag a resharding during the first one, and a pending resharding
	// stops retries (tested in core/executor).
	var armed atomic.Bool
	warm := map[string]*atomic.Int32{"flaky": {}, "broken": {}}
	for name, fail := range map[string]int32{"flaky": 2, "broken": 1 << 30} {
		cfg := config.New(name, 1)
		cfg.JobErrorHandlerType = "TOLD"
		cfg.Props = map[string]string{config.PropRetryMax: "2", config.PropRetryBackoff: "10ms"}
		n, w := runs[name], warm[name]
		err := s.Add(t.Context(), kernel.Job{Config: cfg, Runner: executor.SimpleFunc(func(context.Context, spi.ShardingContext) error {
			if !armed.Load() {
				w.Add(1)
				return nil
			}
			if n.Add(1) <= fail {
				return errors.New("boom")
			}
			return nil
		})})
		if err != nil {
			t.Fatal(err)
		}
	}
	ctx := runKernel(t, s)
	rctx, rcancel := context.WithTimeout(ctx, 20*time.Second)
	defer rcancel()
	if err := s.Ready(rctx); err != nil {
		t.Fatal(err)
	}
	trigger := func() {
		t.Helper()
		for _, name := range []string{"flaky", "broken"} {
			if err := s.Trigger(name); err != nil {
				t.Fatal(err)
			}
		}
	}
	// The executions end when no item has a running node left.
	completed := func() bool {
		for _, name := range []string{"flaky", "broken"} {
			if kids, err := client.Children(t.Context(), "/"+name+"/sharding/0"); err != nil || slices.Contains(kids, "running") {
				return false
			}
		}
		return true
	}
	// Warm up until the registry is settled: a run done, and no resharding
	// pending (a late membership event can flag one more after the first).
	settled := func() bool {
		for _, name := range []string{"flaky", "broken"} {
			if _, ok, err := client.Exists(t.Context(), "/"+name+"/leader/sharding/necessary"); err != nil || ok {
				return false
			}
		}
		return true
	}
	var sent time.Time
	testkit.Eventually(t, 20*time.Second, "the warm-up runs and a settled registry", func() bool {
		if done := warm["flaky"].Load() > 0 && warm["broken"].Load() > 0 && completed(); done && settled() {
			return true
		}
		if time.Since(sent) > 300*time.Millisecond {
			trigger()
			sent = time.Now()
		}
		return false
	})
	armed.Store(true)
	testkit.Eventually(t, 20*time.Second, "both jobs to run 3 times and the failure to be reported", func() bool {
		for name, n := range runs {
			if n.Load() == 0 { // a trigger while the warm-up's execution ends is dropped
				if err := s.Trigger(name); err != nil {
					t.Fatal(err)
				}
			}
		}
		return runs["flaky"].Load() == 3 && runs["broken"].Load() == 3 && len(handler.get()) > 0
	})
	testkit.Eventually(t, 20*time.Second, "the executions to complete", completed)
	if n := runs["flaky"].Load() + runs["broken"].Load(); n != 6 {
		t.Errorf("%d runs, want 6", n)
	}
	reqs := handler.get()
	if len(reqs) != 1 || reqs[0].JobName != "broken" || reqs[0].Tries != 3 || reqs[0].ShardingItem != 0 ||
		reqs[0].Error.Message != `job "broken" item 0 (try 3 of 3): boom` {
		t.Errorf("handler told %+v", reqs)
	}
}

// Bad retry props are refused when the job is configured, naming the job
// and the prop, and nothing of the job is started or written.
func TestAddRefusesBadRetryProps(t *testing.T) {
	t.Parallel()
	s, _ := standalone(t, plugins(), hclog.NewNullLogger())
	for _, tc := range []struct {
		job   string
		props map[string]string
		want  string
	}{
		{"negative", map[string]string{config.PropRetryMax: "-1"},
			`job "negative": job configuration key props: prop ejob.retry.max: want an integer from 0 to 2147483647, got "-1"`},
		{"unparsable", map[string]string{config.PropRetryBackoff: "often"},
			`job "unparsable": job configuration key props: prop ejob.retry.backoff: want a positive duration such as 500ms, 1s or 1m30s, got "often"`},
		{"nonpositive", map[string]string{config.PropRetryBackoffMax: "0"},
			`job "nonpositive": job configuration key props: prop ejob.retry.backoffMax: want a positive duration such as 500ms, 1s or 1m30s, got "0"`},
		{"cap", map[string]string{config.PropRetryBackoff: "2s", config.PropRetryBackoffMax: "1s"},
			`job "cap": job configuration key props: prop ejob.retry.backoffMax: 1s is less than ejob.retry.backoff (2s)`},
	} {
		cfg := config.New(tc.job, 1)
		cfg.Props = tc.props
		err := s.Add(t.Context(), kernel.Job{Config: cfg, Runner: executor.SimpleFunc(func(context.Context, spi.ShardingContext) error { return nil })})
		if err == nil || err.Error() != tc.want || !errors.Is(err, config.ErrInvalid) {
			t.Errorf("Add = %v\nwant %s", err, tc.want)
		}
		if err := s.Trigger(tc.job); err == nil {
			t.Errorf("the refused job %q was added", tc.job)
		}
	}
}
