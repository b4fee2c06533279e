package kernel_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ejob-io/ejob/core/config"
	"github.com/ejob-io/ejob/core/executor"
	"github.com/ejob-io/ejob/core/kernel"
	"github.com/ejob-io/ejob/core/reg"
	"github.com/ejob-io/ejob/core/reg/embedded"
	"github.com/ejob-io/ejob/internal/testkit"
	"github.com/ejob-io/ejob/plugins/builtin"
	"github.com/ejob-io/ejob/spi"
)

// execution is one item run as a job saw it.
type execution struct {
	instance   string
	item       int
	second     time.Time // the fire's second (start time truncated)
	start, end time.Time
}

type recorder struct {
	mu   sync.Mutex
	runs []execution
}

func (r *recorder) runner(instance string, hold time.Duration) executor.SimpleFunc {
	return func(ctx context.Context, sc spi.ShardingContext) error {
		start := time.Now()
		select {
		case <-time.After(hold): // the job's own work
		case <-ctx.Done():
		}
		r.mu.Lock()
		r.runs = append(r.runs, execution{instance, sc.ShardingItem, start.Truncate(time.Second), start, time.Now()})
		r.mu.Unlock()
		return nil
	}
}

func (r *recorder) snapshot() []execution {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]execution(nil), r.runs...)
}

func plugins() spi.Plugins { return builtin.New(builtin.Options{Logger: hclog.NewNullLogger()}) }

type instance struct {
	id     string
	sched  *kernel.Kernel
	cancel context.CancelFunc
	done   chan error
}

func startInstance(t *testing.T, srv *embedded.Server, id string, cfg *config.JobConfiguration, rec *recorder) *instance {
	t.Helper()
	return startInstanceLogging(t, srv, id, cfg, rec.runner(id, 50*time.Millisecond),
		hclog.New(&hclog.LoggerOptions{Name: id, Level: hclog.Warn}))
}

