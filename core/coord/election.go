package coord

import (
	"context"
	"slices"

	"github.com/ejob-io/ejob/core/node"
	"github.com/ejob-io/ejob/core/reg"
	"github.com/ejob-io/ejob/core/reg/recipe"
)

// leadership is the job's leader election on this instance (upstream's
// LeaderService over leader/election/instance: campaign, is-leader,
// resign, and the fence of leader-only writes through e) and the reads of
// the servers' availability it stands on (ServerService). It keeps no
// state of its own: the leader node is the registry's.
type leadership struct {
	*jobBase
	e *recipe.Election
	// cache is the job's tree cache, set by Start before the first
	// campaign (nil before: every campaign then expects a leader node).
	cache *reg.CacheView
	// asg lists the available instances; rsh flags the resharding the
	// winner owes when the assignment names one that is not (electAndCheck).
}

// IsLeader reports whether this instance is the job's leader now (the
// leader node holds its id and belongs to its current session).
func (j *Job) IsLeader(ctx context.Context) (bool, error) { return j.ldr.isLeader(ctx) }

// electLeader is upstream's LeaderService.electLeader: the recipe's campaign
// for leader/election/instance under leader/election/latch. When the tree
// cache shows no leader node, the campaign expects none (CampaignVacant:
// the leader node's create and the latch's release in one transaction;
// the steps are upstream's if there is one after all).
func (l *leadership) electLeader(ctx context.Context) (bool, error) {
	return l.campaign(ctx, false)
}

// campaign is electLeader; vacant says a fresh read has just shown no
// leader node, so that the campaign expects none whatever the tree cache
// still shows (after a new session it may not yet have seen the old
// session's leader node go).
func (l *leadership) campaign(ctx context.Context, vacant bool) (bool, error) {
	campaign := l.e.Campaign
	if vacant {
		campaign = l.e.CampaignVacant
	} else if cv := l.cache; cv != nil {
		if _, _, ok := cv.Peek(l.s.p.LeaderInstance()); !ok {
			campaign = l.e.CampaignVacant
		}
	}
	ok, err := campaign(ctx)
	if err != nil {
		return false, wrap("elect leader", err)
	}
	if ok {
		l.log.Info("became leader")
	}
	return ok, nil
}

// isLeader: not shut down, and the leader node holds our id and belongs to
// our current session (fresh read).
func (l *leadership) isLeader(ctx context.Context) (bool, error) {
	if l.job.life.shutdown.Load() {
		return false, nil
	}
	return l.e.IsLeader(ctx)
}

// isLeaderUntilBlock waits while there is no leader but some available
// server, electing when this server is available
// (LeaderService.isLeaderUntilBlock). Where upstream reads whether the
// leader node exists and then whether it is ours, one read of the node
// answers both.
func (l *leadership) isLeaderUntilBlock(ctx context.Context) (bool, error) {
	for {
		has, leads, err := l.e.ReadLeader(ctx)
		if err != nil {
			return false, err
		}
		if has {
			return leads && !l.job.life.shutdown.Load(), nil
		}
		avail, err := l.hasAvailableServers(ctx)
		if err != nil {
			return false, err
		}
		if !avail {
			break
		}
		l.log.Debug("leader is electing, waiting")
		if err := sleep(ctx, l.poll); err != nil {
			return false, err
		}
		if !l.job.life.shutdown.Load() {
			if ok, err := l.isAvailableServer(ctx, l.ip); err != nil {
				return false, err
			} else if ok {
				if _, err := l.electLeader(ctx); err != nil {
					return false, err
				}
			}
		}
	}
	return l.isLeader(ctx)
}

// electIfAvailable is the passive election on leader node deletion. A
// leader node found by a fresh read first (the instance's own, after its
// re-registration elected it; another's, elected meanwhile) ends it
// without the latch, where upstream takes the latch to find it there: a
// deletion of that leader later is an event of its own, with an election
// of its own. That read comes before the check of this server, which
// only an election needs (electAvailable).
func (l *leadership) electIfAvailable(ctx context.Context) error {
	has, err := l.e.HasLeader(ctx)
	if err != nil || has {
		return err
	}
	return l.electAvailable(ctx)
}

