package executor

import (
	"context"
)

// AheadFire is implemented by the MissedFires of a fire the trigger loop
// may dispatch ahead of its scheduled time (core/trigger AddAhead; the
// scheduler's adapter of trigger.Fire).
type AheadFire interface {
	// Ahead reports whether the fire was dispatched ahead of its time.
	Ahead() bool
	// AwaitScheduled waits until the scheduled time and reports whether
	// the trigger goes on: false when it was abandoned first (the job
	// paused, removed or rescheduled, the scheduler stopping, ctx ended,
	// the registry connection suspended).
	AwaitScheduled(ctx context.Context) bool
}

// PreArmer is implemented by a Facade that can do a trigger's registry
// work before the scheduled time of a fire dispatched ahead (a pre-arm):
// core/coord computes the items and creates their running nodes then, so
// that the items start at the scheduled time instead of a registry round
// trip after it.
type PreArmer interface {
	// PreArm is ShardingContexts done ahead, when it can be done without
	// deciding anything that must be decided at the scheduled time: ok is
	// false (and nothing is left to undo) otherwise, and the caller calls
	// ShardingContexts at the scheduled time as for any fire. With ok,
	// the items' running nodes exist; RegisterBegin adopts them. An error
	// is one of an undo that left running nodes behind (to recovery).
	PreArm(ctx context.Context) (sc ShardingContexts, ok bool, err error)
	// ConfirmArmed, at the scheduled time, reports whether what PreArm
	// did still holds (the same live session, no resharding flag, the
	// server available, the items still this instance's and neither
	// disabled nor failed over, as the tree cache now shows). When it
	// does not, the caller calls Disarm and then ShardingContexts.
	ConfirmArmed(ctx context.Context, sc ShardingContexts) bool
	// Disarm deletes the running nodes PreArm created, if RegisterBegin
	// has not adopted them (what it cannot delete is left to the recovery
	// of this instance's running nodes).
	Disarm(ctx context.Context)
}

// contextsAt returns the trigger's ShardingContexts, at the fire's
// scheduled time. For a fire the trigger loop dispatched ahead of it
// (AheadFire), it does with a PreArmer Facade the registry part ahead,
// then waits for the scheduled time; no item starts, and no event or
// listener sees the trigger, before it. When the fire is abandoned while
// it waits, the running nodes created ahead are deleted (Disarm) before
// the trigger returns, with abandoned set. When the pre-arm did not hold
// at the scheduled time, they are deleted and ShardingContexts runs as for
// a fire dispatched then.
func (r *run) contextsAt(ctx context.Context, missed MissedFires) (sc ShardingContexts, abandoned bool, err error) {
	f := r.opts.Facade
	af, ok := missed.(AheadFire)
	if !ok || !af.Ahead() {
		sc, err = f.ShardingContexts(ctx)
		return sc, false, err
	}
	armed := false
	pa, canArm := f.(PreArmer)
	if canArm {
		if sc, armed, err = pa.PreArm(ctx); err != nil {
			return sc, false, err
		}
	}
	went := af.AwaitScheduled(ctx)
	if armed && went && pa.ConfirmArmed(ctx, sc) {
		return sc, false, nil
	}
	if armed {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.opts.CleanupTimeout)
		pa.Disarm(cctx)
		cancel()
	}
	if !went {
		r.log.Debug("fire abandoned before its scheduled time", "armed", armed)
		return ShardingContexts{}, true, nil
	}
	sc, err = f.ShardingContexts(ctx)
	return sc, false, err
}
