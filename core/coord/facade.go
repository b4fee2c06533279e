package coord

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ejob-io/ejob/core/config"
	"github.com/ejob-io/ejob/core/executor"
	"github.com/ejob-io/ejob/core/instance"
	"github.com/ejob-io/ejob/core/reg"
)

func (j *Job) checkReady() error {
	if !j.ready.Load() {
		return ErrNotReady
	}
	if j.shutdown.Load() {
		return ErrShutdown
	}
	return nil
}

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
	return j.config(ctx) // shared (see configState.parse): callers do not modify it
}

// CheckEnvironment implements executor.Facade
// (LiteJobFacade.checkJobExecutionEnvironment): registry time is the mtime of
// systemTime/current after touching it.
func (j *Job) CheckEnvironment(ctx context.Context) error {
	cfg, err := j.config(ctx)
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
// (LiteJobFacade.getShardingContexts).
func (j *Job) ShardingContexts(ctx context.Context) (executor.ShardingContexts, error) {
	if err := j.checkReady(); err != nil {
		return executor.ShardingContexts{}, err
	}
	if paused, _ := j.Paused(); paused {
		return executor.ShardingContexts{}, ErrPaused
	}
	if err := j.ConfigError(); err != nil {
		return executor.ShardingContexts{}, err
	}
	cfg, err := j.config(ctx)
	if err != nil {
		return executor.ShardingContexts{}, err
	}
	j.att.drop(ctx, nil) // of an execution that did not begin
	if _, err := j.fo.Load().recoverIfIdle(ctx); err != nil {
		j.log.Warn("recover running items of a cut-off execution failed", "error", err)
	}
	cache := j.treeCache()
	if sc, ok, err := j.pipelinedContexts(ctx, cfg, cache); ok || err != nil {
		return sc, err
	}
	var (
		settled bool
		pzxid   int64
	)
	for {
		if cfg.Failover {
			fi, err := j.failover().localFailoverItems(ctx, j.cache)
			if err != nil {
				return executor.ShardingContexts{}, wrap("failover items", err)
			}
			if len(fi) > 0 {
				// This execution runs failover items only: a pending catch-up
				// of own items waits for the next one (their flags back).
				if err := j.mf.handOver(ctx, nil); err != nil {
					return executor.ShardingContexts{}, err
				}
				sc, _, err := j.contexts(ctx, cache, fi)
				sc.Failover = true
				return sc, err
			}
		}
		// A non-leader waits here until the leader reshards, which it does
		// at its next execution. Items this instance claims for failover
		// meanwhile run now instead (upstream waits, and a claimed item
		// waited for a busy leader's next fire: chaos seed 11).
		var err error
		settled, pzxid, err = j.rsh.shardingIfNecessary(ctx)
		if errors.Is(err, errClaimedWhileWaiting) {
			continue
		}
		if err != nil {
			return executor.ShardingContexts{}, err
		}
		break
	}
	items, err := j.triggerItems(ctx, cache, cfg.ShardingTotalCount, settled, pzxid)
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
		if takeOff, err = j.itemsWithCached(ctx, cache, items, "failover"); err != nil {
			return executor.ShardingContexts{}, err
		}
		items = without(items, takeOff)
	}
	disabled, err := j.itemsWithCached(ctx, cache, items, "disabled")
	if err != nil {
		return executor.ShardingContexts{}, err
	}
	sc, running, err := j.contexts(ctx, cache, without(items, disabled))
	if err != nil {
		return sc, err
	}
	if len(takeOff) > 0 && cfg.MonitorExecution {
		r, err := j.runningItems(ctx, cache, takeOff)
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

// triggerItems are this instance's items for a trigger: from the tree
// cache when shardingIfNecessary found the assignment settled and the
// cache shows it (assignment.cached, cacheReads.available), else read from the
// registry as upstream does.
func (j *Job) triggerItems(ctx context.Context, cache *reg.CacheView, total int, settled bool, pzxid int64) ([]int, error) {
	if !settled || cache == nil {
		return j.localShardingItems(ctx)
	}
	if j.shutdown.Load() {
		return nil, nil
	}
	avail, ok := j.cr.available(cache)
	if !ok {
		if avail, err := j.ldr.isAvailableServer(ctx, j.ip); err != nil || !avail {
			return nil, err
		}
	} else if !avail {
		return nil, nil
	}
	if items, ok := j.asg.cached(cache, total, pzxid); ok && !j.shutdown.Load() {
		return items, nil
	}
	return j.asg.read(ctx, cache, total, pzxid)
}

// itemsWithCached is itemsWith for the items the tree cache shows with
// the node: the cache's no is taken as is (the caller says why a stale
// no is harmless), its yes is confirmed on the server, since it makes the
// trigger skip or flag an item (the cache may not yet show a deletion,
// this instance's own included).
func (j *Job) itemsWithCached(ctx context.Context, cache *reg.CacheView, items []int, name string) ([]int, error) {
	if cache != nil {
		items = j.cr.itemsWith(cache, items, name)
	}
	return j.s.itemsWith(ctx, items, name)
}

// runningItems are the items among items that run: those cacheReads.running
// shows running, confirmed on the server (or all read from the registry
// without a cache).
func (j *Job) runningItems(ctx context.Context, cache *reg.CacheView, items []int) ([]int, error) {
	if cache != nil {
		items = j.cr.running(cache, items)
	}
	return j.s.itemsWith(ctx, items, "running")
}

// errClaimedWhileWaiting: an execution waiting for the leader's resharding
// stops waiting because this instance claimed failover items meanwhile.
var errClaimedWhileWaiting = errors.New("coord: failover items claimed while waiting for resharding")

// contexts is ExecutionContextService.getJobShardingContext; it also
// returns the items it dropped because they run (monitorExecution).
//
// The config comes from the tree cache (upstream reads it from the
// server here): a change of the config made within one watch delivery of
// the trigger applies from the next one, as one made just after the read
// would. A change of shardingTotalCount takes effect through a resharding,
// whose flag shardingIfNecessary reads fresh.
func (j *Job) contexts(ctx context.Context, cache *reg.CacheView, items []int) (executor.ShardingContexts, []int, error) {
	cfg, err := j.config(ctx)
	if err != nil {
		return executor.ShardingContexts{}, nil, err
	}
	var running []int
	if cfg.MonitorExecution {
		running, err = j.runningItems(ctx, cache, items)
		if err != nil {
			return executor.ShardingContexts{}, nil, err
		}
		items = without(items, running)
	}
	params, err := j.conf.itemParameters(cfg.ShardingItemParameters)
	if err != nil {
		return executor.ShardingContexts{}, nil, err
	}
	sc := executor.ShardingContexts{
		TaskID:                 instance.NewTaskID(cfg.JobName, items, j.id),
		JobName:                cfg.JobName,
		ShardingTotalCount:     cfg.ShardingTotalCount,
		JobParameter:           cfg.JobParameter,
		Items:                  append([]int{}, items...),
		ShardingItemParameters: map[int]string{},
		FencingTokens:          map[int]int64{},
	}
	for _, i := range items {
		if p, ok := params[i]; ok {
			sc.ShardingItemParameters[i] = p
		}
	}
	return sc, running, nil
}

// MisfireIfRunning implements executor.Facade.
func (j *Job) MisfireIfRunning(ctx context.Context, items []int) (bool, error) {
	if j.att.pendingFor(items) {
		return false, nil // this execution's running nodes (pipelinedContexts)
	}
	cfg, err := j.config(ctx)
	if err != nil || !cfg.MonitorExecution {
		return false, err
	}
	running, err := j.runningItems(ctx, j.treeCache(), items)
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
// instance is replaced.
func (j *Job) RegisterBegin(ctx context.Context, sc executor.ShardingContexts) error {
	_, l, _ := j.sessionLease()
	if a := j.att.adopt(ctx, l, sc.Items); a != nil {
		a.putFencingTokens(sc)
		return nil // created with the trigger's resharding check
	}
	cfg, err := j.config(ctx)
	if err != nil {
		return err
	}
	s, l, err := j.sessionLease()
	if err != nil {
		return err
	}
	a := j.att.start(j.treeCache(), s, l)
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
		j.setNeedRecover()
		if _, err := j.session(); err == nil {
			flagged, rerr := j.failover().recoverOwnRunning(ctx, sc.Items)
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
	cfg, err := j.config(ctx)
	if err != nil {
		return err
	}
	if j.shutdown.Load() && cfg.Failover && cfg.MonitorExecution {
		// Cut off by a shutdown: the running nodes stay so that the
		// survivors fail the items over when the instance node goes.
		j.log.Info("execution ended during shutdown; leaving its items for failover", "items", sc.Items)
		return nil
	}
	return a.complete(ctx, sc.Items, cfg)
}

// LocalItems returns this instance's assigned items (no resharding), for
// SetMisfire.
func (j *Job) LocalItems(ctx context.Context) ([]int, error) { return j.localShardingItems(ctx) }

// NeedSharding implements executor.Facade.
func (j *Job) NeedSharding(ctx context.Context) (bool, error) {
	return j.s.exists(ctx, j.s.p.ShardingNecessary())
}

// FailoverIfNecessary implements executor.Facade.
func (j *Job) FailoverIfNecessary(ctx context.Context) error {
	cfg, err := j.config(ctx)
	if err != nil || !cfg.Failover {
		return err
	}
	// Queued items the tree cache does not show yet (queued within one
	// watch delivery) are claimed by the pump, which their tree event
	// wakes (within a failover tick), as are items queued just after this
	// enquiry.
	if cache := j.treeCache(); cache != nil && !j.cr.failoverQueued(cache) {
		return nil
	}
	return j.failover().failoverIfNecessary(ctx)
}
