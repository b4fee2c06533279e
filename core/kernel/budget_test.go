package kernel_test

import (
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ejob-io/ejob/core/config"
	"github.com/ejob-io/ejob/core/reg"
	"github.com/ejob-io/ejob/core/reg/regcount"
	"github.com/ejob-io/ejob/core/reg/zktest"
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

// reRegisterBudgetPerJob is the most registry requests an idle job's
// re-registration after a session expiry may make on ZooKeeper, counted
// until the requests settle: the instance and server nodes written again,
// the election, the check of the resharding flag for the events of the
// job's own nodes (its instance node gone and back, its server node
// written) and the tree cache's few re-reads (about 17 in all). Reading
// the leader node once for "is there a leader" and "is it this instance",
// reading the flag, the job's root and the flag's parent together,
// reading the leader node before this server on the passive election, one
// check for the events posted before it began, and one read of the
// instances and their servers (with the instance nodes) for both the
// election's check of this server and the new leader's check of the
// assignment keep it here; upstream's reads one after another, a check
// for each event, make 32 (42 with the passive election's latch).
const reRegisterBudgetPerJob = 18

// TestReRegistrationRequestBudget counts (never times) the requests of 50
// idle jobs' re-registration after their session is expired on a real
// ZooKeeper, and fails when a job makes more than reRegisterBudgetPerJob,
// logging them by method and path. On a host with thousands of jobs
// every one re-registers at once after an outage, and the ensemble
// serves all their requests.
func TestReRegistrationRequestBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("real ZooKeeper test skipped in -short mode")
	}
	const njobs, id = 50, "10.0.2.1@-@1"
	srv := zktest.Start(t, zktest.Options{})
	c := zkConnect(t, srv, "reregister-budget", 10*time.Second, nil)
	bd := &breakdown{}
	cc := regcount.New(c, regcount.WithObserver(func(call regcount.Call) {
		call.Path = idleJobRoot.ReplaceAllString(call.Path, "/{job}")
		bd.observe(call)
	}))
	s := newIdleSchedulerAs(t, cc, hclog.Off, id, njobs)
	ctx := runKernel(t, s)
	if err := s.Ready(ctx); err != nil {
		t.Fatal(err)
	}
	nodes := []*benchNode{{client: cc}}
	before := quiesce(t, time.Second, nodes)
	bd.on.Store(true)
	if err := reg.Client(c).(reg.Expirer).Expire(ctx); err != nil {
		t.Fatal(err)
	}
	waitRegistered(t, c, njobs, id)
	got := quiesce(t, time.Second, nodes).Sub(before).Total()
	bd.on.Store(false)
	perJob := float64(got) / njobs
	t.Logf("re-registration: %.1f requests a job; a job's, by method and path:\n%s", perJob, strings.Join(bd.lines(njobs), "\n"))
	if perJob > reRegisterBudgetPerJob {
		t.Errorf("re-registration made %.1f requests a job, more than the budget of %d (by method and path above)", perJob, reRegisterBudgetPerJob)
	}
}
