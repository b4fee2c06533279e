package coord

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ejob-io/ejob/core/config"
	"github.com/ejob-io/ejob/core/executor"
	"github.com/ejob-io/ejob/core/reg"
)

// Config implements executor.Facade: the configuration from the tree
// cache, else read directly. The result is shared: callers must not
// modify it.
//
// While the registry's config node is invalid (ConfigError), it returns
// that error: nothing runs with a configuration the registry does not
// hold.
func (j *Job) Config(ctx context.Context) (*config.JobConfiguration, error) {
	if err := j.ConfigError(); err != nil {
		return nil, err
	}
	return j.conf.get(ctx) // shared (see configState.parse): callers do not modify it
}

// CheckEnvironment implements executor.Facade
// (LiteJobFacade.checkJobExecutionEnvironment): registry time is the mtime of
// systemTime/current after touching it.
func (j *Job) CheckEnvironment(ctx context.Context) error {
	cfg, err := j.conf.get(ctx)
	if err != nil {
		return err
	}
	maxDiff, on := cfg.MaxTimeDiff()
	if !on {
		return nil
	}
	regTime, err := reg.ServerTime(ctx, j.s.c, j.s.p.SystemTime())
	if err != nil {
		return err
	}
	diff := time.Since(regTime).Abs()
	if diff > maxDiff {
		return fmt.Errorf("%w: Time different between job server and register center exceed '%d' seconds, max time different is '%d' seconds.",
			ErrTimeDiff, int64(diff/time.Second), cfg.MaxTimeDiffSeconds)
	}
	return nil
}

// ShardingContexts implements executor.Facade
// (LiteJobFacade.getShardingContexts). A trigger it refuses because the
// registry connection failed (paused, session or connection lost) is
// owed a catch-up run, as a fire SkipPaused skips.
func (j *Job) ShardingContexts(ctx context.Context) (executor.ShardingContexts, error) {
	sc, err := j.shardingContexts(ctx)
	if err != nil {
		j.missedOn(ctx, err)
	}
	return sc, err
}

// batched is how a trigger sends its stat and running-node transaction:
// batched with the host's other jobs' on a remote registry (see batched).
// The namespace is set before the instance is ready (checkReady).
func (j *Job) batched() batched {
	bt := batched{c: j.s.c}
	if !j.att.inProcess {
		bt.reads, bt.writes = j.life.ns.reads, j.life.ns.writes
	}
	return bt
}

