package trigger_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ejob-io/ejob/core/cron"
	"github.com/ejob-io/ejob/core/trigger"
)

var (
	_ trigger.Schedule = (*cron.Expression)(nil)
	_ trigger.Schedule = cron.Schedule(nil) // every kind of cron: Quartz, crontab, descriptor
)

// every fires at origin + k*period, k >= 1.
type every struct {
	origin time.Time
	period time.Duration
}

func (e every) Next(after time.Time) time.Time {
	if after.Before(e.origin) {
		return e.origin.Add(e.period)
	}
	k := after.Sub(e.origin)/e.period + 1
	return e.origin.Add(k * e.period)
}

// once fires a single time.
type once time.Time

func (o once) Next(after time.Time) time.Time {
	if after.Before(time.Time(o)) {
		return time.Time(o)
	}
	return time.Time{}
}

type firing struct {
	id   string
	fire trigger.Fire
}

type recorder struct {
	mu       sync.Mutex
	fires    []firing
	misfires map[string][]trigger.Misfire
}

func (r *recorder) fn(id string) trigger.Func {
	return func(ctx context.Context, f trigger.Fire) {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.fires = append(r.fires, firing{id, f})
	}
}

func (r *recorder) misfired(id string) trigger.MisfireFunc {
	return func(ctx context.Context, m trigger.Misfire) {
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.misfires == nil {
			r.misfires = map[string][]trigger.Misfire{}
		}
		r.misfires[id] = append(r.misfires[id], m)
	}
}

func (r *recorder) snapshot() []firing {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]firing(nil), r.fires...)
}

// start runs s in the current synctest bubble and stops it at cleanup.
func start(t *testing.T, s *trigger.Loop) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() { errc <- s.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-errc; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
}

func TestOrderingOfManyJobs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var r recorder
		s := trigger.New(trigger.Options{})
		start(t, s)
		t0 := time.Now()
		const n = 200
		// Job i fires once at t0 + (n-i) ms, so they are added in the
		// reverse of their firing order; jobs 0 and 1 share an instant.
		for i := range n {
			at := t0.Add(time.Duration(n-i) * time.Millisecond)
			if i == 1 {
				at = t0.Add(n * time.Millisecond)
			}
			s.Add(fmt.Sprint(i), once(at), r.fn(fmt.Sprint(i)), nil)
		}
		time.Sleep(time.Second) // fake time: lets every fire happen
		synctest.Wait()
		got := r.snapshot()
		if len(got) != n {
			t.Fatalf("got %d fires, want %d", len(got), n)
		}
		for k := 1; k < n; k++ {
			if got[k].fire.Scheduled().Before(got[k-1].fire.Scheduled()) {
				t.Fatalf("fire %d (%s at %v) before fire %d (%s at %v)", k, got[k].id,
					got[k].fire.Scheduled(), k-1, got[k-1].id, got[k-1].fire.Scheduled())
			}
		}
		// Jobs 0 and 1 share the last instant; their callbacks run on
		// separate goroutines, so only the set is fixed.
		if last := []string{got[n-2].id, got[n-1].id}; !(last[0] == "0" && last[1] == "1" || last[0] == "1" && last[1] == "0") {
			t.Errorf("last two fires = %v; want jobs 0 and 1", last)
		}
		for _, f := range got {
			if !f.fire.Actual().Equal(f.fire.Scheduled()) {
				t.Errorf("job %s: actual %v != scheduled %v under fake time", f.id, f.fire.Actual(), f.fire.Scheduled())
			}
		}
	})
}

