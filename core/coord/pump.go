package coord

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/ejob-io/ejob/core/reg"
)

// wakePump asks the job's queue to run the pump a failoverTick from now,
// for a change of state the tree cache does not show (needRecover,
// misfireState's deferral). Tree events wake it by themselves.
func (j *Job) wakePump() { j.loop.armPump() }

// askReRegister implements registrant (jobLoop.askReRegister).
func (j *Job) askReRegister() { j.loop.askReRegister() }

// setNeedRecover notes that running nodes of a cut-off execution may
// remain, for the pump to clear.
func (j *Job) setNeedRecover() {
	j.failover().needRecover.Store(true)
	j.wakePump()
}

// pump is the job's failover and misfire pump (see run): what it acts on
// is read from the tree cache, passed in, and from the owners it drives.
// It keeps no state of its own.
type pump struct {
	*jobBase
	shutdown *atomic.Bool // the job's (Job.shutdown)
	running  *runFlag     // the attempts' run flag
	conf     *configState
	cr       cacheReads
	mf       *misfires
	job      pumpJob
}

// pumpJob is what the pump needs of the rest of the job.
type pumpJob interface {
	// failover is the failover protocol, made now if need be; foState
	// its state, nil while the job has made none.
	failover() *failover
	foState() *failoverState
	// session is the session the instance is registered under, or an
	// error while paused or not registered.
	session() (*reg.Session, error)
}

// wanted reports whether the pump may still have something to do, so
// its timer must keep running: each case pump acts on, read from local
// state and the tree cache. It errs on the side of ticking (a paused or
// running instance whose case holds keeps ticking, as the pump then only
// waits). When it reports false, only a tree event or wakePump ticks the
// pump again.
func (p *pump) wanted(cache *reg.CacheView) bool {
	if cache == nil || p.shutdown.Load() {
		return false
	}
	cfg := p.conf.cur.Load()
	failover, misfire := cfg == nil || cfg.Failover, cfg == nil || cfg.Misfire
	// The cache counts the job's flags (node.Job.IsFlag): with none, the
	// cases read from the cache cannot hold, and the pump's tick after
	// every trigger looks nothing up.
	n, counted := cache.Counted()
	flags := !counted || n > 0
	if failover {
		if p.job.foState().recovering() || flags && (p.cr.claimed(cache) || p.cr.failoverQueued(cache)) {
			return true
		}
	}
	if p.mf.state().deferred() {
		return true
	}
	// A sighting (misfireState.sighted): the next tick clears it or acts on it.
	return misfire && (p.mf.state().sighting() || flags && len(p.cr.misfired(cache)) > 0)
}

// run runs on the event loop a failoverTick after a tree event or a
// wakePump, and every failoverTick while wanted (better than
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
func (p *pump) run(ctx context.Context, cache *reg.CacheView) error {
	if cache == nil || p.shutdown.Load() {
		return nil
	}
	if p.running.Load() {
		p.mf.state().clearSighting()
		return nil
	}
	if _, err := p.job.session(); err != nil {
		return nil // paused or not registered: reRegister resumes first
	}
	cfg, err := p.conf.get(ctx)
	if err != nil {
		return err
	}
	if cfg.Failover {
		if p.job.foState().recovering() {
			if _, err := p.job.failover().recoverIfIdle(ctx); err != nil {
				return err
			}
		}
		if p.cr.claimed(cache) {
			if p.job.failover().sinceTrigger(time.Now()) < p.tick {
				return nil
			}
			fi, err := p.job.failover().localFailoverItems(ctx, cache)
			if err != nil || len(fi) == 0 || p.running.Load() {
				return err
			}
			p.log.Info("claimed failover items have not run yet; triggering again", "items", fi)
			p.job.failover().trigger()
			return nil
		}
		if names, _ := cache.Children(p.s.p.FailoverItems()); len(names) > 0 {
			return p.job.failover().failoverIfNecessary(ctx)
		}
	}
	if p.mf.state().deferred() {
		// The flag's deletion event may have been missed (coalesced).
		if _, _, pending := cache.Get(p.s.p.ShardingNecessary()); !pending {
			if err := p.mf.afterResharding(ctx); err != nil {
				return err
			}
		}
	}
	if cfg.Misfire {
		run, err := p.mf.runPending(ctx, cache)
		if run {
			p.job.failover().trigger()
		}
		return err
	}
	return nil
}