func (j *Job) shardingContexts(ctx context.Context) (executor.ShardingContexts, error) {
	if err := j.life.checkReady(); err != nil {
		return executor.ShardingContexts{}, err
	}
	if paused, _ := j.Paused(); paused {
		return executor.ShardingContexts{}, ErrPaused
	}
	if err := j.ConfigError(); err != nil {
		return executor.ShardingContexts{}, err
	}
	cfg, err := j.conf.get(ctx)
	if err != nil {
		return executor.ShardingContexts{}, err
	}
	j.att.drop(ctx, nil) // of an execution that did not begin
	if _, err := j.fo.made.Load().recoverIfIdle(ctx); err != nil {
		j.log.Warn("recover running items of a cut-off execution failed", "error", err)
	}
	cache := j.tc.loaded()
	bt := j.batched()
	if sc, ok, err := j.att.pipelinedContexts(ctx, cfg, cache, bt); ok || err != nil {
		return sc, err
	}
	var (
		settled bool
		pzxid   int64
		busy    bool // every claimed item ran elsewhere
	)
	for {
		if cfg.Failover {
			fi, err := j.fo.get().localFailoverItems(ctx, j.tc.view)
			if err != nil {
				return executor.ShardingContexts{}, wrap("failover items", err)
			}
			if len(fi) > 0 {
				sc, _, err := j.att.contexts(ctx, cache, fi)
				if err != nil {
					return executor.ShardingContexts{}, err
				}
				if len(sc.Items) > 0 {
					// This execution runs failover items only: a pending
					// catch-up of own items waits for the next one (their
					// flags back).
					if err := j.mf.handOver(ctx, nil); err != nil {
						return executor.ShardingContexts{}, err
					}
					sc.Failover = true
					return sc, nil
				}
				// Every claimed item runs elsewhere (its owner kept its
				// session and runs it again): the claims wait for that
				// run to end, and this trigger runs the instance's own
				// items, which an empty failover execution would leave
				// waiting as long as the owner keeps the claimed items
				// busy.
				j.log.Debug("claimed failover items run elsewhere; this trigger runs the instance's own items", "claimed", fi)
				busy = true
			}
		}
		// A non-leader waits here until the leader reshards, which it does
		// at its next execution. Items this instance claims for failover
		// meanwhile run now instead (upstream waits, so a claimed item
		// waits for a busy leader's next fire).
		var err error
		settled, pzxid, err = j.rsh.shardingIfNecessary(ctx, bt)
		if errors.Is(err, errClaimedWhileWaiting) {
			continue
		}
		if err != nil {
			return executor.ShardingContexts{}, err
		}
		if busy && !settled {
			// A resharding was pending and this trigger waited for it.
			// The leader commits only once nothing runs, so the runs that
			// kept the claimed items busy have ended: the claims are looked
			// at again, or they would wait for the own items' runs and
			// every catch-up after them.
			busy, cache = false, j.tc.loaded()
			continue
		}
		break
	}
	items, err := j.asg.triggerItems(ctx, cache, cfg.ShardingTotalCount, settled, pzxid)
	if err != nil {
		return executor.ShardingContexts{}, wrap("local items", err)
	}
	if err := j.mf.handOver(ctx, items); err != nil {
		return executor.ShardingContexts{}, err
	}
	// The failover and disabled flags come from the tree cache when there
	// is one (upstream checks them on the server; a flag the cache shows is
	// confirmed there, see itemsWithCached). A flag set a moment ago,
	// within one watch delivery, may be missed, as one set just after
	// upstream's read is: a disabled item then runs this once more, and an
	// item claimed for failover elsewhere meets that run's running node in
	// the running-node transaction (RegisterBegin), so it never runs twice
	// at once.
	var takeOff []int
	if cfg.Failover {
		if takeOff, err = j.att.cr.itemsWithCached(ctx, cache, items, "failover"); err != nil {
			return executor.ShardingContexts{}, err
		}
		items = without(items, takeOff)
	}
	disabled, err := j.att.cr.itemsWithCached(ctx, cache, items, "disabled")
	if err != nil {
		return executor.ShardingContexts{}, err
	}
	sc, running, err := j.att.contexts(ctx, cache, without(items, disabled))
	if err != nil {
		return sc, err
	}
	if len(takeOff) > 0 && cfg.MonitorExecution {
		r, err := j.att.cr.runningItems(ctx, cache, takeOff)
		if err != nil {
			return executor.ShardingContexts{}, err
		}
		running = append(running, r...)
	}
	if len(running) == 0 {
		return sc, nil
	}
	// Own items running elsewhere (a failover run on another instance, or
	// the node of an instance that is gone): upstream skips them silently
	// and this trigger is lost for them. Their misfire flags make the
	// instance running them catch it up right after (its misfire loop),
	// or the crash handling hand them to failover (queueMisfire).
	if err := j.mf.set(ctx, running); err != nil {
		return executor.ShardingContexts{}, err
	}
	j.log.Info("items running elsewhere at this trigger; their misfire flags are set", "items", running)
	return sc, nil
}

// errClaimedWhileWaiting: an execution waiting for the leader's resharding
// stops waiting because this instance claimed failover items meanwhile.
var errClaimedWhileWaiting = errors.New("coord: failover items claimed while waiting for resharding")

// MisfireIfRunning implements executor.Facade.
func (j *Job) MisfireIfRunning(ctx context.Context, items []int) (bool, error) {
	if j.att.pendingFor(items) {
		return false, nil // this execution's running nodes (pipelinedContexts)
	}
	cfg, err := j.conf.get(ctx)
	if err != nil || !cfg.MonitorExecution {
		return false, err
	}
	running, err := j.att.cr.runningItems(ctx, j.tc.loaded(), items)
	if err != nil || len(running) == 0 {
		return false, err
	}
	return true, j.mf.set(ctx, items)
}

