package coord_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/hashicorp/go-hclog"

	"github.com/ejob-io/ejob/core/config"
	"github.com/ejob-io/ejob/core/coord"
	"github.com/ejob-io/ejob/core/reg"
	"github.com/ejob-io/ejob/core/reg/embedded"
	"github.com/ejob-io/ejob/internal/testkit"
)

// newJob builds a job named name on c sharing ns (nil: its own).
func newJob(t *testing.T, c reg.Client, ns *coord.Namespace, name string, mod func(*coord.Options)) *coord.Job {
	t.Helper()
	cfg := config.New(name, 1)
	cfg.Cron = "0 0 0 1 1 ? 2099"
	opts := coord.Options{
		Client: c, Config: cfg, JobClassName: testClass, InstanceID: "10.0.0.1@-@1", ServerIP: "10.0.0.1",
		Strategies: avg, Logger: testLogger(t, name), PollInterval: fastPoll, Namespace: ns,
	}
	if mod != nil {
		mod(&opts)
	}
	j, err := coord.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

// coordGoroutines returns the stacks of the goroutines running code of
// package coord, except the Namespace's own (one per client, not per job).
func coordGoroutines() []string {
	return testkit.Goroutines([]string{"ejob/core/coord."},
		[]string{"ejob/core/coord.(*Namespace).Run", "ejob/core/coord_test."})
}

// sharedNamespace connects to a new embedded server and runs a Namespace
// on the client until the test ends.
func sharedNamespace(t *testing.T) (reg.Client, *coord.Namespace) {
	t.Helper()
	c, err := embedded.NewServer().Connect("ns")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
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
	return c, ns
}

// TestIdleJobsHaveNoGoroutine: jobs that share a Namespace and have
// nothing to do run no goroutine of package coord once registered
// (whatever the shared cache needs is per namespace, or core/reg's); Stop
// then ends each one cleanly.
func TestIdleJobsHaveNoGoroutine(t *testing.T) {
	c, ns := sharedNamespace(t)

	const n = 20
	jobs := make([]*coord.Job, n)
	for i := range jobs {
		jobs[i] = newJob(t, c, ns, "idle-"+strconv.Itoa(i), nil)
		if err := jobs[i].Start(ctxT(t)); err != nil {
			t.Fatal(err)
		}
	}
	testkit.Eventually(t, waitFor, "no goroutine of package coord per job", func() bool {
		return len(coordGoroutines()) == 0
	})
	for i, j := range jobs {
		j.Stop()
		select {
		case <-j.Done():
		default:
			t.Fatalf("job %d: Done not closed after Stop", i)
		}
		if _, _, err := c.Get(ctxT(t), reg.Join("idle-"+strconv.Itoa(i), "instances", "10.0.0.1@-@1")); !errors.Is(err, reg.ErrNoNode) {
			t.Errorf("job %d: instance node after Stop: %v", i, err)
		}
	}
	if g := coordGoroutines(); len(g) != 0 {
		t.Errorf("goroutines of package coord after Stop:\n%s", strings.Join(g, "\n\n"))
	}
}

// TestOnStoppedReportsEndsNotAskedFor: a console shutdown ends the job
// with OnShutdown, then OnStopped(nil); a closed client with
// OnStopped(ErrNamespaceStopped); Stop reports nothing.
func TestOnStoppedReportsEndsNotAskedFor(t *testing.T) {
	srv := embedded.NewServer()
	connect := func() reg.Client {
		c, err := srv.Connect("ns")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	start := func(c reg.Client, name string) (*coord.Job, chan error) {
		stopped := make(chan error, 2)
		j := newJob(t, c, nil, name, func(o *coord.Options) { o.OnStopped = func(err error) { stopped <- err } })
		if err := j.Start(ctxT(t)); err != nil {
			t.Fatal(err)
		}
		return j, stopped
	}
	wait := func(j *coord.Job, stopped chan error) error {
		t.Helper()
		select {
		case <-j.Done():
		case <-time.After(waitFor):
			t.Fatal("the job did not end")
		}
		select {
		case err := <-stopped:
			return err
		default:
			t.Fatal("OnStopped not called before Done closed")
			return nil
		}
	}

	t.Run("console", func(t *testing.T) {
		c := connect()
		j, stopped := start(c, "console")
		testkit.Eventually(t, waitFor, "the job's cache shows its instance node", func() bool {
			_, _, ok := j.Cache().Get(reg.Join("console", "instances", "10.0.0.1@-@1"))
			return ok
		})
		if err := c.Delete(ctxT(t), reg.Join("console", "instances", "10.0.0.1@-@1"), reg.AnyVersion); err != nil {
			t.Fatal(err)
		}
		if err := wait(j, stopped); err != nil {
			t.Errorf("OnStopped(%v) after a console shutdown, want nil", err)
		}
	})
	t.Run("client closed", func(t *testing.T) {
		c := connect()
		j, stopped := start(c, "closed")
		_ = c.Close()
		if err := wait(j, stopped); !errors.Is(err, coord.ErrNamespaceStopped) {
			t.Errorf("OnStopped(%v) after the client closed, want ErrNamespaceStopped", err)
		}
	})
	t.Run("Stop", func(t *testing.T) {
		j, stopped := start(connect(), "stop")
		j.Stop()
		select {
		case err := <-stopped:
			t.Errorf("OnStopped(%v) after Stop", err)
		default:
		}
	})
	t.Run("ctx", func(t *testing.T) {
		stopped := make(chan error, 1)
		j := newJob(t, connect(), nil, "ctx", func(o *coord.Options) { o.OnStopped = func(err error) { stopped <- err } })
		ctx, cancel := context.WithCancel(context.Background())
		if err := j.Start(ctx); err != nil {
			t.Fatal(err)
		}
		cancel()
		select {
		case <-j.Done():
		case <-time.After(waitFor):
			t.Fatal("the job did not end with its ctx")
		}
		select {
		case err := <-stopped:
			t.Errorf("OnStopped(%v) after the end of ctx", err)
		default:
		}
	})
	t.Run("Stop before Start", func(t *testing.T) {
		j := newJob(t, connect(), nil, "never", nil)
		j.Stop()
		if err := j.Start(ctxT(t)); !errors.Is(err, coord.ErrShutdown) {
			t.Errorf("Start after Stop = %v, want ErrShutdown", err)
		}
	})
	t.Run("Start fails", func(t *testing.T) {
		c := connect()
		if _, err := reg.Persist(ctxT(t), c, reg.Join("conflict"), []byte("com.example.Other")); err != nil {
			t.Fatal(err)
		}
		j := newJob(t, c, nil, "conflict", nil)
		if err := j.Start(ctxT(t)); !errors.Is(err, config.ErrJobConflict) {
			t.Fatalf("Start = %v, want ErrJobConflict", err)
		}
		select {
		case <-j.Done():
		default:
			t.Error("Done not closed after a failed Start")
		}
	})
}

// TestJobsSharingACtxEndWithIt: jobs of one Namespace started under one
// ctx (as a Scheduler starts them) all end when it ends, one stopped
// before included; a job started under another ctx keeps running.
func TestJobsSharingACtxEndWithIt(t *testing.T) {
	c, ns := sharedNamespace(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	jobs := make([]*coord.Job, 5)
	for i := range jobs {
		jobs[i] = newJob(t, c, ns, "shared-"+strconv.Itoa(i), nil)
		if err := jobs[i].Start(ctx); err != nil {
			t.Fatal(err)
		}
	}
	other := newJob(t, c, ns, "other", nil)
	if err := other.Start(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	defer other.Stop()
	jobs[0].Stop()
	cancel()
	for i, j := range jobs {
		select {
		case <-j.Done():
		case <-time.After(waitFor):
			t.Fatalf("job %d did not end with its ctx", i)
		}
	}
	select {
	case <-other.Done():
		t.Error("the job started under another ctx ended with theirs")
	default:
	}
	if other.ShuttingDown() {
		t.Error("the job started under another ctx is shutting down")
	}
}

// TestJobsShareTheirNodeValues: the jobs of a Namespace write the values
// they have alike (the instance node's, the leader node's, the server
// node's, the root's class name) from one slice, which the embedded
// registry's nodes keep: 10,000 idle jobs do not hold 10,000 copies.
func TestJobsShareTheirNodeValues(t *testing.T) {
	c, ns := sharedNamespace(t)
	const n = 3
	for i := range n {
		j := newJob(t, c, ns, "shared-"+strconv.Itoa(i), nil)
		if err := j.Start(ctxT(t)); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(j.Stop)
	}
	for _, rel := range []string{"", "instances/10.0.0.1@-@1", "leader/election/instance", "servers/10.0.0.1"} {
		var first *byte
		for i := range n {
			path := reg.Join("shared-"+strconv.Itoa(i), rel)
			data, _, err := c.Get(ctxT(t), path)
			if err != nil || len(data) == 0 {
				t.Fatalf("%s: %q, %v", path, data, err)
			}
			if p := unsafe.SliceData(data); first == nil {
				first = p
			} else if p != first {
				t.Errorf("%s: its value %q is a copy of job 0's", path, data)
			}
		}
	}
}
