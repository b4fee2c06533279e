package coord_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ejob-io/ejob/core/coord"
	"github.com/ejob-io/ejob/core/executor"
	"github.com/ejob-io/ejob/core/reg"
	"github.com/ejob-io/ejob/core/reg/embedded"
	"github.com/ejob-io/ejob/internal/testkit"
)

// triggerAll is upstream's InstanceService.triggerAllInstances.
func (cl *cluster) triggerAll() {
	cl.t.Helper()
	cl.remove(jp("trigger"))
	ids, err := cl.admin.Children(context.Background(), jp("instances"))
	if err != nil {
		cl.t.Fatal(err)
	}
	for _, id := range ids {
		cl.persist(jp("trigger", id), "")
	}
}

func scenarioTriggerRunsOnceOnEveryInstance(t *testing.T, cl *cluster) {
	a := cl.start("192.168.1.1", 100, testConfig(4))
	b := cl.start("192.168.1.2", 200, testConfig(4))
	cl.sync()
	cl.triggerAll()
	for _, in := range []*instance{a, b} {
		select {
		case <-in.triggers:
		case <-time.After(waitFor):
			t.Fatalf("%s not triggered", in.id)
		}
		testkit.Eventually(t, waitFor, "trigger node of "+in.id+" deleted", func() bool { _, ok := cl.get(jp("trigger", in.id)); return !ok })
	}
	cl.sync()
	for _, in := range []*instance{a, b} {
		select {
		case <-in.triggers:
			t.Errorf("%s triggered twice", in.id)
		default:
		}
	}
	// A trigger for an unknown instance is ignored by everyone.
	cl.persist(jp("trigger", "10.9.9.9@-@1"), "")
	cl.sync()
	if _, ok := cl.get(jp("trigger", "10.9.9.9@-@1")); !ok {
		t.Error("another instance's trigger node was deleted")
	}
}

func TestTriggerDroppedWhileRunning(t *testing.T) {
	cl := newEmbeddedCluster(t)
	a := cl.start("192.168.1.1", 100, testConfig(2))
	cl.waitNecessary()
	release, done := startHeldRun(t, cl, a, []int{0, 1})
	cl.triggerAll()
	testkit.Eventually(t, waitFor, "trigger node deleted", func() bool { _, ok := cl.get(jp("trigger", a.id)); return !ok })
	cl.sync()
	select {
	case <-a.triggers:
		t.Error("trigger fired while running")
	default:
	}
	release()
	<-done
}

func scenarioMisfire(t *testing.T, cl *cluster) {
	a := cl.start("192.168.1.1", 100, testConfig(3))
	cl.waitNecessary()
	ctx := ctxT(t)
	a.run(ctx)
	f := executor.Facade(a.job)
	// MisfireIfRunning: item 1 running elsewhere flags misfire on all items.
	cl.persist(jp("sharding", "1", "running"), "10.9.9.9@-@1")
	cl.sync() // the trigger reads running nodes from a's tree cache
	mis, err := f.MisfireIfRunning(ctx, []int{0, 1, 2})
	if err != nil || !mis {
		t.Fatalf("MisfireIfRunning = %v, %v", mis, err)
	}
	for _, i := range []string{"0", "1", "2"} {
		if _, ok := cl.get(jp("sharding", i, "misfire")); !ok {
			t.Errorf("misfire %s not set", i)
		}
	}
	// A running item is dropped from the contexts.
	sc, err := f.ShardingContexts(ctx)
	if err != nil || !equalInts(sc.Items, []int{0, 2}) {
		t.Errorf("contexts = %v, %v", sc.Items, err)
	}
	cl.remove(jp("sharding", "1", "running"))
	if mis, _ := f.MisfireIfRunning(ctx, []int{0, 1, 2}); mis {
		t.Error("misfire without running items")
	}
	// The misfire loop: executed again once, then cleared.
	if ok, err := f.ExecuteMisfired(ctx, []int{0, 1, 2}); err != nil || !ok {
		t.Fatalf("ExecuteMisfired = %v, %v", ok, err)
	}
	// Pending resharding suppresses the re-run.
	cl.persist(jp("leader", "sharding", "necessary"), "")
	if ok, _ := f.ExecuteMisfired(ctx, []int{0, 1, 2}); ok {
		t.Error("misfire re-run despite pending resharding")
	}
	cl.remove(jp("leader", "sharding", "necessary"))
	if err := f.ClearMisfire(ctx, []int{0, 1, 2}); err != nil {
		t.Fatal(err)
	}
	if ok, _ := f.ExecuteMisfired(ctx, []int{0, 1, 2}); ok {
		t.Error("misfire after ClearMisfire")
	}
	// SetMisfire (Quartz misfire path) on local items, consumed by a run
	// (its misfire loop), or by the pump's catch-up if it comes first.
	if err := a.job.SetMisfire(ctx); err != nil {
		t.Fatal(err)
	}
	a.autorun(t)
	a.run(ctx)
	testkit.Eventually(t, waitFor, "the missed fire run", func() bool { return len(a.runs()) >= 3 }) // first run, run + misfire re-run
	if _, ok := cl.get(jp("sharding", "0", "misfire")); ok {
		t.Error("misfire flag not consumed")
	}
}

