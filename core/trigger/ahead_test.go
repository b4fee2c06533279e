package trigger_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ejob-io/ejob/core/trigger"
)

// aheadRun is what one execution of a job added with AddAhead saw.
type aheadRun struct {
	fire       trigger.Fire
	dispatched time.Time // when fn was called
	went       bool      // AwaitScheduled's answer
	resumed    time.Time // when AwaitScheduled returned
}

type aheadRecorder struct {
	mu       sync.Mutex
	runs     []aheadRun
	misfires []trigger.Misfire
	// work is how long each execution runs after AwaitScheduled
	// (abandoned ones too, as an undo would); by execution number.
	work func(n int) time.Duration
}

func (r *aheadRecorder) fn(ctx context.Context, f trigger.Fire) {
	run := aheadRun{fire: f, dispatched: time.Now()}
	r.mu.Lock()
	n := len(r.runs)
	r.runs = append(r.runs, run)
	r.mu.Unlock()
	run.went = f.AwaitScheduled(ctx)
	run.resumed = time.Now()
	r.mu.Lock()
	r.runs[n] = run
	r.mu.Unlock()
	if r.work != nil {
		time.Sleep(r.work(n))
	}
}

func (r *aheadRecorder) misfired(ctx context.Context, m trigger.Misfire) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.misfires = append(r.misfires, m)
}

func (r *aheadRecorder) snapshot() ([]aheadRun, []trigger.Misfire) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]aheadRun(nil), r.runs...), append([]trigger.Misfire(nil), r.misfires...)
}

func lead(d time.Duration) trigger.LeadFunc { return func() time.Duration { return d } }

// A fire of an idle job is dispatched its lead ahead (rounded up to 1 ms
// times a power of two) and goes on exactly at its scheduled time, never
// before; a lead above MaxLead is capped.
func TestAheadFireStartsAtItsScheduledTime(t *testing.T) {
	ms := time.Millisecond
	for _, tc := range []struct {
		lead, want time.Duration
	}{{16 * ms, 16 * ms}, {20 * ms, 32 * ms}, {1100 * time.Microsecond, 2 * ms}, {time.Microsecond, ms},
		{40 * ms, trigger.MaxLead}, {time.Second, trigger.MaxLead}, {0, 0}} {
		synctest.Test(t, func(t *testing.T) {
			r := &aheadRecorder{}
			s := trigger.New(trigger.Options{})
			start(t, s)
			t0 := time.Now()
			s.AddAhead("j", every{t0, time.Second}, r.fn, r.misfired, lead(tc.lead))
			time.Sleep(3500 * time.Millisecond)
			synctest.Wait()
			runs, ms := r.snapshot()
			if len(runs) != 3 || len(ms) != 0 {
				t.Fatalf("lead %v: %d runs, misfires %+v; want 3 runs, no misfire", tc.lead, len(runs), ms)
			}
			for k, run := range runs {
				at := t0.Add(time.Duration(k+1) * time.Second)
				if !run.fire.Scheduled().Equal(at) || !run.went || !run.resumed.Equal(at) {
					t.Errorf("lead %v, run %d: scheduled %v, went %v, resumed %v; want %v, true, %v",
						tc.lead, k, run.fire.Scheduled().Sub(t0), run.went, run.resumed.Sub(t0), at.Sub(t0), at.Sub(t0))
				}
				if got := at.Sub(run.dispatched); got != tc.want || run.fire.Ahead() != (tc.want > 0) {
					t.Errorf("lead %v, run %d: dispatched %v ahead (Ahead %v), want %v", tc.lead, k, got, run.fire.Ahead(), tc.want)
				}
			}
		})
	}
}

