// Package coord is one job's coordination on one instance, wire-compatible
// with ElasticJob-Lite 3.0.x on ZooKeeper (its lite-core internal services): the
// startup registration, leader election, lazy resharding, failover,
// trigger/shutdown/config reactions, reconcile and connection-loss handling, and
// the executor.Facade the execution pipeline calls on every trigger.
//
// A Job is started by Start, which registers the instance, and stopped by
// Stop (or the end of Start's ctx). The jobs of one client share a
// Namespace (namespace.go): one cache of their subtrees (reg.SharedCache)
// and one subscription to the connection state. A job has no goroutine of
// its own while nothing happens: its event loop is a serial
// queue (queue.go, loop.go) whose goroutine runs only while work is
// queued, and which handles the job subtree's events in order (as
// upstream's ListenerNotify-{job} thread), the re-registrations and the
// pump's and reconcile's timer ticks, one at a time. A second queue only
// flips the pause state on connection changes (registration.go), so
// executions stop at once on Suspended or session loss. After a new
// session the job's queue re-registers the instance and server, re-elects,
// re-queues the cut-off running items for failover and resumes; the tree
// cache re-arms its watches by itself.
//
// Executions run under a lease (lease.go): it ends when the session is lost
// or, while disconnected, presumed expired by the client's clock
// (Options.ExpiryMargin), cancelling running items before another instance
// can take them over. Nodes left by gone instances are swept by the leader
// (staleSweeper, stale.go). See docs/guarantees.md.
//
// Each piece of a job's mutable state has one owner the Job composes: the
// registration (session, lease, pause, re-registration: registration.go),
// the event loop (jobLoop, loop.go), the start and end (lifecycle.go),
// the startup registration, which keeps the local configuration until the registry's
// stands in for it (setUp, startup.go), the leader election with the
// server availability it reads (leadership, election.go, over
// recipe.Election), the data listeners and the reconcile tick the event
// loop runs (listeners, events.go), the failover and misfire pump it runs
// (pump, pump.go), the job's paths with the hot ones of its triggers
// (jobPaths, hotpaths.go), the configuration as this instance knows it
// (configState, configstate.go), the assignment (assignment,
// assignment.go: whether a resharding is pending, this instance's items
// from the tree cache or the server, and the zxid accounting that tells
// which membership changes an assignment already covers), the leader's
// resharding (resharding, resharding.go), the trigger's attempts
// (attempts, attempt.go), the failover protocol (failover, failover.go,
// and recovery.go for this instance's own nodes) with its state
// (failoverState: the claims this process made, when a claim last asked
// for a run, whether cut-off running nodes remain to be recovered), the
// misfire protocol (misfires, misfire.go: the flags, the catch-up runs it
// joins and hands over, the pump's service of flags no execution serves)
// with its state (misfireState, misfirestate.go), the distribute-once
// guarantee (guarantees, guarantee.go) and the stale-node sweep
// (staleSweeper, stale.go, made for each sweep by sweeps, sweeps.go, so an
// idle job does not carry one). What no owner writes after New (the
// client, the paths, the instance id, the logger, the periods, the hooks)
// is one jobBase each owner points to; the failover protocol is made at
// its first use by its failoverSlot (failoverstate.go). New wires each
// owner to the sibling owners it calls, never to the Job, so the attempts,
// the failover protocol and the sweep are each tested alone on the
// embedded registry. The Job holds the owners and implements
// executor.Facade (facade.go, misfire.go, prearm.go, guarantee.go) by
// delegating to them.
//
// Every fire makes one attempt (attempt.go): the tree cache it was
// decided on, the session and lease it begins under, its items and their
// running nodes, with begin, beginChecked, confirm, complete and undo as
// its methods. A trigger decided with reads of the server begins its
// attempt in RegisterBegin; a steady trigger, which the tree cache shows
// (cacheReads, cachereads.go), begins it in ShardingContexts together with
// the stat of leader/sharding (pipeline.go); a pre-armed fire begins it
// that way ahead of its time (prearm.go). RegisterBegin adopts an attempt
// begun ahead, RegisterCompleted completes the running one, and an
// attempt whose execution does not start is undone.
//
// The election is a recipe.Election the Job composes; election.go adds
// ElasticJob's triggers (passive, active, abdication) and the blocking
// wait for a leader. Leader-only writes are fenced (Election.Fenced): the
// sharding result, the reset of old assignments and the deletion of the
// necessary/processing flags commit in one transaction checked against
// this session's leader node; a failover claim commits in one transaction
// checked against the Curator latch node; running nodes are created in one
// transaction checked against this session's instance node and never
// overwrite another instance's.
package coord
