package coord

import (
	"context"
	"time"

	"github.com/ejob-io/ejob/core/reg"
)

// pump is the job's failover and misfire pump (see run): what it acts on
// is read from the tree cache, passed in, and from the owners it drives.
// It keeps no state of its own.
type pump struct {
	*jobBase
	cr cacheReads
}

// wanted reports whether the pump may still have something to do, so
// its timer must keep running: each case pump acts on, read from local
// state and the tree cache. It errs on the side of ticking (a paused or
// running instance whose case holds keeps ticking, as the pump then only
// waits). When it reports false, only a tree event or wakePump ticks the
// pump again.
func (p *pump) wanted(cache *reg.CacheView) bool {
	if cache == nil || p.job.life.shutdown.Load() {
		return false
	}
	cfg := p.job.conf.cur.Load()
	failover, misfire := cfg == nil || cfg.Failover, cfg == nil || cfg.Misfire
	// The cache counts the job's flags (node.Job.IsFlag): with none, the
	// cases read from the cache cannot hold, and the pump's tick after
	// every trigger looks nothing up.
	n, counted := cache.Counted()
	flags := !counted || n > 0
	if failover {
		if p.job.fo.state().recovering() || flags && (p.cr.claimed(cache) || p.cr.failoverQueued(cache)) {
			return true
		}
	}
	if p.job.mf.state().deferred() {
		return true
	}
	// A sighting (misfireState.sighted): the next tick clears it or acts on it.
	return misfire && (p.job.mf.state().sighting() || flags && len(p.cr.misfired(cache)) > 0)
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
	if cache == nil || p.job.life.shutdown.Load() {
		return nil
	}
	if p.job.att.running.Load() {
		p.job.mf.state().clearSighting()
		return nil
	}
	if _, _, err := p.job.rg.sessionLease(); err != nil {
		return nil // paused or not registered: reRegister resumes first
	}
	cfg, err := p.job.conf.get(ctx)
	if err != nil {
		return err
	}
	if cfg.Failover {
		if p.job.fo.state().recovering() {
			if _, err := p.job.fo.get().recoverIfIdle(ctx); err != nil {
				return err
			}
		}
		switch claimed, busy, err := p.claimsBusy(ctx, cache); {
		case err != nil:
			return err
		case claimed && !busy:
			if p.job.fo.get().sinceTrigger(time.Now()) < p.tick() {
				return nil
			}
			fi, err := p.job.fo.get().localFailoverItems(ctx, cache)
			if err != nil || len(fi) == 0 || p.job.att.running.Load() {
				return err
			}
			p.log.Info("claimed failover items have not run yet; triggering again", "items", fi)
			p.job.fo.get().trigger()
			return nil
		case claimed:
			// Every claimed item runs elsewhere: a trigger would run the
			// own items only (ShardingContexts), so the claims wait for the
			// end of that run (its running node's deletion ticks the pump)
			// and the own items' missed fires are served below.
		default:
			if names, _ := cache.Children(p.s.p.FailoverItems()); len(names) > 0 {
				return p.job.fo.get().failoverIfNecessary(ctx)
			}
		}
	}
	if p.job.mf.state().deferred() {
		// The flag's deletion event may have been missed (coalesced).
		if _, _, pending := cache.Get(p.s.p.ShardingNecessary()); !pending {
			if err := p.job.mf.afterResharding(ctx); err != nil {
				return err
			}
		}
	}
	if cfg.Misfire {
		run, err := p.job.mf.runPending(ctx, cache)
		if run {
			p.job.fo.get().trigger()
		}
		return err
	}
	return nil
}

// claimsBusy reports whether this instance holds failover claims (the tree
// cache shows one) and, if so, whether every item it claimed runs on
// another instance (the cache shows its running node naming another).
func (p *pump) claimsBusy(ctx context.Context, cache *reg.CacheView) (claimed, busy bool, err error) {
	if !p.cr.claimed(cache) {
		return false, false, nil
	}
	fi, err := p.job.fo.get().localFailoverItems(ctx, cache)
	if err != nil || len(fi) == 0 {
		return true, false, err
	}
	running, err := p.cr.runningItems(ctx, cache, fi)
	if err != nil {
		return true, false, err
	}
	return true, len(running) == len(fi), nil
}