// A job still running when the lead of its next fire starts is not
// dispatched ahead: the fire is decided at its scheduled time as without a
// lead. A run that ends between the lead's start and the fire time leaves
// the fire to start normally (no misfire); one still running at the fire
// time has it skipped, as an unarmed fire would.
func TestAheadMisfireDecidedAtTheScheduledTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// Run 0 (fire at 1s) ends at 1.98s, inside the 50 ms lead of the
		// fire at 2s; run 1 (2s) ends at 3.01s, after the fire at 3s.
		r := &aheadRecorder{work: func(n int) time.Duration {
			switch n {
			case 0:
				return 980 * time.Millisecond
			case 1:
				return 1010 * time.Millisecond
			}
			return 0
		}}
		s := trigger.New(trigger.Options{})
		start(t, s)
		t0 := time.Now()
		s.AddAhead("j", every{t0, time.Second}, r.fn, r.misfired, lead(50*time.Millisecond))
		time.Sleep(4500 * time.Millisecond)
		synctest.Wait()
		runs, ms := r.snapshot()
		if len(runs) != 3 {
			t.Fatalf("%d runs, want 3 (at 1s, 2s, 4s)", len(runs))
		}
		if r1 := runs[1]; !r1.fire.Scheduled().Equal(t0.Add(2*time.Second)) || r1.fire.Ahead() || !r1.dispatched.Equal(t0.Add(2*time.Second)) {
			t.Errorf("run at 2s: scheduled %v, ahead %v, dispatched %v; want 2s, not ahead, at 2s",
				r1.fire.Scheduled().Sub(t0), r1.fire.Ahead(), r1.dispatched.Sub(t0))
		}
		if len(ms) != 1 || ms[0].Scheduled != 1 || !ms[0].First.Equal(t0.Add(3*time.Second)) {
			t.Errorf("misfires %+v, want the fire at 3s only", ms)
		}
		if r2 := runs[2]; !r2.fire.Scheduled().Equal(t0.Add(4*time.Second)) || !r2.fire.Ahead() || !r2.resumed.Equal(t0.Add(4*time.Second)) {
			t.Errorf("run at 4s: scheduled %v, ahead %v, resumed %v", r2.fire.Scheduled().Sub(t0), r2.fire.Ahead(), r2.resumed.Sub(t0))
		}
	})
}

// Pause, Remove and Reschedule within the lead abandon the fire: it does
// not go on. After Pause it is the job's next fire again (a misfire once
// resumed after it); a fire that comes due while an abandoned execution
// still undoes its work starts right after it, not skipped.
func TestAheadAbandoned(t *testing.T) {
	t.Run("pause", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			r := &aheadRecorder{}
			s, t0 := withinLead(t, r)
			s.Pause("j")
			synctest.Wait()
			runs, _ := r.snapshot()
			if len(runs) != 1 || runs[0].went || !runs[0].resumed.Before(t0.Add(time.Second)) {
				t.Fatalf("runs %+v, want one abandoned before 1s", runs)
			}
			es, _ := s.Snapshot(t.Context())
			if len(es) != 1 || !es[0].Paused || es[0].Running {
				t.Fatalf("snapshot %+v, want j paused and idle", es)
			}
			time.Sleep(1500 * time.Millisecond) // 2.48s
			s.Resume("j")
			synctest.Wait()
			time.Sleep(time.Second)
			synctest.Wait()
			runs, ms := r.snapshot()
			if len(ms) != 1 || !ms[0].First.Equal(t0.Add(time.Second)) {
				t.Errorf("misfires %+v, want one from 1s (the abandoned fire)", ms)
			}
			if len(runs) != 2 || !runs[1].went || !runs[1].fire.Scheduled().Equal(t0.Add(3*time.Second)) {
				t.Errorf("runs after resume %+v, want the fire at 3s", runs[1:])
			}
		})
	})
	t.Run("remove", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			r := &aheadRecorder{}
			s, t0 := withinLead(t, r)
			<-s.Remove("j")
			runs, _ := r.snapshot()
			if len(runs) != 1 || runs[0].went || !runs[0].resumed.Before(t0.Add(time.Second)) {
				t.Fatalf("runs %+v, want one abandoned before 1s", runs)
			}
		})
	})
	t.Run("reschedule", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			// The abandoned execution takes 100 ms to return: the fire
			// of the new schedule at 1s comes due meanwhile.
			r := &aheadRecorder{work: func(n int) time.Duration {
				if n == 0 {
					return 100 * time.Millisecond
				}
				return 0
			}}
			s, t0 := withinLead(t, r)
			s.Reschedule("j", every{t0, time.Second})
			time.Sleep(500 * time.Millisecond)
			synctest.Wait()
			runs, ms := r.snapshot()
			if len(ms) != 0 {
				t.Errorf("misfires %+v, want none", ms)
			}
			if len(runs) != 2 || runs[0].went || !runs[1].went || !runs[1].fire.Scheduled().Equal(t0.Add(time.Second)) ||
				!runs[1].resumed.Equal(t0.Add(time.Second-20*time.Millisecond+100*time.Millisecond)) {
				t.Fatalf("runs %+v, want the abandoned one, then the fire at 1s when it returned", runs)
			}
		})
	})
	t.Run("ctx", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			r := &aheadRecorder{}
			s := trigger.New(trigger.Options{})
			ctx, cancel := context.WithCancel(t.Context())
			done := make(chan error)
			go func() { done <- s.Run(ctx) }()
			t0 := time.Now()
			s.AddAhead("j", every{t0, time.Second}, r.fn, r.misfired, lead(40*time.Millisecond))
			time.Sleep(time.Second - 20*time.Millisecond)
			cancel()
			<-done
			runs, _ := r.snapshot()
			if len(runs) != 1 || runs[0].went {
				t.Fatalf("runs %+v, want one abandoned", runs)
			}
		})
	})
}

