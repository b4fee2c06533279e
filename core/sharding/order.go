package sharding

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/ejob-io/ejob/spi"
)

// ErrBadAssignment means a strategy's answer does not assign every item to
// exactly one requested instance.
var ErrBadAssignment = errors.New("invalid sharding assignment")

// OrderInstances returns the instance ids in the order the runtime hands
// them to a strategy: descending string order, as upstream sorts ZooKeeper's
// children with Comparator.reverseOrder() (so "1.2@-@200" comes before
// "1.10@-@50"). Duplicates are removed. The input is not modified.
func OrderInstances(ids []string) []string {
	out := slices.Clone(ids)
	slices.SortFunc(out, func(a, b string) int { return strings.Compare(b, a) })
	return slices.Compact(out)
}

// Shard orders the instances, calls the strategy and checks its answer:
// every item 0..total-1 assigned exactly once, only requested instances, and
// every instance present (with an empty list when it gets nothing). The
// result follows the runtime instance order.
func Shard(ctx context.Context, s spi.ShardingStrategy, jobName string, total int, instances []string) ([]spi.Assignment, error) {
	if total <= 0 {
		return nil, fmt.Errorf("%w: shardingTotalCount must be > 0, got %d", spi.ErrInvalidConfig, total)
	}
	ordered := OrderInstances(instances)
	resp, err := s.Sharding(ctx, spi.ShardingRequest{JobName: jobName, Instances: ordered, ShardingTotalCount: total})
	if err != nil {
		return nil, fmt.Errorf("shard job %q: %w", jobName, err)
	}
	return CheckAssignments(ordered, total, resp.Assignments)
}

// CheckAssignments validates a strategy's answer against the request and
// returns it in instance order, one entry per instance.
func CheckAssignments(instances []string, total int, got []spi.Assignment) ([]spi.Assignment, error) {
	byInstance := make(map[string][]int, len(instances))
	for _, id := range instances {
		byInstance[id] = nil
	}
	owner := make(map[int]string, total)
	for _, a := range got {
		if _, ok := byInstance[a.InstanceID]; !ok {
			return nil, fmt.Errorf("%w: instance %q was not among the available instances", ErrBadAssignment, a.InstanceID)
		}
		for _, item := range a.Items {
			if item < 0 || item >= total {
				return nil, fmt.Errorf("%w: item %d out of range 0..%d", ErrBadAssignment, item, total-1)
			}
			if prev, dup := owner[item]; dup {
				return nil, fmt.Errorf("%w: item %d assigned to both %q and %q", ErrBadAssignment, item, prev, a.InstanceID)
			}
			owner[item] = a.InstanceID
			byInstance[a.InstanceID] = append(byInstance[a.InstanceID], item)
		}
	}
	if len(instances) > 0 {
		for item := 0; item < total; item++ {
			if _, ok := owner[item]; !ok {
				return nil, fmt.Errorf("%w: item %d is assigned to no instance", ErrBadAssignment, item)
			}
		}
	}
	out := make([]spi.Assignment, 0, len(instances))
	for _, id := range instances {
		items := byInstance[id]
		if items == nil {
			items = []int{}
		}
		out = append(out, spi.Assignment{InstanceID: id, Items: items})
	}
	return out, nil
}
