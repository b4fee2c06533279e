package ejob_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ejob-io/ejob"
	"github.com/ejob-io/ejob/internal/testkit"
	"github.com/ejob-io/ejob/spi"
)

// recListener records its calls; distribute-once when once is set.
type recListener struct {
	once  bool
	mu    sync.Mutex
	calls []string
}

func (l *recListener) Describe(context.Context, spi.ListenerDescribeRequest) (spi.ListenerDescription, error) {
	return spi.ListenerDescription{Order: spi.DefaultListenerOrder, DistributeOnce: l.once}, nil
}

func (l *recListener) rec(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls = append(l.calls, s)
}

func (l *recListener) get() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.calls, ",")
}

func (l *recListener) BeforeJobExecuted(_ context.Context, r spi.ListenerRequest) error {
	l.rec("before:" + r.Contexts.TaskID)
	return nil
}

func (l *recListener) AfterJobExecuted(_ context.Context, r spi.ListenerRequest) error {
	l.rec("after")
	return nil
}

// TestInProcessListeners: WithListener serves Go listeners by name next to
// the built-ins; a common and a distribute-once listener each run before
// and after the one-off run; an unknown name is refused.
func TestInProcessListeners(t *testing.T) {
	reg, err := ejob.EmbeddedRegistry("lib-listeners")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { reg.Close() })
	common, once := &recListener{}, &recListener{once: true}
	s, err := ejob.NewScheduler(reg, ejob.WithDrainTimeout(5*time.Second),
		ejob.WithListener("COMMON", common), ejob.WithListener("Once", once))
	if err != nil {
		t.Fatal(err)
	}
	bad := ejob.NewJobConfig("bad", 1)
	bad.JobListenerTypes = []string{"NOPE"}
	if err := s.Simple(ctxOf(t), bad, func(context.Context, ejob.ShardingContext) error { return nil }); err == nil ||
		!strings.Contains(err.Error(), "NOPE") {
		t.Fatalf("unknown listener accepted: %v", err)
	}
	cfg := ejob.NewJobConfig("listened", 2)
	cfg.JobListenerTypes = []string{"common", "ONCE", "log", "LOG_ONCE"}
	if err := s.Simple(ctxOf(t), cfg, func(context.Context, ejob.ShardingContext) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := s.Execute(context.Background(), "listened"); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 20*time.Second, "the listeners", func() bool { return strings.HasSuffix(once.get(), "after") && strings.HasSuffix(common.get(), "after") })
	if err := s.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := "before:listened@-@0,1@-@READY@-@" + s.InstanceID() + ",after"
	if common.get() != want || once.get() != want {
		t.Errorf("calls: common %q, once %q, want %q", common.get(), once.get(), want)
	}
}
