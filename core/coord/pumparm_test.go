package coord_test

import (
	"testing"
	"time"

	"github.com/ejob-io/ejob/core/coord"
)

// TestSteadyTriggerArmsNoPumpTick: the running node of a steady trigger,
// whose pump has nothing to do, arms no pump tick (no wake-up of the
// process a failoverTick after every fire), while a misfire flag that is
// pending when an item's running node goes arms one, and the pump then
// has the flagged item run.
func TestSteadyTriggerArmsNoPumpTick(t *testing.T) {
	cl := newEmbeddedCluster(t)
	cfg := testConfig(1)
	in := cl.startAsyncOpts("10.0.0.1", 1, cfg, func(o *optsT) { o.PollInterval = 200 * time.Millisecond })
	ctx := ctxT(t)
	if _, err := in.run(ctx); err != nil { // the first trigger shards
		t.Fatal(err)
	}
	running := jp("sharding", "0", "running")
	// quiet waits until the event loop has handled every event so far
	// (whose ticks then run) and the pump has no tick armed.
	quiet := func() {
		t.Helper()
		cl.sync()
		deadline := time.Now().Add(waitFor)
		for coord.PumpArmed(in.job) {
			if time.Now().After(deadline) {
				t.Fatal("the pump keeps ticking with nothing to do")
			}
			time.Sleep(10 * time.Millisecond) // polls observable state
		}
	}
	quiet()

	// A steady trigger held while its item runs: once the job's tree
	// cache has delivered the running node, no tick is armed.
	in.seen.Delete(running)
	release := in.setHold()
	done := make(chan error, 1)
	go func() { _, err := in.run(ctx); done <- err }()
	waitSeen(t, in, running)
	if coord.PumpArmed(in.job) {
		release()
		t.Fatal("a steady trigger's running node armed a pump tick")
	}
	release()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	quiet()

	// A misfire flag of this instance's item while another instance runs
	// it (a failover run elsewhere): the pump, ticking after the flag's
	// event, leaves it (the item runs); once that running node goes, its
	// deletion arms the tick that has the item run here.
	in.triggers = make(chan struct{}, 64)
	cl.persist(running, "10.0.0.2@-@2")
	cl.persist(jp("sharding", "0", "misfire"), "")
	waitSeen(t, in, jp("sharding", "0", "misfire"))
	quiet()
	cl.remove(running)
	select {
	case <-in.triggers:
	case <-time.After(waitFor):
		t.Fatal("the pending misfire was not triggered once the item's running node went")
	}
}

// waitSeen waits until the instance's tree cache has delivered an event
// of path.
func waitSeen(t *testing.T, in *instance, path string) {
	t.Helper()
	deadline := time.Now().Add(waitFor)
	for {
		if _, ok := in.seen.Load(path); ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no event of %s", path)
		}
		time.Sleep(time.Millisecond) // polls observable state
	}
}