// RegisterBegin implements executor.Facade: it adopts the attempt a
// steady trigger began (pipelinedContexts), or begins one (attempt.begin:
// with monitorExecution every item's running node in one transaction
// fenced on this instance's node in its current session). It writes
// nothing when the session is gone (ErrSessionLost) or when an item
// already runs elsewhere (ErrItemRunning). A stale running node of this
// instance is replaced. A run it refuses because the registry connection
// failed is owed a catch-up run, as a fire SkipPaused skips.
func (j *Job) RegisterBegin(ctx context.Context, sc executor.ShardingContexts) error {
	err := j.registerBegin(ctx, sc)
	if err != nil {
		j.missedOn(ctx, err)
	}
	return err
}

func (j *Job) registerBegin(ctx context.Context, sc executor.ShardingContexts) error {
	_, l, _ := j.rg.sessionLease()
	if a := j.att.adopt(ctx, l, sc.Items); a != nil {
		a.putFencingTokens(sc)
		return nil // created with the trigger's resharding check
	}
	cfg, err := j.conf.get(ctx)
	if err != nil {
		return err
	}
	s, l, err := j.rg.sessionLease()
	if err != nil {
		return err
	}
	a := j.att.start(j.tc.loaded(), s, l)
	a.items = sc.Items
	err = a.begin(ctx, cfg)
	if errors.Is(err, ErrItemRunning) {
		j.mf.restoreJoined(ctx, sc)
	}
	if err == nil {
		a.putFencingTokens(sc)
	}
	return err
}

// RegisterCompleted implements executor.Facade: it completes the running
// execution's attempt (attempt.complete: the items' running nodes, and
// with failover their failover and failovering nodes, only those that
// name this instance). An execution cut off by a session loss, or by a
// presumed expiry (its ctx was cancelled), is interrupted: it returns an
// error wrapping ErrSessionLost and, when this instance is registered
// again, queues the items for failover (failover on) and deletes their
// running nodes; otherwise that happens once it is registered again.
// Nothing is deleted when the job is shutting down with failover on (the
// items are then failed over by the survivors).
func (j *Job) RegisterCompleted(ctx context.Context, sc executor.ShardingContexts, failed []int) error {
	defer j.att.done()
	a := j.att.finish()
	if cause, cut := a.cutOff(j.s.c.Session()); cut {
		j.fo.leaveToRecovery()
		j.loop.armPump()
		if _, _, err := j.rg.sessionLease(); err == nil {
			flagged, rerr := j.fo.get().recoverOwnRunning(ctx, sc.Items)
			if rerr != nil {
				j.log.Warn("recover cut-off items failed; retrying when idle", "items", sc.Items, "error", rerr)
			}
			if flagged {
				// The enquiry after this execution claims them (executor
				// step 8); the latch makes one instance win.
				j.log.Info("execution was cut off; its items are queued for failover", "items", sc.Items)
			}
		}
		if errors.Is(cause, ErrSessionLost) {
			return fmt.Errorf("register completed: execution cut off: %w", cause)
		}
		return fmt.Errorf("register completed: execution cut off: %w: %w", ErrSessionLost, cause)
	}
	cfg, err := j.conf.get(ctx)
	if err != nil {
		return err
	}
	if j.life.shutdown.Load() && cfg.Failover && cfg.MonitorExecution {
		// Cut off by a shutdown: the running nodes stay so that the
		// survivors fail the items over when the instance node goes.
		j.log.Info("execution ended during shutdown; leaving its items for failover", "items", sc.Items)
		return nil
	}
	return a.complete(ctx, sc.Items, cfg)
}

// LocalItems returns this instance's assigned items (no resharding), for
// SetMisfire.
func (j *Job) LocalItems(ctx context.Context) ([]int, error) { return j.asg.localItems(ctx) }

// NeedSharding implements executor.Facade.
func (j *Job) NeedSharding(ctx context.Context) (bool, error) {
	return j.s.exists(ctx, j.s.p.ShardingNecessary())
}

// FailoverIfNecessary implements executor.Facade.
func (j *Job) FailoverIfNecessary(ctx context.Context) error {
	cfg, err := j.conf.get(ctx)
	if err != nil || !cfg.Failover {
		return err
	}
	// Queued items the tree cache does not show yet (queued within one
	// watch delivery) are claimed by the pump, which their tree event
	// wakes (within a failover tick), as are items queued just after this
	// enquiry.
	if cache := j.tc.loaded(); cache != nil && !j.att.cr.failoverQueued(cache) {
		return nil
	}
	return j.fo.get().failoverIfNecessary(ctx)
}
