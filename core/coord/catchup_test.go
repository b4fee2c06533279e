package coord_test

import (
	"slices"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/ejob-io/ejob/internal/testkit"
)

// Fires skipped while the connection is suspended (SkipPaused) are owed
// one catch-up (OnCatchUp) when it is back, however many there were; a
// pause without a skipped fire owes nothing, nor does one with misfire
// off, nor one that ends after the job was stopped.
func TestSkippedFiresWhilePausedOweOneCatchUp(t *testing.T) {
	for name, c := range map[string]struct {
		misfire bool
		skips   int
		stop    bool // the job stopped before the pause ends
		want    int32
	}{
		"three fires skipped":       {true, 3, false, 1},
		"no fire skipped":           {true, 0, false, 0},
		"misfire off":               {false, 3, false, 0},
		"stopped before it is back": {true, 3, true, 0},
	} {
		t.Run(name, func(t *testing.T) {
			cl := newEmbeddedCluster(t)
			cfg := testConfig(2)
			cfg.Misfire = c.misfire
			var catchUps atomic.Int32
			a := cl.startAsyncOpts("192.168.1.1", 100, cfg, func(o *optsT) { o.OnCatchUp = func() { catchUps.Add(1) } })
			if a.job.SkipPaused() {
				t.Fatal("a fire skipped while connected")
			}
			suspender(a).Suspend()
			testkit.Eventually(t, waitFor, "paused", func() bool { p, _ := a.job.Paused(); return p })
			for range c.skips {
				if !a.job.SkipPaused() {
					t.Fatal("a fire not skipped while suspended")
				}
			}
			if catchUps.Load() != 0 {
				t.Fatal("a catch-up asked for while still paused")
			}
			if c.stop {
				a.job.Stop()
			}
			suspender(a).Resume()
			if !c.stop {
				testkit.Eventually(t, waitFor, "resumed", func() bool { p, _ := a.job.Paused(); return !p })
			}
			if c.want > 0 {
				testkit.Eventually(t, waitFor, "the catch-up", func() bool { return catchUps.Load() > 0 })
			}
			// A second pause without a skipped fire: its end asks for
			// nothing more (what the first one owed was taken).
			if !c.stop {
				suspender(a).Suspend()
				testkit.Eventually(t, waitFor, "paused again", func() bool { p, _ := a.job.Paused(); return p })
				suspender(a).Resume()
				testkit.Eventually(t, waitFor, "resumed again", func() bool { p, _ := a.job.Paused(); return !p })
			}
			if got := catchUps.Load(); got != c.want {
				t.Errorf("%d catch-ups asked for, want %d", got, c.want)
			}
		})
	}
}

// An instance holding a failover claim on an item that runs on another
// instance (its owner kept its session and runs it again, chaining
// catch-ups) runs its own items at its triggers: an execution of the
// claimed items alone would be empty, and the own items would wait for as
// long as the owner keeps the claimed item busy (found by the chaos suite
// on an ensemble: 20 s of a host's items not run). The claim stays for
// when the item is free.
func TestClaimOfItemRunningElsewhereLeavesOwnItemsToTheTrigger(t *testing.T) {
	cl := newEmbeddedCluster(t)
	a := cl.start("192.168.1.1", 100, failoverConfig(4))
	b := cl.start("192.168.1.2", 200, failoverConfig(4))
	cl.waitNecessary()
	ran := runAll(t, a, b)
	own, theirs := ran[a.id], ran[b.id]
	if len(own) == 0 || len(theirs) == 0 {
		t.Fatalf("sharding gave a %v and b %v", own, theirs)
	}
	release, done := startHeldRun(t, cl, b, theirs)
	claimed := theirs[0]
	cl.persist(jp("sharding", strconv.Itoa(claimed), "failover"), a.id)
	cl.sync()
	sc, err := a.job.ShardingContexts(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	if sc.Failover || !slices.Equal(sc.Items, own) {
		t.Errorf("a's trigger while its claimed item %d runs on b: items %v (failover %v), want its own items %v", claimed, sc.Items, sc.Failover, own)
	}
	if v, ok := cl.get(jp("sharding", strconv.Itoa(claimed), "failover")); !ok || v != a.id {
		t.Errorf("a's claim of item %d: %q, %v; want it kept", claimed, v, ok)
	}
	release()
	<-done
}
