package spi

import (
	"context"
	"time"
)

// ExecutionEvent is one item's start or completion (upstream's
// JobExecutionEvent). A start has a zero CompleteTime
// and Success false; its completion carries the same ID.
type ExecutionEvent struct {
	// ID is a random UUID shared by an item's start and completion.
	ID       string
	Hostname string
	IP       string
	// TaskID is jobName@-@items@-@READY@-@ip@-@pid.
	TaskID  string
	JobName string
	// Source is NORMAL_TRIGGER, MISFIRE or FAILOVER.
	Source       string
	ShardingItem int
	// StartTime is when the start event was created (dispatch time).
	StartTime time.Time
	// CompleteTime is zero on the start event.
	CompleteTime time.Time
	Success      bool
	// FailureCause is the failed item's error text ("" otherwise).
	FailureCause string
	// Output is what the item printed or returned (see Output), set on a
	// completion only, masked (spi/redact) by the host before it writes
	// it. A sink stores it apart from upstream's columns. In
	// QueryExecutions' rows it is an excerpt: its last OutputExcerptChars
	// characters, Cut counting the bytes before them; QueryOutput returns
	// it whole.
	Output Output
	// FencingToken is the run's fencing token for the item
	// (ShardingContext.FencingToken), on the start and the completion; 0
	// when the run has none. A sink stores it apart from upstream's
	// columns.
	FencingToken int64
}

// OutputExcerptChars bounds the output excerpt of a QueryExecutions row,
// in characters.
const OutputExcerptChars = 200

// StatusEvent is one step of a trigger's status trace (upstream's
// JobStatusTraceEvent).
type StatusEvent struct {
	// ID is a random UUID; a sink that stores rows by id uses it, so that
	// a batch written twice (after a lost reply) stores each event once.
	ID             string
	JobName        string
	OriginalTaskID string
	TaskID         string
	// SlaveID is the IP part of TaskID.
	SlaveID string
	// ExecutionType is READY (or FAILOVER, unused by lite).
	ExecutionType string
	// ShardingItems is the items in Java's list form, "[0, 1]".
	ShardingItems string
	// State is TASK_STAGING, TASK_RUNNING, TASK_FINISHED or TASK_ERROR.
	State        string
	Message      string
	CreationTime time.Time
}

// TraceWriteRequest is one batch of events.
type TraceWriteRequest struct {
	// Config is the sink's settings (for the RDB type, the data source:
	// driver, url, username, password, ...). It travels with every call, so
	// a relaunched plugin needs no replayed state.
	Config     map[string]string
	Executions []ExecutionEvent
	Statuses   []StatusEvent
}

// TraceWriteResponse reports what a batch stored.
type TraceWriteResponse struct {
	// Rejected counts the events the store refused one by one (a value it
	// cannot hold, a constraint); they are dropped, as upstream drops
	// them. Problems describes the first few.
	Rejected int
	Problems []string
}

// ExecutionQuery selects item executions, newest start first.
type ExecutionQuery struct {
	Config map[string]string
	// ID, JobName, IP and TaskID filter when non-empty.
	ID      string
	JobName string
	IP      string
	TaskID  string
	// Item filters on the sharding item when not nil.
	Item *int
	// Success filters on the outcome when not nil (false also matches
	// executions that have not completed).
	Success *bool
	// From and To bound start_time (inclusive From, exclusive To) when
	// not zero.
	From, To time.Time
	// Offset rows are skipped; Limit rows at most are returned (<= 0: a
	// default of the sink's).
	Offset, Limit int
}

// ExecutionPage is one page of executions.
type ExecutionPage struct {
	Executions []ExecutionEvent
	// More reports whether rows follow this page.
	More bool
}

// StatusQuery selects status-trace events, newest first.
type StatusQuery struct {
	Config map[string]string
	// JobName and TaskID filter when non-empty.
	JobName string
	TaskID  string
	// From and To bound creation_time as in ExecutionQuery.
	From, To      time.Time
	Offset, Limit int
	// State, ExecutionType and Source filter when non-empty (upstream's
	// console filters on them). Source is the ≤3.0.4 column: every event
	// of a lite job has source LITE_EXECUTOR, so a store without the
	// column matches all events for that value and none for another.
	State         string
	ExecutionType string
	Source        string
}

