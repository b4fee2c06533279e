package executor_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ejob-io/ejob/core/config"
	"github.com/ejob-io/ejob/core/executor"
	"github.com/ejob-io/ejob/core/trigger"
	errorhandlerbuiltin "github.com/ejob-io/ejob/plugins/errorhandler/builtin"
	threadpoolbuiltin "github.com/ejob-io/ejob/plugins/threadpool/builtin"
	"github.com/ejob-io/ejob/spi"
)

// journal records every call the pipeline makes, in order.
type journal struct {
	mu    sync.Mutex
	lines []string
}

func (j *journal) add(format string, args ...any) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.lines = append(j.lines, fmt.Sprintf(format, args...))
}

func (j *journal) get() []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return slices.Clone(j.lines)
}

// fakeFacade is an executor.Facade made of function fields over in-memory
// state; every call is journaled.
type fakeFacade struct {
	j   *journal
	cfg *config.JobConfiguration
	sc  executor.ShardingContexts

	envErr       error
	runningGuard bool
	misfires     atomic.Int32 // ExecuteMisfired answers true this many times
	needSharding func() bool
	setMisfire   atomic.Int32
	offMisfire   bool // ExecuteMisfired answers false (misfire off)
	onContexts   func()
	completeErr  error        // RegisterCompleted's answer
	begins       atomic.Int64 // RegisterBegin calls, for the fencing tokens
	paused       atomic.Bool
}

var _ executor.Facade = (*fakeFacade)(nil)

// errFakePaused is fakeFacade's refusal of a trigger while paused.
var errFakePaused = errors.New("fake: paused")

func (f *fakeFacade) Config(ctx context.Context) (*config.JobConfiguration, error) {
	f.j.add("Config")
	return f.cfg, nil
}

func (f *fakeFacade) CheckEnvironment(ctx context.Context) error {
	f.j.add("CheckEnvironment")
	return f.envErr
}

func (f *fakeFacade) ShardingContexts(ctx context.Context) (executor.ShardingContexts, error) {
	f.j.add("ShardingContexts")
	if f.onContexts != nil {
		f.onContexts()
	}
	if f.paused.Load() {
		return executor.ShardingContexts{}, errFakePaused // as coord's, which owes the fire a catch-up
	}
	return f.sc, nil
}

func (f *fakeFacade) MisfireIfRunning(ctx context.Context, items []int) (bool, error) {
	f.j.add("MisfireIfRunning %v", items)
	return f.runningGuard, nil
}

// RegisterBegin gives each item of the n-th begin the fencing token
// 1000*n + item, as coord's begin fills them into the shared map.
func (f *fakeFacade) RegisterBegin(ctx context.Context, sc executor.ShardingContexts) error {
	f.j.add("RegisterBegin %v", sc.Items)
	n := f.begins.Add(1)
	for _, i := range sc.Items {
		if sc.FencingTokens != nil {
			sc.FencingTokens[i] = 1000*n + int64(i)
		}
	}
	return nil
}

func (f *fakeFacade) RegisterCompleted(ctx context.Context, sc executor.ShardingContexts, failed []int) error {
	f.j.add("RegisterCompleted failed=%v", failed)
	return f.completeErr
}

func (f *fakeFacade) ExecuteMisfired(ctx context.Context, items []int) (bool, error) {
	f.j.add("ExecuteMisfired")
	if f.offMisfire {
		return false, nil
	}
	if f.misfires.Load() > 0 {
		f.misfires.Add(-1)
		return true, nil
	}
	return false, nil
}

func (f *fakeFacade) ClearMisfire(ctx context.Context, items []int) error {
	f.j.add("ClearMisfire %v", items)
	return nil
}

func (f *fakeFacade) NeedSharding(ctx context.Context) (bool, error) {
	f.j.add("NeedSharding")
	return f.needSharding != nil && f.needSharding(), nil
}

func (f *fakeFacade) FailoverIfNecessary(ctx context.Context) error {
	f.j.add("FailoverIfNecessary")
	return nil
}

// SetMisfire flags the items: the next ExecuteMisfired answers true.
func (f *fakeFacade) SetMisfireExcept(ctx context.Context, except []int) error {
	f.j.add("SetMisfireExcept %v", except)
	return nil
}

func (f *fakeFacade) SetMisfire(ctx context.Context) error {
	f.j.add("SetMisfire")
	f.setMisfire.Add(1)
	f.misfires.Store(1)
	return nil
}

// JoinCatchUp adds no item: the instance has none outside sc.
func (f *fakeFacade) JoinCatchUp(ctx context.Context, sc executor.ShardingContexts) (executor.ShardingContexts, error) {
	return sc, nil
}

// PreArm cannot arm (armingFacade can).
func (f *fakeFacade) PreArm(ctx context.Context) (executor.ShardingContexts, bool, error) {
	f.j.add("PreArm")
	return executor.ShardingContexts{}, false, nil
}

func (f *fakeFacade) ConfirmArmed(ctx context.Context, sc executor.ShardingContexts) bool {
	f.j.add("ConfirmArmed %v", sc.Items)
	return false
}

func (f *fakeFacade) Disarm(ctx context.Context) {
	f.j.add("Disarm (ctx alive: %v)", ctx.Err() == nil)
}

