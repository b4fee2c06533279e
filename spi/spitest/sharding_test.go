package spitest_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ejob-io/ejob/spi"
	"github.com/ejob-io/ejob/spi/spitest"
)

// refSharding is a correct average-allocation strategy; the broken
// variants below change one behaviour each.
type refSharding struct {
	ignoreCtx        bool
	skipValidation   bool
	skipDuplicates   bool
	sortInPlace      bool
	mutate           func(req spi.ShardingRequest, resp *spi.ShardingResponse)
	failOnNoInstance bool
}

var _ spi.ShardingStrategy = (*refSharding)(nil)

func (r *refSharding) Sharding(ctx context.Context, req spi.ShardingRequest) (spi.ShardingResponse, error) {
	if !r.ignoreCtx {
		if err := ctx.Err(); err != nil {
			return spi.ShardingResponse{}, err
		}
	}
	if !r.skipValidation && req.ShardingTotalCount <= 0 {
		return spi.ShardingResponse{}, fmt.Errorf("total %d: %w", req.ShardingTotalCount, spi.ErrInvalidConfig)
	}
	if !r.skipDuplicates {
		seen := map[string]bool{}
		for _, id := range req.Instances {
			if seen[id] {
				return spi.ShardingResponse{}, fmt.Errorf("duplicate %q: %w", id, spi.ErrInvalidConfig)
			}
			seen[id] = true
		}
	}
	if len(req.Instances) == 0 {
		if r.failOnNoInstance {
			return spi.ShardingResponse{}, fmt.Errorf("no instances")
		}
		return spi.ShardingResponse{}, nil
	}
	if r.sortInPlace {
		slices.Sort(req.Instances)
	}
	n := len(req.Instances)
	resp := spi.ShardingResponse{Assignments: make([]spi.Assignment, n)}
	for i, id := range req.Instances {
		resp.Assignments[i] = spi.Assignment{InstanceID: id, Items: []int{}}
	}
	for item := range max(req.ShardingTotalCount, 0) {
		k := item % n
		resp.Assignments[k].Items = append(resp.Assignments[k].Items, item)
	}
	if r.mutate != nil {
		r.mutate(req, &resp)
	}
	return resp, nil
}

// funcSharding adapts a function to spi.ShardingStrategy.
type funcSharding func(context.Context, spi.ShardingRequest) (spi.ShardingResponse, error)

func (f funcSharding) Sharding(ctx context.Context, req spi.ShardingRequest) (spi.ShardingResponse, error) {
	return f(ctx, req)
}

func TestShardingSuitePassesReference(t *testing.T) {
	t.Parallel()
	spitest.TestShardingStrategy(t, &refSharding{})
}

func TestShardingChecksCatchBrokenImplementations(t *testing.T) {
	t.Parallel()
	var counter atomic.Int64
	var inflight atomic.Int64
	tests := map[string]struct {
		impl      spi.ShardingStrategy
		wantFails string
	}{
		"drops_an_item": {
			impl: &refSharding{mutate: func(req spi.ShardingRequest, resp *spi.ShardingResponse) {
				for i := range resp.Assignments {
					resp.Assignments[i].Items = slices.DeleteFunc(resp.Assignments[i].Items, func(item int) bool { return item == req.ShardingTotalCount-1 })
				}
			}},
			wantFails: "items_assigned_exactly_once",
		},
		"assigns_an_item_twice": {
			impl: &refSharding{mutate: func(req spi.ShardingRequest, resp *spi.ShardingResponse) {
				last := &resp.Assignments[len(resp.Assignments)-1]
				last.Items = append(last.Items, 0)
			}},
			wantFails: "items_assigned_exactly_once",
		},
		"item_out_of_range": {
			impl: &refSharding{mutate: func(req spi.ShardingRequest, resp *spi.ShardingResponse) {
				resp.Assignments[0].Items = append(resp.Assignments[0].Items, req.ShardingTotalCount)
			}},
			wantFails: "items_assigned_exactly_once",
		},
		"names_an_unrequested_instance": {
			impl: &refSharding{mutate: func(req spi.ShardingRequest, resp *spi.ShardingResponse) {
				resp.Assignments = append(resp.Assignments, spi.Assignment{InstanceID: "intruder@-@1"})
			}},
			wantFails: "only_requested_instances",
		},
		"omits_instances_without_items": {
			impl: &refSharding{mutate: func(req spi.ShardingRequest, resp *spi.ShardingResponse) {
				resp.Assignments = slices.DeleteFunc(resp.Assignments, func(a spi.Assignment) bool { return len(a.Items) == 0 })
			}},
			wantFails: "every_instance_present",
		},
		"repeats_an_instance": {
			impl: &refSharding{mutate: func(req spi.ShardingRequest, resp *spi.ShardingResponse) {
				resp.Assignments = append(resp.Assignments, spi.Assignment{InstanceID: req.Instances[0]})
			}},
			wantFails: "every_instance_present",
		},
		"fails_without_instances": {
			impl:      &refSharding{failOnNoInstance: true},
			wantFails: "no_instances",
		},
		"answers_for_empty_instances": {
			impl: funcSharding(func(ctx context.Context, req spi.ShardingRequest) (spi.ShardingResponse, error) {
				return spi.ShardingResponse{Assignments: []spi.Assignment{{InstanceID: "ghost@-@1"}}}, nil
			}),
			wantFails: "no_instances",
		},
		"accepts_nonpositive_total": {
			impl:      &refSharding{skipValidation: true},
			wantFails: "nonpositive_total_is_invalid_config",
		},
		"accepts_duplicate_instances": {
			impl:      &refSharding{skipDuplicates: true},
			wantFails: "duplicate_instances_is_invalid_config",
		},
		"nondeterministic": {
			impl: &refSharding{mutate: func(req spi.ShardingRequest, resp *spi.ShardingResponse) {
				if counter.Add(1)%2 == 0 && len(resp.Assignments) > 1 {
					a := resp.Assignments
					a[0].Items, a[1].Items = a[1].Items, a[0].Items
				}
			}},
			wantFails: "deterministic",
		},
		"sorts_request_in_place": {
			impl:      &refSharding{sortInPlace: true},
			wantFails: "request_not_modified",
		},
		"ignores_cancellation": {
			impl:      &refSharding{ignoreCtx: true},
			wantFails: "cancelled_context",
		},
		"wrong_under_concurrency": {
			impl: &refSharding{mutate: func(req spi.ShardingRequest, resp *spi.ShardingResponse) {
				n := inflight.Add(1)
				defer inflight.Add(-1)
				time.Sleep(time.Millisecond) // widen the window in which calls overlap
				if n > 1 || inflight.Load() > 1 {
					resp.Assignments = nil
				}
			}},
			wantFails: "concurrent_calls",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			expectCheckFails(t, tc.impl, spitest.ShardingStrategyChecks(), tc.wantFails)
		})
	}
}

