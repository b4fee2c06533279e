package coord

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ejob-io/ejob/core/executor"
)

// The pre-arm (fire-ahead): the trigger loop dispatches a
// steady job's schedule fire a short lead before its scheduled time
// (core/trigger AddAhead, with PreArmLead as the lead), PreArm does then
// what a steady trigger does before its first item (pipelinedContexts: the
// stat of leader/sharding and the running-node transaction, sent
// together, and the contexts from the tree cache), and the executor waits
// for the scheduled time before it goes on (ConfirmArmed, RegisterBegin
// adopting the nodes, the items). On ZooKeeper those two requests cost a
// write's fsync and the server's threads, 4-17 ms after an idle second on
// a 2-core machine (docs/benchmarks.md, "Trigger jitter"); ahead of the
// fire they do not delay the items.
//
// Why this keeps docs/guarantees.md ("Pre-arm" there says it to users):
//
//   - Never two runs of an item at once: the nodes are the same
//     transaction, fenced the same way, as pipelinedContexts's (see its
//     argument in pipeline.go). They exist from up to the lead before the
//     items start; to others the execution starts that much earlier.
//   - Nothing is decided early that must be decided at the fire time.
//     PreArm does nothing unless the trigger is steady as the tree cache
//     shows it (steadyItemsInCache: no flag, claim, catch-up or running
//     node that needs a decision) and the trigger loop dispatches ahead
//     only a job that is idle then (a busy one fires at its time, and its
//     misfire is decided then, as for any fire). When PreArm does not apply
//     (ok false), the executor calls ShardingContexts at the scheduled
//     time, as for any fire.
//   - At the scheduled time ConfirmArmed checks again, on the tree cache as
//     a trigger at that time would, everything it may not have seen: a
//     suspension or session loss, a resharding flag, the server disabled,
//     an item disabled, moved or claimed for failover. Any of them, and
//     the executor deletes the nodes (Disarm) and calls ShardingContexts,
//     which decides as today. What only the stat sees (a flag within one
//     watch delivery) is then older by the lead: a resharding flagged in
//     that window finds the items running, and the leader waits for them
//     as for a run that began just before the flag (it never commits over
//     running nodes), which upstream already allows.
//   - An abandoned fire (shutdown, pause, removal, reschedule, session
//     loss: AwaitScheduled false) has its nodes deleted (Disarm) before the
//     execution returns, so before the trigger loop starts another fire of
//     the job here; on other instances the nodes block the items until
//     then, as a run's would. When the deletion fails, the nodes are left
//     to the recovery of this instance's running nodes (needRecover), as a
//     cut-off run's are; should the executor never come back (a crash),
//     failover takes them as after a crash right after RegisterBegin.
//     Deleting them is attempt.undo: only the nodes that still name this
//     instance.
//   - The items, their ShardingContext, the events, listeners and metrics
//     see the scheduled time: the executor waits before ShardingContexts
//     returns to it.
//   - Failover, catch-up and manual triggers (TriggerSoon, TriggerNow) are
//     never dispatched ahead.

// maxPreArmLead bounds the lead (core/trigger caps it at MaxLead too).
const maxPreArmLead = 50 * time.Millisecond

// preArmSamples is how many recent round trips the lead is computed from.
const preArmSamples = 8

// armLead estimates the lead from the round trips of the job's last
// pipelined begins (stat and running-node transaction, sent together).
// Every steady trigger gets one, on any registry. On ZooKeeper the round
// trip is a write's disk sync. On the embedded registry it is tens of
// microseconds, but jobs firing at one time in one process run their
// registry work one after the other: without a lead, 100 jobs firing each
// second wait up to 1.5 ms for the begins before theirs and start later
// than gocron's (BenchmarkEverySecond100Jobs in core/kernel: fire-to-run
// p50 1.3-1.6 ms against gocron's 1.1-1.3; 0.45-1.04 ms with the lead, for
// a wake-up and a cache round more per fire: docs/benchmarks.md).
type armLead struct {
	mu      sync.Mutex
	samples [preArmSamples]time.Duration
	n       int // samples recorded (the ring holds the last preArmSamples)
	// lead is written under mu and read without it: the trigger loop
	// asks for it each time it plans a fire of the job.
	lead atomic.Int64 // a time.Duration
}

