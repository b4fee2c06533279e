package chaos

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ejob-io/ejob/core/reg"
	"github.com/ejob-io/ejob/core/reg/zktest"
	"github.com/ejob-io/ejob/internal/testkit"
)

// stallThreshold: the probes record each stall longer than this (on a
// quiet machine a probe's ticks run well under a millisecond late).
const stallThreshold = 50 * time.Millisecond

// The probes, as the summary names them.
const (
	// probeSuite ticks in the test process, which also forwards every
	// host's ZooKeeper traffic (the proxies) and dates what the observer
	// sees.
	probeSuite = "test process"
	// probeSide is a process of its own beside the hosts (the recorder's
	// -stalls mode): what the machine does to a process of theirs.
	probeSide = "probe process"
	// probeRegistry asks ZooKeeper itself, on a connection of its own
	// (no proxy), whether the root exists, every registryProbeEvery: what
	// the machine does to the server the hosts wait for (a starved JVM,
	// a stalled fsync). Its stalls inside an injected ZooKeeper fault are
	// the fault's, and dropped (see explainRegistry).
	probeRegistry = "registry"
)

// registryProbeEvery is the registry probe's period; registryProbeWait
// bounds one request (an unanswered one is a stall until the next answer).
const (
	registryProbeEvery = 100 * time.Millisecond
	registryProbeWait  = time.Second
)

// stallLog is the starvation the suite measured while it ran: each
// probe's stalls, in time order.
type stallLog struct {
	mu sync.Mutex
	by map[string][]testkit.Stall
	// explained counts the registry probe's stalls dropped as an injected
	// fault's (explainRegistry).
	explained int
}

func (l *stallLog) add(probe string, st testkit.Stall) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.by == nil {
		l.by = map[string][]testkit.Stall{}
	}
	l.by[probe] = append(l.by[probe], st)
}

func (l *stallLog) set(probe string, list []testkit.Stall) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.by == nil {
		l.by = map[string][]testkit.Stall{}
	}
	l.by[probe] = list
}

// lost is the most time one probe lost to stalls in [from, to] (each
// stall cut to the span): how long the machine kept a process from running
// then.
func (l *stallLog) lost(from, to time.Time) time.Duration {
	if l == nil {
		return 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	var most time.Duration
	for _, list := range l.by {
		var sum time.Duration
		lo, _ := slices.BinarySearchFunc(list, from, func(s testkit.Stall, t time.Time) int { return s.To.Compare(t) })
		for _, s := range list[lo:] {
			if !s.From.Before(to) {
				break
			}
			sum += minTime(s.To, to).Sub(maxTime(s.From, from))
		}
		most = max(most, sum)
	}
	return most
}

// report is one line per probe: its stalls, their total and the longest.
func (l *stallLog) report() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, probe := range []string{probeSuite, probeSide, probeRegistry} {
		list, ok := l.by[probe]
		if !ok {
			out = append(out, probe+": not measured")
			continue
		}
		var total, longest time.Duration
		for _, s := range list {
			total += s.Lost()
			longest = max(longest, s.Lost())
		}
		line := fmt.Sprintf("%s: %d stalls over %v, %v in all, longest %v", probe, len(list), stallThreshold,
			total.Round(time.Millisecond), longest.Round(time.Millisecond))
		if probe == probeRegistry {
			line += fmt.Sprintf(" (%d more inside injected ZooKeeper faults, not counted)", l.explained)
		}
		out = append(out, line)
	}
	return out
}

// explainRegistry drops the registry probe's stalls that overlap an
// injected ZooKeeper fault (from its start to rejoin after it healed): the
// judge treats those spans by the fault's own rules, and a stall the suite
// caused is no evidence of starvation.
func (l *stallLog) explainRegistry(faults []*fault) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var kept []testkit.Stall
	for _, st := range l.by[probeRegistry] {
		inside := false
		for _, x := range faults {
			if !strings.HasPrefix(x.kind, "zk-") {
				continue
			}
			from := x.at
			if !x.began.IsZero() && x.began.Before(from) {
				from = x.began
			}
			if st.To.After(from) && st.From.Before(x.healed.Add(rejoin)) {
				inside = true
				break
			}
		}
		if inside {
			l.explained++
		} else {
			kept = append(kept, st)
		}
	}
	if _, ok := l.by[probeRegistry]; ok {
		l.by[probeRegistry] = kept
	}
}

// probeRegistry records, as stalls, the spans in which ZooKeeper left the
// probe's request unanswered for more than threshold: a slow answer from
// its send to its answer, a failed one (the connection down) from the
// last answer to the next. It returns when ctx ends.
func probeRegistryStalls(ctx context.Context, connect func(context.Context) (reg.Client, error), threshold time.Duration, record func(testkit.Stall)) {
	var (
		c        reg.Client
		lastOK   = time.Now()
		failing  bool
		failedAt time.Time
	)
	defer func() {
		if c != nil {
			_ = c.Close()
		}
	}()
	tick := time.NewTicker(registryProbeEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		// A connection's handshake is not timed: it may be a fresh
		// session's, which no host waits for.
		sent := time.Now()
		err := func() error {
			if c == nil {
				cc, err := connect(ctx)
				if err != nil {
					return err
				}
				c = cc
				sent = time.Now()
			}
			rctx, cancel := context.WithTimeout(ctx, registryProbeWait)
			defer cancel()
			_, _, err := c.Exists(rctx, "/")
			return err
		}()
		answered := time.Now()
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			if !failing {
				failing, failedAt = true, sent
			}
			// A client whose session the outage expired is replaced once
			// the failures outlast a session.
			if c != nil && answered.Sub(failedAt) > 2*sessionTimeout {
				_ = c.Close()
				c = nil
			}
			continue
		}
		switch {
		case failing:
			record(testkit.Stall{From: lastOK, To: answered})
			failing = false
		case answered.Sub(sent) > threshold:
			record(testkit.Stall{From: sent, To: answered})
		}
		lastOK = answered
	}
}

