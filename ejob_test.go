package ejob_test

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ejob-io/ejob"
	"github.com/ejob-io/ejob/internal/testkit"
)

// TestMain fails the binary if a scheduler leaves goroutines behind.
func TestMain(m *testing.M) { testkit.Main(m) }

type seen struct {
	mu    sync.Mutex
	items []int
}

func (s *seen) add(i int) { s.mu.Lock(); s.items = append(s.items, i); s.mu.Unlock() }
func (s *seen) get() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := append([]int(nil), s.items...)
	sort.Ints(out)
	return out
}

// ctxOf returns a ctx that ends with the test.
func ctxOf(t *testing.T) context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	return ctx
}

func newScheduler(t *testing.T) *ejob.Scheduler {
	t.Helper()
	reg, err := ejob.EmbeddedRegistry("lib-test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { reg.Close() })
	s, err := ejob.NewScheduler(reg, ejob.WithDrainTimeout(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestSimpleScheduledJob(t *testing.T) {
	s := newScheduler(t)
	cfg := ejob.NewJobConfig("simple", 3)
	cfg.Cron = "* * * * * ?"
	cfg.ShardingItemParameters = "0=a,1=b,2=c"
	var got seen
	params := map[int]string{}
	var mu sync.Mutex
	if err := s.Simple(ctxOf(t), cfg, func(ctx context.Context, sc ejob.ShardingContext) error {
		mu.Lock()
		params[sc.ShardingItem] = *sc.ShardingParameter
		mu.Unlock()
		got.add(sc.ShardingItem)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 20*time.Second, "two triggers", func() bool { return len(got.get()) >= 6 })
	if err := s.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if fmt.Sprint(params) != "map[0:a 1:b 2:c]" {
		t.Fatalf("parameters = %v", params)
	}
}

// A job scheduled with a robfig/cron descriptor runs through the public
// API like a Quartz one; a descriptor robfig would round up is refused.
func TestEveryDescriptorJob(t *testing.T) {
	s := newScheduler(t)
	cfg := ejob.NewJobConfig("every", 2)
	cfg.Cron = "@every 1s"
	var got seen
	if err := s.Simple(ctxOf(t), cfg, func(ctx context.Context, sc ejob.ShardingContext) error {
		got.add(sc.ShardingItem)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	bad := ejob.NewJobConfig("everyZero", 1)
	bad.Cron = "@every 0s"
	err := s.Simple(ctxOf(t), bad, func(context.Context, ejob.ShardingContext) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "read as a descriptor") {
		t.Fatalf("@every 0s: error %v, want one saying it was read as a descriptor", err)
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 20*time.Second, "two triggers", func() bool { return len(got.get()) >= 4 })
	if err := s.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// queue is a DATAFLOW job that drains a fixed amount of data per item.
type queue struct {
	mu        sync.Mutex
	left      map[int]int
	processed map[int]int
}

func (q *queue) Fetch(_ context.Context, sc ejob.ShardingContext) ([]int, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	n := min(q.left[sc.ShardingItem], 2)
	q.left[sc.ShardingItem] -= n
	return make([]int, n), nil
}

func (q *queue) Process(_ context.Context, sc ejob.ShardingContext, data []int) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.processed[sc.ShardingItem] += len(data)
	return nil
}

func (q *queue) total() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	n := 0
	for _, v := range q.processed {
		n += v
	}
	return n
}

func TestDataflowStreamingDrainsInOneExecution(t *testing.T) {
	s := newScheduler(t)
	cfg := ejob.NewJobConfig("dataflow", 2)
	cfg.Props = map[string]string{"streaming.process": "TRUE"}
	q := &queue{left: map[int]int{0: 7, 1: 5}, processed: map[int]int{}}
	if err := ejob.Dataflow(ctxOf(t), s, cfg, q); err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown(context.Background())
	if err := s.Execute(context.Background(), "dataflow"); err != nil {
		t.Fatal(err)
	}
	// One execution streams until fetch returns nothing: 7 + 5 records.
	testkit.Eventually(t, 20*time.Second, "all records processed", func() bool { return q.total() == 12 })
}

func TestOneOffJobRunsOnceWhenExecuted(t *testing.T) {
	s := newScheduler(t)
	var got seen
	if err := s.Simple(ctxOf(t), ejob.NewJobConfig("once", 2), func(ctx context.Context, sc ejob.ShardingContext) error {
		got.add(sc.ShardingItem)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := s.Execute(context.Background(), "once"); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 20*time.Second, "the one-off run", func() bool { return len(got.get()) == 2 })
	if err := s.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got.get()) != "[0 1]" {
		t.Fatalf("items = %v, want each once", got.get())
	}
	if err := s.Execute(context.Background(), "nope"); err == nil {
		t.Fatal("executing an unknown job succeeded")
	}
}

func TestInvalidConfigIsRejectedNamingTheField(t *testing.T) {
	s := newScheduler(t)
	cfg := ejob.NewJobConfig("bad", 2)
	cfg.Cron = "0 0 25 * * ?"
	err := s.Simple(ctxOf(t), cfg, func(context.Context, ejob.ShardingContext) error { return nil })
	if err == nil {
		t.Fatal("accepted an invalid cron")
	}
	t.Log(err)
	cfg = ejob.NewJobConfig("bad2", 2)
	cfg.JobShardingStrategyType = "NOPE"
	if err := s.Simple(ctxOf(t), cfg, func(context.Context, ejob.ShardingContext) error { return nil }); err == nil {
		t.Fatal("accepted an unknown strategy")
	}
}

// TestFencingTokenPerItemRun: each run of an item hands the job a fencing
// token above the last run's of that item; a job without
// monitorExecution gets 0 (no fence).
func TestFencingTokenPerItemRun(t *testing.T) {
	s := newScheduler(t)
	var mu sync.Mutex
	tokens := map[string]map[int][]int64{}
	record := func(job string) func(context.Context, ejob.ShardingContext) error {
		return func(_ context.Context, sc ejob.ShardingContext) error {
			mu.Lock()
			defer mu.Unlock()
			if tokens[job] == nil {
				tokens[job] = map[int][]int64{}
			}
			tokens[job][sc.ShardingItem] = append(tokens[job][sc.ShardingItem], sc.FencingToken)
			return nil
		}
	}
	runs := func(job string, item int) []int64 {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(tokens[job][item])
	}
	fenced := ejob.NewJobConfig("fenced", 2)
	fenced.Cron = "* * * * * ?"
	unfenced := ejob.NewJobConfig("unfenced", 1)
	unfenced.Cron = "* * * * * ?"
	unfenced.MonitorExecution = false
	for _, cfg := range []*ejob.JobConfig{fenced, unfenced} {
		if err := s.Simple(ctxOf(t), cfg, record(cfg.JobName)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 20*time.Second, "three runs of each item", func() bool {
		return len(runs("fenced", 0)) >= 3 && len(runs("fenced", 1)) >= 3 && len(runs("unfenced", 0)) >= 3
	})
	if err := s.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	for item := range 2 {
		toks := runs("fenced", item)
		for k, tok := range toks {
			if tok <= 0 || (k > 0 && tok <= toks[k-1]) {
				t.Fatalf("item %d: tokens %v, want each above the last", item, toks)
			}
		}
	}
	for _, tok := range runs("unfenced", 0) {
		if tok != 0 {
			t.Fatalf("a job without monitorExecution got fencing token %d, want 0", tok)
		}
	}
}