func TestRegisterBeginFencedAndConditional(t *testing.T) {
	cl := newEmbeddedCluster(t)
	cfg := failoverConfig(2)
	a := cl.start("192.168.1.1", 100, cfg)
	cl.waitNecessary()
	ctx := ctxT(t)
	f := executor.Facade(a.job)
	sc, err := f.ShardingContexts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// An item already running elsewhere: nothing is written.
	cl.persist(jp("sharding", "1", "running"), "10.9.9.9@-@1")
	if err := f.RegisterBegin(ctx, sc); !errors.Is(err, coord.ErrItemRunning) {
		t.Fatalf("RegisterBegin = %v, want ErrItemRunning", err)
	}
	if _, ok := cl.get(jp("sharding", "0", "running")); ok {
		t.Error("partial running registration")
	}
	if v, _ := cl.get(jp("sharding", "1", "running")); v != "10.9.9.9@-@1" {
		t.Error("foreign running node overwritten")
	}
	cl.remove(jp("sharding", "1", "running"))
	// A suspended connection pauses: no execution starts, nothing written.
	ec := a.c.(*embedded.Client)
	ec.Suspend()
	testkit.Eventually(t, waitFor, "paused", func() bool { p, _ := a.job.Paused(); return p })
	if _, err := f.ShardingContexts(ctx); !errors.Is(err, coord.ErrPaused) {
		t.Errorf("ShardingContexts while suspended = %v", err)
	}
	if err := f.RegisterBegin(ctx, sc); !errors.Is(err, coord.ErrSessionLost) {
		t.Errorf("RegisterBegin while suspended = %v", err)
	}
	ec.Resume()
	testkit.Eventually(t, waitFor, "resumed", func() bool { p, _ := a.job.Paused(); return !p })
	if err := f.RegisterBegin(ctx, sc); err != nil {
		t.Fatal(err)
	}
	if v, _ := cl.get(jp("sharding", "0", "running")); v != a.id {
		t.Errorf("running = %q", v)
	}
	// The session is lost mid-execution: RegisterCompleted leaves the
	// running nodes to failover and reports it.
	if err := a.c.(reg.Expirer).Expire(ctx); err != nil {
		t.Fatal(err)
	}
	if err := f.RegisterCompleted(ctx, sc, nil); !errors.Is(err, coord.ErrSessionLost) {
		t.Errorf("RegisterCompleted after session loss = %v", err)
	}
	// The single instance re-registers and re-runs its cut-off items
	// (LegacyCrashedRunningItemListener-style recovery).
	a.autorun(t)
	testkit.Eventually(t, waitFor, "items re-run after new session", func() bool { return a.ranItem(0) && a.ranItem(1) })
	testkit.Eventually(t, waitFor, "leader again", func() bool {
		st, ok := cl.stat(jp("leader", "election", "instance"))
		return ok && st.EphemeralOwner == a.c.Session().ID()
	})
}

func scenarioConfigChangeReactions(t *testing.T, cl *cluster) {
	cfg := failoverConfig(2)
	a := cl.start("192.168.1.1", 100, cfg)
	cl.waitNecessary()
	a.run(ctxT(t))
	// Cron change -> OnReschedule.
	cfg.Cron = "0/9 * * * * ?"
	cl.persist(jp("config"), mustMarshal(t, cfg))
	select {
	case got := <-a.reschedules:
		if got != "0/9 * * * * ?|" {
			t.Errorf("reschedule = %q", got)
		}
	case <-time.After(waitFor):
		t.Fatal("no reschedule")
	}
	got, _ := a.job.Config(ctxT(t))
	if got.Cron != cfg.Cron {
		t.Errorf("cached config cron = %q", got.Cron)
	}
	// failover off -> sharding/*/failover deleted.
	cl.persist(jp("sharding", "0", "failover"), "x")
	cl.persist(jp("sharding", "0", "running"), "x")
	cfg.Failover = false
	cl.persist(jp("config"), mustMarshal(t, cfg))
	testkit.Eventually(t, waitFor, "failover removed", func() bool { _, ok := cl.get(jp("sharding", "0", "failover")); return !ok })
	// monitorExecution off -> running nodes deleted.
	cfg.MonitorExecution = false
	cl.persist(jp("config"), mustMarshal(t, cfg))
	testkit.Eventually(t, waitFor, "running removed", func() bool { _, ok := cl.get(jp("sharding", "0", "running")); return !ok })
}

func TestConsoleShutdown(t *testing.T) {
	cl := newEmbeddedCluster(t)
	a := cl.start("192.168.1.1", 100, testConfig(2))
	b := cl.start("192.168.1.2", 200, testConfig(2))
	cl.sync()
	cl.remove(jp("instances", a.id)) // console "shutdown" of a (the leader)
	select {
	case <-a.shutdowns:
	case <-time.After(waitFor):
		t.Fatal("no OnShutdown")
	}
	if err := <-a.done; err != nil {
		t.Errorf("Run after console shutdown = %v", err)
	}
	a.done <- nil
	testkit.Eventually(t, waitFor, "b leads", func() bool { v, _ := cl.get(jp("leader", "election", "instance")); return v == b.id })
	if _, ok := cl.get(jp("instances", a.id)); ok {
		t.Error("shut-down instance re-registered")
	}
}
