package shardingbuiltin

import (
	"context"
	"fmt"
	"slices"

	"github.com/ejob-io/ejob/spi"
)

// The type names the strategies are registered under. Lookups are
// case-insensitive (spi.NormalizeType); these are the canonical spellings.
const (
	TypeAverageAllocation = "AVG_ALLOCATION"
	TypeOdevity           = "ODEVITY"
	TypeRoundRobin        = "ROUND_ROBIN"
)

// Strategies returns a new instance of every strategy in this package, keyed
// by its canonical type name.
func Strategies() map[string]spi.ShardingStrategy {
	return map[string]spi.ShardingStrategy{
		TypeAverageAllocation: NewAverageAllocation(),
		TypeOdevity:           NewOdevity(),
		TypeRoundRobin:        NewRoundRobin(),
	}
}

// validate checks what every strategy checks before computing: ctx still
// live (its error is returned as is), a positive total, no duplicate
// instance ids (errors wrapping spi.ErrInvalidConfig).
func validate(ctx context.Context, typeName string, req spi.ShardingRequest) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if req.ShardingTotalCount <= 0 {
		return fmt.Errorf("%s sharding of job %q: shardingTotalCount is %d, must be positive: %w",
			typeName, req.JobName, req.ShardingTotalCount, spi.ErrInvalidConfig)
	}
	seen := make(map[string]int, len(req.Instances))
	for i, id := range req.Instances {
		if j, dup := seen[id]; dup {
			return fmt.Errorf("%s sharding of job %q: instance id %q appears twice (positions %d and %d): %w",
				typeName, req.JobName, id, j, i, spi.ErrInvalidConfig)
		}
		seen[id] = i
	}
	return nil
}

// allocate runs upstream's average allocation over order, a permutation of
// the request's instance indexes, and returns one assignment per instance
// in request order. Instance order[k] gets items k*per .. (k+1)*per-1, and
// the first total%n instances of order get one of the remaining items each.
func allocate(instances []string, order []int, total int) spi.ShardingResponse {
	n := len(instances)
	if n == 0 {
		return spi.ShardingResponse{Assignments: []spi.Assignment{}}
	}
	per, rest := total/n, total%n
	resp := spi.ShardingResponse{Assignments: make([]spi.Assignment, n)}
	for k, idx := range order {
		size := per
		if k < rest {
			size++
		}
		items := make([]int, 0, size)
		for item := k * per; item < (k+1)*per; item++ {
			items = append(items, item)
		}
		if k < rest {
			items = append(items, per*n+k)
		}
		resp.Assignments[idx] = spi.Assignment{InstanceID: instances[idx], Items: items}
	}
	return resp
}

// identity returns 0..n-1.
func identity(n int) []int {
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	return order
}

// AverageAllocation is AVG_ALLOCATION, upstream's default strategy: items
// are split into equal consecutive runs in instance order, and the first
// total%n instances get one of the leftover items each. It is safe for
// concurrent use.
type AverageAllocation struct{}

var _ spi.ShardingStrategy = (*AverageAllocation)(nil)

// NewAverageAllocation returns the AVG_ALLOCATION strategy.
func NewAverageAllocation() *AverageAllocation { return &AverageAllocation{} }

// Sharding implements spi.ShardingStrategy.
func (*AverageAllocation) Sharding(ctx context.Context, req spi.ShardingRequest) (spi.ShardingResponse, error) {
	if err := validate(ctx, TypeAverageAllocation, req); err != nil {
		return spi.ShardingResponse{}, err
	}
	return allocate(req.Instances, identity(len(req.Instances)), req.ShardingTotalCount), nil
}

// Odevity is ODEVITY (upstream OdevitySortByNameJobShardingStrategy): when
// the Java hash of the job name is even, the instance list is reversed
// before average allocation; when it is odd, the given order is kept. There
// is no sort. It is safe for concurrent use.
type Odevity struct{}

var _ spi.ShardingStrategy = (*Odevity)(nil)

// NewOdevity returns the ODEVITY strategy.
func NewOdevity() *Odevity { return &Odevity{} }

// Sharding implements spi.ShardingStrategy.
func (*Odevity) Sharding(ctx context.Context, req spi.ShardingRequest) (spi.ShardingResponse, error) {
	if err := validate(ctx, TypeOdevity, req); err != nil {
		return spi.ShardingResponse{}, err
	}
	order := identity(len(req.Instances))
	if JavaStringHashCode(req.JobName)%2 == 0 {
		slices.Reverse(order)
	}
	return allocate(req.Instances, order, req.ShardingTotalCount), nil
}

// RoundRobin is ROUND_ROBIN (upstream RotateServerByNameJobShardingStrategy):
// the instance list is rotated left by an offset derived from the job name,
// then allocated as AVG_ALLOCATION. It is safe for concurrent use.
//
// The offset is Java's Math.abs(hashCode(jobName)) % n. Math.abs of
// math.MinInt32 is negative, so upstream gets a negative offset and throws
// IndexOutOfBoundsException for such a name (e.g. "polygenelubricants")
// whenever n is not a power of two. RoundRobin uses the non-negative
// remainder ((h % n) + n) % n, computed in int64, in that case: 1 for
// "polygenelubricants" with 3 instances. For every other job name the
// result equals upstream's.
type RoundRobin struct{}

var _ spi.ShardingStrategy = (*RoundRobin)(nil)

// NewRoundRobin returns the ROUND_ROBIN strategy.
func NewRoundRobin() *RoundRobin { return &RoundRobin{} }

// Sharding implements spi.ShardingStrategy.
func (*RoundRobin) Sharding(ctx context.Context, req spi.ShardingRequest) (spi.ShardingResponse, error) {
	if err := validate(ctx, TypeRoundRobin, req); err != nil {
		return spi.ShardingResponse{}, err
	}
	n := len(req.Instances)
	if n == 0 {
		return allocate(nil, nil, req.ShardingTotalCount), nil
	}
	offset := roundRobinOffset(req.JobName, n)
	order := make([]int, n)
	for i := range order {
		order[i] = (i + offset) % n
	}
	return allocate(req.Instances, order, req.ShardingTotalCount), nil
}

// roundRobinOffset is Java's Math.abs(hashCode(jobName)) % n, replaced by
// the non-negative remainder when that is negative (hash math.MinInt32).
// n must be positive.
func roundRobinOffset(jobName string, n int) int {
	h := int64(JavaStringHashCode(jobName))
	offset := int64(javaAbs(int32(h))) % int64(n)
	if offset < 0 {
		offset = ((h % int64(n)) + int64(n)) % int64(n)
	}
	return int(offset)
}