func TestRescheduleRemovePause(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var r recorder
		s := trigger.New(trigger.Options{})
		start(t, s)
		t0 := time.Now()
		s.Add("a", every{t0, time.Second}, r.fn("a"), r.misfired("a"))
		s.Add("b", every{t0, time.Second}, r.fn("b"), r.misfired("b"))
		time.Sleep(2500 * time.Millisecond) // fires at 1s, 2s
		s.Reschedule("a", every{t0, 10 * time.Second})
		s.Remove("b")
		s.Add("c", every{t0, time.Second}, r.fn("c"), r.misfired("c"))
		s.Pause("c")
		time.Sleep(5 * time.Second) // now 7.5s
		synctest.Wait()
		count := func() map[string]int {
			m := map[string]int{}
			for _, f := range r.snapshot() {
				m[f.id]++
			}
			return m
		}
		if got := count(); got["a"] != 2 || got["b"] != 2 || got["c"] != 0 {
			t.Fatalf("fires after reschedule/remove/pause = %v, want a:2 b:2 c:0", got)
		}
		es, err := s.Snapshot(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if len(es) != 2 || es[0].ID != "a" || !es[0].Next.Equal(t0.Add(10*time.Second)) || es[1].ID != "c" || !es[1].Paused {
			t.Fatalf("snapshot = %+v", es)
		}
		s.Resume("c") // fires at 3..7s came due while paused: one misfire
		time.Sleep(time.Second)
		synctest.Wait()
		if got := count(); got["c"] != 1 || got["a"] != 2 {
			t.Fatalf("fires after resume = %v, want c:1 a:2", got)
		}
		r.mu.Lock()
		ms := r.misfires["c"]
		r.mu.Unlock()
		if len(ms) != 1 || ms[0].Scheduled != 1 || !ms[0].First.Equal(t0.Add(3*time.Second)) {
			t.Fatalf("misfires of c = %+v, want one at 3s", ms)
		}
		time.Sleep(2 * time.Second) // a fires at 10s
		synctest.Wait()
		if got := count(); got["a"] != 3 || got["c"] != 3 {
			t.Fatalf("fires = %v, want a:3 c:3", got)
		}
	})
}

func TestNoConcurrentRunsAndMisfireReported(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var (
			r          recorder
			cur, peak  atomic.Int32
			executions atomic.Int32
		)
		s := trigger.New(trigger.Options{})
		start(t, s)
		t0 := time.Now()
		s.Add("slow", every{t0, time.Second}, func(ctx context.Context, f trigger.Fire) {
			n := cur.Add(1)
			if n > peak.Load() {
				peak.Store(n)
			}
			executions.Add(1)
			time.Sleep(2500 * time.Millisecond) // the job's own work, in fake time
			cur.Add(-1)
		}, r.misfired("slow"))
		// Runs start at 1s (ends 3.5s; 2s and 3s skipped), 4s (ends 6.5s;
		// 5s and 6s skipped), 7s ...
		time.Sleep(6600 * time.Millisecond)
		synctest.Wait()
		if p := peak.Load(); p != 1 {
			t.Fatalf("peak concurrency %d, want 1", p)
		}
		if n := executions.Load(); n != 2 {
			t.Fatalf("executions %d, want 2", n)
		}
		r.mu.Lock()
		ms := append([]trigger.Misfire(nil), r.misfires["slow"]...)
		r.mu.Unlock()
		want := []trigger.Misfire{
			{Scheduled: 2, First: t0.Add(2 * time.Second), Last: t0.Add(3 * time.Second)},
			{Scheduled: 2, First: t0.Add(5 * time.Second), Last: t0.Add(6 * time.Second)},
		}
		if len(ms) != len(want) {
			t.Fatalf("misfires = %+v, want %+v", ms, want)
		}
		for i := range want {
			if ms[i].Scheduled != want[i].Scheduled || !ms[i].First.Equal(want[i].First) || !ms[i].Last.Equal(want[i].Last) {
				t.Errorf("misfire %d = %+v, want %+v", i, ms[i], want[i])
			}
		}
	})
}

func TestTriggerNow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var r recorder
		release := make(chan struct{})
		s := trigger.New(trigger.Options{})
		start(t, s)
		s.Add("job", nil, func(ctx context.Context, f trigger.Fire) {
			r.fn("job")(ctx, f)
			<-release
		}, r.misfired("job"))
		s.TriggerNow("job")
		synctest.Wait()
		s.TriggerNow("job") // running: dropped, reported as a manual misfire
		synctest.Wait()
		close(release)
		synctest.Wait()
		got := r.snapshot()
		if len(got) != 1 || !got[0].fire.Manual() {
			t.Fatalf("fires = %+v, want one manual", got)
		}
		r.mu.Lock()
		ms := r.misfires["job"]
		r.mu.Unlock()
		if len(ms) != 1 || ms[0].Manual != 1 || ms[0].Scheduled != 0 {
			t.Fatalf("misfires = %+v, want one manual", ms)
		}
		s.Pause("job")
		s.TriggerNow("job") // paused: held until Resume
		synctest.Wait()
		if n := len(r.snapshot()); n != 1 {
			t.Fatalf("paused job ran: %d fires", n)
		}
		s.Resume("job")
		synctest.Wait()
		if n := len(r.snapshot()); n != 2 {
			t.Fatalf("resumed job: %d fires, want 2", n)
		}
	})
}