// Paused answers paused (the registry connection suspended).
func (f *fakeFacade) Paused() (bool, <-chan struct{}) {
	if f.paused.Load() {
		return true, nil
	}
	return false, nil
}

// recEvents journals status events (and item events when items is set).
type recEvents struct {
	j     *journal
	items bool
}

func (e recEvents) TaskStaging(_ context.Context, ev executor.StatusEvent) { e.status(ev) }
func (e recEvents) TaskRunning(_ context.Context, ev executor.StatusEvent) { e.status(ev) }
func (e recEvents) TaskFinished(_ context.Context, ev executor.StatusEvent) {
	e.status(ev)
}
func (e recEvents) TaskError(_ context.Context, ev executor.StatusEvent) { e.status(ev) }
func (e recEvents) status(ev executor.StatusEvent) {
	e.j.add("%s %s %q", ev.State, ev.Source, ev.Message)
}
func (e recEvents) ItemStarted(_ context.Context, ev executor.ItemEvent) {
	if e.items {
		e.j.add("start %d %s", ev.Item, ev.Source)
	}
}
func (e recEvents) ItemCompleted(_ context.Context, ev executor.ItemEvent) {
	if e.items {
		e.j.add("complete %d success=%v", ev.Item, ev.Success)
	}
}

// recHandler journals each HandleError and delegates to a built-in.
type recHandler struct {
	j    *journal
	next spi.ErrorHandler
	reqs chan spi.HandleErrorRequest // optional
}

func (h recHandler) HandleError(ctx context.Context, req spi.HandleErrorRequest) (spi.HandleErrorResponse, error) {
	h.j.add("HandleError item=%d task=%q", req.ShardingItem, req.TaskID)
	if h.reqs != nil {
		h.reqs <- req
	}
	return h.next.HandleError(ctx, req)
}

func (h recHandler) Validate(ctx context.Context, req spi.ValidatePropsRequest) error { return nil }

type listener struct {
	j      *journal
	name   string
	order  int
	before error
	after  error
}

func (l listener) BeforeJobExecuted(ctx context.Context, sc executor.ShardingContexts) error {
	l.j.add("before %s", l.name)
	return l.before
}

func (l listener) AfterJobExecuted(ctx context.Context, sc executor.ShardingContexts) error {
	l.j.add("after %s", l.name)
	return l.after
}

func (l listener) Order() int { return l.order }

type harness struct {
	j       *journal
	f       *fakeFacade
	opts    executor.Options
	lookups atomic.Int32
	reqs    chan spi.HandleErrorRequest
}

func newHarness(items []int, handlerType, poolType string) *harness {
	h := &harness{j: &journal{}, reqs: make(chan spi.HandleErrorRequest, 100)}
	cfg := config.New("job", 4)
	cfg.JobErrorHandlerType = handlerType
	cfg.JobExecutorThreadPoolSizeProviderType = poolType
	cfg.Props = map[string]string{}
	cfg.Misfire = true
	params := map[int]string{}
	for _, i := range items {
		if i == 1 {
			params[i] = "B"
		}
	}
	h.f = &fakeFacade{j: h.j, cfg: cfg, sc: executor.ShardingContexts{
		TaskID:                 taskID(items),
		JobName:                "job",
		ShardingTotalCount:     4,
		Items:                  items,
		ShardingItemParameters: params,
	}}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	handlers := errorhandlerbuiltin.Handlers(quiet)
	pools := threadpoolbuiltin.Providers()
	h.opts = executor.Options{
		InstanceID: "10.0.0.1@-@42",
		Facade:     h.f,
		Events:     recEvents{j: h.j},
		ErrorHandlers: func(ctx context.Context, typ string) (spi.ErrorHandler, error) {
			h.lookups.Add(1)
			eh, ok := handlers[typ]
			if !ok {
				return nil, fmt.Errorf("%w: %s", spi.ErrUnknownType, typ)
			}
			return recHandler{j: h.j, next: eh, reqs: h.reqs}, nil
		},
		PoolSizes: func(ctx context.Context, typ string) (spi.ThreadPoolSizeProvider, error) {
			p, ok := pools[typ]
			if !ok {
				return nil, fmt.Errorf("%w: %s", spi.ErrUnknownType, typ)
			}
			return p, nil
		},
		AvailableCPUs: 4,
		Runner: executor.SimpleFunc(func(ctx context.Context, sc spi.ShardingContext) error {
			h.j.add("item %d", sc.ShardingItem)
			return nil
		}),
	}
	return h
}

func taskID(items []int) string {
	s := make([]string, len(items))
	for i, it := range items {
		s[i] = fmt.Sprint(it)
	}
	return "job@-@" + strings.Join(s, ",") + "@-@READY@-@10.0.0.1@-@42"
}

func (h *harness) execute(t *testing.T) error {
	t.Helper()
	e, err := executor.New("job", h.opts)
	if err != nil {
		t.Fatal(err)
	}
	return e.Execute(t.Context(), executor.NormalTrigger, nil)
}

func check(t *testing.T, got, want []string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Errorf("call sequence mismatch\n got: %s\nwant: %s", strings.Join(got, "\n      "), strings.Join(want, "\n      "))
	}
}

const (
	staging = `TASK_STAGING NORMAL_TRIGGER "Job 'job' execute begin."`
	running = `TASK_RUNNING NORMAL_TRIGGER ""`
	done    = `TASK_FINISHED NORMAL_TRIGGER ""`
)

