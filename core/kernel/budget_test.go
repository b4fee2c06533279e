package kernel_test

import (
	"strings"
	"testing"
	"time"

	"github.com/ejob-io/ejob/core/config"
	"github.com/ejob-io/ejob/internal/testkit"
)

// requestBudgetPerTrigger is the most registry requests one steady-state
// trigger of a 3-item job on 1 instance (failover and monitorExecution on)
// may make on the embedded registry itself: the stat of leader/sharding
// (sent together with the running-node transaction), the running-node
// transaction and the completion transaction (upstream makes about 58). A
// change that adds a request to the trigger path fails the test; a change
// that saves some lowers it here.
const requestBudgetPerTrigger = 3

// cacheReadBudgetPerTrigger is the most rounds of reads (MultiRead) the
// shared tree cache may make after such a trigger, in reaction to its
// writes. The embedded registry's events carry their nodes
// (reg.WatchEvent.Known), which the cache applies without reading them
// back: none. It was 2 to 4 before (a round after each transaction, the
// running nodes created, then deleted, and one more when a transaction's
// notifications reached it in two rounds), 9 with one-shot watches (3 per
// item).
const cacheReadBudgetPerTrigger = 0

// TestRequestsPerTriggerBudget counts (never times) the registry requests
// of steady-state triggers, as BenchmarkRequestsPerTrigger does, and fails
// when one trigger makes more than requestBudgetPerTrigger, logging them
// by method and path.
func TestRequestsPerTriggerBudget(t *testing.T) {
	const items, triggers = 3, 5
	be := embeddedBackend()
	cfg := config.New("budget", items) // no cron: runs only when triggered
	cfg.Failover = true
	cfg.MonitorExecution = true
	log := &itemLog{}
	bd := &breakdown{}
	job := log.runner()
	job.Config = cfg
	nodes := []*benchNode{startNode(t, be.connect(t, "budget"), "10.0.0.1", 100, bd.observe, job)}
	var want int64
	runOnce := func() {
		want += items
		triggerAll(t, "budget", nodes)
		testkit.Eventually(t, 60*time.Second, "every item to run", func() bool { return log.n.Load() >= want })
	}
	// The first trigger reshards: not counted.
	warmUp(t, be.connect(t, "budget"), "budget", be.settle, nodes, runOnce)
	var worst int64
	for n := range triggers {
		before := quiesce(t, be.settle, nodes)
		bd.reset()
		bd.on.Store(true)
		runOnce()
		got := quiesce(t, be.settle, nodes).Sub(before)
		bd.on.Store(false)
		cache := bd.count("MultiRead")
		own := got.Total() - cache
		worst = max(worst, own)
		t.Logf("trigger %d: %d requests (%d reads, %d writes, %d multis, %d watches), of which %d the cache's reads",
			n+1, got.Total(), got.Reads, got.Writes, got.Multis, got.Watches, cache)
		if own > requestBudgetPerTrigger || cache > cacheReadBudgetPerTrigger {
			t.Errorf("trigger %d made %d registry requests and the cache %d reads, more than the budgets of %d and %d; by method and path:\n%s",
				n+1, own, cache, requestBudgetPerTrigger, cacheReadBudgetPerTrigger, strings.Join(bd.lines(1), "\n"))
		}
	}
	if worst < requestBudgetPerTrigger {
		t.Logf("at most %d requests per trigger, under the budget of %d: lower requestBudgetPerTrigger", worst, requestBudgetPerTrigger)
	}
}
