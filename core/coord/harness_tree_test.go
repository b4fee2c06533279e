package coord_test

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/ejob-io/ejob/core/config"
	"github.com/ejob-io/ejob/core/reg"
	"github.com/ejob-io/ejob/internal/testkit"
)

// The tree helpers: the cluster's reads and writes of the job's tree, the
// waits on its nodes and event loops, and the instances' triggers
// (autorun, runAll).

func jp(elem ...string) string { return reg.Join(append([]string{testJob}, elem...)...) }

func (cl *cluster) get(path string) (string, bool) {
	cl.t.Helper()
	data, _, err := cl.admin.Get(context.Background(), path)
	if errors.Is(err, reg.ErrNoNode) {
		return "", false
	}
	if err != nil {
		cl.t.Fatalf("get %s: %v", path, err)
	}
	return string(data), true
}

func (cl *cluster) stat(path string) (reg.Stat, bool) {
	cl.t.Helper()
	st, ok, err := cl.admin.Exists(context.Background(), path)
	if err != nil {
		cl.t.Fatalf("exists %s: %v", path, err)
	}
	return st, ok
}

func (cl *cluster) persist(path, value string) {
	cl.t.Helper()
	if _, err := reg.Persist(context.Background(), cl.admin, path, []byte(value)); err != nil {
		cl.t.Fatalf("persist %s: %v", path, err)
	}
}

func (cl *cluster) remove(path string) {
	cl.t.Helper()
	if err := reg.DeleteRecursive(context.Background(), cl.admin, path); err != nil {
		cl.t.Fatalf("delete %s: %v", path, err)
	}
}

// assignments returns item -> sharding/{i}/instance for items 0..total-1.
func (cl *cluster) assignments(total int) map[int]string {
	out := map[int]string{}
	for i := 0; i < total; i++ {
		if v, ok := cl.get(jp("sharding", strconv.Itoa(i), "instance")); ok {
			out[i] = v
		}
	}
	return out
}

// ctxT is a context for one step of t: it ends after 20 s or with t.
func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func expectAssign(t *testing.T, cl *cluster, total int, want map[string][]int) {
	t.Helper()
	got := cl.assignments(total)
	byOwner := map[string][]int{}
	for i := 0; i < total; i++ {
		if v, ok := got[i]; ok {
			byOwner[v] = append(byOwner[v], i)
		}
	}
	for id, items := range want {
		if !slices.Equal(byOwner[id], items) {
			t.Errorf("assignment of %s = %v, want %v (all: %v)", id, byOwner[id], items, got)
		}
	}
	if len(got) != total {
		t.Errorf("assigned %d items, want %d: %v", len(got), total, got)
	}
}

func sorted(items []int) []int { s := slices.Clone(items); slices.Sort(s); return s }

func mustMarshal(t *testing.T, cfg *config.JobConfiguration) string {
	t.Helper()
	data, err := config.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// autorun runs the pipeline once per OnTrigger until the test ends.
func (in *instance) autorun(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-ctx.Done():
				return
			case <-in.triggers:
				if _, err := in.run(ctx); err != nil && ctx.Err() == nil {
					t.Logf("%s triggered run: %v", in.id, err)
				}
			}
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
}

// ranItem reports whether some completed run of in executed item.
func (in *instance) ranItem(item int) bool {
	for _, r := range in.runs() {
		if slices.Contains(r, item) {
			return true
		}
	}
	return false
}

// sync waits until every running instance's event loop has handled every
// event up to now: it writes a marker node and waits until each saw it.
func (cl *cluster) sync() {
	cl.t.Helper()
	cl.mu.Lock()
	cl.barrier++
	path := jp("zz-test-barrier-" + strconv.Itoa(cl.barrier))
	members := slices.Clone(cl.members)
	cl.mu.Unlock()
	if _, err := cl.admin.Create(context.Background(), path, nil, reg.Ephemeral); err != nil {
		cl.t.Fatalf("barrier: %v", err)
	}
	for _, in := range members {
		select {
		case <-in.done:
			in.done <- nil
			continue
		default:
		}
		testkit.Eventually(cl.t, waitFor, in.id+" event loop barrier", func() bool {
			_, ok := in.seen.Load(path)
			select {
			case <-in.done:
				in.done <- nil
				return true
			default:
			}
			return ok
		})
	}
}

// waitNecessary waits for the resharding flag and for the event loops to
// be idle (so no stale event re-creates the flag after the next run).
func (cl *cluster) waitNecessary() {
	cl.t.Helper()
	defer cl.sync()
	testkit.Eventually(cl.t, waitFor, "leader/sharding/necessary", func() bool {
		_, ok := cl.get(jp("leader", "sharding", "necessary"))
		return ok
	})
}

// runAll runs one trigger on every instance, concurrently (as cron fires).
func runAll(t *testing.T, ins ...*instance) map[string][]int {
	t.Helper()
	if len(ins) > 0 {
		ins[0].cl.sync()
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	out := map[string][]int{}
	for _, in := range ins {
		wg.Add(1)
		go func() {
			defer wg.Done()
			items, err := in.run(ctxT(t))
			if err != nil {
				t.Errorf("%s run: %v", in.id, err)
				in.cl.dump()
			}
			mu.Lock()
			out[in.id] = items
			mu.Unlock()
		}()
	}
	wg.Wait()
	return out
}

// dump logs the job's tree (debugging aid for failures).
func (cl *cluster) dump() {
	var walk func(p string)
	walk = func(p string) {
		data, st, err := cl.admin.Get(context.Background(), p)
		if err != nil {
			return
		}
		cl.t.Logf("%s [eph=%x] %q", p, st.EphemeralOwner, data)
		names, _ := cl.admin.Children(context.Background(), p)
		slices.Sort(names)
		for _, n := range names {
			walk(reg.Join(p, n))
		}
	}
	walk(jp())
}
