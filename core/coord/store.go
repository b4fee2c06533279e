package coord

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/ejob-io/ejob/core/instance"
	"github.com/ejob-io/ejob/core/node"
	"github.com/ejob-io/ejob/core/reg"
)

// ipPrefix is the server IP part of an instance id (before the first "@-@").
func ipPrefix(id string) string {
	ip, _ := instance.ServerIP(id)
	return ip
}

// store wraps a reg.Client with upstream's JobNodeStorage helpers.
type store struct {
	c reg.Client
	p node.Job
}

// get returns the data of path and whether it exists.
func (s store) get(ctx context.Context, path string) (string, bool, error) {
	data, _, err := s.c.Get(ctx, path)
	if errors.Is(err, reg.ErrNoNode) {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	return string(data), true, nil
}

func (s store) exists(ctx context.Context, path string) (bool, error) {
	_, ok, err := s.c.Exists(ctx, path)
	return ok, err
}

// getEach reads every path's data in few round trips (reg.ReadMany: one
// multiRead per few hundred paths on ZooKeeper).
func (s store) getEach(ctx context.Context, paths []string) ([]reg.ReadResult, error) {
	if len(paths) == 0 {
		return nil, nil
	}
	ops := make([]reg.ReadOp, len(paths))
	for i, p := range paths {
		ops[i] = reg.GetOp(p)
	}
	return reg.ReadMany(ctx, s.c, ops...)
}

// getMany is get for many paths in few round trips (getEach). Each op sees the registry
// as a plain read at about the same time would; an absent node is a ""
// value and false, any other error of an op fails the call.
func (s store) getMany(ctx context.Context, paths []string) ([]string, []bool, error) {
	res, err := s.getEach(ctx, paths)
	if err != nil {
		return nil, nil, err
	}
	vals, oks := make([]string, len(paths)), make([]bool, len(paths))
	for i, r := range res {
		switch {
		case r.Err == nil:
			vals[i], oks[i] = string(r.Data), true
		case !errors.Is(r.Err, reg.ErrNoNode):
			return nil, nil, r.Err
		}
	}
	return vals, oks, nil
}

// existsMany is exists for many paths in few round trips (getEach). A
// node whose ACL refuses the read exists, as Exists would say.
func (s store) existsMany(ctx context.Context, paths []string) ([]bool, error) {
	res, err := s.getEach(ctx, paths)
	if err != nil {
		return nil, err
	}
	out := make([]bool, len(paths))
	for i, r := range res {
		switch {
		case r.Err == nil, errors.Is(r.Err, reg.ErrNoAuth):
			out[i] = true
		case !errors.Is(r.Err, reg.ErrNoNode):
			return nil, r.Err
		}
	}
	return out, nil
}

// children returns the child names in upstream's order (descending string
// order); a missing node has none.
func (s store) children(ctx context.Context, path string) ([]string, error) {
	names, err := s.c.Children(ctx, path)
	if errors.Is(err, reg.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	slices.SortFunc(names, func(a, b string) int { return strings.Compare(b, a) })
	return names, nil
}

// createIfNeeded is createJobNodeIfNeeded: persist "" at path only when the
// job root exists and path does not.
func (s store) createIfNeeded(ctx context.Context, path string) error {
	ok, err := s.exists(ctx, s.p.Root())
	if err != nil || !ok {
		return err
	}
	ok, err = s.exists(ctx, path)
	if err != nil || ok {
		return err
	}
	_, err = s.c.Create(ctx, path, nil, reg.Persistent, reg.WithParents())
	if errors.Is(err, reg.ErrNodeExists) {
		return nil
	}
	return err
}

// persistEphemeral makes path an ephemeral node of this session holding
// data, with persistent parents: a node this session already owns is
// updated in place; any other (a previous session's) is deleted first.
func (s store) persistEphemeral(ctx context.Context, path string, data []byte) error {
	// A node this very session already owns is kept (its data updated):
	// deleting and re-creating it would look, to every other instance,
	// like this instance crashed and came back, and they would fail over
	// items it is still running.
	if cur, st, err := s.c.Get(ctx, path); err == nil && st.EphemeralOwner != 0 && st.EphemeralOwner == s.c.Session().ID() {
		if string(cur) == string(data) {
			return nil
		}
		_, err := s.c.Set(ctx, path, data, st.Version)
		return err
	} else if err != nil && !errors.Is(err, reg.ErrNoNode) {
		return err
	}
	if err := reg.DeleteRecursive(ctx, s.c, path); err != nil {
		return err
	}
	_, err := s.c.Create(ctx, path, data, reg.Ephemeral, reg.WithParents())
	return err
}

// deleteIfValue deletes path when its value is want (versioned, so a node
// re-written meanwhile by someone else survives). It reports whether it
// deleted.
func (s store) deleteIfValue(ctx context.Context, path, want string) (bool, error) {
	data, st, err := s.c.Get(ctx, path)
	if errors.Is(err, reg.ErrNoNode) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if string(data) != want {
		return false, nil
	}
	err = s.c.Delete(ctx, path, st.Version)
	if errors.Is(err, reg.ErrNoNode) || errors.Is(err, reg.ErrBadVersion) {
		return false, nil
	}
	return err == nil, err
}

// itemNumbers parses the children of sharding/ (or failover items) as item
// numbers, keeping the given order and skipping non-numbers.
func itemNumbers(names []string) []int {
	out := make([]int, 0, len(names))
	for _, n := range names {
		if i, err := strconv.Atoi(n); err == nil && i >= 0 {
			out = append(out, i)
		}
	}
	return out
}

func wrap(what string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %w", what, err)
}

// itemsWith returns the items among items whose node name exists.
func (s store) itemsWith(ctx context.Context, items []int, name string) ([]int, error) {
	var out []int
	for _, i := range items {
		ok, err := s.exists(ctx, s.p.ItemNode(i, name))
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, i)
		}
	}
	return out, nil
}
