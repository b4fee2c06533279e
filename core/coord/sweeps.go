package coord

import (
	"context"

	"github.com/ejob-io/ejob/core/config"
)

// sweeps makes the job's stale-node sweeps (staleSweeper, stale.go): one
// for each sweep, since a sweep keeps no state and an idle job carries
// none. It is the sweep's staleJob: the config and the leadership.
type sweeps struct {
	*jobBase
}

// stale returns a sweep of the nodes gone instances left.
func (w *sweeps) stale() *staleSweeper {
	return &staleSweeper{s: w.s, id: w.id, log: w.log, job: w, fo: w.job.fo.get()}
}

// config implements staleJob (configState.get).
func (w *sweeps) config(ctx context.Context) (*config.JobConfiguration, error) {
	return w.job.conf.get(ctx)
}

// isLeader implements staleJob (leadership.isLeader).
func (w *sweeps) isLeader(ctx context.Context) (bool, error) { return w.job.ldr.isLeader(ctx) }
