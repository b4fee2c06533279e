package kwoktest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	kubernetes "github.com/ejob-io/ejob/plugins/launcher/kubernetes"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// counts tallies items by state; reasons collects the Ready items' reasons.
func counts(items []kubernetes.ItemStatus) (by map[kubernetes.State]int, reasons []string) {
	by = map[kubernetes.State]int{}
	for _, it := range items {
		by[it.State]++
		if it.State == kubernetes.Ready {
			reasons = append(reasons, it.Reason)
		}
	}
	return by, reasons
}

// TestReadyWhileNoRoomAtScale: a DAEMON job of 40 items of 0.5 CPU on 3
// nodes of 2 CPUs runs 12 items; the other 28 are ready with the
// scheduler's reason. A fourth node makes room for 4 more.
func TestReadyWhileNoRoomAtScale(t *testing.T) {
	l := newLauncher(t)
	ctx := context.Background()
	f := kwokFire(t, 40, 0.5)
	if _, err := l.LaunchDaemon(ctx, f); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := l.StopJob(context.Background(), f.JobName); err != nil {
			t.Errorf("stop: %v", err)
		}
	})
	want := func(running int) func() (bool, string) {
		return func() (bool, string) {
			st, err := l.DaemonStatus(ctx, f.JobName)
			if err != nil {
				return false, err.Error()
			}
			by, reasons := counts(st.Items)
			for _, r := range reasons {
				if !strings.Contains(r, "Insufficient cpu") {
					return false, fmt.Sprintf("%v; a ready item's reason is %q", by, r)
				}
			}
			return by[kubernetes.Running] == running && by[kubernetes.Ready] == 40-running, fmt.Sprint(by)
		}
	}
	await(t, 60*time.Second, "12 items running and 28 ready for lack of cpu", want(12))

	if err := cluster.Run(nil, "kwok-node", cluster.Dir, "kwok-extra", "--cpu", "2", "--memory", "8Gi"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cluster.client.CoreV1().Nodes().Delete(context.Background(), "kwok-extra", metav1.DeleteOptions{})
	})
	await(t, 60*time.Second, "16 items running and 24 ready once a node joins", want(16))
}

// TestFireOf100Items: a fire of 100 items succeeds item by item (read from
// the Job's completedIndexes), the launcher lists all 100, and stopping it
// leaves no Job and no pod.
func TestFireOf100Items(t *testing.T) {
	l := newLauncher(t)
	ctx := context.Background()
	f := kwokFire(t, 100, 0.01)
	if _, err := l.Launch(ctx, f); err != nil {
		t.Fatal(err)
	}
	await(t, 120*time.Second, "100 items succeeded", func() (bool, string) {
		st, err := l.Status(ctx, f.JobName, f.FireID)
		if err != nil {
			return false, err.Error()
		}
		by, _ := counts(st.Items)
		return len(st.Items) == 100 && by[kubernetes.Succeeded] == 100, fmt.Sprint(by)
	})
	items, err := l.ListItems(ctx, f.JobName)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, it := range items {
		if it.FireID == f.FireID && it.State == kubernetes.Succeeded {
			seen[it.Item] = true
		}
	}
	if len(seen) != 100 {
		t.Errorf("ListItems reports %d succeeded items of the fire, want 100", len(seen))
	}
	if err := l.Stop(ctx, f.JobName, f.FireID); err != nil {
		t.Fatal(err)
	}
	if jobs, _, pods := objects(t, f.JobName); jobs != 0 || pods != 0 {
		t.Errorf("after stop: %d Jobs and %d pods of the fire, want none", jobs, pods)
	}
}

// TestStopJobLeavesNothing: stopping a job with a fire whose 30 items wait
// for room (3 CPUs each, more than any node has) and a DAEMON StatefulSet
// of 10 running items leaves no Job, StatefulSet or pod of it.
func TestStopJobLeavesNothing(t *testing.T) {
	l := newLauncher(t)
	ctx := context.Background()
	waiting := kwokFire(t, 30, 3)
	if _, err := l.Launch(ctx, waiting); err != nil {
		t.Fatal(err)
	}
	daemon := kwokFire(t, 10, 0.1)
	if _, err := l.LaunchDaemon(ctx, daemon); err != nil {
		t.Fatal(err)
	}
	await(t, 60*time.Second, "30 items ready and 10 running", func() (bool, string) {
		items, err := l.ListItems(ctx, waiting.JobName)
		if err != nil {
			return false, err.Error()
		}
		by, _ := counts(items)
		return by[kubernetes.Ready] == 30 && by[kubernetes.Running] == 10, fmt.Sprint(by)
	})
	if jobs, sets, pods := objects(t, waiting.JobName); jobs != 1 || sets != 1 || pods != 40 {
		t.Fatalf("before stop: %d Jobs, %d StatefulSets, %d pods; want 1, 1, 40", jobs, sets, pods)
	}
	if err := l.StopJob(ctx, waiting.JobName); err != nil {
		t.Fatal(err)
	}
	if jobs, sets, pods := objects(t, waiting.JobName); jobs != 0 || sets != 0 || pods != 0 {
		t.Errorf("after stop: %d Jobs, %d StatefulSets, %d pods; want none", jobs, sets, pods)
	}
	if _, err := l.Status(ctx, waiting.JobName, waiting.FireID); !errors.Is(err, kubernetes.ErrNotFound) {
		t.Errorf("status of the stopped fire: %v, want ErrNotFound", err)
	}
}
