package kernel_test

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ejob-io/ejob/core/config"
	"github.com/ejob-io/ejob/core/kernel"
	"github.com/ejob-io/ejob/core/reg"
	"github.com/ejob-io/ejob/core/reg/regcount"
	"github.com/ejob-io/ejob/internal/proctest"
	"github.com/ejob-io/ejob/internal/testkit"
)

// A steady job's fire is pre-armed (its running-node transaction sent a
// lead ahead of the scheduled second) when the registry answers slowly,
// as ZooKeeper does (here the embedded registry with 4 ms added to the
// trigger's requests, so that the lead is above zero); its items still
// start at the scheduled second, never before. A shutdown that comes
// within the lead abandons the fire: no item of it starts, and the
// running nodes created ahead (persistent: failover is on) are deleted
// before the scheduler returns.
func TestPreArmedFireStartsOnTimeAndStopsClean(t *testing.T) {
	be := embeddedBackend()
	const items = 2
	cfg := config.New("prearm", items)
	cfg.Cron = "* * * * * ?"
	cfg.Failover = true
	log := &itemLog{}
	var (
		mu       sync.Mutex
		ahead    []time.Time // running-node transactions sent before their second
		stopNext atomic.Bool // stop the node at the next transaction sent ahead
		stopped  = make(chan time.Time, 1)
		node     *benchNode
	)
	obs := func(c regcount.Call) {
		begin := c.Method == "Multi" && strings.Contains(c.Path, "/instances/")
		if !begin && !(c.Method == "Exists" && strings.HasSuffix(c.Path, "/leader/sharding")) {
			return
		}
		now := time.Now()
		time.Sleep(4 * time.Millisecond)
		if !begin || now.Sub(now.Truncate(time.Second)) < 500*time.Millisecond {
			return
		}
		mu.Lock()
		ahead = append(ahead, now)
		mu.Unlock()
		if stopNext.CompareAndSwap(true, false) {
			second := now.Truncate(time.Second).Add(time.Second)
			go func() {
				node.stop()
				stopped <- second
			}()
		}
	}
	job := log.runner()
	job.Config = cfg
	// The node's warnings are kept: the coord's safety net deletes running
	// nodes whose execution did not begin a second later, with a warning
	// (the nodes must be gone before that, by the abandoned fire itself).
	var logs proctest.Buffer
	s, stop := runScheduler(t, kernel.Options{
		Client: regcount.New(be.connect(t, "bench"), regcount.WithObserver(obs)), InstanceID: "10.0.0.1@-@100",
		ServerIP: "10.0.0.1", Plugins: plugins(), DrainTimeout: 5 * time.Second,
		Logger: hclog.New(&hclog.LoggerOptions{Name: "prearm", Level: hclog.Warn, Output: &logs}),
	}, job)
	node = &benchNode{sched: s, stop: stop}

	testkit.Eventually(t, 20*time.Second, "three fires pre-armed", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(ahead) >= 3
	})
	starts := log.since(time.Time{})
	if len(starts) == 0 {
		t.Fatal("no item started")
	}
	for _, s := range starts {
		// Every fire is on a whole second: an item that started before
		// its second shows up late in the second before.
		if off := s.Sub(s.Truncate(time.Second)); off > 500*time.Millisecond {
			t.Fatalf("an item started %v before its scheduled second", time.Second-off)
		}
	}
	mu.Lock()
	first := ahead[0]
	mu.Unlock()
	if n := len(log.since(first)); n < 2*items {
		t.Fatalf("%d item starts since the first pre-armed fire, want at least %d", n, 2*items)
	}

	stopNext.Store(true)
	var second time.Time
	select {
	case second = <-stopped:
	case <-time.After(20 * time.Second):
		t.Fatal("no fire pre-armed to stop within its lead")
	}
	if late := log.since(second); len(late) > 0 {
		t.Fatalf("items of the fire abandoned at shutdown started: %v", late)
	}
	if strings.Contains(logs.String(), "did not begin") {
		t.Errorf("the nodes of the abandoned fire were left to the safety net:\n%s", logs.String())
	}
	c := be.connect(t, "bench")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for i := range items {
		p := reg.Join("prearm", "sharding", strconv.Itoa(i), "running")
		if v, _, err := c.Get(ctx, p); err == nil {
			t.Errorf("%s = %q left after the shutdown abandoned the pre-armed fire", p, v)
		}
	}
}
