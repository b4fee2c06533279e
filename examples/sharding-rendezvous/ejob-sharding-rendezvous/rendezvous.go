package main

import (
	"context"
	"fmt"
	"hash/fnv"
	"strconv"

	"github.com/ejob-io/ejob/spi"
)

// Rendezvous is the RENDEZVOUS strategy. It is stateless and safe for
// concurrent use.
type Rendezvous struct{}

var _ spi.ShardingStrategy = Rendezvous{}

// Sharding implements spi.ShardingStrategy.
func (Rendezvous) Sharding(ctx context.Context, req spi.ShardingRequest) (spi.ShardingResponse, error) {
	if err := ctx.Err(); err != nil {
		return spi.ShardingResponse{}, err
	}
	if req.ShardingTotalCount <= 0 {
		return spi.ShardingResponse{}, fmt.Errorf("%w: shardingTotalCount must be > 0, got %d", spi.ErrInvalidConfig, req.ShardingTotalCount)
	}
	index := make(map[string]int, len(req.Instances))
	out := spi.ShardingResponse{Assignments: make([]spi.Assignment, len(req.Instances))}
	for i, id := range req.Instances {
		if _, dup := index[id]; dup {
			return spi.ShardingResponse{}, fmt.Errorf("%w: instance %q listed twice", spi.ErrInvalidConfig, id)
		}
		index[id] = i
		out.Assignments[i] = spi.Assignment{InstanceID: id, Items: []int{}}
	}
	if len(req.Instances) == 0 {
		return spi.ShardingResponse{}, nil
	}
	for item := 0; item < req.ShardingTotalCount; item++ {
		best, bestScore := 0, uint64(0)
		for i, id := range req.Instances {
			if s := score(req.JobName, item, id); i == 0 || s > bestScore {
				best, bestScore = i, s
			}
		}
		out.Assignments[best].Items = append(out.Assignments[best].Items, item)
	}
	return out, nil
}

func score(job string, item int, instance string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(job))
	h.Write([]byte{0})
	h.Write([]byte(strconv.Itoa(item)))
	h.Write([]byte{0})
	h.Write([]byte(instance))
	return h.Sum64()
}
