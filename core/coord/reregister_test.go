package coord_test

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ejob-io/ejob/core/coord"
	"github.com/ejob-io/ejob/core/reg"
	"github.com/ejob-io/ejob/core/reg/embedded"
	"github.com/ejob-io/ejob/internal/testkit"
)

// heldRegistrations is an embedded client whose creates of instance
// nodes (what a re-registration writes) wait, while held, until released
// or their ctx ends, counting how many wait at once.
type heldRegistrations struct {
	*embedded.Client
	held             atomic.Bool
	mu               sync.Mutex
	release          chan struct{}
	waiting, maxWait int
}

func (c *heldRegistrations) Create(ctx context.Context, path string, data []byte, mode reg.CreateMode, opts ...reg.CreateOption) (string, error) {
	if c.held.Load() && strings.Contains(path, "/instances/") {
		c.mu.Lock()
		rel := c.release
		c.waiting++
		c.maxWait = max(c.maxWait, c.waiting)
		c.mu.Unlock()
		select {
		case <-rel:
		case <-ctx.Done():
		}
		c.mu.Lock()
		c.waiting--
		c.mu.Unlock()
	}
	return c.Client.Create(ctx, path, data, mode, opts...)
}

// hold makes the server reads wait from now on, and zeroes the count.
func (c *heldRegistrations) hold() {
	c.mu.Lock()
	c.release, c.maxWait = make(chan struct{}), 0
	c.mu.Unlock()
	c.held.Store(true)
}

func (c *heldRegistrations) unhold() {
	c.held.Store(false)
	c.mu.Lock()
	close(c.release)
	c.mu.Unlock()
}

func (c *heldRegistrations) counts() (waiting, maxWait int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.waiting, c.maxWait
}

// TestReRegistrationsBoundedPerNamespace: after a new session the jobs of
// a namespace re-register ReRegisterSlots at a time, the others as slots
// free up; jobs stopped while they hold a slot or wait for one give it
// back, so every other job is registered again, and the next session's
// re-registrations have every slot. The runtime keeps the descriptor of
// every goroutine that has existed: 2,000 jobs on ZooKeeper that
// re-registered all at once kept about 1 KB a job for good
// (BenchmarkIdleAfterExpiry, core/kernel).
func TestReRegistrationsBoundedPerNamespace(t *testing.T) {
	ec, err := embedded.NewServer().Connect("ns")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ec.Close() })
	c := &heldRegistrations{Client: ec}
	ns := coord.NewNamespace(c, hclog.NewNullLogger())
	nctx, stopNS := context.WithCancel(context.Background())
	nsDone := make(chan error, 1)
	go func() { nsDone <- ns.Run(nctx) }()
	t.Cleanup(func() {
		stopNS()
		if err := <-nsDone; err != nil {
			t.Errorf("Namespace.Run = %v", err)
		}
	})

	const stopped = 20
	n := coord.ReRegisterSlots + 2*stopped
	jobs := make([]*coord.Job, n)
	for i := range jobs {
		jobs[i] = newJob(t, c, ns, "job-"+strconv.Itoa(i), nil)
		if err := jobs[i].Start(ctxT(t)); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(jobs[i].Stop)
	}
	registered := func(from int) int {
		got := 0
		for i := from; i < n; i++ {
			if _, ok, err := ec.Exists(ctxT(t), reg.Join("job-"+strconv.Itoa(i), "instances", "10.0.0.1@-@1")); err == nil && ok {
				got++
			}
		}
		return got
	}
	expire := func(jobsLeft int) {
		t.Helper()
		c.hold()
		if err := ec.Expire(ctxT(t)); err != nil {
			t.Fatal(err)
		}
		testkit.Eventually(t, waitFor, "every slot taken", func() bool {
			w, _ := c.counts()
			return w >= min(coord.ReRegisterSlots, jobsLeft)
		})
		time.Sleep(100 * time.Millisecond) // time for any more to start
		if _, m := c.counts(); m > coord.ReRegisterSlots {
			t.Fatalf("%d re-registrations at once, want at most %d", m, coord.ReRegisterSlots)
		}
	}

	expire(n)
	// Stop jobs holding slots (the first to ask are the first admitted,
	// in the order they subscribed: most likely those started first) and
	// jobs waiting for one.
	for i := range stopped {
		jobs[i].Stop()
		jobs[n-1-i].Stop()
	}
	c.unhold()
	testkit.Eventually(t, waitFor, "every job still running registered again", func() bool {
		return registered(stopped) == n-2*stopped
	})

	expire(n - 2*stopped)
	c.unhold()
	testkit.Eventually(t, waitFor, "every job registered again after the second expiry", func() bool {
		return registered(stopped) == n-2*stopped
	})
}

// TestReRegistrationDroppedByStopFreesSlot: a re-registration admitted and
// queued behind a closure of the job's queue is dropped when the job
// stops meanwhile; its slot is given back.
func TestReRegistrationDroppedByStopFreesSlot(t *testing.T) {
	c, ns := sharedNamespace(t)
	j := newJob(t, c, ns, "dropped", nil)
	if err := j.Start(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	coord.BusyUntilStopped(j)
	if got := coord.FreeReRegisterSlots(ns); got != coord.ReRegisterSlots-1 {
		t.Fatalf("free slots with the re-registration queued: %d, want %d", got, coord.ReRegisterSlots-1)
	}
	j.Stop()
	if got := coord.FreeReRegisterSlots(ns); got != coord.ReRegisterSlots {
		t.Errorf("free slots after the job stopped: %d, want %d", got, coord.ReRegisterSlots)
	}
}
