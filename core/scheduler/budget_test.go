package scheduler_test

import (
	"strings"
	"testing"
	"time"

	"github.com/ejob-io/ejob/core/config"
	"github.com/ejob-io/ejob/internal/testkit"
)

// requestBudgetPerTrigger is the most registry requests one steady-state
// trigger of a 3-item job on 1 instance (failover and monitorExecution on)
// may make on the embedded registry, the instance's reactions to its own
// writes (tree-cache re-reads, watch re-arms) included. It was 62 when the
// test was written (issue 16); now a trigger makes 12: the stat of
// leader/sharding (the one read before the running-node transaction), the
// running-node transaction, the completion transaction, and the tree
// cache's 3 re-reads per item (its parent's child list when the running
// node comes and when it goes, and the new node's data). A change that
// adds a request to the trigger path fails the test; a change that saves
// some lowers it here.
const requestBudgetPerTrigger = 12

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
		worst = max(worst, got.Total())
		t.Logf("trigger %d: %d requests (%d reads, %d writes, %d multis, %d watches)",
			n+1, got.Total(), got.Reads, got.Writes, got.Multis, got.Watches)
		if got.Total() > requestBudgetPerTrigger {
			t.Errorf("trigger %d made %d registry requests, more than the budget of %d; by method and path:\n%s",
				n+1, got.Total(), requestBudgetPerTrigger, strings.Join(bd.lines(1), "\n"))
		}
	}
	if worst < requestBudgetPerTrigger {
		t.Logf("at most %d requests per trigger, under the budget of %d: lower requestBudgetPerTrigger", worst, requestBudgetPerTrigger)
	}
}