// startProbes starts both probes; they run until the test's cleanup.
// readSideProbe collects the side probe's stalls.
func (s *suite) startProbes() {
	s.stalls = &stallLog{}
	s.stalls.set(probeSuite, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		testkit.RecordStalls(ctx, stallThreshold, func(st testkit.Stall) { s.stalls.add(probeSuite, st) })
	}()
	s.stalls.set(probeRegistry, nil)
	regDone := make(chan struct{})
	go func() {
		defer close(regDone)
		probeRegistryStalls(ctx, s.probeConnect, stallThreshold, func(st testkit.Stall) { s.stalls.add(probeRegistry, st) })
	}()
	s.t.Cleanup(func() {
		cancel()
		<-done
		<-regDone
	})
	s.stallsPath = filepath.Join(s.dir, "stalls.txt")
	s.sideProbe = exec.Command(recorderBin, "-stalls", s.stallsPath, "-stall-threshold", stallThreshold.String())
	s.sideProbe.Stderr = os.Stderr
	if err := s.sideProbe.Start(); err != nil {
		s.t.Fatalf("stall probe process: %v", err)
	}
	s.t.Cleanup(func() {
		_ = s.sideProbe.Process.Kill()
		_ = s.sideProbe.Wait()
	})
}

// readSideProbe reads the side probe's stalls so far into the log; the
// probe must still be running (it creates its file when it starts).
func (s *suite) readSideProbe() {
	if !processAlive(s.sideProbe.Process.Pid) {
		s.t.Fatalf("stall probe process (pid %d) exited while the suite ran", s.sideProbe.Process.Pid)
	}
	b, err := os.ReadFile(s.stallsPath)
	if err != nil {
		s.t.Fatalf("stall probe process: %v", err)
	}
	list, err := testkit.ReadStalls(bytes.NewReader(b))
	if err != nil {
		s.t.Fatalf("stall probe process: %v", err)
	}
	s.stalls.set(probeSide, list)
}

// TestRegistryProbeRecordsOutage: the registry probe records a ZooKeeper
// that does not answer (here killed for a while) as one stall spanning the
// outage, and records nothing while the server answers promptly.
func TestRegistryProbeRecordsOutage(t *testing.T) {
	zk := zktest.Start(t, zktest.Options{Tick: tick})
	s := &suite{t: t, zk: zk, ns: "probe"}
	var (
		mu     sync.Mutex
		stalls []testkit.Stall
	)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		probeRegistryStalls(ctx, s.probeConnect, stallThreshold, func(st testkit.Stall) {
			mu.Lock()
			defer mu.Unlock()
			stalls = append(stalls, st)
		})
	}()
	defer func() { cancel(); <-done }()
	recorded := func() []testkit.Stall {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(stalls)
	}

	time.Sleep(time.Second)
	if got := recorded(); len(got) != 0 {
		t.Fatalf("stalls recorded while the server answered: %v", got)
	}
	if err := zk.Kill(); err != nil {
		t.Fatal(err)
	}
	down := time.Now() // the server is dead
	time.Sleep(1500 * time.Millisecond)
	up := time.Now()
	if err := zk.StartAgain(); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 30*time.Second, "the outage recorded", func() bool { return len(recorded()) > 0 })
	got := recorded()
	if len(got) != 1 {
		t.Fatalf("want one stall for the outage, got %v", got)
	}
	if st := got[0]; st.From.After(down) || st.To.Before(up) {
		t.Fatalf("stall [%s, %s] does not cover the outage [%s, %s]", st.From.Format("15:04:05.000"),
			st.To.Format("15:04:05.000"), down.Format("15:04:05.000"), up.Format("15:04:05.000"))
	}
}

// TestExplainRegistryDropsInjectedFaults: registry stalls inside an
// injected ZooKeeper fault (to rejoin after it healed) are the fault's
// and dropped; one outside every ZooKeeper fault, or inside a host fault,
// stays as evidence of starvation.
func TestExplainRegistryDropsInjectedFaults(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	faults := []*fault{
		{kind: "zk-outage-long", at: at(10), began: at(10), healed: at(16)},
		{kind: "sigstop", at: at(30), began: at(30), healed: at(34)},
	}
	l := &stallLog{}
	l.set(probeRegistry, []testkit.Stall{
		{From: at(9.9), To: at(16.2)}, // the outage
		{From: at(17), To: at(17.2)},  // within rejoin after it healed
		{From: at(31), To: at(31.5)},  // during a host fault: the registry's own
		{From: at(40), To: at(40.3)},  // no fault
	})
	l.explainRegistry(faults)
	if got := l.lost(at(0), at(100)); got != 800*time.Millisecond {
		t.Fatalf("lost %v, want the 800ms outside ZooKeeper faults", got)
	}
	if l.explained != 2 {
		t.Fatalf("explained %d, want 2", l.explained)
	}
}