func failing(h *harness, bad ...int) executor.ItemRunner {
	return executor.SimpleFunc(func(ctx context.Context, sc spi.ShardingContext) error {
		h.j.add("item %d", sc.ShardingItem)
		if slices.Contains(bad, sc.ShardingItem) {
			return errors.New("boom")
		}
		return nil
	})
}

func TestNormalRun(t *testing.T) {
	h := newHarness([]int{0, 1, 2}, "", "SINGLE_THREAD")
	h.opts.Listeners = []executor.Listener{listener{j: h.j, name: "L"}}
	h.opts.Events = recEvents{j: h.j, items: true}
	if err := h.execute(t); err != nil {
		t.Fatal(err)
	}
	check(t, h.j.get(), []string{
		"Config", "ShardingContexts", staging, "MisfireIfRunning [0 1 2]", "before L",
		"RegisterBegin [0 1 2]", running,
		"start 0 NORMAL_TRIGGER", "item 0", "complete 0 success=true",
		"start 1 NORMAL_TRIGGER", "item 1", "complete 1 success=true",
		"start 2 NORMAL_TRIGGER", "item 2", "complete 2 success=true",
		"RegisterCompleted failed=[]", done, "ExecuteMisfired", "after L",
	})
}

func TestEmptyItems(t *testing.T) {
	h := newHarness([]int{}, "", "")
	h.opts.Listeners = []executor.Listener{listener{j: h.j, name: "L"}}
	if err := h.execute(t); err != nil {
		t.Fatal(err)
	}
	check(t, h.j.get(), []string{
		"Config", "ShardingContexts", staging, "MisfireIfRunning []", "before L",
		`TASK_FINISHED NORMAL_TRIGGER "Sharding item for job 'job' is empty."`,
		"ExecuteMisfired", "after L",
	})
}

func TestMisfireGuard(t *testing.T) {
	h := newHarness([]int{0, 1}, "", "")
	h.opts.Listeners = []executor.Listener{listener{j: h.j, name: "L"}}
	h.f.runningGuard = true
	if err := h.execute(t); err != nil {
		t.Fatal(err)
	}
	check(t, h.j.get(), []string{
		"Config", "ShardingContexts", staging, "MisfireIfRunning [0 1]",
		`TASK_FINISHED NORMAL_TRIGGER "Previous job 'job' - shardingItems '[0, 1]' is still running, misfired job will start after previous job completed."`,
	})
}

func TestMisfireLoop(t *testing.T) {
	h := newHarness([]int{2}, "", "")
	h.f.misfires.Store(2)
	if err := h.execute(t); err != nil {
		t.Fatal(err)
	}
	check(t, h.j.get(), []string{
		"Config", "ShardingContexts", staging, "MisfireIfRunning [2]",
		"RegisterBegin [2]", running, "item 2", "RegisterCompleted failed=[]", done,
		"ExecuteMisfired", "ClearMisfire [2]",
		"RegisterBegin [2]", `TASK_RUNNING MISFIRE ""`, "item 2", "RegisterCompleted failed=[]", `TASK_FINISHED MISFIRE ""`,
		"ExecuteMisfired", "ClearMisfire [2]",
		"RegisterBegin [2]", `TASK_RUNNING MISFIRE ""`, "item 2", "RegisterCompleted failed=[]", `TASK_FINISHED MISFIRE ""`,
		"ExecuteMisfired",
	})
}

// fakeMissed is an executor.Fire of the schedule, due now: skip models a
// fire skipped while the execution runs.
type fakeMissed struct {
	mu     sync.Mutex
	n      int
	final  bool
	onSkip func()
	calls  sync.WaitGroup
}

func newFakeMissed() *fakeMissed { return &fakeMissed{} }

var _ executor.Fire = (*fakeMissed)(nil)

func (m *fakeMissed) Scheduled() time.Time                { return time.Now() }
func (m *fakeMissed) Manual() bool                        { return false }
func (m *fakeMissed) Ahead() bool                         { return false }
func (m *fakeMissed) AwaitScheduled(context.Context) bool { return true }

func (m *fakeMissed) OnSkip(fn func()) func() {
	m.mu.Lock()
	m.onSkip = fn
	m.mu.Unlock()
	return func() {
		m.mu.Lock()
		m.onSkip = nil
		m.mu.Unlock()
		m.calls.Wait()
	}
}

func (m *fakeMissed) TakeMissed(final bool) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := m.n
	m.n = 0
	m.final = m.final || final
	return n
}

// skip counts a skipped fire; notify tells the execution at once (a fire
// skipped as the run ends may be seen only by its next TakeMissed).
func (m *fakeMissed) skip(notify bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.n++
	if fn := m.onSkip; notify && fn != nil {
		m.calls.Go(fn)
	}
}

func (m *fakeMissed) isFinal() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.final
}