// expectCheckFails runs the named check against impl and requires an error
// that names a case.
func expectCheckFails[T any](t *testing.T, impl T, checks []spitest.Check[T], name string) {
	t.Helper()
	i := slices.IndexFunc(checks, func(c spitest.Check[T]) bool { return c.Name == name })
	if i < 0 {
		t.Fatalf("no check named %q", name)
	}
	err := checks[i].Run(t.Context(), impl)
	if err == nil {
		t.Fatalf("check %s passed a broken implementation", name)
	}
	if _, ok := err.(*spitest.SkipError); ok {
		t.Fatalf("check %s skipped: %v", name, err)
	}
	if !strings.Contains(err.Error(), "case ") {
		t.Errorf("check %s failed without naming the case: %v", name, err)
	}
	t.Logf("check %s failed as expected: %v", name, err)
}

// expectAllChecksPass runs every check directly, requiring nil or a skip.
func expectAllChecksPass[T any](t *testing.T, impl T, checks []spitest.Check[T]) {
	t.Helper()
	for _, c := range checks {
		if err := c.Run(t.Context(), impl); err != nil {
			if _, ok := err.(*spitest.SkipError); !ok {
				t.Errorf("check %s failed on the reference implementation: %v", c.Name, err)
			}
		}
	}
}

// expectSkipsWithoutOptions runs checks built without options: each must
// skip with a reason, except those named in run, which must pass.
func expectSkipsWithoutOptions[T any](t *testing.T, impl T, checks []spitest.Check[T], run ...string) {
	t.Helper()
	for _, c := range checks {
		err := c.Run(t.Context(), impl)
		if slices.Contains(run, c.Name) {
			if err != nil {
				t.Errorf("check %s with nil options: %v, want it to run and pass", c.Name, err)
			}
			continue
		}
		var skip *spitest.SkipError
		if !errors.As(err, &skip) || skip.Reason == "" {
			t.Errorf("check %s with nil options: got %v, want a skip with a reason", c.Name, err)
		}
	}
}

// TestRun: Run reports each check's outcome in order, outside package
// testing.
func TestRun(t *testing.T) {
	t.Parallel()
	checks := []spitest.Check[int]{
		{Name: "passes", Run: func(context.Context, int) error { return nil }},
		{Name: "skips", Run: func(context.Context, int) error { return spitest.Skip("no options") }},
		{Name: "fails", Run: func(context.Context, int) error { return errors.New("case x: broken") }},
		{Name: "has_a_deadline", Run: func(ctx context.Context, _ int) error {
			if _, ok := ctx.Deadline(); !ok {
				return errors.New("no deadline")
			}
			return nil
		}},
	}
	rs := spitest.Run(t.Context(), 0, checks)
	var got []string
	for _, r := range rs {
		got = append(got, fmt.Sprintf("%s:%t/%t/%t", r.Name, r.Passed(), r.Skipped(), r.Failed()))
	}
	want := []string{"passes:true/false/false", "skips:false/true/false", "fails:false/false/true", "has_a_deadline:true/false/false"}
	if !slices.Equal(got, want) {
		t.Errorf("Run = %v, want %v", got, want)
	}
}

func TestShardingCasesAreRuntimeOrdered(t *testing.T) {
	t.Parallel()
	for _, c := range spitest.ShardingCases() {
		ids := c.Request.Instances
		if !slices.IsSortedFunc(ids, func(a, b string) int { return strings.Compare(b, a) }) {
			t.Fatalf("case %s: instances %q not in descending order", c.Name, ids)
		}
	}
}
