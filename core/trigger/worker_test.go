package trigger_test

import (
	"context"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ejob-io/ejob/core/trigger"
)

// goid is the calling goroutine's id, from its stack's header line.
func goid() string {
	b := make([]byte, 64)
	return strings.Fields(string(b[:runtime.Stack(b, false)]))[1]
}

// bubbleGoroutines counts the goroutines of the calling goroutine's
// synctest bubble, from the header lines of every goroutine's stack
// ("goroutine 7 [select, synctest bubble 3]:"). runtime.NumGoroutine is
// no count for a test: it counts the whole process, the runtime's
// finalizer and cleanup goroutines included while they run a finalizer
// or a cleanup, which they do after a GC at a moment no bubble controls.
func bubbleGoroutines(t *testing.T) int {
	t.Helper()
	b := make([]byte, 256)
	self := bubbleOf.FindSubmatch(b[:runtime.Stack(b, false)])
	if self == nil {
		t.Fatalf("not in a synctest bubble: %q", b)
	}
	for b = make([]byte, 1<<16); ; b = make([]byte, 2*len(b)) {
		if n := runtime.Stack(b, true); n < len(b) {
			b = b[:n]
			break
		}
	}
	count := 0
	for _, m := range bubbleOf.FindAllSubmatch(b, -1) {
		if string(m[1]) == string(self[1]) {
			count++
		}
	}
	return count
}

// bubbleOf matches a goroutine's header line and captures its bubble's id.
var bubbleOf = regexp.MustCompile(`(?m)^goroutine \d+ \[[^\n]*, synctest bubble (\d+)\b`)

// The executions of different jobs run at the same time, each on its own
// goroutine: three jobs triggered together all start before any returns,
// though the goroutines are reused workers.
func TestWorkersRunJobsConcurrently(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := trigger.New(trigger.Options{})
		start(t, s)
		const n = 3
		var (
			mu       sync.Mutex
			started  int
			all      = make(chan struct{})
			timedOut []string
		)
		for round := range 2 { // round 1 runs on the workers of round 0
			started, all = 0, make(chan struct{})
			for i := range n {
				id := string(rune('a' + i))
				s.Add(id, nil, func(context.Context, trigger.Fire) {
					mu.Lock()
					started++
					if started == n {
						close(all)
					}
					wait := all
					mu.Unlock()
					select {
					case <-wait:
					case <-time.After(time.Hour): // fake time: only if the others never start
						mu.Lock()
						timedOut = append(timedOut, id)
						mu.Unlock()
					}
				}, nil)
				s.TriggerNow(id)
			}
			time.Sleep(time.Second)
			synctest.Wait()
			<-s.Idle()
			mu.Lock()
			if len(timedOut) > 0 {
				t.Fatalf("round %d: jobs %v waited an hour for the others to start", round, timedOut)
			}
			mu.Unlock()
		}
	})
}

// A job's executions that follow one another run on the same goroutine,
// and that goroutine exits once no execution came for WorkerIdle (within
// twice that).
func TestWorkerIsReusedThenExitsWhenIdle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const idle = 5 * time.Second
		s := trigger.New(trigger.Options{WorkerIdle: idle})
		start(t, s)
		ids := make(chan string, 10)
		s.Add("job", nil, func(context.Context, trigger.Fire) { ids <- goid() }, nil)
		synctest.Wait()
		base := bubbleGoroutines(t)

		s.TriggerNow("job")
		synctest.Wait()
		first := <-ids
		if d := bubbleGoroutines(t) - base; d != 1 {
			t.Fatalf("%d goroutines more after one execution, want 1 (its idle worker)", d)
		}
		time.Sleep(idle * 3 / 2) // one reap period ends meanwhile, the one the worker ran in
		s.TriggerNow("job")
		synctest.Wait()
		if second := <-ids; second != first {
			t.Errorf("second execution on goroutine %s, want the idle worker %s", second, first)
		}
		time.Sleep(2*idle + time.Second)
		synctest.Wait()
		if d := bubbleGoroutines(t) - base; d != 0 {
			t.Fatalf("%d goroutines more %v after the last execution, want 0", d, 2*idle+time.Second)
		}
		s.TriggerNow("job")
		synctest.Wait()
		if third := <-ids; third == first {
			t.Errorf("execution after the worker exited ran on its goroutine %s", third)
		}
	})
}

