package recipe

import (
	"context"
	"errors"
	"fmt"

	"github.com/ejob-io/ejob/core/reg"
)

// Fence pins a write to a node we own: the node must still exist with this
// version, and our session must still be the one that created it.
type Fence struct {
	Path    string
	Version int32
	Session *reg.Session
}

// NewFence fences on path, an ephemeral node this client's current session
// owns (a latch node, or a leader node such as ElasticJob's
// leader/election/instance). ErrNotLeader if the node is missing or owned by
// another session.
func NewFence(ctx context.Context, c reg.Client, path string) (Fence, error) {
	sess := c.Session()
	st, ok, err := c.Exists(ctx, path)
	if err != nil {
		return Fence{}, fmt.Errorf("fence %s: %w", path, err)
	}
	if !ok || st.EphemeralOwner != sess.ID() || sess.Err() != nil {
		return Fence{}, fmt.Errorf("fence %s: %w", path, ErrNotLeader)
	}
	return Fence{Path: path, Version: st.Version, Session: sess}, nil
}

// FencedMulti applies ops atomically together with a check of the fence, so
// a deposed leader's write is rejected by the server, not by a local flag:
// ErrFenced if the fence node is gone or changed or its session is lost.
// Results are those of ops (the check's is dropped).
func FencedMulti(ctx context.Context, c reg.Client, f Fence, ops ...reg.Op) ([]reg.OpResult, error) {
	if f.Session == nil || f.Session.Err() != nil || c.Session() != f.Session {
		return nil, fmt.Errorf("fenced write on %s: session lost: %w", f.Path, ErrFenced)
	}
	all := append([]reg.Op{reg.CheckOp(f.Path, f.Version)}, ops...)
	res, err := c.Multi(ctx, all...)
	if err != nil {
		var me *reg.MultiError
		if errors.As(err, &me) && me.Index == 0 {
			return nil, fmt.Errorf("fenced write on %s: %w (%w)", f.Path, ErrFenced, err)
		}
		if errors.Is(err, reg.ErrSessionLost) {
			return nil, fmt.Errorf("fenced write on %s: %w (%w)", f.Path, ErrFenced, err)
		}
		return nil, err
	}
	return res[1:], nil
}
