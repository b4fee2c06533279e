package kernel_test

import (
	"context"
	"io"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ejob-io/ejob/core/config"
	"github.com/ejob-io/ejob/core/executor"
	"github.com/ejob-io/ejob/core/kernel"
	"github.com/ejob-io/ejob/core/reg"
	"github.com/ejob-io/ejob/core/reg/embedded"
	"github.com/ejob-io/ejob/internal/proctest"
	"github.com/ejob-io/ejob/internal/testkit"
	"github.com/ejob-io/ejob/spi"
)

// gatedRuns records item starts per instance and holds items while a gate
// is set.
type gatedRuns struct {
	mu     sync.Mutex
	starts map[string][]int
	gate   map[string]chan struct{} // instance -> gate its items wait on
	held   map[string]int
}

func (g *gatedRuns) runner(id string) executor.SimpleFunc {
	return func(ctx context.Context, sc spi.ShardingContext) error {
		g.mu.Lock()
		g.starts[id] = append(g.starts[id], sc.ShardingItem)
		gate := g.gate[id]
		if gate != nil {
			g.held[id]++
		}
		g.mu.Unlock()
		if gate != nil {
			select {
			case <-gate:
			case <-ctx.Done():
			}
			g.mu.Lock()
			g.held[id]--
			g.mu.Unlock()
		}
		return nil
	}
}

func (g *gatedRuns) hold(id string) chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	c := make(chan struct{})
	g.gate[id] = c
	return c
}

func (g *gatedRuns) ran(id string) []int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]int(nil), g.starts[id]...)
}

func (g *gatedRuns) holding(id string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.held[id]
}

// busy triggers id's scheduler until one of its items is held (a trigger
// that comes while an earlier run still ends is dropped, as upstream).
func busy(t *testing.T, s *kernel.Kernel, g *gatedRuns, id string) {
	t.Helper()
	testkit.Eventually(t, 10*time.Second, id+" running an item held", func() bool {
		if g.holding(id) == 1 {
			return true
		}
		if err := s.Trigger("claim"); err != nil {
			t.Fatal(err)
		}
		return false
	})
}

// TestClaimDuringAnExecutionRunsRightAfterIt: a busy survivor claims a
// crashed instance's item in the failover enquiry at the end of its own
// execution (executor step 8), and the claim's trigger, which reaches the
// trigger loop while that execution still runs, starts the claimed item
// right after it (trigger.TriggerSoon). A loop that dropped that trigger
// would leave the item to the coordination pump, which asks again for
// claimed items that did not run: 0.5-1 s later, which a mixed cluster
// shows as ejob survivors slower than Java ones.
func TestClaimDuringAnExecutionRunsRightAfterIt(t *testing.T) {
	srv := embedded.NewServer()
	cfg := config.New("claim", 2)
	cfg.Failover = true
	cfg.MonitorExecution = true
	// Once sharded over both instances, the assignment stays:
	// a resharding flag raised late by the victim's registration would
	// make the leader wait for the victim's held item.
	cfg.StaticSharding = true
	g := &gatedRuns{starts: map[string][]int{}, gate: map[string]chan struct{}{}, held: map[string]int{}}
	start := func(id string, logs io.Writer) (*kernel.Kernel, reg.Client, func()) {
		client, err := srv.Connect("claim-test")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { client.Close() })
		s, stop := runScheduler(t, kernel.Options{
			Client: client, InstanceID: id, ServerIP: "127.0.0.1", Plugins: plugins(),
			Logger:       hclog.New(&hclog.LoggerOptions{Name: id, Level: hclog.Info, Output: logs}),
			DrainTimeout: 0, // items wait on a gate
		}, kernel.Job{Config: cfg.Clone(), Runner: g.runner(id)})
		return s, client, stop
	}
	const survivor, victim = "127.0.0.1@-@1", "127.0.0.1@-@2"
	admin, err := srv.Connect("claim-test")
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()

	// The survivor leads.
	var logs proctest.Buffer
	a, _, _ := start(survivor, &logs)
	var vlogs proctest.Buffer
	b, bc, stopB := start(victim, &vlogs)
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(logs.String())
			t.Log(vlogs.String())
		}
	})
	// a reshards over both at its first execution; then b runs its item,
	// held until b dies.
	ctx := context.Background()
	owner := func(i int) string {
		v, _, err := admin.Get(ctx, "/claim/sharding/"+strconv.Itoa(i)+"/instance")
		if err != nil {
			return ""
		}
		return string(v)
	}
	testkit.Eventually(t, 10*time.Second, "the job sharded over both instances", func() bool {
		if _, pending, err := admin.Exists(ctx, "/claim/leader/sharding/necessary"); err == nil && !pending &&
			owner(0) != "" && owner(1) != "" && owner(0) != owner(1) {
			return true
		}
		_ = a.Trigger("claim")
		return false
	})
	crashed := 0
	if owner(1) == victim {
		crashed = 1
	}
	g.hold(victim)
	busy(t, b, g, victim)
	if got := g.ran(victim); len(got) != 1 || got[0] != crashed {
		t.Fatalf("the victim ran %v, want [%d]", got, crashed)
	}

	// The survivor is busy when the victim goes: it cannot claim then.
	releaseA := g.hold(survivor)
	busy(t, a, g, survivor)
	// The victim dies: its session ends (its instance node goes, its
	// persistent running node stays), as after kill -9.
	_ = bc.Close()
	go stopB()
	testkit.Eventually(t, 10*time.Second, "the victim's item queued for failover", func() bool {
		names, err := admin.Children(ctx, "/claim/leader/failover/items")
		return err == nil && len(names) == 1
	})
	before := len(g.ran(survivor))
	close(releaseA)
	g.mu.Lock()
	delete(g.gate, survivor)
	g.mu.Unlock()
	testkit.Eventually(t, 10*time.Second, "the claimed item run on the survivor right after its execution", func() bool {
		for _, i := range g.ran(survivor)[before:] {
			if i == crashed {
				return true
			}
		}
		return false
	})
	testkit.Eventually(t, 10*time.Second, "the failover node gone after the run", func() bool {
		_, ok, err := admin.Exists(ctx, reg.Join("/claim/sharding", strconv.Itoa(crashed), "failover"))
		return err == nil && !ok
	})
	out := logs.String()
	if !strings.Contains(out, "claimed failover item; triggering") {
		t.Error("the survivor did not claim the item itself")
	}
	if strings.Contains(out, pumpRetrigger) {
		t.Errorf("the claimed item ran only after the pump asked again (%q): the claim's own trigger was lost", pumpRetrigger)
	}
}

// pumpRetrigger is what the coordination pump logs when it asks again for
// claimed items that did not run.
const pumpRetrigger = "claimed failover items have not run yet; triggering again"
