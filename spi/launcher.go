package spi

import (
	"context"
	"time"
)

// LaunchApp is where a cloud job's code lives and how it starts (an
// ElasticJob-Cloud app).
type LaunchApp struct {
	Name string
	// Image is a container image to run; when empty, AppURL is fetched
	// (a tar.gz, unpacked, or a single file) into the item's working
	// directory and BootstrapScript runs there.
	Image           string
	AppURL          string
	BootstrapScript string
	// AppCacheEnable lets the launcher keep what AppURL fetched across
	// runs where it can.
	AppCacheEnable bool
	// CPUCount and MemoryMB are the app's own resources, added to each
	// item's.
	CPUCount float64
	MemoryMB float64
}

// LaunchJob is the job a fire belongs to.
type LaunchJob struct {
	Name string
	// ExecutionType is TRANSIENT (each item runs once and ends) or
	// DAEMON (each item runs until stopped, firing on Cron in-process).
	ExecutionType string
	Cron          string
	// ShardingTotalCount is the number of items of the job.
	ShardingTotalCount int
	// CPUCount and MemoryMB are what each item needs (the app's come on
	// top).
	CPUCount float64
	MemoryMB float64
	// JobParameter is passed to every item; ShardingItemParameters maps
	// an item to its parameter.
	JobParameter           string
	ShardingItemParameters map[int]string
	Props                  map[string]string
}

// LaunchNodePlaceholder stands, in the values of a LaunchItem's Env, for
// the node the item runs on: the scheduler issues an item's task id
// before the cluster places it, so the task id in its environment names
// this placeholder where upstream's names the slave, and the launcher
// replaces it with the node's name (the ItemStatus.Node it reports) in
// the process that runs the item.
const LaunchNodePlaceholder = "{{ejob.node}}"

// LaunchItem is one sharding item of a fire.
type LaunchItem struct {
	Item int
	// Env is the item's environment (its sharding context, see the cloud
	// documentation), set verbatim in the process that runs it, except
	// that every LaunchNodePlaceholder becomes the item's node.
	Env map[string]string
}

// LaunchRequest launches one fire of a job: some or all of its items.
type LaunchRequest struct {
	// Config is the launcher's settings (for Kubernetes: kubeconfig,
	// context, namespace, ...). It travels with every call.
	Config map[string]string
	// FireID names the fire; it is unique per fire, lower-case letters,
	// digits and '-', at most 40 characters. A failover fire has its own.
	FireID string
	// ExecutionType is READY (a cron fire or a trigger) or FAILOVER (items
	// of an earlier fire re-run).
	ExecutionType string
	App           LaunchApp
	Job           LaunchJob
	Items         []LaunchItem
	// Labels are to be attached to what runs the items (the scheduler
	// sets app, job and fire).
	Labels map[string]string
}

// LaunchResponse acknowledges a launch.
type LaunchResponse struct{}

// ItemState is where a launched item is.
type ItemState string

// The states of a launched item. Succeeded, Failed and Lost are final.
const (
	// ItemReady: waiting for room (or being fetched); Reason says why.
	ItemReady ItemState = "ready"
	// ItemRunning: the item's process runs.
	ItemRunning ItemState = "running"
	// ItemSucceeded: the item's process exited 0.
	ItemSucceeded ItemState = "succeeded"
	// ItemFailed: the item's process failed, after the launcher's own
	// retries; the launcher does not run it again.
	ItemFailed ItemState = "failed"
	// ItemLost: the item's process or the node it ran on went away and
	// the launcher does not run it again in this fire.
	ItemLost ItemState = "lost"
)

// Final reports whether s is a final state.
func (s ItemState) Final() bool {
	return s == ItemSucceeded || s == ItemFailed || s == ItemLost
}

// ItemStatus is one launched item as the launcher sees it.
type ItemStatus struct {
	JobName string
	FireID  string
	Item    int
	State   ItemState
	// Reason says why an item is ready (e.g. the cluster scheduler's
	// "0/2 nodes are available: 2 Insufficient cpu"), failed or lost.
	Reason string
	// Node is where the item runs or ran ("" while unplaced); Name is the
	// launcher's name for what runs it (a pod).
	Node, Name string
	// ExitCode is the process's exit status once it ended (-1 unknown).
	ExitCode int
	// Started and Finished are zero until known.
	Started, Finished time.Time
	// Idle: a DAEMON item that runs but is between two fires (upstream's
	// BEGIN and COMPLETE messages); false while a fire runs, and for a
	// TRANSIENT item. Fires counts the DAEMON item's completed fires.
	// Both are what the item reported to the launcher (see the cloud
	// documentation); a launcher that cannot learn them leaves them zero.
	Idle  bool
	Fires int
}

// LaunchListRequest asks what the launcher holds.
type LaunchListRequest struct {
	Config map[string]string
	// JobName filters when non-empty.
	JobName string
}

// LaunchList is every item of every fire the launcher holds: running,
// waiting, and finished ones it keeps for its retention.
type LaunchList struct {
	Items []ItemStatus
}

// LaunchStopRequest stops what runs.
type LaunchStopRequest struct {
	Config  map[string]string
	JobName string
	// FireID stops one fire; empty stops every fire of JobName.
	FireID string
}

// LaunchStopResponse counts the items that were stopped.
type LaunchStopResponse struct {
	Stopped int
}

// LaunchValidateRequest asks whether a launcher's settings are usable.
type LaunchValidateRequest struct {
	Config map[string]string
}

// Launcher runs a cloud job's items where there is room for them (a
// Kubernetes cluster, for instance), named by the cloud scheduler's
// ejob.cloud.launcher.type.
//
// Caller: the leading `ejob cloud` scheduler, from one goroutine at a time
// per job (calls for different jobs may run concurrently). Validate is
// called once when the scheduler loads its configuration. Launch is called
// once per fire (and again with the same FireID when an earlier call's
// outcome is unknown); List every few seconds; Stop when a job is
// disabled, updated or deregistered, and for a fire the scheduler does not
// know (left over by a scheduler that died).
//
// Contract: Launch returns once the fire is accepted (not when its items
// run); a second Launch of a FireID the launcher holds changes nothing and
// returns nil. Each item runs with Env set (LaunchNodePlaceholder replaced
// by its node) and the app's resources plus
// the job's per item requested; an item that waits for room is
// ItemReady with the reason. An item is reported Failed or Lost only when
// the launcher will not run it again in that fire; the scheduler re-runs
// it as a new FAILOVER fire when the job asks for failover, so a launcher
// must never run an item again after reporting it final. List reports
// every item of every fire it still holds, labelled with JobName and
// FireID; a fire whose items are all final may be dropped after a
// retention. Stop ends the matching items (their processes are gone when
// it returns, or are being deleted and never run again), forgets them, and
// is a no-op for what is not there. A bad Config is an error wrapping
// ErrInvalidConfig naming the setting; a request the launcher cannot run
// (an app with neither Image nor AppURL it supports) wraps
// ErrInvalidConfig or ErrUnsupported. Every method returns soon after ctx
// is cancelled.
type Launcher interface {
	Validate(ctx context.Context, req LaunchValidateRequest) error
	Launch(ctx context.Context, req LaunchRequest) (LaunchResponse, error)
	List(ctx context.Context, req LaunchListRequest) (LaunchList, error)
	Stop(ctx context.Context, req LaunchStopRequest) (LaunchStopResponse, error)
}
