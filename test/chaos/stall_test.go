package chaos

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"time"

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
)

// stallLog is the starvation the suite measured while it ran: each
// probe's stalls, in time order.
type stallLog struct {
	mu sync.Mutex
	by map[string][]testkit.Stall
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
	for _, probe := range []string{probeSuite, probeSide} {
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
		out = append(out, fmt.Sprintf("%s: %d stalls over %v, %v in all, longest %v", probe, len(list), stallThreshold,
			total.Round(time.Millisecond), longest.Round(time.Millisecond)))
	}
	return out
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
	s.t.Cleanup(func() {
		cancel()
		<-done
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
