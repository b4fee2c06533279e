package spitest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ejob-io/ejob/spi"
)

// TestShardingStrategy runs every check of ShardingStrategyChecks against s,
// each as a subtest of t.
func TestShardingStrategy(t *testing.T, s spi.ShardingStrategy) {
	t.Helper()
	RunChecks(t, s, ShardingStrategyChecks())
}

// ShardingStrategyChecks returns the conformance checks of the
// spi.ShardingStrategy contract:
//
//   - items_assigned_exactly_once: every item 0..N-1 is assigned exactly once
//     and no other item appears, over many generated requests;
//   - only_requested_instances: no instance id outside the request appears;
//   - every_instance_present: every requested instance appears exactly once,
//     possibly with no items;
//   - no_instances: nil or empty Instances give an empty response;
//   - nonpositive_total_is_invalid_config: N <= 0 is an error wrapping
//     spi.ErrInvalidConfig;
//   - duplicate_instances_is_invalid_config: a repeated instance id is an
//     error wrapping spi.ErrInvalidConfig;
//   - deterministic: the same request twice gives the same answer;
//   - request_not_modified: the request's Instances slice is left as it was;
//   - cancelled_context: a cancelled or expired ctx gives an error wrapping
//     context.Canceled or context.DeadlineExceeded;
//   - concurrent_calls: many goroutines calling at once get the answers a
//     lone caller gets.
//
// The suite does not require the response to follow request order, since
// the contract lets a strategy document another order.
func ShardingStrategyChecks() []Check[spi.ShardingStrategy] {
	return []Check[spi.ShardingStrategy]{
		{Name: "items_assigned_exactly_once", Run: checkShardingEachCase(checkItemsExactlyOnce)},
		{Name: "only_requested_instances", Run: checkShardingEachCase(checkOnlyRequestedInstances)},
		{Name: "every_instance_present", Run: checkShardingEachCase(checkEveryInstancePresent)},
		{Name: "no_instances", Run: checkNoInstances},
		{Name: "nonpositive_total_is_invalid_config", Run: checkNonPositiveTotal},
		{Name: "duplicate_instances_is_invalid_config", Run: checkDuplicateInstances},
		{Name: "deterministic", Run: checkShardingDeterministic},
		{Name: "request_not_modified", Run: checkShardingRequestNotModified},
		{Name: "cancelled_context", Run: checkShardingCancelled},
		{Name: "concurrent_calls", Run: checkShardingConcurrent},
	}
}

// ShardingCase is one named, valid sharding request.
type ShardingCase struct {
	Name    string
	Request spi.ShardingRequest
}

// ShardingCases returns the valid requests the sharding checks use: job
// names whose Java hash codes are odd, even, negative, MinInt32 and
// non-ASCII, crossed with instance counts from 1 to 16 (ids in the runtime's
// descending string order) and totals from 1 to 100, including fewer items
// than instances.
func ShardingCases() []ShardingCase {
	jobNames := []string{
		"test_job", "myJob", "javaSimpleJob", "0", "1", "2", "3",
		"polygenelubricants", "作业", "", "job-😀", "a/b c",
	}
	counts := []int{1, 2, 3, 4, 7, 16}
	totals := []int{1, 2, 3, 8, 9, 10, 33, 100}
	var cases []ShardingCase
	for _, name := range jobNames {
		for _, n := range counts {
			for _, total := range totals {
				cases = append(cases, ShardingCase{
					Name: fmt.Sprintf("job=%q/instances=%d/total=%d", name, n, total),
					Request: spi.ShardingRequest{
						JobName:            name,
						Instances:          runtimeInstances(n),
						ShardingTotalCount: total,
					},
				})
			}
		}
	}
	return cases
}

// runtimeInstances returns n instance ids in descending string order, as the
// runtime passes them (so "192.168.1.10@-@..." comes after "192.168.1.1@-@...").
func runtimeInstances(n int) []string {
	ids := make([]string, n)
	for i := range n {
		ids[i] = fmt.Sprintf("192.168.1.%d@-@%d", i+1, 1000+i)
	}
	slices.Sort(ids)
	slices.Reverse(ids)
	return ids
}

