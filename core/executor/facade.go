package executor

import (
	"context"

	"github.com/ejob-io/ejob/core/config"
	"github.com/ejob-io/ejob/core/instance"
)

// ShardingContexts is what one trigger of one job runs on this instance
// (upstream's ShardingContexts); listeners receive it and each item's
// spi.ShardingContext is built from it. It is defined in package instance
// with the taskId format it depends on.
type ShardingContexts = instance.ShardingContexts

// Facade is the execution pipeline's view of the coordination layer
// (upstream's JobFacade): every registry read and write one trigger needs.
// The kernel's coordination package implements it on a registry; the
// pipeline never touches the registry itself.
//
// Caller: the pipeline, from the trigger loop's worker for the job; one
// trigger of a job at a time per instance. Every method honours ctx, which
// is cancelled when the instance's registry session is lost.
type Facade interface {
	// Config returns the job's current configuration, shared: the caller
	// must not modify it (a change of the configuration replaces it).
	Config(ctx context.Context) (*config.JobConfiguration, error)
	// CheckEnvironment runs the maxTimeDiffSeconds check against registry
	// time. The pipeline calls it only when maxTimeDiffSeconds >= 0. A non-nil error is reported to the error handler; the trigger
	// goes on unless the handler asks to propagate.
	CheckEnvironment(ctx context.Context) error
	// ShardingContexts returns this instance's items for this trigger. It
	// may reshard (on the leader) or wait for the leader's resharding; it
	// returns only failover items when this instance holds some; it drops
	// disabled items, items taken by failover, and (with
	// monitorExecution) items running anywhere.
	ShardingContexts(ctx context.Context) (ShardingContexts, error)
	// MisfireIfRunning: with monitorExecution, if any of items has a
	// running node, it sets the misfire flag of all items and returns true.
	MisfireIfRunning(ctx context.Context, items []int) (bool, error)
	// RegisterBegin marks the items running (running nodes with
	// monitorExecution: persistent when failover is on, else ephemeral).
	// It fails without writing if the instance's session is gone.
	RegisterBegin(ctx context.Context, sc ShardingContexts) error
	// RegisterCompleted clears what RegisterBegin wrote, plus the failover
	// and failovering nodes of the items when failover is on. failed lists
	// the items whose run failed. Its ctx is detached from the trigger's
	// cancellation (bounded by a cleanup timeout) so that shutdown still
	// clears running nodes.
	RegisterCompleted(ctx context.Context, sc ShardingContexts, failed []int) error
	// ExecuteMisfired reports misfire enabled && !NeedSharding && any of
	// items has a misfire flag.
	ExecuteMisfired(ctx context.Context, items []int) (bool, error)
	// SetMisfire sets the misfire flag of every local sharding item, for a
	// fire the trigger loop skipped while the job was running (upstream's
	// JobTriggerListener.triggerMisfired). The pipeline may call it while
	// the trigger's items run, concurrently with RegisterCompleted.
	SetMisfire(ctx context.Context) error
	// SetMisfireExcept sets the misfire flags of the local sharding items
	// other than except, as SetMisfire does for a skipped fire. The
	// pipeline calls it for a fire of the job's schedule whose
	// ShardingContexts gave failover items (except) instead of the
	// instance's own (ShardingContexts returns only those while the
	// instance holds some, as upstream, which loses the fire for the own
	// items): they run right after the execution (docs/guarantees.md, "A
	// fire that finds its item running").
	SetMisfireExcept(ctx context.Context, except []int) error
	// ClearMisfire deletes the misfire flags of items.
	ClearMisfire(ctx context.Context, items []int) error
	// JoinCatchUp returns sc with this instance's own items whose misfire
	// flag waits (set, the item not running, disabled or claimed for
	// failover) added, or sc itself when there are none: the catch-up run
	// serves both at once. The misfire loop asks it before each catch-up
	// run: it serves only the execution's items (failover items, or some
	// of the instance's only), and the coordination's pump serves the
	// others only once the instance is idle, so a chain of catch-up runs
	// (a long item missing a fire in every run) would hold them back for
	// as long as it lasts.
	JoinCatchUp(ctx context.Context, sc ShardingContexts) (ShardingContexts, error)
	// NeedSharding reports whether resharding is pending (the flag node
	// leader/sharding/necessary exists); a streaming DATAFLOW loop stops
	// when it does.
	NeedSharding(ctx context.Context) (bool, error)
	// FailoverIfNecessary claims crashed items for this instance when it is
	// idle (the enquiry after a run, upstream's
	// FailoverService.failoverIfNecessary).
	FailoverIfNecessary(ctx context.Context) error

	// PreArm is ShardingContexts done before the scheduled time of a fire
	// dispatched ahead (Fire.Ahead), so that the items start at the
	// scheduled time instead of a registry round trip after it, when it
	// can be done without deciding anything that must be decided at the
	// scheduled time: ok is false (and nothing is left to undo) otherwise,
	// and the pipeline calls ShardingContexts at the scheduled time as for
	// any fire. With ok, the items' running nodes exist; RegisterBegin
	// adopts them. An error is one of an undo that left running nodes
	// behind (to recovery).
	PreArm(ctx context.Context) (sc ShardingContexts, ok bool, err error)
	// ConfirmArmed, at the scheduled time, reports whether what PreArm
	// did still holds (the same live session, no resharding flag, the
	// server available, the items still this instance's and neither
	// disabled nor failed over, as the tree cache now shows). When it
	// does not, the pipeline calls Disarm and then ShardingContexts.
	ConfirmArmed(ctx context.Context, sc ShardingContexts) bool
	// Disarm deletes the running nodes PreArm created, if RegisterBegin
	// has not adopted them (what it cannot delete is left to the recovery
	// of this instance's running nodes).
	Disarm(ctx context.Context)
	// Paused reports whether the registry connection is suspended or its
	// session lost (and a channel closed when that ends). A fire
	// dispatched ahead that reaches its scheduled time while it is ends
	// there, as a fire dispatched then is skipped by the kernel.
	Paused() (bool, <-chan struct{})
}
