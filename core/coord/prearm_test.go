package coord_test

import (
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/ejob-io/ejob/core/coord"
	"github.com/ejob-io/ejob/core/executor"
	"github.com/ejob-io/ejob/core/reg"
	"github.com/ejob-io/ejob/internal/testkit"
)

// A pre-arm is the steady trigger's two requests made ahead: the running
// nodes exist once PreArm returns, ConfirmArmed holds at the scheduled
// time, and RegisterBegin adopts them without a request.
func TestPreArmThenBegin(t *testing.T) {
	cl, in, log := settledInstance(t)
	ctx := ctxT(t)
	log.on.Store(true)
	sc, ok, err := in.job.PreArm(ctx)
	if err != nil || !ok || !slices.Equal(sc.Items, []int{0, 1}) {
		t.Fatalf("PreArm = %v, %v, %v; want [0 1], true", sc.Items, ok, err)
	}
	if calls := ownRequests(log.take()); len(calls) != 2 {
		t.Fatalf("PreArm made %d requests, want 2 (the stat and the transaction): %v", len(calls), calls)
	}
	if got := runningNodes(cl, 0, 1); !slices.Equal(got, []int{0, 1}) {
		t.Fatalf("running nodes after PreArm: %v, want [0 1]", got)
	}
	if !in.job.ConfirmArmed(ctx, sc) {
		t.Fatal("ConfirmArmed = false with nothing changed")
	}
	f := executor.Facade(in.job)
	if mis, err := f.MisfireIfRunning(ctx, sc.Items); err != nil || mis {
		t.Fatalf("MisfireIfRunning = %v, %v: took the pre-armed nodes for another execution's", mis, err)
	}
	if err := f.RegisterBegin(ctx, sc); err != nil {
		t.Fatal(err)
	}
	if calls := ownRequests(log.take()); len(calls) != 0 {
		t.Fatalf("RegisterBegin made requests: %v", calls)
	}
	// Each item's fencing token is its running node's Czxid, taken from
	// the pre-arm's transaction: no request of its own.
	for _, i := range sc.Items {
		st, _ := cl.stat(jp("sharding", strconv.Itoa(i), "running"))
		if tok := sc.ShardingContext(i).FencingToken; tok == 0 || tok != st.Czxid {
			t.Errorf("item %d: fencing token %d, running node's Czxid %d", i, tok, st.Czxid)
		}
	}
	if err := f.RegisterCompleted(ctx, sc, nil); err != nil {
		t.Fatal(err)
	}
	if got := runningNodes(cl, 0, 1); len(got) != 0 {
		t.Fatalf("running nodes after RegisterCompleted: %v", got)
	}
}

// An abandoned fire's nodes are deleted by Disarm, and the instance is
// idle again: the next trigger runs the items.
func TestPreArmDisarmed(t *testing.T) {
	cl, in, _ := settledInstance(t)
	ctx := ctxT(t)
	sc, ok, err := in.job.PreArm(ctx)
	if err != nil || !ok {
		t.Fatalf("PreArm = %v, %v", ok, err)
	}
	if !in.job.IsRunning() {
		t.Fatal("not counted as running while pre-armed")
	}
	in.job.Disarm(ctx)
	if got := runningNodes(cl, sc.Items...); len(got) != 0 || in.job.IsRunning() {
		t.Fatalf("after Disarm: running nodes %v, running %v; want none, false", got, in.job.IsRunning())
	}
	items, err := in.run(ctx)
	if err != nil || !slices.Equal(items, []int{0, 1}) {
		t.Fatalf("next run: %v, %v", items, err)
	}
}