func TestRemoveCancelsRunningExecution(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := trigger.New(trigger.Options{})
		start(t, s)
		started := make(chan struct{})
		var cause atomic.Value
		s.Add("job", nil, func(ctx context.Context, f trigger.Fire) {
			close(started)
			<-ctx.Done()
			cause.Store(ctx.Err())
		}, nil)
		s.TriggerNow("job")
		<-started
		<-s.Remove("job")
		if cause.Load() != context.Canceled {
			t.Fatalf("execution ctx err = %v, want Canceled", cause.Load())
		}
		es, err := s.Snapshot(t.Context())
		if err != nil || len(es) != 0 {
			t.Fatalf("snapshot after remove = %+v, %v", es, err)
		}
	})
}

func TestStalledLoopDoesNotCatchUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var r recorder
		clk := &jumpClock{}
		s := trigger.New(trigger.Options{Clock: clk})
		start(t, s)
		t0 := time.Now()
		s.Add("job", every{t0, time.Second}, r.fn("job"), r.misfired("job"))
		synctest.Wait()
		clk.skew.Store(int64(10 * time.Second)) // the wall clock jumps 10s
		time.Sleep(time.Second)                 // the 1s timer fires at "11s"
		synctest.Wait()
		got := r.snapshot()
		if len(got) != 1 {
			t.Fatalf("fires = %d, want 1 (no catch-up)", len(got))
		}
		r.mu.Lock()
		ms := r.misfires["job"]
		r.mu.Unlock()
		if len(ms) != 1 || !ms[0].First.Equal(t0.Add(2*time.Second)) {
			t.Fatalf("misfires = %+v, want one from 2s", ms)
		}
		es, _ := s.Snapshot(t.Context())
		if !es[0].Next.Equal(t0.Add(12 * time.Second)) {
			t.Fatalf("next = %v, want 12s", es[0].Next.Sub(t0))
		}
	})
}

// jumpClock is the bubble's clock plus a settable skew.
type jumpClock struct{ skew atomic.Int64 }

func (c *jumpClock) Now() time.Time { return time.Now().Add(time.Duration(c.skew.Load())) }
func (c *jumpClock) NewTimer(d time.Duration) trigger.Timer {
	return trigger.RealClock{}.NewTimer(d)
}

func TestRunTwiceAndStopped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := trigger.New(trigger.Options{})
		ctx, cancel := context.WithCancel(t.Context())
		errc := make(chan error, 1)
		go func() { errc <- s.Run(ctx) }()
		synctest.Wait()
		if err := s.Run(ctx); err != trigger.ErrAlreadyRunning {
			t.Fatalf("second Run = %v", err)
		}
		cancel()
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
		if _, err := s.Snapshot(t.Context()); err != trigger.ErrStopped {
			t.Fatalf("Snapshot after stop = %v", err)
		}
		<-s.Remove("x") // closed at once
	})
}

// Idle jobs cost no goroutine: 10,000 of them add none to the loop's.
func TestIdleJobsUseNoGoroutines(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := trigger.New(trigger.Options{})
		start(t, s)
		far := time.Now().Add(time.Hour)
		noop := func(context.Context, trigger.Fire) {}
		s.Add("job0", every{far, time.Hour}, noop, nil)
		synctest.Wait()
		before := bubbleGoroutines(t) // the loop is running
		for i := 1; i < 10_000; i++ {
			s.Add(fmt.Sprint("job", i), every{far, time.Hour}, noop, nil)
		}
		es, err := s.Snapshot(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if len(es) != 10_000 {
			t.Fatalf("%d jobs scheduled", len(es))
		}
		synctest.Wait()
		if d := bubbleGoroutines(t) - before; d > 0 {
			t.Errorf("goroutines grew by %d with 10,000 idle jobs, want 0", d)
		}
	})
}

