package coord

import (
	"context"
	"slices"

	"github.com/ejob-io/ejob/core/node"
	"github.com/ejob-io/ejob/core/reg"
)

// electLeader is upstream's LeaderService.electLeader: the recipe's campaign
// for leader/election/instance under leader/election/latch. When the tree
// cache shows no leader node, the campaign expects none (CampaignVacant:
// the leader node's create and the latch's release in one transaction;
// the steps are upstream's if there is one after all).
func (j *Job) electLeader(ctx context.Context) (bool, error) {
	campaign := j.elect.Campaign
	if cv := j.cache; cv != nil {
		if _, _, ok := cv.Peek(j.s.p.LeaderInstance()); !ok {
			campaign = j.elect.CampaignVacant
		}
	}
	ok, err := campaign(ctx)
	if err != nil {
		return false, wrap("elect leader", err)
	}
	if ok {
		j.log.Info("became leader")
	}
	return ok, nil
}

// IsLeader reports whether this instance is the job's leader now (the
// leader node holds its id and belongs to its current session).
func (j *Job) IsLeader(ctx context.Context) (bool, error) { return j.isLeader(ctx) }

// isLeader: not shut down, and the leader node holds our id and belongs to
// our current session (fresh read).
func (j *Job) isLeader(ctx context.Context) (bool, error) {
	if j.shutdown.Load() {
		return false, nil
	}
	return j.elect.IsLeader(ctx)
}

// isLeaderUntilBlock waits while there is no leader but some available
// server, electing when this server is available
// (LeaderService.isLeaderUntilBlock).
func (j *Job) isLeaderUntilBlock(ctx context.Context) (bool, error) {
	for {
		has, err := j.elect.HasLeader(ctx)
		if err != nil {
			return false, err
		}
		if has {
			break
		}
		avail, err := j.hasAvailableServers(ctx)
		if err != nil {
			return false, err
		}
		if !avail {
			break
		}
		j.log.Debug("leader is electing, waiting")
		if err := sleep(ctx, j.poll); err != nil {
			return false, err
		}
		if !j.shutdown.Load() {
			if ok, err := j.isAvailableServer(ctx, j.ip); err != nil {
				return false, err
			} else if ok {
				if _, err := j.electLeader(ctx); err != nil {
					return false, err
				}
			}
		}
	}
	return j.isLeader(ctx)
}

// electIfAvailable is the passive election on leader node deletion.
func (j *Job) electIfAvailable(ctx context.Context) error {
	ok, err := j.isAvailableServer(ctx, j.ip)
	if err != nil || !ok {
		return err
	}
	return j.electAndCheck(ctx)
}

// electAndCheck elects and, when this instance won, flags resharding if
// some item is assigned to an instance that is not available. Upstream
// does not (ElasticJob issue #2449): a flag lost with the old leader, or not set
// because the change was seen before the new leader existed, would leave items
// on dead or disabled instances until reconcile.
func (j *Job) electAndCheck(ctx context.Context) error {
	won, err := j.electLeader(ctx)
	if err != nil || !won {
		return err
	}
	cfg, err := j.config(ctx)
	if err != nil {
		return err
	}
	avail, err := j.availableInstances(ctx)
	if err != nil {
		return err
	}
	stale := false
	for i := 0; i < cfg.ShardingTotalCount && !stale; i++ {
		v, _, err := j.s.get(ctx, j.s.p.ShardingInstance(i))
		if err != nil {
			return err
		}
		stale = !slices.Contains(avail, v)
	}
	if !stale {
		return nil
	}
	return j.serversChanged(ctx)
}

// onLocalServerEvent: active election when our server is not DISABLED and
// there is no leader; abdication when it is DISABLED and we lead.
func (j *Job) onLocalServerEvent(ctx context.Context, ev reg.TreeEvent) error {
	if string(ev.Data) == node.ServerDisabled {
		leader, err := j.isLeader(ctx)
		if err != nil || !leader {
			return err
		}
		j.log.Info("server disabled; abdicating leadership")
		_, err = j.elect.Resign(ctx)
		return err
	}
	has, err := j.elect.HasLeader(ctx)
	if err != nil || has {
		return err
	}
	return j.electAndCheck(ctx)
}

// isEnableServer: servers/{ip} is ENABLED; a missing or empty node is
// re-read up to 10 times (ServerService.isEnableServer).
func (j *Job) isEnableServer(ctx context.Context, ip string) (bool, error) {
	for try := 0; ; try++ {
		v, ok, err := j.s.get(ctx, j.s.p.Server(ip))
		if err != nil {
			return false, err
		}
		if ok && v != "" {
			return v == node.ServerEnabled, nil
		}
		if try >= 9 {
			return false, nil
		}
		if err := sleep(ctx, j.poll); err != nil {
			return false, err
		}
	}
}

// isAvailableServer: enabled, and some instance lives on ip. Upstream uses
// a string prefix test ("10.0.0.1" matches "10.0.0.12@-@7"); ejob compares
// the IP part exactly.
func (j *Job) isAvailableServer(ctx context.Context, ip string) (bool, error) {
	ok, err := j.isEnableServer(ctx, ip)
	if err != nil || !ok {
		return false, err
	}
	ids, err := j.s.children(ctx, j.s.p.Instances())
	if err != nil {
		return false, err
	}
	for _, id := range ids {
		if ipPrefix(id) == ip {
			return true, nil
		}
	}
	return false, nil
}

func (j *Job) hasAvailableServers(ctx context.Context) (bool, error) {
	ips, err := j.s.children(ctx, j.s.p.Servers())
	if err != nil {
		return false, err
	}
	for _, ip := range ips {
		ok, err := j.isAvailableServer(ctx, ip)
		if err != nil || ok {
			return ok, err
		}
	}
	return false, nil
}
