package kernel_test

// Failure-handling benchmarks on a real ZooKeeper (scripts/zk.sh, tickTime
// 200 ms): how long after kill -9 a survivor takes over a running item, and
// how long after a ZooKeeper restart a host fires again. Like the other
// kernel benchmarks they report named metrics and never fail on a timing;
// docs/benchmarks.md ("Failure handling") records the figures.

import (
	"context"
	"errors"
	"net"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ejob-io/ejob/core/config"
	"github.com/ejob-io/ejob/core/executor"
	"github.com/ejob-io/ejob/core/kernel"
	"github.com/ejob-io/ejob/core/reg"
	"github.com/ejob-io/ejob/core/reg/zktest"
	"github.com/ejob-io/ejob/core/reg/zookeeper"
	"github.com/ejob-io/ejob/internal/testkit"
	"github.com/ejob-io/ejob/spi"
)

// killSwitch is a Dialer whose connections can all be cut and refused from
// then on: the client's process is gone as far as ZooKeeper can tell (kill
// -9), so the server expires its session after the session timeout.
type killSwitch struct {
	mu    sync.Mutex
	conns []net.Conn
	dead  bool
}

func (k *killSwitch) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.dead {
		return nil, errors.New("killed")
	}
	var d net.Dialer
	c, err := d.DialContext(ctx, network, addr)
	if err == nil {
		k.conns = append(k.conns, c)
	}
	return c, err
}

// kill cuts every connection and refuses new ones.
func (k *killSwitch) kill() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.dead = true
	for _, c := range k.conns {
		_ = c.Close()
	}
	k.conns = nil
}

// revive lets the client connect again (so that it can shut down cleanly
// once the measurement is over).
func (k *killSwitch) revive() {
	k.mu.Lock()
	k.dead = false
	k.mu.Unlock()
}

// zkConnect opens a client on srv in namespace ns with the given session
// timeout, through dial when it is not nil.
func zkConnect(tb testing.TB, srv *zktest.Server, ns string, session time.Duration, dial func(context.Context, string, string) (net.Conn, error)) *zookeeper.Client {
	tb.Helper()
	cfg := zookeeper.DefaultConfig(srv.Addr(), ns)
	cfg.SessionTimeoutMilliseconds = int(session.Milliseconds())
	cfg.ConnectionTimeoutMilliseconds = 4000
	cfg.BaseSleepTimeMilliseconds = 50
	cfg.MaxSleepTimeMilliseconds = 200
	cfg.MaxRetries = 10
	cfg.Dialer = dial
	cfg.Logger = hclog.New(&hclog.LoggerOptions{Name: "zk", Level: hclog.Error, Output: os.Stderr})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := zookeeper.Connect(ctx, cfg)
	if err != nil {
		tb.Fatalf("connect: %v", err)
	}
	tb.Cleanup(func() { _ = c.Close() })
	return c
}

// itemStart is one item start on one instance.
type itemStart struct {
	item int
	at   time.Time
}

// BenchmarkFailoverLatency: two schedulers run a 2-item job (failover and
// monitorExecution on, no cron: triggered by hand). The survivor starts
// first (it leads) and its item ends at once, so it is idle; the victim's
// item runs until its ctx ends. Then the victim is killed: its ZooKeeper
// connections are cut and refused, so its session expires exactly as after
// kill -9. latency-ms is the time from the kill to the victim's item
// starting on the survivor; session-ms the negotiated session timeout.
// Upstream ElasticJob-Lite measured 5.3 s with a 4 s session (idle
// survivor) and 37.7 s with its default session timeout.
func BenchmarkFailoverLatency(b *testing.B) {
	if testing.Short() {
		b.Skip("real ZooKeeper benchmarks skipped in -short mode")
	}
	srv := zktest.Start(b, zktest.Options{Tick: 200 * time.Millisecond})
	for _, session := range []time.Duration{2000 * time.Millisecond, 4000 * time.Millisecond} {
		b.Run("sessionTimeoutMilliseconds="+strconv.Itoa(int(session.Milliseconds())), func(b *testing.B) {
			var total, negotiated time.Duration
			seq := 0
			for b.Loop() {
				seq++
				ns := "failover-" + strconv.Itoa(int(session.Milliseconds())) + "-" + strconv.Itoa(seq)
				took, sess := failoverOnce(b, srv, ns, session)
				total += took
				negotiated = sess
			}
			b.ReportMetric(float64(total)/float64(b.N)/float64(time.Millisecond), "latency-ms")
			b.ReportMetric(float64(negotiated)/float64(time.Millisecond), "session-ms")
		})
	}
}

