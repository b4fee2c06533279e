package spi

import "context"

// ShardingRequest asks a strategy to assign items 0..ShardingTotalCount-1 to
// instances.
type ShardingRequest struct {
	// JobName is the job being sharded; name-based strategies hash it.
	JobName string
	// Instances are the available instance ids (ip@-@pid), in the order
	// the runtime passes them: descending string order of the ids. A
	// strategy must not re-sort them unless its algorithm says so.
	Instances []string
	// ShardingTotalCount is the number of items, > 0.
	ShardingTotalCount int
}

// Assignment is the list of items given to one instance.
type Assignment struct {
	InstanceID string
	Items      []int
}

// ShardingResponse holds one Assignment per requested instance, in the
// order of ShardingRequest.Instances unless the strategy says otherwise.
// An instance that gets no items is present with an empty, non-nil Items
// list.
type ShardingResponse struct {
	Assignments []Assignment
}

// ShardingStrategy assigns sharding items to job instances.
//
// Caller: the kernel on the leader instance, once per resharding of a job
// (when instances, servers or shardingTotalCount change), and the
// `ejob sharding preview` command. Concurrency: may be called from several
// goroutines at once, for different jobs; implementations must be safe for
// concurrent use and must be deterministic for a given request unless their
// documentation says otherwise.
//
// Contract: every item in 0..ShardingTotalCount-1 is assigned to exactly one
// of the requested instances; no other instance id appears. With no
// instances the response is empty. An invalid request (ShardingTotalCount
// <= 0, duplicate instance ids) is an error wrapping ErrInvalidConfig.
type ShardingStrategy interface {
	Sharding(ctx context.Context, req ShardingRequest) (ShardingResponse, error)
}