// A fire skipped while the items run sets the misfire flags at once (while
// they still run), and the trigger's misfire loop runs them again right
// after, in the same trigger; then the trigger loop is told that no more
// fires are to be skipped.
func TestSkippedFireCaughtUpInTheSameTrigger(t *testing.T) {
	for _, notify := range []bool{true, false} {
		t.Run(fmt.Sprintf("notified=%v", notify), func(t *testing.T) {
			h := newHarness([]int{0}, "", "")
			h.opts.Listeners = []executor.Listener{listener{j: h.j, name: "L"}}
			m := newFakeMissed()
			var first atomic.Bool
			h.opts.Runner = executor.SimpleFunc(func(ctx context.Context, sc spi.ShardingContext) error {
				h.j.add("item %d", sc.ShardingItem)
				if first.CompareAndSwap(false, true) {
					m.skip(notify)
					if notify { // the flag is written while the item runs
						deadline := time.Now().Add(10 * time.Second)
						for h.f.setMisfire.Load() == 0 {
							if time.Now().After(deadline) {
								return errors.New("misfire flag not recorded while running")
							}
							time.Sleep(time.Millisecond) // bounded wait on observable state
						}
					}
				}
				return nil
			})
			e, err := executor.New("job", h.opts)
			if err != nil {
				t.Fatal(err)
			}
			if err := e.Execute(t.Context(), executor.NormalTrigger, m); err != nil {
				t.Fatal(err)
			}
			want := []string{"Config", "ShardingContexts", staging, "MisfireIfRunning [0]", "before L",
				"RegisterBegin [0]", running, "item 0"}
			if notify {
				want = append(want, "SetMisfire", "RegisterCompleted failed=[]", done)
			} else {
				want = append(want, "RegisterCompleted failed=[]", done, "SetMisfire")
			}
			want = append(want, "ExecuteMisfired", "ClearMisfire [0]",
				"RegisterBegin [0]", `TASK_RUNNING MISFIRE ""`, "item 0", "RegisterCompleted failed=[]", `TASK_FINISHED MISFIRE ""`,
				"ExecuteMisfired", "after L")
			check(t, h.j.get(), want)
			if !m.isFinal() {
				t.Error("the trigger loop was not told that the trigger takes no more missed fires")
			}
		})
	}
}

// A fire skipped while the trigger waits in ShardingContexts (for a
// resharding) flags the items at once, while this instance still owns
// them, not once the run is over.
func TestSkippedFireWhileWaitingForContextsRecordedAtOnce(t *testing.T) {
	h := newHarness([]int{0}, "", "")
	m := newFakeMissed()
	h.f.onContexts = func() {
		m.skip(true)
		deadline := time.Now().Add(10 * time.Second)
		for h.f.setMisfire.Load() == 0 && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond) // bounded wait on observable state
		}
	}
	e, err := executor.New("job", h.opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Execute(t.Context(), executor.NormalTrigger, m); err != nil {
		t.Fatal(err)
	}
	got := h.j.get()
	if i := slices.Index(got, "SetMisfire"); i < 0 || i > slices.Index(got, "MisfireIfRunning [0]") {
		t.Errorf("the fire skipped during ShardingContexts was not recorded before the run: %v", got)
	}
}

// With misfire off the skipped fires are recorded (as upstream) but not
// re-run, and the trigger loop keeps skipping fires until the end.
func TestSkippedFireWithMisfireOff(t *testing.T) {
	h := newHarness([]int{0}, "", "")
	h.f.cfg.Misfire = false
	m := newFakeMissed()
	h.opts.Runner = executor.SimpleFunc(func(ctx context.Context, sc spi.ShardingContext) error {
		h.j.add("item %d", sc.ShardingItem)
		m.skip(false)
		return nil
	})
	h.f.misfires.Store(0)
	e, err := executor.New("job", h.opts)
	if err != nil {
		t.Fatal(err)
	}
	// The fake answers ExecuteMisfired by its flags; misfire off means
	// the Facade answers false whatever the flags.
	h.f.offMisfire = true
	if err := e.Execute(t.Context(), executor.NormalTrigger, m); err != nil {
		t.Fatal(err)
	}
	check(t, h.j.get(), []string{"Config", "ShardingContexts", staging, "MisfireIfRunning [0]",
		"RegisterBegin [0]", running, "item 0", "RegisterCompleted failed=[]", done, "SetMisfire", "ExecuteMisfired"})
	if m.isFinal() {
		t.Error("final take with misfire off")
	}
}

func TestThrowSingleItem(t *testing.T) {
	h := newHarness([]int{0}, "throw", "")
	h.opts.Runner = failing(h, 0)
	h.opts.Listeners = []executor.Listener{listener{j: h.j, name: "L"}}
	h.f.cfg.Failover = true
	err := h.execute(t)
	if !errors.Is(err, executor.ErrPropagated) {
		t.Fatalf("Execute = %v, want ErrPropagated", err)
	}
	check(t, h.j.get(), []string{
		"Config", "ShardingContexts", staging, "MisfireIfRunning [0]", "before L",
		"RegisterBegin [0]", running, "item 0", `HandleError item=0 task="` + taskID([]int{0}) + `"`,
		"RegisterCompleted failed=[0]", `TASK_ERROR NORMAL_TRIGGER "{0=job \"job\" item 0: boom}"`,
	})
}