// StatusPage is one page of status events.
type StatusPage struct {
	Statuses []StatusEvent
	More     bool
}

// OutputQuery asks for the output of one item execution.
type OutputQuery struct {
	Config map[string]string
	// ID is the execution's id (ExecutionEvent.ID). Required.
	ID string
}

// OutputResult is one item execution's stored output.
type OutputResult struct {
	// Found reports whether the store holds output for the id (an
	// execution that printed nothing, is still running or is unknown has
	// none).
	Found  bool
	Output Output
}

// TracePurgeRequest deletes what is older than Before.
type TracePurgeRequest struct {
	Config map[string]string
	// Before: executions that started and status events created before it
	// are deleted, and the executions' outputs with them. Required (not
	// zero).
	Before time.Time
}

// TracePurgeResponse counts what a purge deleted.
type TracePurgeResponse struct {
	Executions, Statuses int64
	// Outputs counts the deleted executions' outputs.
	Outputs int64
}

// TraceValidateRequest asks whether a sink's settings are usable.
type TraceValidateRequest struct {
	Config map[string]string
}

// DistinctField names a field whose distinct values Distinct lists.
type DistinctField string

// The fields Distinct lists (upstream's console completes its filters with
// them).
const (
	// ExecutionJobNames: the job names of the executions.
	ExecutionJobNames DistinctField = "execution.jobName"
	// ExecutionIPs: the IP addresses of the executions.
	ExecutionIPs DistinctField = "execution.ip"
	// StatusJobNames: the job names of the status events.
	StatusJobNames DistinctField = "status.jobName"
)

// MaxDistinct bounds DistinctQuery.Limit.
const MaxDistinct = 1000

// DistinctQuery asks for the distinct values of Field that begin with
// Prefix ("": every value), in the store's order of that field.
type DistinctQuery struct {
	Config map[string]string
	Field  DistinctField
	Prefix string
	// Limit values at most are returned (<= 0: a default of the sink's;
	// at most MaxDistinct).
	Limit int
}

// DistinctValues is the answer of Distinct.
type DistinctValues struct {
	Values []string
	// More reports whether more values match.
	More bool
}

// Tracer is an execution-history sink (upstream's event tracing), named
// by the host's elasticjob.tracing.type; the built-in type is RDB.
//
// Caller: the host. Write is called by one background writer per host
// with batches of events (never one call per event), in the order the
// events happened on that host; it is retried with the same batch after
// an error, so storing a batch twice must store each event once. Several
// hosts (and Java ElasticJob instances) may write into one store at once,
// and a completion may arrive before its start (a Java writer posts them
// concurrently): the sink must keep both. The read methods (the history
// command, a console; QueryOutput when an operator opens one execution's
// output) and Purge (the leader once a day, an operator) are
// called rarely, from any goroutine. Validate is called once when the host
// loads its configuration, before anything starts.
//
// Contract: Write returns an error only when the store could not be
// reached or the batch could not be committed (the host keeps the batch
// and retries); events refused one by one are counted in Rejected. A
// bad Config is an error wrapping ErrInvalidConfig naming the setting,
// from every method; Validate does not need to reach the store. Every
// method returns soon after ctx is cancelled.
type Tracer interface {
	Validate(ctx context.Context, req TraceValidateRequest) error
	Write(ctx context.Context, req TraceWriteRequest) (TraceWriteResponse, error)
	QueryExecutions(ctx context.Context, q ExecutionQuery) (ExecutionPage, error)
	QueryStatuses(ctx context.Context, q StatusQuery) (StatusPage, error)
	QueryOutput(ctx context.Context, q OutputQuery) (OutputResult, error)
	Purge(ctx context.Context, req TracePurgeRequest) (TracePurgeResponse, error)
	// Distinct lists distinct values of one field by prefix; its cost
	// must not grow with the rows stored (an index seek per value). An
	// unknown Field is an error wrapping ErrUnsupported.
	Distinct(ctx context.Context, q DistinctQuery) (DistinctValues, error)
}