// ConfirmArmed fails when, by the scheduled time, the tree cache shows what
// a trigger then would decide on: a resharding flag, a disabled item, the
// server disabled. The nodes created ahead are then deleted (Disarm) and
// ShardingContexts decides as for any fire: with a resharding pending, the
// leader (this instance) reshards and runs its items.
func TestPreArmNotConfirmed(t *testing.T) {
	for _, tc := range []struct {
		name string
		path string
		val  string
	}{
		{"resharding flagged", jp("leader", "sharding", "necessary"), ""},
		{"item disabled", jp("sharding", "1", "disabled"), ""},
		{"server disabled", jp("servers", "192.168.1.1"), "DISABLED"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cl, in, _ := settledInstance(t)
			ctx := ctxT(t)
			sc, ok, err := in.job.PreArm(ctx)
			if err != nil || !ok {
				t.Fatalf("PreArm = %v, %v", ok, err)
			}
			cl.persist(tc.path, tc.val)
			cl.sync()
			if in.job.ConfirmArmed(ctx, sc) {
				t.Fatal("ConfirmArmed = true")
			}
			in.job.Disarm(ctx)
			if got := runningNodes(cl, 0, 1); len(got) != 0 {
				t.Fatalf("running nodes after Disarm: %v", got)
			}
			if tc.name != "resharding flagged" {
				return
			}
			items, err := in.run(ctx)
			if err != nil || !slices.Equal(items, []int{0, 1}) {
				t.Fatalf("run at the scheduled time: %v, %v", items, err)
			}
			if _, pending := cl.get(jp("leader", "sharding", "necessary")); pending {
				t.Fatal("resharding still pending after the run")
			}
		})
	}
}

// PreArm decides nothing that belongs to the scheduled time: with an item
// running elsewhere (another instance's failover run, which may end before
// the fire), it creates nothing and sets no misfire flag; the fire's own
// ShardingContexts decides that, at its time.
func TestPreArmLeavesABusyItemToTheFireTime(t *testing.T) {
	cl, in, _ := settledInstance(t)
	ctx := ctxT(t)
	cl.persist(jp("sharding", "0", "running"), "192.168.1.9@-@1")
	cl.sync()
	if _, ok, err := in.job.PreArm(ctx); ok || err != nil {
		t.Fatalf("PreArm = %v, %v; want false, nil", ok, err)
	}
	if _, flagged := cl.get(jp("sharding", "0", "misfire")); flagged {
		t.Fatal("PreArm set the misfire flag of the busy item")
	}
	if got := runningNodes(cl, 1); len(got) != 0 || in.job.IsRunning() {
		t.Fatalf("PreArm left running nodes %v (running %v)", got, in.job.IsRunning())
	}
	if lead := in.job.PreArmLead(); lead != 0 {
		t.Fatalf("PreArmLead = %v after a pre-arm that did not apply, want 0", lead)
	}
	cl.remove(jp("sharding", "0", "running"))
	cl.sync()
	if _, ok, err := in.job.PreArm(ctx); !ok || err != nil {
		t.Fatalf("PreArm once the item is free = %v, %v", ok, err)
	}
	in.job.Disarm(ctx)
}

// After the session the nodes were created in ended, Disarm deletes only
// the nodes that still name this instance (the version fence of the
// creation proves nothing then): another instance's node at the
// same path stays.
func TestPreArmDisarmAfterSessionLoss(t *testing.T) {
	cl, in, _ := settledInstance(t)
	ctx := ctxT(t)
	sc, ok, err := in.job.PreArm(ctx)
	if err != nil || !ok {
		t.Fatalf("PreArm = %v, %v", ok, err)
	}
	takenOverInNewSession(t, cl, in)
	in.job.Disarm(ctx)
	if v, _ := cl.get(jp("sharding", "0", "running")); v != "192.168.1.9@-@1" {
		t.Fatalf("item 0's running node = %q: Disarm deleted another instance's node", v)
	}
	if v, ok := cl.get(jp("sharding", "1", "running")); ok && slices.Contains(sc.Items, 1) {
		t.Fatalf("item 1's running node (%q) left after Disarm", v)
	}
}