// TriggerNow and TriggerSoon are never dispatched ahead.
func TestAheadNotForManualFires(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := &aheadRecorder{}
		s := trigger.New(trigger.Options{})
		start(t, s)
		t0 := time.Now()
		s.AddAhead("j", every{t0, time.Hour}, r.fn, r.misfired, lead(trigger.MaxLead))
		s.TriggerNow("j")
		synctest.Wait()
		time.Sleep(time.Second)
		s.TriggerSoon("j")
		synctest.Wait()
		runs, _ := r.snapshot()
		if len(runs) != 2 {
			t.Fatalf("%d runs, want 2", len(runs))
		}
		for _, run := range runs {
			if run.fire.Ahead() || !run.fire.Manual() || !run.went || !run.resumed.Equal(run.dispatched) {
				t.Errorf("manual run %+v: want not ahead, going at once", run)
			}
		}
	})
}

// withinLead starts a scheduler with a job firing every second from now
// (t0) with a 40 ms lead, and returns 20 ms before its first fire: its
// execution has been dispatched and waits for the scheduled time.
func withinLead(t *testing.T, r *aheadRecorder) (*trigger.Loop, time.Time) {
	t.Helper()
	s := trigger.New(trigger.Options{})
	start(t, s)
	t0 := time.Now()
	s.AddAhead("j", every{t0, time.Second}, r.fn, r.misfired, lead(40*time.Millisecond))
	time.Sleep(time.Second - 20*time.Millisecond)
	return s, t0
}

// The lead of a fire is read again when the job's execution returns, so
// that what that execution measured applies to the very next fire.
func TestAheadLeadReadAfterTheExecution(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l atomic.Int64 // the lead, set by the first execution
		r := &aheadRecorder{work: func(n int) time.Duration {
			l.Store(int64(30 * time.Millisecond))
			return 0
		}}
		s := trigger.New(trigger.Options{})
		start(t, s)
		t0 := time.Now()
		s.AddAhead("j", every{t0, time.Second}, r.fn, r.misfired, func() time.Duration { return time.Duration(l.Load()) })
		time.Sleep(2500 * time.Millisecond)
		synctest.Wait()
		runs, _ := r.snapshot()
		if len(runs) != 2 || runs[0].fire.Ahead() {
			t.Fatalf("runs %+v, want 2, the first not ahead", runs)
		}
		if got := runs[1].fire.Scheduled().Sub(runs[1].dispatched); got != 32*time.Millisecond || !runs[1].resumed.Equal(t0.Add(2*time.Second)) {
			t.Fatalf("second fire dispatched %v ahead, resumed at %v; want 32ms (30 rounded up), 2s", got, runs[1].resumed.Sub(t0))
		}
	})
}