// record adds a round trip and recomputes the lead: twice the slowest of
// the recent round trips plus 1 ms, at most maxPreArmLead (core/trigger
// rounds it up to a power of two of milliseconds, so that jobs due at one
// time are dispatched together).
func (a *armLead) record(d time.Duration) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.samples[a.n%preArmSamples] = d
	a.n++
	a.lead.Store(int64(min(2*slices.Max(a.samples[:min(a.n, preArmSamples)])+time.Millisecond, maxPreArmLead)))
}

// reset forgets the samples: the last trigger was not a steady one. The
// reads (reset, count, get) take a nil armLead as one without samples: a
// job that never fired has none (see attempts.lead).
func (a *armLead) reset() {
	if a == nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.n = 0
	a.lead.Store(0)
}

func (a *armLead) count() int {
	if a == nil {
		return 0
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.n
}

func (a *armLead) get() time.Duration {
	if a == nil {
		return 0
	}
	return time.Duration(a.lead.Load())
}

// PreArmLead is how far ahead of a scheduled fire the trigger loop should
// dispatch it (core/trigger LeadFunc): 0 until a steady trigger has
// pipelined its begin, and whenever the last pre-arm did not apply
// (monitorExecution off, failover work, a resharding: nothing to do
// ahead); else from the round trips of the recent begins (armLead).
func (j *Job) PreArmLead() time.Duration { return j.att.arm.Load().get() }

// lead returns the job's armLead, made at its first steady trigger (an
// idle job carries none).
func (t *attempts) lead() *armLead {
	if a := t.arm.Load(); a != nil {
		return a
	}
	t.arm.CompareAndSwap(nil, &armLead{})
	return t.arm.Load()
}

// PreArm implements executor.Facade: pipelinedContexts ahead of the
// fire, when the trigger is steady (see above). ok false: nothing was
// created, the caller calls ShardingContexts at the scheduled time.
func (j *Job) PreArm(ctx context.Context) (executor.ShardingContexts, bool, error) {
	var none executor.ShardingContexts
	if j.life.checkReady() != nil {
		return none, false, nil
	}
	if paused, _ := j.Paused(); paused || j.ConfigError() != nil {
		return none, false, nil
	}
	catchingUp := j.mf.state().catchingUp()
	cfg, err := j.conf.get(ctx)
	if err != nil || catchingUp || j.fo.state().recovering() {
		j.att.arm.Load().reset()
		return none, false, nil
	}
	j.att.drop(ctx, nil) // of an execution that did not begin
	sent := j.att.arm.Load().count()
	sc, ok, err := j.att.pipelinedContexts(ctx, cfg, j.tc.loaded(), j.batched())
	if !ok && err == nil && j.att.arm.Load().count() == sent {
		j.att.arm.Load().reset() // not steady: no lead until a trigger pipelines again
	}
	return sc, ok, err
}

// ConfirmArmed implements executor.Facade: at the scheduled time, the
// running nodes PreArm created are still recorded under the live lease,
// and the tree cache shows nothing a trigger at this time would decide
// differently on (see above).
func (j *Job) ConfirmArmed(ctx context.Context, sc executor.ShardingContexts) bool {
	if j.life.checkReady() != nil || j.life.shutdown.Load() {
		return false
	}
	if paused, _ := j.Paused(); paused {
		return false
	}
	_, l, err := j.rg.sessionLease()
	if err != nil || !l.live() {
		return false
	}
	held := j.att.confirm(l, sc.Items)
	cache := j.tc.loaded()
	if !held || cache == nil {
		return false
	}
	cfg, err := j.conf.get(ctx)
	if err != nil || !cfg.MonitorExecution {
		return false
	}
	flagged := false
	if found := cache.EachChild(j.paths.flags(), func(string) bool { flagged = true; return false }); !found || flagged {
		return false
	}
	if avail, found := j.att.cr.available(cache); !found || !avail {
		return false
	}
	if !j.att.cr.own(cache, sc.Items) || len(j.att.cr.itemsWith(cache, sc.Items, "disabled")) > 0 {
		return false
	}
	if cfg.Failover && (j.fo.state().hasClaims() || j.att.cr.claimed(cache) || len(j.att.cr.itemsWith(cache, sc.Items, "failover")) > 0) {
		return false
	}
	return true
}

// Disarm implements executor.Facade: the running nodes PreArm created
// are deleted unless RegisterBegin adopted them (attempts.drop).
func (j *Job) Disarm(ctx context.Context) {
	if j.att.drop(ctx, nil) {
		j.log.Debug("running nodes created ahead of an abandoned or changed fire deleted")
	}
}
