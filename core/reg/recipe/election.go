package recipe

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/ejob-io/ejob/core/reg"
)

// Election is ElasticJob's leader election (LeaderService) as a recipe. The
// leader is whoever owns the ephemeral leader node (ElasticJob:
// "/{job}/leader/election/instance", holding the leader's id). A campaign
// creates that node, unless it exists, under the Curator latch at the
// latch path ("/{job}/leader/election/latch"), which is held only for the
// check-and-create (see Elect). The leader gives the node up with Resign,
// or loses it with its session. Leader-only writes go through Fenced. An
// Election is safe for concurrent use.
type Election struct {
	c      reg.Client
	latch  string
	leader string
	id     string

	// writes orders this participant's deletion of its own leader node
	// (Resign) after its fenced writes in flight: Fenced holds it shared
	// from taking the fence to the end of the commit, Resign exclusively.
	// ZooKeeper's multi checks only a node's data version, so a leader
	// node deleted and re-created by another participant's campaign
	// between our fence and our commit (version 0 both times) would pass
	// the check. The owner is the only one that deletes a live leader node
	// (ElasticJob: abdication, console shutdown, graceful shutdown), so
	// waiting here closes that gap; only a deletion of the node by someone
	// else (by hand) remains undetectable.
	writes sync.RWMutex
}

// NewElection returns the election of participant id (ElasticJob: the
// instance id) with the leader node at leaderPath and the latch
// serializing campaigns at latchPath.
func NewElection(c reg.Client, latchPath, leaderPath, id string) *Election {
	return &Election{c: c, latch: latchPath, leader: leaderPath, id: id}
}

// LeaderPath returns the path of the leader node.
func (e *Election) LeaderPath() string { return e.leader }

// Campaign is ElasticJob's electLeader: under the latch, create the
// ephemeral leader node holding our id unless it exists (its parents as
// persistent nodes). It reports whether this client's current session now
// owns the leader node (a node we created earlier in this session counts).
func (e *Election) Campaign(ctx context.Context) (bool, error) {
	ok, err := Elect(ctx, e.c, e.latch, e.leader, []byte(e.id))
	if err != nil {
		return false, fmt.Errorf("campaign %s: %w", e.leader, err)
	}
	return ok, nil
}

// CampaignVacant is Campaign when the leader node is likely absent (a
// cache shows none): see ElectVacant.
func (e *Election) CampaignVacant(ctx context.Context) (bool, error) {
	ok, err := ElectVacant(ctx, e.c, e.latch, e.leader, []byte(e.id))
	if err != nil {
		return false, fmt.Errorf("campaign %s: %w", e.leader, err)
	}
	return ok, nil
}

// IsLeader reports whether we lead now, read fresh from the registry: the
// leader node holds our id and belongs to the client's current session.
func (e *Election) IsLeader(ctx context.Context) (bool, error) {
	_, leads, err := e.ReadLeader(ctx)
	return leads, err
}

// Leads is IsLeader on a leader node already read (data and stat, e.g.
// from a tree cache): it holds our id and belongs to the client's current
// session.
func (e *Election) Leads(data []byte, st reg.Stat) bool {
	return string(data) == e.id && st.EphemeralOwner == e.c.Session().ID()
}

// ReadLeader is HasLeader and IsLeader in one fresh read: whether the
// leader node exists, and whether it is ours (Leads).
func (e *Election) ReadLeader(ctx context.Context) (exists, leads bool, err error) {
	data, st, err := e.c.Get(ctx, e.leader)
	if errors.Is(err, reg.ErrNoNode) {
		return false, false, nil
	}
	if err != nil {
		return false, false, fmt.Errorf("read leader %s: %w", e.leader, err)
	}
	return true, e.Leads(data, st), nil
}

// HasLeader is ElasticJob's hasLeader: the leader node exists (fresh read).
func (e *Election) HasLeader(ctx context.Context) (bool, error) {
	_, ok, err := e.c.Exists(ctx, e.leader)
	if err != nil {
		return false, fmt.Errorf("read leader %s: %w", e.leader, err)
	}
	return ok, nil
}

// Resign gives leadership up (ElasticJob's abdication, and the leader's
// part of a shutdown): it deletes the leader node if it holds our id and
// our current session owns it, once the fenced writes in flight (Fenced)
// have ended. It reports whether it deleted the node; when we do not lead
// it does nothing.
func (e *Election) Resign(ctx context.Context) (bool, error) {
	e.writes.Lock()
	defer e.writes.Unlock()
	data, st, err := e.c.Get(ctx, e.leader)
	if errors.Is(err, reg.ErrNoNode) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("resign %s: %w", e.leader, err)
	}
	if !e.Leads(data, st) {
		return false, nil
	}
	err = e.c.Delete(ctx, e.leader, st.Version)
	if errors.Is(err, reg.ErrNoNode) || errors.Is(err, reg.ErrBadVersion) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("resign %s: %w", e.leader, err)
	}
	return true, nil
}

// Fenced runs fn with a fence on the leader node (see NewFence), for a
// leader-only write: fn commits with FencedMulti, which fails with
// ErrFenced once our session has lost the node. Resign waits until fn
// returns, so our own deletion of the node (and a re-election by someone
// else, which would re-create it with the same version) cannot fall
// between the fence and the commit. ErrNotLeader, without calling fn,
// if our current session does not own the leader node. fn must not call
// Resign.
func (e *Election) Fenced(ctx context.Context, fn func(Fence) error) error {
	e.writes.RLock()
	defer e.writes.RUnlock()
	f, err := NewFence(ctx, e.c, e.leader)
	if err != nil {
		return err
	}
	return fn(f)
}
