package spi

import (
	"context"
	"math"
	"time"
)

// DefaultListenerOrder is upstream's default ElasticJobListener.order()
// (Integer.MAX_VALUE): a listener with it runs after every listener with a
// smaller order. Listeners with equal orders keep their configured order.
const DefaultListenerOrder = math.MaxInt32

// ShardingContexts is what one trigger of a job runs on one instance
// (upstream's ShardingContexts): the data listeners
// receive.
type ShardingContexts struct {
	// TaskID is jobName@-@items@-@READY@-@ip@-@pid.
	TaskID             string
	JobName            string
	ShardingTotalCount int
	// JobParameter is "" when unset, never absent.
	JobParameter string
	// Items are this instance's items of this trigger, in execution order;
	// empty when it has none.
	Items []int
	// ShardingItemParameters holds the parameter of each item of Items
	// that has one; an item without a parameter is absent.
	ShardingItemParameters map[int]string
}

// ListenerDescribeRequest asks a listener how the kernel calls it for one
// job.
type ListenerDescribeRequest struct {
	JobName string
	Props   map[string]string
}

// ListenerDescription says how the kernel calls a listener for one job.
type ListenerDescription struct {
	// Order sorts the job's listeners, ascending (stable: equal orders
	// keep the configured order). It is taken literally, so 0 runs before
	// DefaultListenerOrder, upstream's default; return DefaultListenerOrder
	// unless the listener must run before others.
	Order int
	// DistributeOnce makes the listener upstream's
	// AbstractDistributeOnceElasticJobListener: BeforeJobExecuted runs once
	// per cluster-wide trigger, on the last instance to start, and
	// AfterJobExecuted once, on the last instance to complete (the
	// guarantee/started and guarantee/completed nodes of the registry).
	DistributeOnce bool
	// StartedTimeout and CompletedTimeout bound how long an instance that
	// is not the last waits for the last one (distribute-once only). On
	// expiry the instance removes guarantee/started (or completed) and
	// reports "Job timeout. timeout mills is <ms>." to the job's error
	// handler. <= 0 means no timeout (upstream's Long.MAX_VALUE). The
	// kernel works in milliseconds, as upstream.
	StartedTimeout   time.Duration
	CompletedTimeout time.Duration
}

// ListenerRequest is one call of a listener for one trigger.
type ListenerRequest struct {
	JobName string
	// Props are the job's props at this trigger.
	Props map[string]string
	// Contexts are the trigger's sharding contexts on the calling
	// instance; for a distribute-once listener, the last instance's.
	Contexts ShardingContexts
}

// JobListener is told before and after each trigger of a job (upstream's
// ElasticJobListener), named in a job's config by jobListenerTypes.
//
// Caller: the kernel's execution pipeline. Describe is called once per job
// when the job is built on an instance (and its answer kept for the job's
// life there). A common listener's BeforeJobExecuted and AfterJobExecuted
// are called once per trigger on every instance running the job (not per
// misfire re-run), also when the instance has no items; they are not
// called when the trigger is skipped because the previous one is still
// running. AfterJobExecuted runs even when items failed. For a
// distribute-once listener (Description.DistributeOnce) the kernel calls
// BeforeJobExecuted once per cluster-wide trigger, on the last instance
// to start (upstream's doBeforeJobExecutedAtLastStarted), and
// AfterJobExecuted once, on the last instance to complete
// (doAfterJobExecutedAtLastCompleted); instances without items take no
// part.
//
// Concurrency: the calls of one job on one instance are sequential, but
// many jobs and (through a plugin) many instances share one implementation,
// so it must be safe for concurrent use.
//
// Contract: an error from BeforeJobExecuted or AfterJobExecuted stops the
// job's remaining listeners of that phase and goes to the job's error
// handler; the trigger carries on unless the handler propagates. Describe
// returns an error wrapping ErrInvalidConfig, naming the property, when the
// job's props are wrong for the listener; the job then fails to build.
// Every method returns soon after ctx is cancelled.
type JobListener interface {
	Describe(ctx context.Context, req ListenerDescribeRequest) (ListenerDescription, error)
	BeforeJobExecuted(ctx context.Context, req ListenerRequest) error
	AfterJobExecuted(ctx context.Context, req ListenerRequest) error
}
