package executor

import (
	"context"
)

// contextsAt returns the trigger's ShardingContexts, at the fire's
// scheduled time. For a fire the trigger loop dispatched ahead of it
// (Fire.Ahead), it does the registry part ahead (Facade.PreArm), then
// waits for the scheduled time; no item starts, and no event or listener
// sees the trigger, before it. When the fire is abandoned while it waits,
// the running nodes created ahead are deleted (Disarm) before the trigger
// returns, with abandoned set. When the registry connection is suspended
// at the scheduled time (Facade.Paused), ShardingContexts answers first (it
// refuses a paused trigger, and the Facade owes the fire a catch-up run),
// and then they are deleted. When the pre-arm did not
// hold at the scheduled time, they are deleted and ShardingContexts runs as
// for a fire dispatched then. Options.OnFired is told of a fire dispatched
// ahead when it starts, at the scheduled time.
func (r *run) contextsAt(ctx context.Context, fire Fire) (sc ShardingContexts, abandoned bool, err error) {
	f := r.opts.Facade
	if fire == nil || !fire.Ahead() {
		sc, err = f.ShardingContexts(ctx)
		return sc, false, err
	}
	sc, armed, err := f.PreArm(ctx)
	if err != nil {
		return sc, false, err
	}
	went := fire.AwaitScheduled(ctx)
	paused := false
	if went {
		if paused, _ = f.Paused(); !paused {
			r.fired(fire)
		}
	}
	if armed && went && !paused && f.ConfirmArmed(ctx, sc) {
		return sc, false, nil
	}
	if paused {
		// Asked before Disarm, whose requests wait for the registry:
		// asked after, the fire would run late, once the pause has ended,
		// and the fires skipped meanwhile would be owed nothing.
		if _, perr := f.ShardingContexts(ctx); perr != nil {
			r.disarm(ctx, armed)
			return ShardingContexts{}, false, perr
		}
		// The pause ended just now: the fire runs as one dispatched now.
	}
	r.disarm(ctx, armed)
	if !went {
		r.log.Debug("fire abandoned before its scheduled time", "armed", armed)
		return ShardingContexts{}, true, nil
	}
	sc, err = f.ShardingContexts(ctx)
	return sc, false, err
}

// disarm deletes the running nodes created ahead (Facade.Disarm), if armed.
func (r *run) disarm(ctx context.Context, armed bool) {
	if armed {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.opts.CleanupTimeout)
		r.opts.Facade.Disarm(cctx)
		cancel()
	}
}
