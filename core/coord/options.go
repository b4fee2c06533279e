package coord

import (
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ejob-io/ejob/core/config"
	"github.com/ejob-io/ejob/core/reg"
	"github.com/ejob-io/ejob/spi"
)

// Options configure a Job. Client, Config, InstanceID, ServerIP and
// Strategies are required.
type Options struct {
	Client reg.Client
	// Config is the local configuration; the registry's wins at startup
	// unless it is absent or Config.Overwrite (setUpJobConfiguration). The job
	// keeps it (it may run with it): the caller must not modify it after New.
	Config *config.JobConfiguration
	// JobClassName is written to the job root node (the Java class name or
	// the job type, e.g. "SCRIPT"); startup fails with config.ErrJobConflict
	// when the root holds another non-blank value.
	JobClassName string
	// InstanceID is "ip@-@pid"; ServerIP its IPv4 prefix.
	InstanceID string
	ServerIP   string
	// Strategies resolves a sharding strategy type name (already defaulted
	// to AVG_ALLOCATION when empty).
	Strategies func(typeName string) (spi.ShardingStrategy, error)
	Logger     hclog.Logger

	// OnTrigger asks the scheduler to run the job once now (failover claim,
	// catch-up of a missed fire, trigger node), or right after an
	// execution in progress: a claim made by the failover enquiry at the
	// end of an execution comes while it still runs, and its item runs
	// right after it only if the request is kept (core/kernel keeps it;
	// a scheduler that drops it delays claimed items to the pump, which
	// asks again a failover tick later). Called from the job's
	// queue or from inside an execution: must not block.
	OnTrigger func()
	// OnCatchUp asks the scheduler for the one run that catches up the
	// fires skipped while executions were paused (SkipPaused), when the
	// pause ends: now when the job is idle, else right after the execution
	// in progress, as OnTrigger. The run is a trigger like any other (its
	// sharding contexts, failover claims first, running nodes); its fire
	// stands for the schedule's skipped fires, not a manual one. Called
	// from the job's queue, its connection queue or an execution: must not
	// block. Unset: OnTrigger.
	OnCatchUp func()
	// OnReschedule reports a changed cron or time zone in the config node.
	OnReschedule func(cron, timeZone string)
	// OnShutdown reports that the console shut this instance down (its
	// instance node was deleted by someone else); the job then stops
	// (OnStopped(nil) once it has).
	OnShutdown func()
	// OnStopped reports an end of the job that Stop or the end of Start's
	// ctx did not ask for, once everything of the job has ended: nil after
	// a shutdown from the console, else why (the Namespace stopped: the
	// client closed). Never called when Start failed. It must not wait
	// for Stop or Done (they wait for it).
	OnStopped func(error)
	// Namespace is the machinery shared with the other jobs of the same
	// client (one tree cache and one connection subscription); it must be
	// running while the job runs. Nil: the job makes and runs its own.
	Namespace *Namespace

	// Hooks, if set, is told what the On* functions above and below are
	// (OnEvent aside), instead of them: a scheduler of many jobs passes
	// each job's own value rather than a closure per hook and job.
	Hooks Hooks

	// OnEvent, if set, observes every tree event after the job handled it
	// (on the job's queue; tests use it as a barrier, hosts for metrics).
	OnEvent func(path string)
	// OnFailover, if set, is told of each crashed instance's item this
	// instance claimed to run (metrics).
	OnFailover func(item int)
	// OnResharded, if set, is told when this instance, as leader,
	// committed a new assignment of the items (metrics).
	OnResharded func()

	// PollInterval is the period of upstream's 100 ms busy waits
	// (default 100 ms).
	PollInterval time.Duration
	// ReconcileTick is the period of the reconcile check (default 1 min).
	ReconcileTick time.Duration
	// ShutdownGrace bounds how long a clean shutdown waits for the local
	// execution to end (RegisterCompleted) before deleting the instance
	// node, so that survivors never fail items over while they still run
	// here (default 10 s).
	ShutdownGrace time.Duration
	// ReconcileUnit is the length of one reconcileIntervalMinutes unit
	// (default 1 min; tests shorten it).
	ReconcileUnit time.Duration
	// ExpiryMargin is how long before the session may expire (its
	// reg.Session.ExpiryDeadline: last contact with the server plus the
	// negotiated timeout) the running items' ctx is cancelled while the
	// connection is down, so job code stops before another instance can
	// take its items over. It must cover the time job code needs to stop
	// plus one network round trip. Default: a third of the negotiated
	// session timeout. A margin at least the timeout cancels at once on
	// suspension.
	ExpiryMargin time.Duration
}

// Hooks are the job's calls to its scheduler, as Options' On* functions
// describe them: Trigger is OnTrigger, CatchUp OnCatchUp, Reschedule
// OnReschedule, Shutdown OnShutdown, Stopped OnStopped, FailedOver
// OnFailover, Resharded OnResharded.
type Hooks interface {
	Trigger()
	CatchUp()
	Reschedule(cron, timeZone string)
	Shutdown()
	Stopped(err error)
	FailedOver(item int)
	Resharded()
}

// funcHooks are Options' On* functions as Hooks (an unset one does
// nothing).
type funcHooks struct {
	trigger, catchUp, shutdown, resharded func()
	reschedule                            func(cron, timeZone string)
	stopped                               func(error)
	failedOver                            func(int)
}

func (h *funcHooks) Trigger() {
	if h.trigger != nil {
		h.trigger()
	}
}

func (h *funcHooks) CatchUp() {
	if h.catchUp == nil {
		h.Trigger()
		return
	}
	h.catchUp()
}

func (h *funcHooks) Reschedule(cron, timeZone string) {
	if h.reschedule != nil {
		h.reschedule(cron, timeZone)
	}
}

func (h *funcHooks) Shutdown() {
	if h.shutdown != nil {
		h.shutdown()
	}
}

func (h *funcHooks) Stopped(err error) {
	if h.stopped != nil {
		h.stopped(err)
	}
}

func (h *funcHooks) FailedOver(item int) {
	if h.failedOver != nil {
		h.failedOver(item)
	}
}

func (h *funcHooks) Resharded() {
	if h.resharded != nil {
		h.resharded()
	}
}

// hooks returns o.Hooks, or o's On* functions as Hooks.
func (o *Options) hooks() Hooks {
	if o.Hooks != nil {
		return o.Hooks
	}
	return &funcHooks{trigger: o.OnTrigger, catchUp: o.OnCatchUp, shutdown: o.OnShutdown, resharded: o.OnResharded,
		reschedule: o.OnReschedule, stopped: o.OnStopped, failedOver: o.OnFailover}
}