func TestThrowMultipleItems(t *testing.T) {
	// ejob's deliberate choice: THROW stops the trigger after every item
	// and the finally step, for several items as for one.
	h := newHarness([]int{0, 1, 2}, "THROW", "SINGLE_THREAD")
	h.opts.Runner = failing(h, 1)
	h.opts.Listeners = []executor.Listener{listener{j: h.j, name: "L"}}
	err := h.execute(t)
	if !errors.Is(err, executor.ErrPropagated) {
		t.Fatalf("Execute = %v, want ErrPropagated", err)
	}
	check(t, h.j.get(), []string{
		"Config", "ShardingContexts", staging, "MisfireIfRunning [0 1 2]", "before L",
		"RegisterBegin [0 1 2]", running, "item 0", "item 1", `HandleError item=1 task="` + taskID([]int{0, 1, 2}) + `"`, "item 2",
		"RegisterCompleted failed=[1]", `TASK_ERROR NORMAL_TRIGGER "{1=job \"job\" item 1: boom}"`,
	})
}

func TestLogMultipleItemsCarriesOn(t *testing.T) {
	h := newHarness([]int{0, 1}, "LOG", "SINGLE_THREAD")
	h.opts.Runner = failing(h, 0, 1)
	h.opts.Listeners = []executor.Listener{listener{j: h.j, name: "L"}}
	if err := h.execute(t); err != nil {
		t.Fatal(err)
	}
	got := h.j.get()
	want := []string{
		"Config", "ShardingContexts", staging, "MisfireIfRunning [0 1]", "before L",
		"RegisterBegin [0 1]", running,
		"item 0", `HandleError item=0 task="` + taskID([]int{0, 1}) + `"`,
		"item 1", `HandleError item=1 task="` + taskID([]int{0, 1}) + `"`,
		"RegisterCompleted failed=[0 1]",
		`TASK_ERROR NORMAL_TRIGGER "{0=job \"job\" item 0: boom, 1=job \"job\" item 1: boom}"`,
		"ExecuteMisfired", "after L",
	}
	check(t, got, want)
}

func TestEnvironmentCheck(t *testing.T) {
	for _, tc := range []struct {
		handler string
		want    []string
		err     bool
	}{
		{"LOG", []string{
			"Config", "CheckEnvironment", `HandleError item=-1 task=""`, "ShardingContexts", staging,
			"MisfireIfRunning [0]", "RegisterBegin [0]", running, "item 0", "RegisterCompleted failed=[]", done,
			"ExecuteMisfired",
		}, false},
		{"THROW", []string{"Config", "CheckEnvironment", `HandleError item=-1 task=""`}, true},
	} {
		t.Run(tc.handler, func(t *testing.T) {
			h := newHarness([]int{0}, tc.handler, "")
			h.f.cfg.MaxTimeDiffSeconds = 5
			h.f.envErr = errors.New("Time different between job server and register center exceed '9' seconds, max time different is '5' seconds.")
			err := h.execute(t)
			if (err != nil) != tc.err || (err != nil && !errors.Is(err, executor.ErrPropagated)) {
				t.Fatalf("Execute = %v", err)
			}
			check(t, h.j.get(), tc.want)
			req := <-h.reqs
			if req.ShardingItem != -1 || !strings.Contains(req.Error.Message, "exceed '9' seconds") || req.InstanceID != "10.0.0.1@-@42" {
				t.Errorf("handler request = %+v", req)
			}
		})
	}
}

func TestListenerFailure(t *testing.T) {
	for _, tc := range []struct {
		handler string
		want    []string
		err     bool
	}{
		// Sorted by order: b (1), then a and c (2, configured order).
		{"LOG", []string{
			"Config", "ShardingContexts", staging, "MisfireIfRunning [0]",
			"before b", "before a", `HandleError item=-1 task=""`,
			"RegisterBegin [0]", running, "item 0", "RegisterCompleted failed=[]", done,
			"ExecuteMisfired", "after b", "after a", "after c",
		}, false},
		{"THROW", []string{
			"Config", "ShardingContexts", staging, "MisfireIfRunning [0]",
			"before b", "before a", `HandleError item=-1 task=""`,
		}, true},
	} {
		t.Run(tc.handler, func(t *testing.T) {
			h := newHarness([]int{0}, tc.handler, "")
			h.opts.Listeners = []executor.Listener{
				listener{j: h.j, name: "a", order: 2, before: errors.New("listener a failed")},
				listener{j: h.j, name: "c", order: 2},
				listener{j: h.j, name: "b", order: 1},
			}
			err := h.execute(t)
			if (err != nil) != tc.err {
				t.Fatalf("Execute = %v", err)
			}
			check(t, h.j.get(), tc.want)
		})
	}
}

func TestFailoverEnquiryOnlyWithFailover(t *testing.T) {
	for _, failover := range []bool{false, true} {
		h := newHarness([]int{0}, "", "")
		h.f.cfg.Failover = failover
		if err := h.execute(t); err != nil {
			t.Fatal(err)
		}
		if got := slices.Contains(h.j.get(), "FailoverIfNecessary"); got != failover {
			t.Errorf("failover=%v: enquiry called = %v", failover, got)
		}
		if l := h.j.get(); l[len(l)-1] != "FailoverIfNecessary" && failover {
			t.Errorf("enquiry is not last: %v", l)
		}
	}
}

