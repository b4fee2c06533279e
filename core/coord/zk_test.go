package coord_test

import (
	"context"
	"errors"
	"net"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ejob-io/ejob/core/coord"
	"github.com/ejob-io/ejob/core/reg"
	"github.com/ejob-io/ejob/core/reg/zktest"
	"github.com/ejob-io/ejob/core/reg/zookeeper"
	"github.com/ejob-io/ejob/internal/testkit"
)

// TestZooKeeper runs the key scenarios against a real ZooKeeper started by
// scripts/zk.sh (one server for all subtests, one namespace each).
func TestZooKeeper(t *testing.T) {
	if testing.Short() {
		t.Skip("real ZooKeeper scenarios skipped in -short mode")
	}
	srv := zktest.Start(t, zktest.Options{})
	var nsSeq atomic.Int32
	newZKCluster := func(t *testing.T) *cluster {
		ns := "coord" + strconv.Itoa(int(nsSeq.Add(1)))
		connect := func(t *testing.T) reg.Client {
			cfg := zookeeper.DefaultConfig(srv.Addr(), ns)
			cfg.SessionTimeoutMilliseconds = 2000
			cfg.ConnectionTimeoutMilliseconds = 2000
			cfg.BaseSleepTimeMilliseconds = 50
			cfg.MaxSleepTimeMilliseconds = 200
			cfg.MaxRetries = 10
			cfg.Logger = hclog.New(&hclog.LoggerOptions{Name: "zk", Level: hclog.Warn, Output: testWriter{t}})
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			c, err := zookeeper.Connect(ctx, cfg)
			if err != nil {
				t.Fatalf("connect: %v", err)
			}
			t.Cleanup(func() { _ = c.Close() })
			return c
		}
		return newCluster(t, connect)
	}

	for name, run := range scenarios() {
		t.Run(name, func(t *testing.T) { run(t, newZKCluster(t)) })
	}
	t.Run("DistributeOnce", func(t *testing.T) { testDistributeOnce(t, newZKCluster(t)) })
	t.Run("DistributeOnceConcurrent", func(t *testing.T) { testDistributeOnceConcurrent(t, newZKCluster(t)) })
	t.Run("DistributeOnceTimeout", func(t *testing.T) { testDistributeOnceTimeout(t, newZKCluster(t)) })
	t.Run("TreeValuesAfterAvgThreeInstancesTenItems", func(t *testing.T) {
		cl := newZKCluster(t)
		ins := []*instance{
			cl.start("192.168.1.1", 100, testConfig(10)),
			cl.start("192.168.1.2", 200, testConfig(10)),
			cl.start("192.168.1.10", 50, testConfig(10)),
		}
		cl.waitNecessary()
		runAll(t, ins...)
		expectAssign(t, cl, 10, map[string][]int{
			"192.168.1.2@-@200": {0, 1, 2, 9},
			"192.168.1.1@-@100": {3, 4, 5},
			"192.168.1.10@-@50": {6, 7, 8},
		})
		// The tree as upstream writes it.
		if v, _ := cl.get(jp("instances", "192.168.1.2@-@200")); v != "jobInstanceId: 192.168.1.2@-@200\nserverIp: 192.168.1.2\n" {
			t.Errorf("instance value = %q", v)
		}
		if st, _ := cl.stat(jp("leader", "election", "instance")); st.EphemeralOwner == 0 {
			t.Error("leader node not ephemeral")
		}
	})

	// A run cut off by its lost session is failed over; each run of an
	// item carries a fencing token above every earlier run's, on any
	// instance: b's cut-off run, the failover run that replaces it (on a,
	// or on b re-registered), and the runs after the resharding (the
	// harness checks every begin: cluster.fence).
	t.Run("FailoverOnLostSession", func(t *testing.T) {
		cl := newZKCluster(t)
		a := cl.start("192.168.1.1", 100, failoverConfig(4))
		b := cl.start("192.168.1.2", 200, failoverConfig(4))
		cl.waitNecessary()
		runAll(t, a, b)
		release, done := startHeldRun(t, cl, b, []int{0, 1})
		defer release()
		stale := map[int]int64{}
		for _, i := range []int{0, 1} {
			toks := cl.fencingTokens(i)
			st, _ := cl.stat(jp("sharding", strconv.Itoa(i), "running"))
			if len(toks) < 2 || toks[len(toks)-1] != st.Czxid {
				t.Fatalf("item %d: tokens %v; b's running node's Czxid %d", i, toks, st.Czxid)
			}
			stale[i] = st.Czxid
		}
		a.autorun(t)
		b.autorun(t)
		if err := b.c.(reg.Expirer).Expire(context.Background()); err != nil {
			t.Fatal(err)
		}
		if err := <-done; err == nil {
			t.Error("cut-off execution completed without error")
		}
		testkit.Eventually(t, waitFor, "items 0 and 1 re-run", func() bool {
			return (a.ranItem(0) || b.ranItem(0)) && (a.ranItem(1) || b.ranItem(1))
		})
		testkit.Eventually(t, waitFor, "b re-registered", func() bool {
			st, ok := cl.stat(jp("instances", b.id))
			return ok && st.EphemeralOwner == b.c.Session().ID()
		})
		cl.waitNecessary()
		runAll(t, a, b)
		expectAssign(t, cl, 4, map[string][]int{b.id: {0, 1}, a.id: {2, 3}})
		for _, i := range []int{0, 1} {
			toks := cl.fencingTokens(i)
			if k := slices.Index(toks, stale[i]); k < 0 || len(toks) < k+3 {
				t.Errorf("item %d: tokens %v; want b's cut-off run's %d followed by the failover run's and a later run's", i, toks, stale[i])
			}
			for k := 1; k < len(toks); k++ {
				if toks[k] <= toks[k-1] {
					t.Errorf("item %d: tokens %v not strictly increasing", i, toks)
				}
			}
			t.Logf("item %d: fencing tokens %v (b's cut-off run %d)", i, toks, stale[i])
		}
	})

	// Failover latency is a setting: with sessionTimeoutMilliseconds = S,
	// the running items of an instance that vanished (its connections cut
	// and refused, as on kill -9 or a partition) run on an idle survivor
	// within S + 1 s.
	t.Run("FailoverWithinSessionTimeout", func(t *testing.T) {
		const S = 2000 * time.Millisecond
		cl := newZKCluster(t)
		a := cl.start("192.168.1.1", 100, failoverConfig(4))
		var mu sync.Mutex
		var conns []net.Conn
		dead := false
		cfg := zookeeper.DefaultConfig(srv.Addr(), cl.admin.Namespace())
		cfg.SessionTimeoutMilliseconds = int(S.Milliseconds())
		cfg.ConnectionTimeoutMilliseconds = 2000
		cfg.BaseSleepTimeMilliseconds, cfg.MaxSleepTimeMilliseconds, cfg.MaxRetries = 50, 200, 10
		cfg.Dialer = func(ctx context.Context, network, addr string) (net.Conn, error) {
			mu.Lock()
			defer mu.Unlock()
			if dead {
				return nil, errors.New("killed")
			}
			var d net.Dialer
			c, err := d.DialContext(ctx, network, addr)
			if err == nil {
				conns = append(conns, c)
			}
			return c, err
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		bc, err := zookeeper.Connect(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = bc.Close() })
		if got := bc.Session().Timeout(); got != S {
			t.Fatalf("negotiated timeout %v, want %v", got, S)
		}
		b := cl.startAsync("192.168.1.2", 200, failoverConfig(4), bc)
		<-b.job.Ready()
		cl.waitNecessary()
		runAll(t, a, b)
		_, done := startHeldRun(t, cl, b, []int{0, 1})
		a.autorun(t)
		before0, before1 := countRuns(a, 0), countRuns(a, 1)
		mu.Lock()
		dead = true
		for _, c := range conns {
			_ = c.Close()
		}
		mu.Unlock()
		killed := time.Now()
		// Cut off while running (ErrSessionLost), or, when the cut came as
		// its RegisterBegin's answer was on the way, with that answer lost
		// (the running nodes were written; they go with the session).
		if err := <-done; !errors.Is(err, coord.ErrSessionLost) && !errors.Is(err, reg.ErrConnectionLoss) {
			t.Errorf("b's cut-off run = %v", err)
		}
		testkit.Eventually(t, waitFor, "a ran b's items", func() bool { return countRuns(a, 0) > before0 && countRuns(a, 1) > before1 })
		if took := time.Since(killed); took > S+time.Second {
			t.Errorf("failover took %v, want <= %v", took, S+time.Second)
		} else {
			t.Logf("failover took %v (S = %v)", took, S)
		}
	})

	t.Run("LeaderCrashReelectsAndReshards", func(t *testing.T) {
		cl := newZKCluster(t)
		a := cl.start("192.168.1.1", 100, testConfig(4)) // leader
		b := cl.start("192.168.1.2", 200, testConfig(4))
		cl.waitNecessary()
		runAll(t, a, b)
		a.cancel()
		_ = a.c.Close()
		testkit.Eventually(t, waitFor, "b leads", func() bool { v, _ := cl.get(jp("leader", "election", "instance")); return v == b.id })
		cl.waitNecessary()
		if items, err := b.run(ctxT(t)); err != nil || !equalInts(items, []int{0, 1, 2, 3}) {
			t.Errorf("b ran %v, %v", items, err)
		}
	})

	t.Run("DisabledServerAndTrigger", func(t *testing.T) {
		cl := newZKCluster(t)
		a := cl.start("192.168.1.1", 100, testConfig(2))
		b := cl.start("192.168.1.2", 200, testConfig(2))
		cl.waitNecessary()
		runAll(t, a, b)
		cl.persist(jp("servers", "192.168.1.1"), "DISABLED")
		testkit.Eventually(t, waitFor, "b leads", func() bool { v, _ := cl.get(jp("leader", "election", "instance")); return v == b.id })
		cl.waitNecessary()
		got := runAll(t, a, b)
		if len(got[a.id]) != 0 || !equalInts(got[b.id], []int{0, 1}) {
			t.Errorf("runs = %v", got)
		}
		cl.triggerAll()
		for _, in := range []*instance{a, b} {
			select {
			case <-in.triggers:
			case <-time.After(waitFor):
				t.Fatalf("%s not triggered", in.id)
			}
		}
	})
}