func checkShardingEachCase(check func(c ShardingCase, resp spi.ShardingResponse) error) func(context.Context, spi.ShardingStrategy) error {
	return func(ctx context.Context, s spi.ShardingStrategy) error {
		var errs []error
		for _, c := range ShardingCases() {
			resp, err := s.Sharding(ctx, c.Request)
			if err != nil {
				errs = append(errs, caseErr(c.Name, "Sharding returned error: %v", err))
			} else if err := check(c, resp); err != nil {
				errs = append(errs, err)
			}
			if len(errs) >= 5 {
				break
			}
		}
		return errors.Join(errs...)
	}
}

func checkItemsExactlyOnce(c ShardingCase, resp spi.ShardingResponse) error {
	n := c.Request.ShardingTotalCount
	owner := make([]string, n)
	seen := make([]bool, n)
	for _, a := range resp.Assignments {
		for _, item := range a.Items {
			if item < 0 || item >= n {
				return caseErr(c.Name, "instance %q got item %d, outside 0..%d", a.InstanceID, item, n-1)
			}
			if seen[item] {
				return caseErr(c.Name, "item %d assigned twice (to %q and %q)", item, owner[item], a.InstanceID)
			}
			seen[item], owner[item] = true, a.InstanceID
		}
	}
	if i := slices.Index(seen, false); i >= 0 {
		return caseErr(c.Name, "item %d assigned to no instance; response %v", i, resp.Assignments)
	}
	return nil
}

func checkOnlyRequestedInstances(c ShardingCase, resp spi.ShardingResponse) error {
	for _, a := range resp.Assignments {
		if !slices.Contains(c.Request.Instances, a.InstanceID) {
			return caseErr(c.Name, "response names instance %q, which is not in the request %q", a.InstanceID, c.Request.Instances)
		}
	}
	return nil
}

func checkEveryInstancePresent(c ShardingCase, resp spi.ShardingResponse) error {
	count := make(map[string]int, len(resp.Assignments))
	for _, a := range resp.Assignments {
		count[a.InstanceID]++
	}
	for _, id := range c.Request.Instances {
		switch count[id] {
		case 1:
		case 0:
			return caseErr(c.Name, "requested instance %q is missing from the response (an instance with no items must still appear)", id)
		default:
			return caseErr(c.Name, "instance %q appears %d times in the response", id, count[id])
		}
	}
	return nil
}

func checkNoInstances(ctx context.Context, s spi.ShardingStrategy) error {
	for name, instances := range map[string][]string{"nil": nil, "empty": {}} {
		for _, total := range []int{1, 3, 10} {
			cname := fmt.Sprintf("instances=%s/total=%d", name, total)
			resp, err := s.Sharding(ctx, spi.ShardingRequest{JobName: "test_job", Instances: instances, ShardingTotalCount: total})
			if err != nil {
				return caseErr(cname, "Sharding returned error %v, want an empty response", err)
			}
			if len(resp.Assignments) != 0 {
				return caseErr(cname, "got %d assignments %v, want none", len(resp.Assignments), resp.Assignments)
			}
		}
	}
	return nil
}

func checkNonPositiveTotal(ctx context.Context, s spi.ShardingStrategy) error {
	for _, total := range []int{0, -1, -7} {
		cname := fmt.Sprintf("total=%d", total)
		_, err := s.Sharding(ctx, spi.ShardingRequest{JobName: "test_job", Instances: runtimeInstances(2), ShardingTotalCount: total})
		if !errors.Is(err, spi.ErrInvalidConfig) {
			return caseErr(cname, "got error %v, want one wrapping spi.ErrInvalidConfig", err)
		}
	}
	return nil
}

