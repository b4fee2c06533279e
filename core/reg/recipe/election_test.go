package recipe

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ejob-io/ejob/core/reg"
	"github.com/ejob-io/ejob/core/reg/embedded"
	"github.com/ejob-io/ejob/core/reg/zktest"
	"github.com/ejob-io/ejob/core/reg/zookeeper"
	"github.com/ejob-io/ejob/internal/testkit"
)

// The election's nodes as ElasticJob names them.
const (
	testLatch  = "/job/leader/election/latch"
	testLeader = "/job/leader/election/instance"
	waitFor    = 20 * time.Second
)

// backend connects clients (simulated instances) sharing one registry
// namespace.
type backend func(t *testing.T) reg.Client

// TestElection runs the election scenarios on the embedded registry and on
// a real ZooKeeper (one server, a namespace per scenario).
func TestElection(t *testing.T) {
	scenarios := map[string]func(t *testing.T, connect backend){
		"Contenders":                   testContenders,
		"SessionExpiryHandsOver":       testSessionExpiryHandsOver,
		"Resign":                       testResign,
		"FenceAfterLossAndReelection":  testFenceAfterLossAndReelection,
		"ResignWaitsForFencedWrite":    testResignWaitsForFencedWrite,
		"NotLeaderFencedWriteRejected": testNotLeaderFenced,
	}
	t.Run("embedded", func(t *testing.T) {
		for name, run := range scenarios {
			t.Run(name, func(t *testing.T) {
				srv := embedded.NewServer()
				run(t, func(t *testing.T) reg.Client {
					c, err := srv.Connect("ns")
					if err != nil {
						t.Fatal(err)
					}
					t.Cleanup(func() { _ = c.Close() })
					return c
				})
			})
		}
	})
	t.Run("zookeeper", func(t *testing.T) {
		if testing.Short() {
			t.Skip("real ZooKeeper skipped in -short mode")
		}
		srv := zktest.Start(t, zktest.Options{})
		var seq atomic.Int32
		for name, run := range scenarios {
			ns := "election" + strconv.Itoa(int(seq.Add(1)))
			t.Run(name, func(t *testing.T) {
				run(t, func(t *testing.T) reg.Client { return connectZK(t, srv.Addr(), ns) })
			})
		}
	})
}

func connectZK(t *testing.T, addr, ns string) reg.Client {
	t.Helper()
	cfg := zookeeper.DefaultConfig(addr, ns)
	cfg.SessionTimeoutMilliseconds = 2000
	cfg.ConnectionTimeoutMilliseconds = 2000
	cfg.BaseSleepTimeMilliseconds = 50
	cfg.MaxSleepTimeMilliseconds = 200
	cfg.MaxRetries = 10
	cfg.Logger = hclog.New(&hclog.LoggerOptions{Name: "zk", Level: hclog.Warn, Output: testWriter{t}})
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	c, err := zookeeper.Connect(ctx, cfg)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(string(p))
	return len(p), nil
}

// participant is one contender: its client and its election.
type participant struct {
	c  reg.Client
	e  *Election
	id string
}

func participants(t *testing.T, connect backend, n int) []participant {
	out := make([]participant, n)
	for i := range out {
		c := connect(t)
		id := fmt.Sprintf("10.0.0.%d@-@%d", i+1, 100+i)
		out[i] = participant{c: c, e: NewElection(c, testLatch, testLeader, id), id: id}
	}
	return out
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*waitFor)
	t.Cleanup(cancel)
	return ctx
}

// campaignAll campaigns with every participant at once and returns the
// index of the single winner (failing t unless exactly one won).
func campaignAll(t *testing.T, ctx context.Context, ps []participant) int {
	t.Helper()
	won := make([]bool, len(ps))
	var wg sync.WaitGroup
	for i, p := range ps {
		wg.Go(func() {
			ok, err := p.e.Campaign(ctx)
			if err != nil {
				t.Errorf("%s campaign: %v", p.id, err)
			}
			won[i] = ok
		})
	}
	wg.Wait()
	winner := -1
	for i, ok := range won {
		if ok && winner >= 0 {
			t.Fatalf("%s and %s both won", ps[winner].id, ps[i].id)
		}
		if ok {
			winner = i
		}
	}
	if winner < 0 {
		t.Fatal("nobody won the campaign")
	}
	return winner
}