// An execution learns of the fires skipped while it runs (OnSkip), takes
// them to serve itself (TakeMissed: they are not reported to the job's
// MisfireFunc), and after its final take a fire that comes due before it
// returns is not skipped but starts as soon as it returns.
func TestExecutionTakesMissedFires(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var r recorder
		s := trigger.New(trigger.Options{})
		start(t, s)
		t0 := time.Now()
		var (
			mu       sync.Mutex
			notified time.Time
			taken    []int
		)
		s.Add("job", every{t0, time.Second}, func(ctx context.Context, f trigger.Fire) {
			r.fn("job")(ctx, f)
			if !f.Scheduled().Equal(t0.Add(time.Second)) {
				return // the later fires return at once
			}
			skipped := make(chan struct{}, 1)
			stop := f.OnSkip(func() {
				select {
				case skipped <- struct{}{}:
				default:
				}
			})
			<-skipped // the fire at 2s
			stop()
			mu.Lock()
			notified = time.Now()
			mu.Unlock()
			time.Sleep(1500 * time.Millisecond) // until 3.5s: 3s skipped too
			m := f.TakeMissed(false)
			last := f.TakeMissed(true)
			mu.Lock()
			taken = append(taken, m, last)
			mu.Unlock()
			time.Sleep(time.Second) // until 4.5s: the fire at 4s is deferred
		}, r.misfired("job"))
		time.Sleep(5200 * time.Millisecond)
		synctest.Wait()
		mu.Lock()
		defer mu.Unlock()
		if !notified.Equal(t0.Add(2 * time.Second)) {
			t.Errorf("told of the skipped fire at %v, want at 2s", notified.Sub(t0))
		}
		if !slices.Equal(taken, []int{2, 0}) {
			t.Errorf("taken = %v, want the fires at 2s and 3s, then none", taken)
		}
		got := r.snapshot()
		wantFires := [][2]time.Duration{{time.Second, time.Second}, {4 * time.Second, 4500 * time.Millisecond}, {5 * time.Second, 5 * time.Second}}
		if len(got) != len(wantFires) {
			t.Fatalf("fires = %+v, want %v (scheduled, actual)", got, wantFires)
		}
		for i, w := range wantFires {
			if got[i].fire.Scheduled().Sub(t0) != w[0] || got[i].fire.Actual().Sub(t0) != w[1] {
				t.Errorf("fire %d: scheduled %v, actual %v; want %v, %v", i,
					got[i].fire.Scheduled().Sub(t0), got[i].fire.Actual().Sub(t0), w[0], w[1])
			}
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		if ms := r.misfires["job"]; len(ms) != 0 {
			t.Errorf("misfires reported = %+v, want none (the execution took them)", ms)
		}
	})
}

// TriggerSoon runs an idle job at once; while the job runs, requests
// collapse into one run right after it returns (Quartz's one-shot trigger),
// where TriggerNow would be dropped.
func TestTriggerSoon(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var r recorder
		release := make(chan struct{})
		s := trigger.New(trigger.Options{})
		start(t, s)
		var n atomic.Int32
		s.Add("job", nil, func(ctx context.Context, f trigger.Fire) {
			r.fn("job")(ctx, f)
			if n.Add(1) == 1 {
				<-release
			}
		}, r.misfired("job"))
		t0 := time.Now()
		s.TriggerSoon("job") // idle: runs now
		synctest.Wait()
		time.Sleep(time.Second)
		s.TriggerSoon("job") // running: after it
		s.TriggerSoon("job") // collapses into the same run
		synctest.Wait()
		time.Sleep(time.Second)
		close(release)
		synctest.Wait()
		got := r.snapshot()
		if len(got) != 2 {
			t.Fatalf("fires = %+v, want 2", got)
		}
		if f := got[1].fire; !f.Manual() || f.Scheduled().Sub(t0) != time.Second || f.Actual().Sub(t0) != 2*time.Second {
			t.Errorf("second fire = %+v, want manual, requested at 1s, started at 2s when the first returned", f)
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		if ms := r.misfires["job"]; len(ms) != 0 {
			t.Errorf("misfires = %+v, want none", ms)
		}
	})
}