// A trigger that undoes its running-node transaction (a resharding
// pending, or the transaction's outcome unknown after a lost connection)
// in a later session than the one it began in deletes only the nodes that
// still name its instance: the new session's instance node has the
// version the begin's fence checked (0), and a running node another
// instance created meanwhile the version ours had (0), so neither version
// check tells the nodes apart. An undo that deleted by version alone lets
// its instance run the item beside the instance that took it over (the
// chaos suite's exclusion check, seed 1795853709387874060: 667 ms of
// overlap after sigstop-host-only of the owner).
func TestUndoBeginInALaterSession(t *testing.T) {
	cl, in, _ := settledInstance(t)
	ctx := ctxT(t)
	sc, ok, err := in.job.PreArm(ctx)
	if err != nil || !ok || !slices.Equal(sc.Items, []int{0, 1}) {
		t.Fatalf("PreArm = %v, %v, %v", sc.Items, ok, err)
	}
	takenOverInNewSession(t, cl, in)
	if err := coord.UndoBegin(in.job, ctx, sc.Items); err != nil {
		t.Fatal(err)
	}
	if v, _ := cl.get(jp("sharding", "0", "running")); v != "192.168.1.9@-@1" {
		t.Fatalf("item 0's running node = %q: the undo deleted another instance's node", v)
	}
	if v, ok := cl.get(jp("sharding", "1", "running")); ok {
		t.Fatalf("item 1's running node (%q, this instance's) left after the undo", v)
	}
}

// takenOverInNewSession expires in's session after a pre-arm of items 0
// and 1: another instance takes item 0 over meanwhile (its node at version
// 0), item 1's node is still in's, as a persistent one (failover on)
// outlives the session; it returns once in is registered again in a new
// session.
func takenOverInNewSession(t *testing.T, cl *cluster, in *instance) {
	t.Helper()
	ctx := ctxT(t)
	sess := in.c.Session()
	if err := in.c.(interface{ Unwrap() reg.Client }).Unwrap().(reg.Expirer).Expire(ctx); err != nil {
		t.Fatal(err)
	}
	cl.remove(jp("sharding", "0", "running"))
	cl.persist(jp("sharding", "0", "running"), "192.168.1.9@-@1")
	cl.remove(jp("sharding", "1", "running"))
	cl.persist(jp("sharding", "1", "running"), in.id)
	testkit.Eventually(t, waitFor, "registered again in a new session", func() bool {
		s := in.c.Session()
		_, registered := cl.get(jp("instances", in.id))
		return s != nil && s != sess && s.Err() == nil && registered
	})
}

func TestPreArmLead(t *testing.T) {
	ms := time.Millisecond
	for _, tc := range []struct {
		rtts []time.Duration
		want time.Duration
	}{
		{[]time.Duration{20 * time.Microsecond, 30 * time.Microsecond}, 1060 * time.Microsecond}, // embedded: the lead is still 1 ms more
		{[]time.Duration{200 * time.Microsecond, 300 * time.Microsecond, 5 * ms}, 11 * ms},
		{[]time.Duration{1500 * time.Microsecond, 1200 * time.Microsecond, 900 * time.Microsecond}, 4 * ms},
		{[]time.Duration{8 * ms}, 17 * ms},
		{[]time.Duration{8 * ms, 6 * ms, 12 * ms}, 25 * ms},
		{[]time.Duration{8 * ms, 40 * ms}, 50 * ms}, // capped
		// The slowest of the last 8 only: 40 ms is forgotten.
		{[]time.Duration{40 * ms, 5 * ms, 5 * ms, 5 * ms, 5 * ms, 5 * ms, 5 * ms, 5 * ms, 5 * ms}, 11 * ms},
	} {
		if got := coord.PreArmLeadOf(tc.rtts...); got != tc.want {
			t.Errorf("lead of %v = %v, want %v", tc.rtts, got, tc.want)
		}
	}
}

// A suspension of the registry connection within the lead: ConfirmArmed
// fails and the nodes created ahead are deleted (as soon as the
// connection allows).
func TestPreArmNotConfirmedWhenSuspended(t *testing.T) {
	cl, in, _ := settledInstance(t)
	ctx := ctxT(t)
	sc, ok, err := in.job.PreArm(ctx)
	if err != nil || !ok {
		t.Fatalf("PreArm = %v, %v", ok, err)
	}
	coord.SetPaused(in.job, true)
	if in.job.ConfirmArmed(ctx, sc) {
		t.Fatal("ConfirmArmed = true while suspended")
	}
	in.job.Disarm(ctx)
	coord.SetPaused(in.job, false)
	if got := runningNodes(cl, 0, 1); len(got) != 0 || in.job.IsRunning() {
		t.Fatalf("after Disarm: running nodes %v, running %v", got, in.job.IsRunning())
	}
}
