package coord_test

import (
	"testing"
	"time"

	"github.com/ejob-io/ejob/core/reg/regcount"
	"github.com/ejob-io/ejob/internal/testkit"
)

// An idle job's reconcile ticks make no registry request: the reconcile
// check and the stale-node sweep look at the tree cache and read the
// registry only when it shows an offline assignment or a node of a gone
// instance. At 100,000 jobs a sweep that read the registry on every tick
// (the leader check, sharding/'s children, the items' nodes: about 3
// reads a job a minute) was the ensemble's largest load while nothing
// fired. The ticks still sweep: a running node naming an instance that
// never had an instances/ node here (a Java peer's, written while nobody
// watched) is removed by a later tick without any instance event.
func TestIdleReconcileTicksMakeNoRequests(t *testing.T) {
	const tick = 10 * time.Millisecond
	cl := newEmbeddedCluster(t)
	cfg := testConfig(2)
	cfg.ReconcileIntervalMinutes = 1 // a reconcile check on every tick
	c := regcount.New(cl.connect(t))
	a := cl.startWith("192.168.1.1", 100, cfg, c, func(o *optsT) {
		o.ReconcileTick = tick
		o.ReconcileUnit = tick
	})
	select {
	case <-a.job.Ready():
	case <-time.After(waitFor):
		t.Fatal("not ready")
	}
	cl.waitNecessary()
	runAll(t, a)
	// Fifty ticks without a request. The first windows may still see the
	// run's tail (the pump's ticks after its running nodes' events).
	var last regcount.Counts
	testkit.Eventually(t, waitFor, "50 reconcile ticks without a registry request", func() bool {
		before := c.Counts()
		time.Sleep(50 * tick) // the window measured, not a synchronisation
		last = c.Counts().Sub(before)
		return last.Total() == 0
	})

	ghost := "192.168.1.9@-@999"
	cl.persist(jp("sharding", "0", "running"), ghost)
	testkit.Eventually(t, waitFor, "the ghost's running node removed by a tick", func() bool {
		_, ok := cl.get(jp("sharding", "0", "running"))
		return !ok
	})
	cl.persist(jp("sharding", "1", "instance"), ghost) // an offline assignment, no instance event
	cl.waitNecessary()
}

// A Java peer's instance comes and goes without ejob's help: its
// deletion's event makes the leader sweep the nodes it left, with no
// reconcile tick (the tick here is an hour).
func TestGoneInstanceSweptOnItsDeletion(t *testing.T) {
	cl := newEmbeddedCluster(t)
	cfg := testConfig(2)
	a := cl.startAsyncOpts("192.168.1.1", 100, cfg, func(o *optsT) { o.ReconcileTick = time.Hour })
	cl.waitNecessary()
	runAll(t, a)
	peer := "192.168.1.8@-@4242"
	cl.persist(jp("instances", peer), "jobInstanceId: "+peer+"\n")
	cl.persist(jp("sharding", "1", "failover"), peer)
	cl.sync()
	if _, ok := cl.get(jp("sharding", "1", "failover")); !ok {
		t.Fatal("a live peer's failover node removed")
	}
	cl.remove(jp("instances", peer))
	testkit.Eventually(t, waitFor, "the gone peer's failover node removed", func() bool {
		_, ok := cl.get(jp("sharding", "1", "failover"))
		return !ok
	})
}