func failoverOnce(b *testing.B, srv *zktest.Server, ns string, session time.Duration) (took, negotiated time.Duration) {
	const job = "failover"
	cfg := config.New(job, 2)
	cfg.Failover = true
	cfg.MonitorExecution = true

	survivorStarts := make(chan itemStart, 16)
	survivor := kernel.Job{Config: cfg.Clone(), Runner: executor.SimpleFunc(func(ctx context.Context, sc spi.ShardingContext) error {
		survivorStarts <- itemStart{sc.ShardingItem, time.Now()}
		return nil
	})}
	victimRunning := make(chan int, 16)
	victim := kernel.Job{Config: cfg.Clone(), Runner: executor.SimpleFunc(func(ctx context.Context, sc spi.ShardingContext) error {
		victimRunning <- sc.ShardingItem
		<-ctx.Done() // a long item: it runs until cut off
		return nil
	})}

	sn := startNode(b, zkConnect(b, srv, ns, session, nil), "10.0.3.1", 300, nil, survivor)
	ks := &killSwitch{}
	vc := zkConnect(b, srv, ns, session, ks.dial)
	negotiated = vc.Session().Timeout()
	if negotiated != session {
		b.Logf("negotiated session timeout %v, asked for %v", negotiated, session)
	}
	vn := startNode(b, vc, "10.0.3.2", 301, nil, victim)
	// Cleanups run last-in first-out: let the victim reconnect before its
	// scheduler is stopped, so that it shuts down like a restarted process.
	b.Cleanup(ks.revive)

	// Wait until the job is sharded over both instances: trigger both until
	// the victim runs an item and the survivor ran the other one.
	var victimItem int
	deadline := time.Now().Add(30 * time.Second)
	for ran := false; !ran; {
		if time.Now().After(deadline) {
			b.Fatal("the victim never ran an item")
		}
		triggerAll(b, job, []*benchNode{sn, vn})
		select {
		case victimItem = <-victimRunning:
			ran = true
		case <-time.After(time.Second):
		}
	}
	testkit.Eventually(b, 10*time.Second, "the survivor's own item", func() bool {
		for {
			select {
			case s := <-survivorStarts:
				if s.item != victimItem {
					return true
				}
			default:
				return false
			}
		}
	})
	time.Sleep(200 * time.Millisecond) // the survivor is idle again

	ks.kill()
	return awaitTakeover(b, survivorStarts, victimItem, time.Now(), session), negotiated
}

// awaitTakeover returns how long after killed the survivor started item
// (its starts arrive on starts).
func awaitTakeover(b *testing.B, starts <-chan itemStart, item int, killed time.Time, session time.Duration) time.Duration {
	b.Helper()
	timeout := time.After(session + 20*time.Second)
	for {
		select {
		case s := <-starts:
			if s.item == item && s.at.After(killed) {
				return s.at.Sub(killed)
			}
		case <-timeout:
			b.Fatalf("item %d did not fail over within %v", item, session+20*time.Second)
		}
	}
}

// BenchmarkFailoverLatencyBusySurvivor is a mixed-cluster scenario: two
// schedulers run a 2-item job (failover and monitorExecution
// on) on cron 0/3 with a 3 s session; every item takes 1 s. The victim is
// killed (its connections cut and refused, as BenchmarkFailoverLatency)
// 0.4 s after one of its items started, so that when its session expires
// (about 3 s later) the survivor is busy running its own item of the next
// fire. latency-ms is the time from the kill to the victim's item starting
// on the survivor; session-ms the negotiated session timeout. Upstream
// ElasticJob 3.0.4 (Java survivors) measures 4.0 s in that scenario
// (docs/benchmarks.md, "Failure handling").
func BenchmarkFailoverLatencyBusySurvivor(b *testing.B) {
	if testing.Short() {
		b.Skip("real ZooKeeper benchmarks skipped in -short mode")
	}
	srv := zktest.Start(b, zktest.Options{Tick: 200 * time.Millisecond})
	const session = 3000 * time.Millisecond
	var total, negotiated time.Duration
	seq := 0
	for b.Loop() {
		seq++
		took, sess := busyFailoverOnce(b, srv, "busy-failover-"+strconv.Itoa(seq), session)
		total += took
		negotiated = sess
	}
	b.ReportMetric(float64(total)/float64(b.N)/float64(time.Millisecond), "latency-ms")
	b.ReportMetric(float64(negotiated)/float64(time.Millisecond), "session-ms")
}

