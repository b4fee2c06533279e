package coord_test

import (
	"strings"
	"sync/atomic"
	"testing"

	"github.com/ejob-io/ejob/core/coord"
	"github.com/ejob-io/ejob/core/reg"
	"github.com/ejob-io/ejob/core/reg/embedded"
	"github.com/ejob-io/ejob/core/reg/regcount"
	"github.com/ejob-io/ejob/internal/testkit"
)

// TestPassiveElectionFindsLeaderWithoutLatch: a job whose leader node is
// deleted and at once replaced by another instance's does not take the
// election latch for the deletion's event: its fresh read finds the new
// leader node first. After a session expiry the job's re-registration
// elects it and the event of its old leader node's deletion comes after:
// the passive election took the latch then only to find the new node
// under it, 42 requests a job to re-register on ZooKeeper instead of 32
// (BenchmarkIdleAfterExpiry, core/kernel).
func TestPassiveElectionFindsLeaderWithoutLatch(t *testing.T) {
	srv := embedded.NewServer()
	ec, err := srv.Connect("ns")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ec.Close() })
	var counting atomic.Bool
	var latches atomic.Int32
	c := regcount.New(ec, regcount.WithObserver(func(call regcount.Call) {
		if counting.Load() && call.Method == "Create" && strings.Contains(call.Path, "/leader/election/latch/") {
			latches.Add(1)
		}
	}))
	leaderNode := reg.Join("passive", "leader", "election", "instance")
	var leaderEvents atomic.Int32 // handled by the job, after counting starts
	j := newJob(t, c, nil, "passive", func(o *coord.Options) {
		o.OnEvent = func(path string) {
			if counting.Load() && path == leaderNode {
				leaderEvents.Add(1)
			}
		}
	})
	if err := j.Start(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(j.Stop)
	testkit.Eventually(t, waitFor, "the job leads", func() bool {
		ok, err := j.IsLeader(ctxT(t))
		return err == nil && ok
	})
	_, st, err := ec.Get(ctxT(t), leaderNode)
	if err != nil {
		t.Fatal(err)
	}

	other, err := srv.Connect("ns")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = other.Close() })
	counting.Store(true)
	if _, err := other.Multi(ctxT(t),
		reg.DeleteOp(leaderNode, st.Version),
		reg.CreateOp(leaderNode, []byte("10.0.0.2@-@2"), reg.Ephemeral)); err != nil {
		t.Fatal(err)
	}
	// OnEvent follows the handling of each event: once both the
	// deletion's and the creation's are handled, any latch they took was
	// taken. A cache that folded them into one change would fail here
	// rather than let the test pass without an election.
	testkit.Eventually(t, waitFor, "the job handled the deletion and the creation", func() bool {
		return leaderEvents.Load() == 2
	})
	if ok, err := j.IsLeader(ctxT(t)); err != nil || ok {
		t.Fatalf("IsLeader = %v, %v after another instance's leader node replaced the job's", ok, err)
	}
	if n := latches.Load(); n != 0 {
		t.Errorf("the job took the election latch %d times for a deletion whose leader node was already replaced", n)
	}
}