// leaderNode reads the leader node: its data and owner ("" and 0 when
// absent).
func leaderNode(t *testing.T, ctx context.Context, c reg.Client) (string, int64) {
	t.Helper()
	data, st, err := c.Get(ctx, testLeader)
	if errors.Is(err, reg.ErrNoNode) {
		return "", 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(data), st.EphemeralOwner
}

// wantLeader checks that ps[w] and nobody else leads, by every reading.
func wantLeader(t *testing.T, ctx context.Context, ps []participant, w int) {
	t.Helper()
	data, owner := leaderNode(t, ctx, ps[0].c)
	if data != ps[w].id || owner != ps[w].c.Session().ID() {
		t.Fatalf("leader node %q owned by 0x%x, want %q of 0x%x", data, owner, ps[w].id, ps[w].c.Session().ID())
	}
	for i, p := range ps {
		leader, err := p.e.IsLeader(ctx)
		if err != nil {
			t.Fatal(err)
		}
		has, err := p.e.HasLeader(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if leader != (i == w) || !has {
			t.Fatalf("%s: IsLeader %v HasLeader %v, want %v true", p.id, leader, has, i == w)
		}
	}
}

// testContenders: of several concurrent campaigns exactly one wins; the
// leader node is upstream's (ephemeral, the winner's id) and the latch is
// given back; campaigning again changes nothing.
func testContenders(t *testing.T, connect backend) {
	ctx := testCtx(t)
	ps := participants(t, connect, 4)
	w := campaignAll(t, ctx, ps)
	wantLeader(t, ctx, ps, w)
	if names, err := ps[0].c.Children(ctx, testLatch); err != nil && !errors.Is(err, reg.ErrNoNode) || len(names) > 0 {
		t.Fatalf("latch nodes left after the campaigns: %v %v", names, err)
	}
	for i, p := range ps {
		ok, err := p.e.Campaign(ctx)
		if err != nil || ok != (i == w) {
			t.Fatalf("%s campaigns again: %v %v, want %v", p.id, ok, err, i == w)
		}
	}
	wantLeader(t, ctx, ps, w)
}

// testSessionExpiryHandsOver: the leader's session expires, its node goes
// with it, another contender wins; the old leader, in its new session,
// neither leads nor can resign or fence.
func testSessionExpiryHandsOver(t *testing.T, connect backend) {
	ctx := testCtx(t)
	ps := participants(t, connect, 3)
	w := campaignAll(t, ctx, ps)
	old := ps[w]
	data, st, err := old.c.Get(ctx, testLeader)
	if err != nil {
		t.Fatal(err)
	}
	if !old.e.Leads(data, st) {
		t.Fatal("the leader's own read of its node does not lead")
	}
	sess := old.c.Session()
	if err := old.c.(reg.Expirer).Expire(ctx); err != nil {
		t.Fatal(err)
	}
	rest := append(append([]participant(nil), ps[:w]...), ps[w+1:]...)
	testkit.Eventually(t, waitFor, "the leader node gone with the session", func() bool {
		has, err := rest[0].e.HasLeader(ctx)
		return err == nil && !has
	})
	w2 := campaignAll(t, ctx, rest)
	testkit.Eventually(t, waitFor, "the old leader's new session", func() bool {
		return old.c.Session() != sess && old.c.Session().Err() == nil
	})
	wantLeader(t, ctx, rest, w2)
	if leader, err := old.e.IsLeader(ctx); err != nil || leader {
		t.Fatalf("old leader IsLeader after expiry: %v %v", leader, err)
	}
	if old.e.Leads(data, st) {
		t.Fatal("a read of the node from the lost session still leads")
	}
	if ok, err := old.e.Campaign(ctx); err != nil || ok {
		t.Fatalf("old leader campaigns: %v %v", ok, err)
	}
	if ok, err := old.e.Resign(ctx); err != nil || ok {
		t.Fatalf("old leader resigns: %v %v", ok, err)
	}
	if err := old.e.Fenced(ctx, func(Fence) error { return nil }); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("old leader fences: %v", err)
	}
	wantLeader(t, ctx, rest, w2)
}

// testResign: only the leader's Resign deletes the node; then another
// contender wins.
func testResign(t *testing.T, connect backend) {
	ctx := testCtx(t)
	ps := participants(t, connect, 2)
	a, b := ps[0], ps[1]
	if ok, err := a.e.Campaign(ctx); err != nil || !ok {
		t.Fatalf("a campaigns alone: %v %v", ok, err)
	}
	if ok, err := b.e.Resign(ctx); err != nil || ok {
		t.Fatalf("b (not the leader) resigns: %v %v", ok, err)
	}
	wantLeader(t, ctx, ps, 0)
	if ok, err := a.e.Resign(ctx); err != nil || !ok {
		t.Fatalf("a resigns: %v %v", ok, err)
	}
	if data, _ := leaderNode(t, ctx, b.c); data != "" {
		t.Fatalf("leader node %q after resigning", data)
	}
	if leader, err := a.e.IsLeader(ctx); err != nil || leader {
		t.Fatalf("a IsLeader after resigning: %v %v", leader, err)
	}
	if ok, err := a.e.Resign(ctx); err != nil || ok {
		t.Fatalf("a resigns twice: %v %v", ok, err)
	}
	if ok, err := b.e.Campaign(ctx); err != nil || !ok {
		t.Fatalf("b campaigns after a resigned: %v %v", ok, err)
	}
	wantLeader(t, ctx, ps, 1)
}

// leaderAndOther returns two participants, a (the leader) and b, and the
// node /job/data ("0") their fenced writes set.
func leaderAndOther(t *testing.T, ctx context.Context, connect backend) (a, b participant) {
	t.Helper()
	ps := participants(t, connect, 2)
	a, b = ps[0], ps[1]
	if _, err := a.c.Create(ctx, "/job/data", []byte("0"), reg.Persistent, reg.WithParents()); err != nil {
		t.Fatal(err)
	}
	if ok, err := a.e.Campaign(ctx); err != nil || !ok {
		t.Fatalf("a campaigns: %v %v", ok, err)
	}
	return a, b
}

// testFenceAfterLossAndReelection: a leader takes its fence, loses its
// session before committing, and another contender is elected (the new
// leader node has the same version as the one fenced): the stale commit
// is rejected and the new leader's goes through.
func testFenceAfterLossAndReelection(t *testing.T, connect backend) {
	ctx := testCtx(t)
	a, b := leaderAndOther(t, ctx, connect)
	var fenced Fence
	err := a.e.Fenced(ctx, func(f Fence) error {
		fenced = f
		if err := a.c.(reg.Expirer).Expire(ctx); err != nil {
			return err
		}
		testkit.Eventually(t, waitFor, "a's leader node gone", func() bool {
			has, err := b.e.HasLeader(ctx)
			return err == nil && !has
		})
		if ok, err := b.e.Campaign(ctx); err != nil || !ok {
			t.Fatalf("b campaigns: %v %v", ok, err)
		}
		_, err := FencedMulti(ctx, a.c, f, reg.SetOp("/job/data", []byte("stale"), reg.AnyVersion))
		return err
	})
	if !errors.Is(err, ErrFenced) {
		t.Fatalf("deposed leader's commit = %v, want ErrFenced", err)
	}
	_, st, err := b.c.Get(ctx, testLeader)
	if err != nil || st.Version != fenced.Version {
		t.Fatalf("new leader node version %d (%v), the fenced one %d: the case is not the one fenced against", st.Version, err, fenced.Version)
	}
	err = b.e.Fenced(ctx, func(f Fence) error {
		_, err := FencedMulti(ctx, b.c, f, reg.SetOp("/job/data", []byte("b"), reg.AnyVersion))
		return err
	})
	if err != nil {
		t.Fatalf("new leader's commit: %v", err)
	}
	if data, _, _ := b.c.Get(ctx, "/job/data"); string(data) != "b" {
		t.Fatalf("data %q, want the new leader's", data)
	}
}

// testResignWaitsForFencedWrite: the leader resigns (abdication, shutdown)
// while one of its fenced writes is between fence and commit. The node is
// deleted only after the commit; otherwise another contender could be
// elected meanwhile and re-create the node with the same version, and the
// commit would pass the fence (ZooKeeper's check is a version check).
func testResignWaitsForFencedWrite(t *testing.T, connect backend) {
	ctx := testCtx(t)
	a, b := leaderAndOther(t, ctx, connect)
	resigned := make(chan error, 1)
	err := a.e.Fenced(ctx, func(f Fence) error {
		go func() {
			_, err := a.e.Resign(ctx)
			resigned <- err
		}()
		// Wait until Resign waits for this write (a writer waiting on the
		// lock refuses new readers); fail if it deleted the node instead.
		var waiting bool
		testkit.Eventually(t, waitFor, "Resign waiting for the fenced write", func() bool {
			if a.e.writes.TryRLock() {
				a.e.writes.RUnlock()
			} else {
				waiting = true
			}
			data, _ := leaderNode(t, ctx, b.c)
			return waiting || data != a.id
		})
		if data, _ := leaderNode(t, ctx, b.c); !waiting || data != a.id {
			t.Fatalf("leader node %q while a's fenced write is in flight", data)
		}
		if ok, err := b.e.Campaign(ctx); err != nil || ok {
			t.Fatalf("b campaigns while a's fenced write is in flight: %v %v", ok, err)
		}
		_, err := FencedMulti(ctx, a.c, f, reg.SetOp("/job/data", []byte("a"), reg.AnyVersion))
		return err
	})
	if err != nil {
		t.Fatalf("a's fenced write before resigning: %v", err)
	}
	select {
	case err := <-resigned:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(waitFor):
		t.Fatal("Resign did not end after the fenced write")
	}
	if data, _ := leaderNode(t, ctx, b.c); data != "" {
		t.Fatalf("leader node %q after a resigned", data)
	}
	if data, _, _ := b.c.Get(ctx, "/job/data"); string(data) != "a" {
		t.Fatalf("data %q, want a's commit", data)
	}
	if ok, err := b.e.Campaign(ctx); err != nil || !ok {
		t.Fatalf("b campaigns after a resigned: %v %v", ok, err)
	}
	if err := a.e.Fenced(ctx, func(Fence) error { return nil }); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("a fences after resigning: %v", err)
	}
}

// testNotLeaderFenced: Fenced runs nothing for a participant that does not
// lead, with or without a leader.
func testNotLeaderFenced(t *testing.T, connect backend) {
	ctx := testCtx(t)
	ps := participants(t, connect, 2)
	a, b := ps[0], ps[1]
	ran := false
	if err := a.e.Fenced(ctx, func(Fence) error { ran = true; return nil }); !errors.Is(err, ErrNotLeader) || ran {
		t.Fatalf("fenced without a leader: %v (ran %v)", err, ran)
	}
	if ok, err := b.e.Campaign(ctx); err != nil || !ok {
		t.Fatalf("b campaigns: %v %v", ok, err)
	}
	if err := a.e.Fenced(ctx, func(Fence) error { ran = true; return nil }); !errors.Is(err, ErrNotLeader) || ran {
		t.Fatalf("fenced under another leader: %v (ran %v)", err, ran)
	}
}
