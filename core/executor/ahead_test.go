package executor_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/ejob-io/ejob/core/executor"
)

// armingFacade is a fakeFacade that can pre-arm (Facade.PreArm).
type armingFacade struct {
	*fakeFacade
	armed     bool // PreArm's ok
	confirmed bool // ConfirmArmed's answer
}

func (f *armingFacade) PreArm(ctx context.Context) (executor.ShardingContexts, bool, error) {
	f.j.add("PreArm")
	if !f.armed {
		return executor.ShardingContexts{}, false, nil
	}
	return f.sc, true, nil
}

func (f *armingFacade) ConfirmArmed(ctx context.Context, sc executor.ShardingContexts) bool {
	f.j.add("ConfirmArmed %v", sc.Items)
	return f.confirmed
}

// aheadMissed is a fire dispatched ahead: AwaitScheduled answers went
// (cancelling the trigger's ctx first when cancel is set, as a removal
// or a session loss does).
type aheadMissed struct {
	*fakeMissed
	j      *journal
	ahead  bool
	went   bool
	cancel context.CancelFunc
}

func (m aheadMissed) Ahead() bool { return m.ahead }

func (m aheadMissed) AwaitScheduled(ctx context.Context) bool {
	m.j.add("AwaitScheduled")
	if m.cancel != nil {
		m.cancel()
	}
	return m.went
}

// A fire dispatched ahead does the registry part ahead (PreArm), and only
// once AwaitScheduled says the scheduled time came (and ConfirmArmed that
// the pre-arm holds) does anything else see the trigger: the staging
// event, the listeners, the items. An abandoned fire has its running
// nodes deleted and ends there; one whose pre-arm did not apply or no
// longer holds takes ShardingContexts at the scheduled time. One that
// finds the registry connection suspended then has ShardingContexts refuse
// it before the running nodes are deleted, since the deletion waits for
// the registry (asked after it, the fire ran late once the connection was
// back, and the fires skipped meanwhile were owed no catch-up run).
func TestAheadFire(t *testing.T) {
	tail := []string{staging, "MisfireIfRunning [0 1]", "before L", "RegisterBegin [0 1]", running,
		"item 0", "item 1", "RegisterCompleted failed=[]", done, "ExecuteMisfired", "after L"}
	for _, tc := range []struct {
		name                          string
		ahead, armed, went, confirmed bool
		cancel                        bool
		paused                        bool // the registry connection, at the scheduled time
		want                          []string
	}{
		{name: "armed", ahead: true, armed: true, went: true, confirmed: true,
			want: append([]string{"Config", "PreArm", "AwaitScheduled", "ConfirmArmed [0 1]"}, tail...)},
		{name: "abandoned", ahead: true, armed: true,
			want: []string{"Config", "PreArm", "AwaitScheduled", "Disarm (ctx alive: true)"}},
		{name: "abandoned by ctx", ahead: true, armed: true, cancel: true,
			want: []string{"Config", "PreArm", "AwaitScheduled", "Disarm (ctx alive: true)"}},
		{name: "registry suspended at the time", ahead: true, armed: true, went: true, confirmed: true, paused: true,
			want: []string{"Config", "PreArm", "AwaitScheduled", "ShardingContexts", "Disarm (ctx alive: true)"}},
		{name: "no longer holds", ahead: true, armed: true, went: true,
			want: append([]string{"Config", "PreArm", "AwaitScheduled", "ConfirmArmed [0 1]", "Disarm (ctx alive: true)", "ShardingContexts"}, tail...)},
		{name: "not armed", ahead: true, went: true,
			want: append([]string{"Config", "PreArm", "AwaitScheduled", "ShardingContexts"}, tail...)},
		{name: "not armed, abandoned", ahead: true,
			want: []string{"Config", "PreArm", "AwaitScheduled"}},
		{name: "not ahead", armed: true, went: true, confirmed: true,
			want: append([]string{"Config", "ShardingContexts"}, tail...)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness([]int{0, 1}, "", "SINGLE_THREAD")
			h.opts.Listeners = []executor.Listener{listener{j: h.j, name: "L"}}
			h.opts.Facade = &armingFacade{fakeFacade: h.f, armed: tc.armed, confirmed: tc.confirmed}
			h.f.paused.Store(tc.paused)
			var fired []string
			h.opts.OnFired = func(time.Duration) { fired = append(fired, "fired") }
			e, err := executor.New("job", h.opts)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			m := aheadMissed{fakeMissed: newFakeMissed(), j: h.j, ahead: tc.ahead, went: tc.went}
			if tc.cancel {
				m.cancel = cancel
			}
			if err := e.Execute(ctx, executor.NormalTrigger, m); (err != nil) != tc.paused || tc.paused && !errors.Is(err, errFakePaused) {
				t.Fatalf("Execute = %v; want the paused refusal: %v", err, tc.paused)
			}
			check(t, h.j.get(), tc.want)
			// A fire starts (OnFired) when it goes on at its time.
			if starts := slices.Contains(tc.want, "MisfireIfRunning [0 1]"); starts != (len(fired) == 1) || len(fired) > 1 {
				t.Errorf("OnFired called %d times; want %d", len(fired), map[bool]int{true: 1}[starts])
			}
		})
	}
}

// A Facade that cannot pre-arm this fire still waits for the scheduled
// time of a fire dispatched ahead before ShardingContexts.
func TestAheadFireNotArmed(t *testing.T) {
	for _, went := range []bool{true, false} {
		t.Run(fmt.Sprint("went=", went), func(t *testing.T) {
			h := newHarness([]int{0}, "", "")
			e, err := executor.New("job", h.opts)
			if err != nil {
				t.Fatal(err)
			}
			m := aheadMissed{fakeMissed: newFakeMissed(), j: h.j, ahead: true, went: went}
			if err := e.Execute(t.Context(), executor.NormalTrigger, m); err != nil {
				t.Fatal(err)
			}
			want := []string{"Config", "PreArm", "AwaitScheduled"}
			if went {
				want = append(want, "ShardingContexts", staging, "MisfireIfRunning [0]", "RegisterBegin [0]", running,
					"item 0", "RegisterCompleted failed=[]", done, "ExecuteMisfired")
			}
			check(t, h.j.get(), want)
		})
	}
}