func busyFailoverOnce(b *testing.B, srv *zktest.Server, ns string, session time.Duration) (took, negotiated time.Duration) {
	const job = "busy"
	cfg := config.New(job, 2)
	cfg.Cron = "0/3 * * * * ?"
	cfg.Failover = true
	cfg.MonitorExecution = true
	// work is an item that takes a second (the workload, not a wait).
	work := func(starts chan<- itemStart) kernel.Job {
		return kernel.Job{Config: cfg.Clone(), Runner: executor.SimpleFunc(func(ctx context.Context, sc spi.ShardingContext) error {
			starts <- itemStart{sc.ShardingItem, time.Now()}
			select {
			case <-time.After(time.Second):
			case <-ctx.Done():
			}
			return nil
		})}
	}
	survivorStarts := make(chan itemStart, 64)
	victimStarts := make(chan itemStart, 64)
	sn := startNode(b, zkConnect(b, srv, ns, session, nil), "10.0.5.1", 500, nil, work(survivorStarts))
	ks := &killSwitch{}
	vc := zkConnect(b, srv, ns, session, ks.dial)
	negotiated = vc.Session().Timeout()
	if negotiated != session {
		b.Logf("negotiated session timeout %v, asked for %v", negotiated, session)
	}
	vn := startNode(b, vc, "10.0.5.2", 501, nil, work(victimStarts))
	// Both stop at the end of the iteration, so that the next one runs on
	// a quiet machine; the victim reconnects first and shuts down like a
	// restarted process.
	defer sn.stop()
	defer vn.stop()
	defer ks.revive()

	// A fire in which the victim runs an item (the job is sharded over
	// both instances).
	var victim itemStart
	select {
	case victim = <-victimStarts:
	case <-time.After(30 * time.Second):
		b.Fatal("the victim never ran an item")
	}
	// Kill at fire + 0.4 s: the scenario's moment, not a synchronisation.
	time.Sleep(time.Until(victim.at.Add(400 * time.Millisecond)))
	ks.kill()
	return awaitTakeover(b, survivorStarts, victim.item, time.Now(), session), negotiated
}

// BenchmarkResumeAfterZooKeeperRestart: one scheduler (session timeout
// 4 s) runs a 1-item job firing every second. ZooKeeper is stopped
// gracefully and started again on the same port and data, at once
// ("restart") or after a stop longer than the session timeout
// ("stop-6s"). resume-ms is the time from the server being back (zk.sh
// saw it serve) to the next item start; reconnect-ms from the server being
// back to the client reconnecting; down-ms how long it was down;
// session-kept is 1 when the client kept its session across the restart.
func BenchmarkResumeAfterZooKeeperRestart(b *testing.B) {
	if testing.Short() {
		b.Skip("real ZooKeeper benchmarks skipped in -short mode")
	}
	for _, sc := range []struct {
		name string
		down time.Duration
	}{{"restart", 0}, {"stop-6s", 6 * time.Second}} {
		b.Run(sc.name, func(b *testing.B) {
			srv := zktest.Start(b, zktest.Options{Tick: 200 * time.Millisecond})
			const session = 4000 * time.Millisecond
			cfg := config.New("resume", 1)
			cfg.Cron = "* * * * * ?"
			cfg.Failover = true
			cfg.MonitorExecution = true
			log := &itemLog{}
			job := log.runner()
			job.Config = cfg
			c := zkConnect(b, srv, "resume", session, nil)
			startNode(b, c, "10.0.4.1", 400, nil, job)
			// When the client is back on the server (same or new session).
			var connMu sync.Mutex
			var connected []time.Time
			events := c.WatchConnection(b.Context())
			go func() {
				for ev := range events {
					if ev.State == reg.StateReconnected || ev.State == reg.StateNewSession {
						connMu.Lock()
						connected = append(connected, time.Now())
						connMu.Unlock()
					}
				}
			}()
			var resume, down, reconnect time.Duration
			kept := 0
			for b.Loop() {
				testkit.Eventually(b, 10*time.Second, "an item to fire", func() bool { return len(log.since(time.Now().Add(-1500*time.Millisecond))) > 0 })
				before := c.Session().ID()
				stop := time.Now()
				if err := srv.Stop(); err != nil {
					b.Fatal(err)
				}
				time.Sleep(sc.down)
				if err := srv.StartAgain(); err != nil {
					b.Fatal(err)
				}
				back := time.Now()
				down += back.Sub(stop)
				var first time.Time
				testkit.Eventually(b, 30*time.Second, "an item after the restart", func() bool {
					// The server may serve a moment before zk.sh sees it:
					// count any start since it was stopped.
					s := log.since(stop)
					if len(s) > 0 {
						first = s[0]
					}
					return len(s) > 0
				})
				resume += first.Sub(back)
				connMu.Lock()
				for _, t := range connected {
					if t.After(stop) {
						reconnect += t.Sub(back)
						break
					}
				}
				connMu.Unlock()
				if c.Session().ID() == before {
					kept++
				}
			}
			b.ReportMetric(float64(resume)/float64(b.N)/float64(time.Millisecond), "resume-ms")
			b.ReportMetric(float64(reconnect)/float64(b.N)/float64(time.Millisecond), "reconnect-ms")
			b.ReportMetric(float64(down)/float64(b.N)/float64(time.Millisecond), "down-ms")
			b.ReportMetric(float64(kept)/float64(b.N), "session-kept")
		})
	}
}