// electAvailable campaigns, a fresh read having shown no leader node, when
// this server is available, and then makes electAndCheck's check of the
// assignment. The instances and servers are read once, before the
// campaign, for both (upstream reads the server and the instances before
// it, and the winner reads them again for the check). What changes
// between that read and the win is an event the job's queue holds until
// this is over, and then handles as the leader: an instance or server
// gone flags the resharding the check would have; one that came at worst
// makes the check flag a resharding it did not need.
func (l *leadership) electAvailable(ctx context.Context) error {
	m, err := l.job.asg.readMembership(ctx, l.ip)
	if err != nil {
		return err
	}
	if ok, err := m.serverAvailable(ctx, l.job, l.ip); err != nil || !ok {
		return err
	}
	return l.electVacantAndCheckIn(ctx, true, m)
}

// electAndCheck elects and, when this instance won, flags resharding if
// some item is assigned to an instance that is not available. Upstream
// does not (ElasticJob issue #2449): a flag lost with the old leader, or not set
// because the change was seen before the new leader existed, would leave items
// on dead or disabled instances until reconcile.
func (l *leadership) electAndCheck(ctx context.Context) error {
	return l.electVacantAndCheck(ctx, false)
}

// electVacantAndCheck is electAndCheck after a fresh read showed no
// leader node (vacant: see campaign).
func (l *leadership) electVacantAndCheck(ctx context.Context, vacant bool) error {
	return l.electVacantAndCheckIn(ctx, vacant, nil)
}

// electVacantAndCheckIn is electVacantAndCheck with the check made on m,
// the instances and servers read before the campaign (nil: read after
// the win).
func (l *leadership) electVacantAndCheckIn(ctx context.Context, vacant bool, m *membership) error {
	won, err := l.campaign(ctx, vacant)
	if err != nil || !won {
		return err
	}
	cfg, err := l.job.conf.get(ctx)
	if err != nil {
		return err
	}
	if m == nil {
		if m, err = l.job.asg.readMembership(ctx, ""); err != nil {
			return err
		}
	}
	avail, err := m.available(ctx, l.job)
	if err != nil {
		return err
	}
	stale := false
	for i := 0; i < cfg.ShardingTotalCount && !stale; i++ {
		v, _, err := l.s.get(ctx, l.s.p.ShardingInstance(i))
		if err != nil {
			return err
		}
		stale = !slices.Contains(avail, v)
	}
	if !stale {
		return nil
	}
	return l.job.rsh.serversChanged(ctx)
}

// onLocalServerEvent: active election when our server is not DISABLED and
// there is no leader; abdication when it is DISABLED and we lead.
func (l *leadership) onLocalServerEvent(ctx context.Context, ev reg.TreeEvent) error {
	if string(ev.Data) == node.ServerDisabled {
		leader, err := l.isLeader(ctx)
		if err != nil || !leader {
			return err
		}
		l.log.Info("server disabled; abdicating leadership")
		_, err = l.e.Resign(ctx)
		return err
	}
	has, err := l.e.HasLeader(ctx)
	if err != nil || has {
		return err
	}
	return l.electVacantAndCheck(ctx, true)
}

// isEnableServer: servers/{ip} is ENABLED; a missing or empty node is
// re-read up to 10 times (ServerService.isEnableServer).
func (l *leadership) isEnableServer(ctx context.Context, ip string) (bool, error) {
	for try := 0; ; try++ {
		v, ok, err := l.s.get(ctx, l.s.p.Server(ip))
		if err != nil {
			return false, err
		}
		if ok && v != "" {
			return v == node.ServerEnabled, nil
		}
		if try >= 9 {
			return false, nil
		}
		if err := sleep(ctx, l.poll); err != nil {
			return false, err
		}
	}
}

// isAvailableServer: enabled, and some instance lives on ip. Upstream uses
// a string prefix test ("10.0.0.1" matches "10.0.0.12@-@7"); ejob compares
// the IP part exactly.
func (l *leadership) isAvailableServer(ctx context.Context, ip string) (bool, error) {
	ok, err := l.isEnableServer(ctx, ip)
	if err != nil || !ok {
		return false, err
	}
	ids, err := l.s.children(ctx, l.s.p.Instances())
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

func (l *leadership) hasAvailableServers(ctx context.Context) (bool, error) {
	ips, err := l.s.children(ctx, l.s.p.Servers())
	if err != nil {
		return false, err
	}
	for _, ip := range ips {
		ok, err := l.isAvailableServer(ctx, ip)
		if err != nil || ok {
			return ok, err
		}
	}
	return false, nil
}
