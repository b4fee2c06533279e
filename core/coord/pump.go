package coord

import (
	"context"
	"time"
)

// failoverTick is the period of pump.
func (j *Job) failoverTick() time.Duration { return j.poll * 5 }

// wakePump asks the job's queue to run the pump a failoverTick from now,
// for a change of state the tree cache does not show (needRecover,
// misfireState's deferral). Tree events wake it by themselves.
func (j *Job) wakePump() { j.armPump() }

// setNeedRecover notes that running nodes of a cut-off execution may
// remain, for the pump to clear.
func (j *Job) setNeedRecover() {
	j.failover().needRecover.Store(true)
	j.wakePump()
}

// pumpWanted reports whether the pump may still have something to do, so
// its timer must keep running: each case pump acts on, read from local
// state and the tree cache. It errs on the side of ticking (a paused or
// running instance whose case holds keeps ticking, as the pump then only
// waits). When it reports false, only a tree event or wakePump ticks the
// pump again.
func (j *Job) pumpWanted() bool {
	if j.cache == nil || j.shutdown.Load() {
		return false
	}
	cfg := j.conf.cur.Load()
	failover, misfire := cfg == nil || cfg.Failover, cfg == nil || cfg.Misfire
	// The cache counts the job's flags (node.Job.IsFlag): with none, the
	// cases read from the cache cannot hold, and the pump's tick after
	// every trigger looks nothing up.
	n, counted := j.cache.Counted()
	flags := !counted || n > 0
	if failover {
		if j.foState().recovering() || flags && (j.cr.claimed(j.cache) || j.cr.failoverQueued(j.cache)) {
			return true
		}
	}
	if j.mf.state().deferred() {
		return true
	}
	// A sighting (misfireState.sighted): the next tick clears it or acts on it.
	return misfire && (j.mf.state().sighting() || flags && len(j.cr.misfired(j.cache)) > 0)
}

// pump runs on the event loop a failoverTick after a tree event or a
// wakePump, and every failoverTick while pumpWanted (better than
// upstream, whose claims happen only on a crash event and after an
// execution, so a queued item can wait for a cron fire or forever). While
// this instance is idle and registered, it
//   - with failover on, clears the running nodes an execution cut off by a
//     (presumed) session loss left, queuing them for failover
//     (recoverIfIdle);
//   - with failover on, asks the scheduler again to run the items it has
//     claimed (sharding/i/failover = me) when the claim's trigger did not
//     run them (see trigger), or else claims one queued item
//     (leader/failover/items non-empty);
//   - otherwise, with misfire on, runs its own items whose missed fire no
//     execution served (misfires.runPending).
//
// It reads the tree cache first, so an idle tick costs no registry call.
func (j *Job) pump(ctx context.Context) error {
	if j.cache == nil || j.shutdown.Load() {
		return nil
	}
	if j.att.running.Load() {
		j.mf.state().clearSighting()
		return nil
	}
	if _, err := j.session(); err != nil {
		return nil // paused or not registered: reRegister resumes first
	}
	cfg, err := j.config(ctx)
	if err != nil {
		return err
	}
	if cfg.Failover {
		if j.foState().recovering() {
			if _, err := j.recoverIfIdle(ctx); err != nil {
				return err
			}
		}
		if j.cr.claimed(j.cache) {
			if j.failover().sinceTrigger(time.Now()) < j.failoverTick() {
				return nil
			}
			fi, err := j.localFailoverItems(ctx)
			if err != nil || len(fi) == 0 || j.att.running.Load() {
				return err
			}
			j.log.Info("claimed failover items have not run yet; triggering again", "items", fi)
			j.failover().trigger()
			return nil
		}
		if names, _ := j.cache.Children(j.s.p.FailoverItems()); len(names) > 0 {
			return j.failover().failoverIfNecessary(ctx)
		}
	}
	if j.mf.state().deferred() {
		// The flag's deletion event may have been missed (coalesced).
		if _, _, pending := j.cache.Get(j.s.p.ShardingNecessary()); !pending {
			if err := j.mf.afterResharding(ctx); err != nil {
				return err
			}
		}
	}
	if cfg.Misfire {
		run, err := j.mf.runPending(ctx, j.cache)
		if run {
			j.failover().trigger()
		}
		return err
	}
	return nil
}