func checkDuplicateInstances(ctx context.Context, s spi.ShardingStrategy) error {
	cases := map[string][]string{
		"adjacent":  {"192.168.1.2@-@200", "192.168.1.2@-@200"},
		"separated": {"192.168.1.3@-@300", "192.168.1.2@-@200", "192.168.1.3@-@300"},
	}
	for name, instances := range cases {
		for _, total := range []int{1, 3} {
			cname := fmt.Sprintf("duplicates=%s/total=%d", name, total)
			_, err := s.Sharding(ctx, spi.ShardingRequest{JobName: "test_job", Instances: instances, ShardingTotalCount: total})
			if !errors.Is(err, spi.ErrInvalidConfig) {
				return caseErr(cname, "instances %q: got error %v, want one wrapping spi.ErrInvalidConfig", instances, err)
			}
		}
	}
	return nil
}

func checkShardingDeterministic(ctx context.Context, s spi.ShardingStrategy) error {
	for _, c := range ShardingCases() {
		first, err1 := s.Sharding(ctx, c.Request)
		second, err2 := s.Sharding(ctx, c.Request)
		if err1 != nil || err2 != nil {
			return caseErr(c.Name, "Sharding returned errors %v, %v", err1, err2)
		}
		if !sameSharding(first, second) {
			return caseErr(c.Name, "two calls with the same request differ:\n first:  %v\n second: %v", first.Assignments, second.Assignments)
		}
	}
	return nil
}

func checkShardingRequestNotModified(ctx context.Context, s spi.ShardingStrategy) error {
	for _, c := range ShardingCases() {
		instances := slices.Clone(c.Request.Instances)
		req := c.Request
		req.Instances = instances
		if _, err := s.Sharding(ctx, req); err != nil {
			return caseErr(c.Name, "Sharding returned error: %v", err)
		}
		if !slices.Equal(instances, c.Request.Instances) {
			return caseErr(c.Name, "Sharding modified the request's Instances: was %q, now %q", c.Request.Instances, instances)
		}
	}
	return nil
}

func checkShardingCancelled(ctx context.Context, s spi.ShardingStrategy) error {
	req := spi.ShardingRequest{JobName: "test_job", Instances: runtimeInstances(3), ShardingTotalCount: 10}

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := s.Sharding(cancelled, req); !errors.Is(err, context.Canceled) {
		return caseErr("cancelled", "got error %v, want one wrapping context.Canceled", err)
	}

	expired, cancel := context.WithDeadline(ctx, time.Now().Add(-time.Second))
	defer cancel()
	if _, err := s.Sharding(expired, req); !errors.Is(err, context.DeadlineExceeded) {
		return caseErr("deadline_exceeded", "got error %v, want one wrapping context.DeadlineExceeded", err)
	}
	return nil
}

func checkShardingConcurrent(ctx context.Context, s spi.ShardingStrategy) error {
	var cases []ShardingCase
	for i, c := range ShardingCases() {
		if i%7 == 0 {
			cases = append(cases, c)
		}
	}
	want := make([]spi.ShardingResponse, len(cases))
	for i, c := range cases {
		resp, err := s.Sharding(ctx, c.Request)
		if err != nil {
			return caseErr(c.Name, "Sharding returned error: %v", err)
		}
		want[i] = resp
	}
	errs := make([]error, concurrency)
	var wg sync.WaitGroup
	for g := range concurrency {
		wg.Go(func() {
			// Each goroutine walks the cases from a different start, so
			// different requests overlap in time.
			for k := range cases {
				i := (k + g) % len(cases)
				got, err := s.Sharding(ctx, cases[i].Request)
				if err != nil {
					errs[g] = caseErr(cases[i].Name, "goroutine %d: Sharding returned error: %v", g, err)
					return
				}
				if !sameSharding(got, want[i]) {
					errs[g] = caseErr(cases[i].Name, "goroutine %d: concurrent answer %v differs from the lone caller's %v", g, got.Assignments, want[i].Assignments)
					return
				}
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// sameSharding compares two responses, treating nil and empty item lists
// alike (a transport may not tell them apart).
func sameSharding(a, b spi.ShardingResponse) bool {
	return slices.EqualFunc(a.Assignments, b.Assignments, func(x, y spi.Assignment) bool {
		return x.InstanceID == y.InstanceID && slices.Equal(x.Items, y.Items)
	})
}
