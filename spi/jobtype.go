package spi

import "context"

// ShardingContext is what one item of one execution receives. Its JSON form
// (package spi/gson) is byte-identical to upstream's Gson output when it
// carries no fencing token.
type ShardingContext struct {
	JobName            string
	TaskID             string
	ShardingTotalCount int
	JobParameter       string
	ShardingItem       int
	// ShardingParameter is the item's parameter from
	// shardingItemParameters, or nil when none is configured.
	ShardingParameter *string
	// FencingToken is this run of the item's fencing token: a number
	// higher than that of every earlier run of the same item, on any
	// instance (failover and misfire runs included). A store the item
	// writes to keeps the highest token it has seen per item and rejects
	// a write that carries a lower one, so a stale run (one whose instance
	// was paused or partitioned while another took the item over) cannot
	// overwrite a newer run's result. 0 means no fence: the job runs
	// without monitorExecution (no running node), or the caller does not
	// know one (an ElasticJob-Cloud launch). See docs/guarantees.md.
	FencingToken int64
}

// ExecuteRequest runs one item of one execution.
type ExecuteRequest struct {
	Context ShardingContext
	// Props are the job's props (script.command.line, http.uri, ...).
	Props map[string]string
}

// ExecuteResponse reports an item's result besides its error.
type ExecuteResponse struct {
	// Output is what the item printed or returned (see Output), capped at
	// MaxOutputBytes (the tail kept). It is read whether or not Execute
	// returns an error: a failed item's output is often why it failed.
	Output Output
}

// JobExecutor runs the items of a job type (SCRIPT, HTTP, or a type a
// third party writes).
//
// Caller: the kernel's execution pipeline, once per item per execution;
// Validate once when a job is configured, or once for all the jobs of a
// host that share its props (the result must depend on Props alone;
// JobName is for messages). Concurrency: the items of one
// execution run concurrently (up to the job's thread-pool size) and many
// jobs share one executor, so implementations must be safe for concurrent
// use.
//
// Contract: Execute returns nil when the item succeeded and an error when
// it failed, and the item's output in the response either way. It must return soon after ctx is cancelled (job timeout,
// resharding, shutdown), with ctx.Err() or an error wrapping it. A
// long-running type such as DATAFLOW runs its whole fetch/process loop in
// one Execute call. Validate returns an error wrapping ErrInvalidConfig that
// names the offending property.
type JobExecutor interface {
	Execute(ctx context.Context, req ExecuteRequest) (ExecuteResponse, error)
	Validate(ctx context.Context, req ValidatePropsRequest) error
}