// concurrency runs items that wait until want of them run at once (or a
// deadline passes) and returns the observed peak and the start order.
func concurrency(t *testing.T, poolType string, items []int, want int) (int, []int) {
	t.Helper()
	h := newHarness(items, "", poolType)
	var (
		mu          sync.Mutex
		cur, peak   int
		order       []int
		reached     = make(chan struct{})
		reachedOnce sync.Once
	)
	h.opts.Runner = executor.SimpleFunc(func(ctx context.Context, sc spi.ShardingContext) error {
		mu.Lock()
		cur++
		peak = max(peak, cur)
		order = append(order, sc.ShardingItem)
		if cur >= want {
			reachedOnce.Do(func() { close(reached) })
		}
		mu.Unlock()
		if want > 1 {
			select {
			case <-reached:
			case <-time.After(5 * time.Second):
				t.Errorf("only %d items ran at once, want %d", peak, want)
			}
		}
		mu.Lock()
		cur--
		mu.Unlock()
		return nil
	})
	if err := h.execute(t); err != nil {
		t.Fatal(err)
	}
	return peak, order
}

func TestPoolSizing(t *testing.T) {
	t.Run("SINGLE_THREAD", func(t *testing.T) {
		peak, order := concurrency(t, "SINGLE_THREAD", []int{3, 0, 2, 1}, 1)
		if peak != 1 || !slices.Equal(order, []int{3, 0, 2, 1}) {
			t.Errorf("peak %d order %v; want 1 and Items order", peak, order)
		}
	})
	t.Run("CPU", func(t *testing.T) {
		// AvailableCPUs 4 → pool 8: all 6 items run at once.
		peak, _ := concurrency(t, "", []int{0, 1, 2, 3, 4, 5}, 6)
		if peak != 6 {
			t.Errorf("peak %d, want 6", peak)
		}
	})
	t.Run("bounded", func(t *testing.T) {
		// AvailableCPUs 4 → pool 8: 20 items never exceed 8.
		h := newHarness(make([]int, 20), "", "cpu")
		for i := range h.f.sc.Items {
			h.f.sc.Items[i] = i
		}
		var cur, peak atomic.Int32
		release := make(chan struct{})
		var started atomic.Int32
		h.opts.Runner = executor.SimpleFunc(func(ctx context.Context, sc spi.ShardingContext) error {
			n := cur.Add(1)
			for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
			}
			if started.Add(1) == 8 {
				close(release)
			}
			<-release
			cur.Add(-1)
			return nil
		})
		if err := h.execute(t); err != nil {
			t.Fatal(err)
		}
		if p := peak.Load(); p != 8 {
			t.Errorf("peak %d, want 8", p)
		}
	})
}

func TestExecutionTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness([]int{0, 1}, "", "")
		h.f.cfg.Props[executor.PropExecutionTimeoutSeconds] = "3"
		var ctxErr atomic.Value
		h.opts.Runner = executor.SimpleFunc(func(ctx context.Context, sc spi.ShardingContext) error {
			if sc.ShardingItem == 0 {
				<-ctx.Done() // honours ctx
				ctxErr.Store(context.Cause(ctx))
				return ctx.Err()
			}
			time.Sleep(4 * time.Second) // ignores ctx, returns late
			return nil
		})
		start := time.Now()
		if err := h.execute(t); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d != 4*time.Second {
			t.Errorf("trigger took %v, want 4s (waits for the late item)", d)
		}
		if c, _ := ctxErr.Load().(error); !errors.Is(c, executor.ErrExecutionTimeout) {
			t.Errorf("item ctx cause = %v, want ErrExecutionTimeout", c)
		}
		close(h.reqs)
		var items []int
		for req := range h.reqs {
			items = append(items, req.ShardingItem)
			if !strings.Contains(req.Error.Message, "execution timeout of 3s") {
				t.Errorf("handler told %q", req.Error.Message)
			}
		}
		slices.Sort(items)
		if !slices.Equal(items, []int{0, 1}) {
			t.Errorf("handler told about items %v, want [0 1]", items)
		}
		if !slices.Contains(h.j.get(), "RegisterCompleted failed=[0 1]") {
			t.Errorf("journal: %v", h.j.get())
		}
	})
}

func TestShardingContextPerItem(t *testing.T) {
	h := newHarness([]int{0, 1}, "", "SINGLE_THREAD")
	h.f.sc.JobParameter = "p=1"
	var got []spi.ShardingContext
	h.opts.Runner = executor.SimpleFunc(func(ctx context.Context, sc spi.ShardingContext) error {
		got = append(got, sc)
		// A copy of the trigger's config: the runner may modify it.
		if cfg := executor.JobConfig(ctx); cfg == h.f.cfg || !reflect.DeepEqual(cfg, h.f.cfg) {
			t.Error("JobConfig(ctx) is not a copy of the trigger's config")
		} else if cfg.Props["k"] = "changed"; h.f.cfg.Props["k"] == "changed" {
			t.Error("JobConfig(ctx) shares its props with the trigger's config")
		}
		return nil
	})
	if err := h.execute(t); err != nil {
		t.Fatal(err)
	}
	b := "B"
	want := []spi.ShardingContext{
		{JobName: "job", TaskID: taskID([]int{0, 1}), ShardingTotalCount: 4, JobParameter: "p=1", ShardingItem: 0},
		{JobName: "job", TaskID: taskID([]int{0, 1}), ShardingTotalCount: 4, JobParameter: "p=1", ShardingItem: 1, ShardingParameter: &b},
	}
	if len(got) != 2 || got[0] != want[0] || got[1].ShardingParameter == nil || *got[1].ShardingParameter != "B" {
		t.Errorf("sharding contexts = %+v", got)
	}
}

