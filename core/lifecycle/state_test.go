package lifecycle_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/ejob-io/ejob/core/lifecycle"
	"github.com/ejob-io/ejob/core/node"
	"github.com/ejob-io/ejob/core/reg"
)

// The states ejob's console and CLI show, one job per state. A job that
// has never fired has its resharding flag set and no owner: upstream's
// status calls it SHARDING_FLAG, and the console once showed a healthy
// one-off job as "Resharding"; its state is NEVER_RUN. Status stays
// upstream's throughout.
func TestJobState(t *testing.T) {
	a, b := "10.0.0.1@-@1", "10.0.0.2@-@2"
	on := map[string]string{"10.0.0.1": "ENABLED", "10.0.0.2": "ENABLED"}
	owned := map[int]string{0: a, 1: b, 2: a}
	tests := map[string]struct {
		instances []string
		servers   map[string]string
		owners    map[int]string
		extra     func(j node.Job) []string // nodes written with value ""
		status    lifecycle.Status
		state     lifecycle.State
		items     []lifecycle.ItemState
	}{
		"never run, flag set": {instances: []string{a}, servers: on,
			extra:  func(j node.Job) []string { return []string{j.ShardingNecessary()} },
			status: lifecycle.StatusShardingFlag, state: lifecycle.StateNeverRun,
			items: []lifecycle.ItemState{lifecycle.ItemNeverRun, lifecycle.ItemNeverRun, lifecycle.ItemNeverRun}},
		"never run, empty owners": {instances: []string{a}, servers: on, owners: map[int]string{0: "", 1: ""},
			status: lifecycle.StatusShardingFlag, state: lifecycle.StateNeverRun,
			items: []lifecycle.ItemState{lifecycle.ItemNeverRun, lifecycle.ItemNeverRun, lifecycle.ItemNeverRun}},
		"ready": {instances: []string{a, b}, servers: on, owners: owned,
			status: lifecycle.StatusOK, state: lifecycle.StateReady,
			items: []lifecycle.ItemState{lifecycle.ItemReady, lifecycle.ItemReady, lifecycle.ItemReady}},
		"running": {instances: []string{a, b}, servers: on, owners: owned,
			extra:  func(j node.Job) []string { return []string{j.Running(1)} },
			status: lifecycle.StatusOK, state: lifecycle.StateRunning,
			items: []lifecycle.ItemState{lifecycle.ItemReady, lifecycle.ItemRunning, lifecycle.ItemReady}},
		"resharding, flag set after a run": {instances: []string{a, b}, servers: on, owners: owned,
			extra:  func(j node.Job) []string { return []string{j.ShardingNecessary(), j.Disabled(2)} },
			status: lifecycle.StatusOK, state: lifecycle.StateResharding,
			items: []lifecycle.ItemState{lifecycle.ItemResharding, lifecycle.ItemResharding, lifecycle.ItemDisabled}},
		"resharding, owner gone": {instances: []string{a}, servers: on, owners: owned,
			status: lifecycle.StatusShardingFlag, state: lifecycle.StateResharding,
			items: []lifecycle.ItemState{lifecycle.ItemReady, lifecycle.ItemResharding, lifecycle.ItemReady}},
		"resharding, item without owner": {instances: []string{a}, servers: on, owners: map[int]string{0: a, 1: a},
			status: lifecycle.StatusOK, state: lifecycle.StateResharding,
			items: []lifecycle.ItemState{lifecycle.ItemReady, lifecycle.ItemReady, lifecycle.ItemResharding}},
		"disabled": {instances: []string{a}, servers: map[string]string{"10.0.0.1": "DISABLED"}, owners: owned,
			extra:  func(j node.Job) []string { return []string{j.Running(0)} },
			status: lifecycle.StatusDisabled, state: lifecycle.StateDisabled,
			items: []lifecycle.ItemState{lifecycle.ItemRunning, lifecycle.ItemResharding, lifecycle.ItemReady}},
		"crashed": {servers: on, owners: owned, status: lifecycle.StatusCrashed, state: lifecycle.StateCrashed,
			items: []lifecycle.ItemState{lifecycle.ItemResharding, lifecycle.ItemResharding, lifecycle.ItemResharding}},
	}
	registries(t, func(t *testing.T, c reg.Client) {
		for name, tc := range tests {
			job(t, c, strings.ReplaceAll(name, " ", "_"), tc.instances, tc.servers, tc.owners)
			if tc.extra != nil {
				for _, p := range tc.extra(node.New(strings.ReplaceAll(name, " ", "_"))) {
					put(t, c, p, "")
				}
			}
		}
		briefs, err := lifecycle.Jobs(ctxOf(t), c)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]lifecycle.JobBrief{}
		for _, b := range briefs {
			got[b.JobName] = b
		}
		for name, tc := range tests {
			t.Run(name, func(t *testing.T) {
				jobName := strings.ReplaceAll(name, " ", "_")
				b := got[jobName]
				if b.Status != tc.status || b.State != tc.state {
					t.Errorf("Jobs: status %s, state %s; want status %s, state %s", b.Status, b.State, tc.status, tc.state)
				}
				d, err := lifecycle.Detail(ctxOf(t), c, jobName)
				if err != nil {
					t.Fatal(err)
				}
				if d.State != tc.state || d.Status != tc.status {
					t.Errorf("Detail: status %s, state %s; want status %s, state %s", d.Status, d.State, tc.status, tc.state)
				}
				var items []lifecycle.ItemState
				for _, it := range d.Items {
					items = append(items, it.State)
				}
				eq(t, "item states", items, tc.items)
			})
		}
	})
}

// A trigger that no instance would run is refused, with the reason and
// nothing written: upstream writes the trigger nodes anyway, and the
// console and CLI once reported success for a disabled job that then did
// not run.
func TestTriggerRefused(t *testing.T) {
	registries(t, func(t *testing.T, c reg.Client) {
		a, b := "10.0.0.1@-@1", "10.0.0.2@-@2"
		job(t, c, "off", []string{a, b}, map[string]string{"10.0.0.1": "DISABLED", "10.0.0.2": "DISABLED"}, nil)
		job(t, c, "gone", nil, map[string]string{"10.0.0.1": "ENABLED"}, nil)
		job(t, c, "half", []string{a, b}, map[string]string{"10.0.0.1": "DISABLED", "10.0.0.2": "ENABLED"}, nil)
		put(t, c, node.New("off").TriggerInstance(a), "") // a stale trigger stays
		before := snapshot(t, c)
		for name, want := range map[string]string{
			"off":  `job "off" is disabled on every server with a live instance (10.0.0.1, 10.0.0.2); enable it first`,
			"gone": `job "gone" has no live instance`,
		} {
			ids, err := lifecycle.TriggerAll(ctxOf(t), c, name)
			if !errors.Is(err, lifecycle.ErrNotRunnable) || !errors.Is(err, lifecycle.ErrConflict) || !strings.Contains(err.Error(), want) {
				t.Errorf("TriggerAll(%s) = %v, %v; want ErrNotRunnable (a conflict) saying %q", name, ids, err, want)
			}
			if strings.Contains(err.Error(), lifecycle.ErrConflict.Error()) {
				t.Errorf("TriggerAll(%s): %v reads as a concurrent change", name, err)
			}
		}
		assertDelta(t, before, snapshot(t, c), nil)
		ids, err := lifecycle.TriggerAll(ctxOf(t), c, "half")
		if err != nil {
			t.Fatalf("TriggerAll of a job enabled on one server: %v", err)
		}
		eq(t, "asked", ids, []string{a, b})
	})
}