// A panic in an execution is recovered: the job is not left running, its
// next execution runs, and the worker goes on.
func TestWorkerSurvivesAPanic(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := trigger.New(trigger.Options{})
		start(t, s)
		ids := make(chan string, 10)
		calls := 0
		s.Add("job", nil, func(context.Context, trigger.Fire) {
			ids <- goid()
			calls++
			if calls == 1 {
				panic("boom")
			}
		}, nil)
		s.TriggerNow("job")
		synctest.Wait()
		<-s.Idle()
		first := <-ids
		s.TriggerNow("job")
		synctest.Wait()
		<-s.Idle()
		select {
		case second := <-ids:
			if second != first {
				t.Errorf("execution after the panic on goroutine %s, want the worker %s", second, first)
			}
		default:
			t.Fatal("the job did not run again after its execution panicked")
		}
	})
}

// The idle workers exit when Run returns, without waiting for WorkerIdle.
func TestWorkersExitWithRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := bubbleGoroutines(t)
		s := trigger.New(trigger.Options{WorkerIdle: time.Hour})
		ctx, cancel := context.WithCancel(t.Context())
		errc := make(chan error, 1)
		go func() { errc <- s.Run(ctx) }()
		for _, id := range []string{"a", "b"} {
			s.Add(id, nil, func(context.Context, trigger.Fire) {}, nil)
			s.TriggerNow(id)
		}
		synctest.Wait()
		<-s.Idle()
		if d := bubbleGoroutines(t) - base; d < 2 {
			t.Fatalf("%d goroutines more after two executions, want the loop and a worker at least", d)
		}
		cancel()
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
		synctest.Wait() // no time passes: only what exits at once
		if d := bubbleGoroutines(t) - base; d != 0 {
			t.Errorf("%d goroutines left after Run returned, want 0", d)
		}
	})
}

// The loop retires as many workers as stayed idle through a WorkerIdle
// period, not all of them and not the busy ones: after four jobs ran at
// once, one job that keeps firing keeps one worker and the three others
// exit; once it stops, that one exits too.
func TestIdleWorkersRetireAndBusyOnesStay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const idle = 4 * time.Second
		s := trigger.New(trigger.Options{WorkerIdle: idle})
		start(t, s)
		const n = 4
		var mu sync.Mutex
		started, all := 0, make(chan struct{})
		for i := range n {
			id := string(rune('a' + i))
			s.Add(id, nil, func(context.Context, trigger.Fire) {
				mu.Lock()
				if started++; started == n {
					close(all)
				}
				mu.Unlock()
				<-all
			}, nil)
		}
		synctest.Wait()
		base := bubbleGoroutines(t)
		for i := range n {
			s.TriggerNow(string(rune('a' + i)))
		}
		synctest.Wait()
		<-s.Idle()
		if d := bubbleGoroutines(t) - base; d != n {
			t.Fatalf("%d goroutines more after %d executions at once, want %d idle workers", d, n, n)
		}
		ids := make(chan string, 6)
		s.Add("e", nil, func(context.Context, trigger.Fire) { ids <- goid() }, nil)
		var ran []string
		for range 6 { // 3 periods: job e runs every half period
			time.Sleep(idle / 2)
			s.TriggerNow("e")
			synctest.Wait()
			<-s.Idle()
			ran = append(ran, <-ids)
		}
		if d := bubbleGoroutines(t) - base; d != 1 {
			t.Fatalf("%d goroutines more after one job ran every %v for %v, want 1 (its worker)", d, idle/2, 3*idle)
		}
		for _, id := range ran[2:] { // from the second period on, the one kept
			if id != ran[len(ran)-1] {
				t.Fatalf("job e ran on goroutines %v: its busy worker was retired", ran)
			}
		}
		time.Sleep(2*idle + time.Second)
		synctest.Wait()
		if d := bubbleGoroutines(t) - base; d != 0 {
			t.Fatalf("%d goroutines more %v after the last execution, want 0", d, 2*idle+time.Second)
		}
	})
}