func TestPanickingItemFails(t *testing.T) {
	h := newHarness([]int{0}, "", "")
	h.opts.Runner = executor.SimpleFunc(func(ctx context.Context, sc spi.ShardingContext) error { panic("oops") })
	if err := h.execute(t); err != nil {
		t.Fatal(err)
	}
	req := <-h.reqs
	if !strings.Contains(req.Error.Message, "item runner panicked: oops") {
		t.Errorf("handler told %q", req.Error.Message)
	}
}

func TestReloadOnlyWhenTypeChanges(t *testing.T) {
	h := newHarness([]int{0}, "", "")
	e, err := executor.New("job", h.opts)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if err := e.Execute(t.Context(), executor.NormalTrigger, nil); err != nil {
			t.Fatal(err)
		}
	}
	h.f.cfg.JobErrorHandlerType = "log" // same type, other spelling
	if err := e.Execute(t.Context(), executor.NormalTrigger, nil); err != nil {
		t.Fatal(err)
	}
	if n := h.lookups.Load(); n != 1 {
		t.Errorf("handler resolved %d times, want 1", n)
	}
	h.f.cfg.JobErrorHandlerType = "IGNORE"
	if err := e.Execute(t.Context(), executor.NormalTrigger, nil); err != nil {
		t.Fatal(err)
	}
	if n := h.lookups.Load(); n != 2 {
		t.Errorf("handler resolved %d times, want 2", n)
	}
}

// Misfired, the trigger loop's report of the fires no trigger took, sets
// the items' misfire flags for skipped fires of the schedule and tells
// OnMisfire how many; manual triggers dropped while the job ran set none.
func TestMisfired(t *testing.T) {
	h := newHarness([]int{0}, "", "")
	var told []int
	h.opts.OnMisfire = func(skipped int) { told = append(told, skipped) }
	e, err := executor.New("job", h.opts)
	if err != nil {
		t.Fatal(err)
	}
	e.Misfired(t.Context(), trigger.Misfire{Manual: 2})
	if n := h.f.setMisfire.Load(); n != 0 || len(told) != 0 {
		t.Fatalf("dropped manual triggers: %d SetMisfire calls, OnMisfire told %v; want none", n, told)
	}
	e.Misfired(t.Context(), trigger.Misfire{Scheduled: 3, Manual: 1})
	if n := h.f.setMisfire.Load(); n != 1 || !slices.Equal(told, []int{3}) {
		t.Fatalf("3 skipped fires: %d SetMisfire calls, OnMisfire told %v; want 1 and [3]", n, told)
	}
}

func TestNewValidates(t *testing.T) {
	if _, err := executor.New("job", executor.Options{}); !errors.Is(err, executor.ErrInvalidOptions) {
		t.Fatalf("New without facade = %v", err)
	}
}

// idEvents records the ids of item starts and completions.
type idEvents struct {
	executor.NopEvents
	mu           sync.Mutex
	starts, done map[int]string
	sources      []executor.Source
}

func (e *idEvents) ItemStarted(_ context.Context, ev executor.ItemEvent) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.starts[ev.Item] = ev.ID
	e.sources = append(e.sources, ev.Source)
}

func (e *idEvents) ItemCompleted(_ context.Context, ev executor.ItemEvent) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.done[ev.Item] = ev.ID
}

// TestItemEventIDsAndFailoverSource: an item's start and completion share
// one id, distinct per item; a run of failover items is recorded with
// source FAILOVER.
func TestItemEventIDsAndFailoverSource(t *testing.T) {
	for _, failover := range []bool{false, true} {
		h := newHarness([]int{0, 1, 2}, "", "CPU")
		h.f.sc.Failover = failover
		ev := &idEvents{starts: map[int]string{}, done: map[int]string{}}
		h.opts.Events = ev
		if err := h.execute(t); err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for item, id := range ev.starts {
			if len(id) != 36 || ev.done[item] != id || seen[id] {
				t.Errorf("item %d: start id %q, completion id %q (ids seen %v)", item, id, ev.done[item], seen)
			}
			seen[id] = true
		}
		want := executor.NormalTrigger
		if failover {
			want = executor.Failover
		}
		if len(ev.sources) != 3 || slices.ContainsFunc(ev.sources, func(s executor.Source) bool { return s != want }) {
			t.Errorf("failover=%v: sources %v, want %v", failover, ev.sources, want)
		}
	}
}

// TestCutOffExecutionTraced: when the items' completion cannot be
// registered (the registry session was lost while they ran), the status
// trace ends with TASK_ERROR saying so, not at TASK_RUNNING.
func TestCutOffExecutionTraced(t *testing.T) {
	h := newHarness([]int{0, 1}, "", "CPU")
	h.f.completeErr = errors.New("session lost")
	err := h.execute(t)
	if err == nil || !strings.Contains(err.Error(), "session lost") {
		t.Fatalf("Execute = %v, want the registration error", err)
	}
	got := h.j.get()
	want := `TASK_ERROR NORMAL_TRIGGER "Job 'job' execution was cut off: the completion of items [0, 1] could not be registered: session lost"`
	if got[len(got)-1] != want {
		t.Errorf("last event %q, want %q", got[len(got)-1], want)
	}
}