// OnSkip calls its fn on a goroutine of its own when a fire is skipped
// (at once for fires skipped before it was set), serially and coalesced:
// a fire skipped while fn runs makes it run once more right after. Its
// stop waits for a running fn and no call starts after it; fires skipped
// then and not taken are reported to the job's MisfireFunc when the
// execution returns.
func TestOnSkip(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var r recorder
		s := trigger.New(trigger.Options{})
		start(t, s)
		t0 := time.Now()
		var (
			mu       sync.Mutex
			calls    []time.Duration
			taken    []int
			stopped  time.Duration
			inflight atomic.Int32
		)
		s.Add("job", every{t0, time.Second}, func(ctx context.Context, f trigger.Fire) {
			if !f.Scheduled().Equal(t0.Add(time.Second)) {
				return
			}
			time.Sleep(1500 * time.Millisecond) // until 2.5s: the fire at 2s is skipped
			stop := f.OnSkip(func() {
				if inflight.Add(1) > 1 {
					t.Error("two calls of fn at once")
				}
				defer inflight.Add(-1)
				mu.Lock()
				calls = append(calls, time.Since(t0))
				taken = append(taken, f.TakeMissed(false))
				mu.Unlock()
				time.Sleep(700 * time.Millisecond)
			})
			time.Sleep(1700 * time.Millisecond) // until 4.2s, inside the call that began at 4s
			stop()
			mu.Lock()
			stopped = time.Since(t0)
			mu.Unlock()
			time.Sleep(800 * time.Millisecond) // until 5s: the fire at 5s is skipped, no call
		}, r.misfired("job"))
		time.Sleep(5800 * time.Millisecond)
		synctest.Wait()
		mu.Lock()
		defer mu.Unlock()
		wantCalls := []time.Duration{2500 * time.Millisecond, 3200 * time.Millisecond, 4 * time.Second}
		if !slices.Equal(calls, wantCalls) || !slices.Equal(taken, []int{1, 1, 1}) {
			t.Errorf("fn called at %v taking %v fires; want at %v taking one each", calls, taken, wantCalls)
		}
		if stopped != 4700*time.Millisecond {
			t.Errorf("stop returned at %v, want 4.7s (when the running call returned)", stopped)
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		ms := r.misfires["job"]
		if len(ms) != 1 || ms[0].Scheduled != 1 || !ms[0].First.Equal(t0.Add(5*time.Second)) {
			t.Errorf("misfires = %+v, want the fire at 5s (skipped after stop, not taken)", ms)
		}
	})
}

// Executions of a job share its ctx, which Remove cancels: a job added
// again under the same id, even while its removed execution still runs,
// runs with a live ctx.
func TestReAddedJobRunsWithALiveContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := trigger.New(trigger.Options{})
		start(t, s)
		started, release := make(chan struct{}), make(chan struct{})
		s.Add("job", nil, func(ctx context.Context, f trigger.Fire) {
			close(started)
			<-ctx.Done()
			<-release
		}, nil)
		s.TriggerNow("job")
		<-started
		removed := s.Remove("job")
		var errs []error
		var mu sync.Mutex
		s.Add("job", nil, func(ctx context.Context, f trigger.Fire) {
			mu.Lock()
			defer mu.Unlock()
			errs = append(errs, ctx.Err())
		}, nil)
		synctest.Wait()
		close(release)
		<-removed
		s.TriggerNow("job")
		synctest.Wait()
		s.TriggerNow("job")
		synctest.Wait()
		mu.Lock()
		defer mu.Unlock()
		if len(errs) != 2 || errs[0] != nil || errs[1] != nil {
			t.Fatalf("executions of the re-added job saw ctx errors %v, want two live ctxs", errs)
		}
	})
}

// Idle is closed once no job runs, as Snapshot reports them: not while one
// runs, at the return of the last, and at once for a removed job's
// execution or after the scheduler stopped. Scheduler.drain waits on it.
func TestIdle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := trigger.New(trigger.Options{})
		ctx, cancel := context.WithCancel(t.Context())
		errc := make(chan error, 1)
		go func() { errc <- s.Run(ctx) }()
		closed := func(ch <-chan struct{}) bool {
			synctest.Wait()
			select {
			case <-ch:
				return true
			default:
				return false
			}
		}
		if !closed(s.Idle()) {
			t.Fatal("Idle not closed with no job")
		}
		release := map[string]chan struct{}{"a": make(chan struct{}), "b": make(chan struct{}), "c": make(chan struct{})}
		for _, id := range []string{"a", "b", "c"} {
			s.Add(id, nil, func(context.Context, trigger.Fire) { <-release[id] }, nil)
			s.TriggerNow(id)
		}
		synctest.Wait()
		for _, id := range []string{"a", "b", "c"} {
			s.Pause(id)
		}
		idle := s.Idle()
		if closed(idle) {
			t.Fatal("Idle closed while three jobs run")
		}
		close(release["a"])
		if closed(idle) {
			t.Fatal("Idle closed while two jobs run")
		}
		s.Remove("c") // its execution goes on, ignoring its ctx
		if closed(idle) {
			t.Fatal("Idle closed while b runs")
		}
		close(release["b"])
		if !closed(idle) {
			t.Fatal("Idle not closed when the last job returned (the removed c does not count)")
		}
		close(release["c"])
		cancel()
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
		if !closed(s.Idle()) {
			t.Fatal("Idle not closed after the scheduler stopped")
		}
	})
}
