package instance

import (
	"maps"

	"github.com/ejob-io/ejob/spi"
)

// ShardingContexts is what job listeners receive for one execution
// (upstream's ShardingContexts): the same value before and after it.
// Upstream's three event-sampling fields are unused by Lite and omitted.
type ShardingContexts struct {
	TaskID             string
	JobName            string
	ShardingTotalCount int
	// JobParameter is never nil upstream; "" when unset.
	JobParameter string
	// Items are this run's items, in execution order. Upstream keeps them
	// as the keys of its parameter map.
	Items []int
	// ShardingItemParameters holds the parameter of each item of Items that
	// has one; an item without a parameter is absent (upstream: null).
	ShardingItemParameters map[int]string
	// Failover: the items are failover items this instance took over from
	// a crashed one (ejob's tracing records their runs with source
	// FAILOVER). Not part of upstream's ShardingContexts.
	Failover bool
	// FencingTokens holds each item's fencing token for this run (see
	// spi.ShardingContext.FencingToken): the Czxid of the running node the
	// run's begin created. The begin (RegisterBegin, or the trigger that
	// created the running nodes ahead) fills it in; copies of the
	// contexts share it. An item without one (no monitorExecution) is
	// absent, token 0. Not part of upstream's ShardingContexts.
	FencingTokens map[int]int64
}

// NewShardingContexts builds the contexts of one execution: the task id
// from jobName, items and instanceID, and each item's parameter from the
// parsed shardingItemParameters (config.ParseShardingItemParameters).
func NewShardingContexts(jobName string, shardingTotalCount int, jobParameter string, items []int, params map[int]string, instanceID string) *ShardingContexts {
	sc := &ShardingContexts{
		TaskID:                 NewTaskID(jobName, items, instanceID),
		JobName:                jobName,
		ShardingTotalCount:     shardingTotalCount,
		JobParameter:           jobParameter,
		Items:                  append([]int(nil), items...),
		ShardingItemParameters: map[int]string{},
		FencingTokens:          map[int]int64{},
	}
	for _, it := range items {
		if p, ok := params[it]; ok {
			sc.ShardingItemParameters[it] = p
		}
	}
	return sc
}

// Parameter returns item's parameter and whether it has one.
func (s *ShardingContexts) Parameter(item int) (string, bool) {
	p, ok := s.ShardingItemParameters[item]
	return p, ok
}

// ShardingContext returns what one item receives (upstream's
// createShardingContext).
func (s *ShardingContexts) ShardingContext(item int) spi.ShardingContext {
	sc := spi.ShardingContext{
		JobName:            s.JobName,
		TaskID:             s.TaskID,
		ShardingTotalCount: s.ShardingTotalCount,
		JobParameter:       s.JobParameter,
		ShardingItem:       item,
		FencingToken:       s.FencingTokens[item],
	}
	if p, ok := s.ShardingItemParameters[item]; ok {
		sc.ShardingParameter = &p
	}
	return sc
}

// Clone returns a deep copy.
func (s *ShardingContexts) Clone() *ShardingContexts {
	out := *s
	out.Items = append([]int(nil), s.Items...)
	out.ShardingItemParameters = maps.Clone(s.ShardingItemParameters)
	out.FencingTokens = maps.Clone(s.FencingTokens)
	return &out
}