// scheduleFire is fakeMissed for a fire of the schedule or (schedule
// false) one asked for (Fire.Manual).
type scheduleFire struct {
	*fakeMissed
	schedule bool
}

func (f scheduleFire) Manual() bool { return !f.schedule }

// A fire of the schedule whose ShardingContexts returns failover items
// keeps the fire for the instance's other items (SetMisfireExcept with the
// failover items, before they run); a trigger asked for (TriggerSoon,
// TriggerNow), one no trigger loop dispatched, or misfire off does not.
func TestScheduleFireRunningFailoverItemsKeepsOwnItems(t *testing.T) {
	for _, tc := range []struct {
		name    string
		fire    executor.Fire
		misfire bool
		keeps   bool
	}{
		{"schedule fire", scheduleFire{newFakeMissed(), true}, true, true},
		{"asked for", scheduleFire{newFakeMissed(), false}, true, false},
		{"no trigger loop", nil, true, false},
		{"misfire off", scheduleFire{newFakeMissed(), true}, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness([]int{2}, "", "")
			h.f.sc.Failover = true
			h.f.cfg.Misfire = tc.misfire
			e, err := executor.New("job", h.opts)
			if err != nil {
				t.Fatal(err)
			}
			if err := e.Execute(context.Background(), executor.NormalTrigger, tc.fire); err != nil {
				t.Fatal(err)
			}
			got := h.j.get()
			i := slices.Index(got, "SetMisfireExcept [2]")
			if kept := i >= 0; kept != tc.keeps {
				t.Fatalf("kept the fire for the other items: %v, want %v; calls %v", kept, tc.keeps, got)
			}
			if tc.keeps && i > slices.Index(got, "MisfireIfRunning [2]") {
				t.Errorf("the other items were flagged after the failover items were checked: %v", got)
			}
		})
	}
}

// tokenEvents records the fencing token of each item event.
type tokenEvents struct {
	executor.NopEvents
	mu   sync.Mutex
	seen []string
}

func (e *tokenEvents) ItemStarted(_ context.Context, ev executor.ItemEvent) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.seen = append(e.seen, fmt.Sprintf("start %d token %d", ev.Item, ev.FencingToken))
}

func (e *tokenEvents) ItemCompleted(_ context.Context, ev executor.ItemEvent) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.seen = append(e.seen, fmt.Sprintf("complete %d token %d", ev.Item, ev.FencingToken))
}

// TestFencingTokenReachesItemsAndEvents: the tokens RegisterBegin puts
// into the sharding contexts reach each item's ShardingContext and its
// start and completion events; a misfire re-run gets its own begin's.
func TestFencingTokenReachesItemsAndEvents(t *testing.T) {
	h := newHarness([]int{0, 1}, "", "CPU")
	h.f.sc.FencingTokens = map[int]int64{}
	h.f.misfires.Store(1)
	ev := &tokenEvents{}
	h.opts.Events = ev
	var mu sync.Mutex
	var ran []string
	h.opts.Runner = executor.SimpleFunc(func(ctx context.Context, sc spi.ShardingContext) error {
		mu.Lock()
		defer mu.Unlock()
		ran = append(ran, fmt.Sprintf("item %d token %d", sc.ShardingItem, sc.FencingToken))
		return nil
	})
	if err := h.execute(t); err != nil {
		t.Fatal(err)
	}
	slices.Sort(ran)
	if want := []string{"item 0 token 1000", "item 0 token 2000", "item 1 token 1001", "item 1 token 2001"}; !slices.Equal(ran, want) {
		t.Errorf("items ran with %v, want %v", ran, want)
	}
	slices.Sort(ev.seen)
	want := []string{"complete 0 token 1000", "complete 0 token 2000", "complete 1 token 1001", "complete 1 token 2001",
		"start 0 token 1000", "start 0 token 2000", "start 1 token 1001", "start 1 token 2001"}
	if !slices.Equal(ev.seen, want) {
		t.Errorf("events %v, want %v", ev.seen, want)
	}
}

// TestJobConfigFollowsEachTrigger: the items of each trigger see that
// trigger's config (JobConfig), also when the triggers share one ctx
// (the kernel hands a lease's triggers the same ctx) and when a ctx is a
// value rather than a pointer.
func TestJobConfigFollowsEachTrigger(t *testing.T) {
	h := newHarness([]int{0}, "", "")
	var got []string
	h.opts.Runner = executor.SimpleFunc(func(ctx context.Context, sc spi.ShardingContext) error {
		got = append(got, executor.JobConfig(ctx).JobParameter)
		return nil
	})
	ex, err := executor.New("job", h.opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	for _, c := range []context.Context{ctx, ctx, ctx, context.Background(), context.Background()} {
		cfg := h.f.cfg.Clone()
		cfg.JobParameter = fmt.Sprint("p", len(got))
		h.f.cfg = cfg
		if err := ex.Execute(c, executor.NormalTrigger, nil); err != nil {
			t.Fatal(err)
		}
	}
	h.f.cfg.JobParameter = "changed in place" // a new config is a new pointer; the same one is reused
	if err := ex.Execute(ctx, executor.NormalTrigger, nil); err != nil {
		t.Fatal(err)
	}
	want := []string{"p0", "p1", "p2", "p3", "p4", "changed in place"}
	if !slices.Equal(got, want) {
		t.Fatalf("items saw %q, want %q", got, want)
	}
}