// startInstanceLogging is startInstance with the job's runner and the
// scheduler's logger given.
func startInstanceLogging(t *testing.T, srv *embedded.Server, id string, cfg *config.JobConfiguration, runner executor.SimpleFunc, log hclog.Logger) *instance {
	t.Helper()
	client, err := srv.Connect("sched-test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	s, err := kernel.New(kernel.Options{
		Client: client, InstanceID: id, ServerIP: "127.0.0.1", Plugins: plugins(),
		Logger:       log,
		DrainTimeout: 5 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Add(context.Background(), kernel.Job{Config: cfg.Clone(), Runner: runner}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	in := &instance{id: id, sched: s, cancel: cancel, done: make(chan error, 1)}
	go func() { in.done <- s.Run(ctx) }()
	rctx, rcancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer rcancel()
	if err := s.Ready(rctx); err != nil {
		t.Fatalf("instance %s not ready: %v", id, err)
	}
	t.Cleanup(func() { in.stop(t) })
	return in
}

func (in *instance) stop(t *testing.T) {
	in.cancel()
	select {
	case err := <-in.done:
		if err != nil {
			t.Errorf("instance %s: Run: %v", in.id, err)
		}
	case <-time.After(30 * time.Second):
		t.Errorf("instance %s did not shut down", in.id)
	}
	in.done <- nil // later stops return at once
}

// assertNoOverlap: with monitorExecution on, no item runs on two instances
// at once.
func assertNoOverlap(t *testing.T, runs []execution) {
	t.Helper()
	byItem := map[int][]execution{}
	for _, r := range runs {
		byItem[r.item] = append(byItem[r.item], r)
	}
	for item, rs := range byItem {
		sort.Slice(rs, func(i, j int) bool { return rs[i].start.Before(rs[j].start) })
		for i := 1; i < len(rs); i++ {
			if rs[i].start.Before(rs[i-1].end) && rs[i].instance != rs[i-1].instance {
				t.Errorf("item %d ran on %s and %s at once", item, rs[i-1].instance, rs[i].instance)
			}
		}
	}
}

func TestEveryItemOfEveryTriggerRunsOnceAcrossInstances(t *testing.T) {
	srv := embedded.NewServer()
	cfg := config.New("everySecond", 4)
	cfg.Cron = "* * * * * ?"
	rec := &recorder{}
	ids := []string{"127.0.0.1@-@1", "127.0.0.1@-@2", "127.0.0.1@-@3"}
	for _, id := range ids {
		startInstance(t, srv, id, cfg, rec)
	}
	// AVG_ALLOCATION over descending ids [@-@3, @-@2, @-@1], 4 items: one
	// each, the rest (item 3) to the first: @-@3=[0,3], @-@2=[1], @-@1=[2].
	want := map[int]string{0: ids[2], 1: ids[1], 2: ids[0], 3: ids[2]}
	// Steady state: the first second whose trigger ran all four items, each
	// on its owner in the three-instance assignment (earlier triggers may
	// have run while instances were still joining). Then observe four more
	// seconds: the assignment must hold and every item run exactly once.
	var from time.Time
	testkit.Eventually(t, 20*time.Second, "a trigger with all items on their owners", func() bool {
		per := map[time.Time]map[int]string{}
		for _, r := range rec.snapshot() {
			if per[r.second] == nil {
				per[r.second] = map[int]string{}
			}
			per[r.second][r.item] = r.instance
		}
		for sec, items := range per {
			if fmt.Sprint(items) == fmt.Sprint(want) && (from.IsZero() || sec.Before(from)) {
				from = sec
			}
		}
		return !from.IsZero()
	})
	until := from.Add(4 * time.Second)
	testkit.Eventually(t, 20*time.Second, "four more seconds", func() bool { return time.Now().After(until.Add(500 * time.Millisecond)) })

	runs := rec.snapshot()
	assertNoOverlap(t, runs)
	count := map[time.Time]map[int]int{}
	owners := map[int]map[string]bool{}
	for _, r := range runs {
		if r.second.Before(from) || !r.second.Before(until) {
			continue
		}
		if count[r.second] == nil {
			count[r.second] = map[int]int{}
		}
		count[r.second][r.item]++
		if owners[r.item] == nil {
			owners[r.item] = map[string]bool{}
		}
		owners[r.item][r.instance] = true
	}
	for sec := from; sec.Before(until); sec = sec.Add(time.Second) {
		for item := 0; item < 4; item++ {
			if n := count[sec][item]; n != 1 {
				t.Errorf("second %s: item %d ran %d times, want exactly once", sec.Format("15:04:05"), item, n)
			}
		}
	}
	for item, id := range want {
		if len(owners[item]) != 1 || !owners[item][id] {
			t.Errorf("item %d ran on %v, want only %s", item, owners[item], id)
		}
	}
}

func TestLeavingInstanceItemsMoveAtNextTrigger(t *testing.T) {
	srv := embedded.NewServer()
	cfg := config.New("leaving", 2)
	cfg.Cron = "* * * * * ?"
	rec := &recorder{}
	a := startInstance(t, srv, "127.0.0.1@-@10", cfg, rec)
	startInstance(t, srv, "127.0.0.1@-@20", cfg, rec)
	testkit.Eventually(t, 20*time.Second, "both instances running items", func() bool {
		seen := map[string]bool{}
		for _, r := range rec.snapshot() {
			seen[r.instance] = true
		}
		return len(seen) == 2
	})
	a.stop(t)
	stopped := time.Now()
	testkit.Eventually(t, 20*time.Second, "the survivor to run both items in one trigger", func() bool {
		per := map[time.Time]map[int]bool{}
		for _, r := range rec.snapshot() {
			if r.instance != "127.0.0.1@-@20" || r.start.Before(stopped) {
				continue
			}
			if per[r.second] == nil {
				per[r.second] = map[int]bool{}
			}
			per[r.second][r.item] = true
			if len(per[r.second]) == 2 {
				return true
			}
		}
		return false
	})
	for _, r := range rec.snapshot() {
		if r.instance == "127.0.0.1@-@10" && r.start.After(stopped) {
			t.Errorf("stopped instance ran item %d at %s", r.item, r.start)
		}
	}
	assertNoOverlap(t, rec.snapshot())
}

func TestOneOffJobRunsOnlyWhenTriggered(t *testing.T) {
	srv := embedded.NewServer()
	cfg := config.New("oneOff", 3)
	rec := &recorder{}
	in := startInstance(t, srv, "127.0.0.1@-@7", cfg, rec)
	if err := in.sched.Trigger("oneOff"); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 10*time.Second, "the triggered run", func() bool { return len(rec.snapshot()) == 3 })
	items := map[int]bool{}
	for _, r := range rec.snapshot() {
		items[r.item] = true
	}
	if fmt.Sprint(items) != "map[0:true 1:true 2:true]" {
		t.Fatalf("items run: %v", items)
	}
	if err := in.sched.Trigger("nope"); err == nil {
		t.Fatal("triggering an unknown job succeeded")
	}
}

func TestShutdownDrainsRunningItemsAndDeregisters(t *testing.T) {
	srv := embedded.NewServer()
	cfg := config.New("drain", 1)
	rec := &recorder{}
	client, err := srv.Connect("sched-test")
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	s, err := kernel.New(kernel.Options{Client: client, InstanceID: "127.0.0.1@-@9", ServerIP: "127.0.0.1", Plugins: plugins(), DrainTimeout: 10 * time.Second,
		Logger: hclog.New(&hclog.LoggerOptions{Name: "drain", Level: hclog.Warn})})
	if err != nil {
		t.Fatal(err)
	}
	started := make(chan struct{})
	var once sync.Once
	slow := executor.SimpleFunc(func(ctx context.Context, sc spi.ShardingContext) error {
		once.Do(func() { close(started) })
		return rec.runner("127.0.0.1@-@9", 700*time.Millisecond)(ctx, sc)
	})
	if err := s.Add(context.Background(), kernel.Job{Config: cfg, Runner: slow}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	if err := s.Ready(context.Background()); err != nil {
		t.Fatal(err)
	}
	s.Trigger("drain")
	<-started
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	runs := rec.snapshot()
	if len(runs) != 1 || runs[0].end.Sub(runs[0].start) < 700*time.Millisecond {
		t.Fatalf("the running item was not allowed to finish: %+v", runs)
	}
	// The instance left the registry cleanly.
	kids, err := client.Children(context.Background(), "/drain/instances")
	if err != nil && !isNoNode(err) {
		t.Fatal(err)
	}
	if len(kids) != 0 {
		t.Fatalf("instances left behind: %v", kids)
	}
}

// TestShutdownCancelsAtOnce: DrainTimeout 0 is taken literally (the config
// file's `drainTimeout: 0`), and Abort (an operator's second SIGTERM) ends
// a long drain: either way shutdown cancels the running item instead of
// waiting for it. The item would otherwise hold for a minute.
func TestShutdownCancelsAtOnce(t *testing.T) {
	for name, tc := range map[string]struct {
		drain time.Duration
		abort bool
	}{
		"drain timeout 0": {drain: 0},
		"abort the drain": {drain: time.Hour, abort: true},
	} {
		t.Run(name, func(t *testing.T) {
			srv := embedded.NewServer()
			client, err := srv.Connect("sched-test")
			if err != nil {
				t.Fatal(err)
			}
			defer client.Close()
			s, err := kernel.New(kernel.Options{Client: client, InstanceID: "127.0.0.1@-@9", ServerIP: "127.0.0.1", Plugins: plugins(),
				DrainTimeout: tc.drain, Logger: hclog.New(&hclog.LoggerOptions{Name: "nodrain", Level: hclog.Warn})})
			if err != nil {
				t.Fatal(err)
			}
			started := make(chan struct{})
			cancelled := make(chan error, 1)
			var once sync.Once
			hold := executor.SimpleFunc(func(ctx context.Context, sc spi.ShardingContext) error {
				once.Do(func() { close(started) })
				select {
				case <-ctx.Done():
					cancelled <- context.Cause(ctx)
					return ctx.Err()
				case <-time.After(time.Minute):
					return nil
				}
			})
			if err := s.Add(context.Background(), kernel.Job{Config: config.New("nodrain", 1), Runner: hold}); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- s.Run(ctx) }()
			if err := s.Ready(context.Background()); err != nil {
				t.Fatal(err)
			}
			if err := s.Trigger("nodrain"); err != nil {
				t.Fatal(err)
			}
			<-started
			cancel()
			if tc.abort {
				s.Abort()
			}
			select {
			case <-cancelled:
			case <-time.After(20 * time.Second): // well under the drain and the item's minute
				t.Fatal("the running item was not cancelled at shutdown")
			}
			if err := <-done; err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestReadyNamesEveryJobThatFailed: Ready waits for every job and names
// each one that failed to start (here: its root node holds another job
// type), so that a host can tell "some" from "none".
func TestReadyNamesEveryJobThatFailed(t *testing.T) {
	srv := embedded.NewServer()
	client, err := srv.Connect("sched-test")
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	for _, j := range []string{"clash1", "clash2"} {
		if _, err := client.Create(context.Background(), "/"+j, []byte("SOMETHING_ELSE"), reg.Persistent); err != nil {
			t.Fatal(err)
		}
	}
	s, err := kernel.New(kernel.Options{Client: client, InstanceID: "127.0.0.1@-@9", ServerIP: "127.0.0.1", Plugins: plugins(),
		Logger: hclog.NewNullLogger()})
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range []string{"clash2", "fine", "clash1"} {
		if err := s.Add(context.Background(), kernel.Job{Config: config.New(j, 1), Runner: (&recorder{}).runner("x", 0)}); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	defer func() { cancel(); <-done }()
	err = s.Ready(context.Background())
	var se *kernel.StartError
	if !errors.As(err, &se) {
		t.Fatalf("Ready: %v, want a *StartError", err)
	}
	if se.Jobs != 3 || len(se.Failed) != 2 || se.Failed[0].Job != "clash1" || se.Failed[1].Job != "clash2" || se.All() {
		t.Fatalf("StartError = %+v, want clash1 and clash2 of 3 jobs", se)
	}
	if !errors.Is(err, config.ErrJobConflict) {
		t.Errorf("errors.Is(err, ErrJobConflict) = false: %v", err)
	}
	if want := `2 of 3 jobs failed to start: job "clash1": `; !strings.HasPrefix(err.Error(), want) {
		t.Errorf("err = %q, want it to start with %q", err, want)
	}
}

func isNoNode(err error) bool { return err != nil && errorsIs(err, reg.ErrNoNode) }

func errorsIs(err, target error) bool { return errors.Is(err, target) }

// TestIdleJobsKeepNoGoroutine: once its jobs have started, a scheduler
// runs a constant number of goroutines of its own and of the coordination
// layer (trigger loop, watchdog, the shared Namespace), however many jobs
// it has: an idle job is data.
func TestIdleJobsKeepNoGoroutine(t *testing.T) {
	srv := embedded.NewServer()
	client, err := srv.Connect("idle")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	s, err := kernel.New(kernel.Options{Client: client, InstanceID: "10.0.3.1@-@1", ServerIP: "10.0.3.1", Plugins: plugins(),
		Logger: hclog.NewNullLogger()})
	if err != nil {
		t.Fatal(err)
	}
	noop := executor.SimpleFunc(func(context.Context, spi.ShardingContext) error { return nil })
	const n = 30
	for i := range n {
		cfg := config.New(fmt.Sprintf("idle-%d", i), 1)
		cfg.Cron = "0 0 0 1 1 ? 2099"
		if err := s.Add(context.Background(), kernel.Job{Config: cfg, Runner: noop}); err != nil {
			t.Fatal(err)
		}
	}
	runKernel(t, s)
	rctx, rcancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer rcancel()
	if err := s.Ready(rctx); err != nil {
		t.Fatal(err)
	}
	var last []string
	if !testkit.Poll(10*time.Second, func() bool {
		last = testkit.Goroutines(nil, []string{"ejob/core/kernel_test."})
		last = slices.DeleteFunc(last, func(g string) bool {
			return !strings.Contains(g, "ejob/core/kernel.") && !strings.Contains(g, "ejob/core/coord.")
		})
		// The trigger loop, the watchdog, the Namespace and its cache.
		return len(last) <= 4
	}) {
		t.Fatalf("%d goroutines of the scheduler and coord for %d idle jobs:\n%s", len(last), n, strings.Join(last, "\n\n"))
	}
}

// The drain waits for the last of several jobs' executions, on the
// trigger loop's Idle channel: a job's execution that ends does not end
// the drain while another still runs, and neither is cancelled. In a
// synctest bubble, so the first execution ends once the drain waits for
// both, and a drain that wrongly ended with it has cancelled the last one
// once the bubble is idle again.
func TestShutdownDrainsUntilTheLastExecutionEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const drainTimeout = time.Minute
		// Fake time: it bounds every wait below.
		ctx, cancelAll := context.WithTimeout(t.Context(), 10*time.Minute)
		defer cancelAll()
		srv := embedded.NewServer()
		client, err := srv.Connect("sched-test")
		if err != nil {
			t.Fatal(err)
		}
		defer client.Close()
		s, err := kernel.New(kernel.Options{Client: client, InstanceID: "127.0.0.1@-@9", ServerIP: "127.0.0.1", Plugins: plugins(), DrainTimeout: drainTimeout,
			Logger: hclog.New(&hclog.LoggerOptions{Name: "drain", Level: hclog.Warn})})
		if err != nil {
			t.Fatal(err)
		}
		names := []string{"first", "last"}
		started := map[string]chan struct{}{}
		release := map[string]chan struct{}{}
		cancelled := make(chan string, len(names))
		for _, n := range names {
			started[n], release[n] = make(chan struct{}), make(chan struct{})
			var once sync.Once
			hold := executor.SimpleFunc(func(ctx context.Context, sc spi.ShardingContext) error {
				once.Do(func() { close(started[n]) })
				select {
				case <-ctx.Done():
					cancelled <- n
					return ctx.Err()
				case <-release[n]:
					return nil
				}
			})
			if err := s.Add(ctx, kernel.Job{Config: config.New(n, 1), Runner: hold}); err != nil {
				t.Fatal(err)
			}
		}
		runCtx, cancel := context.WithCancel(ctx)
		defer cancel()
		done := make(chan error, 1)
		go func() { done <- s.Run(runCtx) }()
		if err := s.Ready(ctx); err != nil {
			t.Fatal(err)
		}
		for _, n := range names {
			if err := s.Trigger(n); err != nil {
				t.Fatal(err)
			}
			select {
			case <-started[n]:
			case <-ctx.Done():
				t.Fatalf("%s's execution never started", n)
			}
		}
		cancel()
		synctest.Wait() // the drain waits, both executions running
		close(release["first"])
		// Fake time: room for a drain that would notice the first return
		// late (a poll), well within the drain timeout.
		time.Sleep(drainTimeout / 2)
		synctest.Wait()
		select {
		case n := <-cancelled:
			t.Fatalf("the drain cancelled %s's execution before it ended", n)
		case err := <-done:
			t.Fatalf("Run returned (%v) while the last execution ran", err)
		default:
		}
		close(release["last"])
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		case <-ctx.Done():
			t.Fatal("Run did not return after the last execution ended")
		}
		select {
		case n := <-cancelled:
			t.Fatalf("the drain cancelled %s's execution before it ended", n)
		default:
		}
	})
}
