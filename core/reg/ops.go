package reg

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// DeleteRecursive deletes path and everything under it, children first (as
// upstream's remove and Curator's deletingChildrenIfNeeded). A missing node
// is not an error; a child created concurrently is deleted too (a few
// rounds, then ErrNotEmpty).
func DeleteRecursive(ctx context.Context, c Client, path string) error {
	for round := 0; ; round++ {
		names, err := c.Children(ctx, path)
		if errors.Is(err, ErrNoNode) {
			return nil
		}
		if err != nil {
			return err
		}
		for _, name := range names {
			if err := DeleteRecursive(ctx, c, childPath(path, name)); err != nil {
				return err
			}
		}
		if path == "/" {
			return nil // the namespace root itself stays
		}
		err = c.Delete(ctx, path, AnyVersion)
		switch {
		case err == nil, errors.Is(err, ErrNoNode):
			return nil
		case errors.Is(err, ErrNotEmpty) && round < 5:
			continue
		default:
			return err
		}
	}
}

// Persist writes data at path as upstream's persist: create it (with
// persistent parents) when absent, else set it (any version).
func Persist(ctx context.Context, c Client, path string, data []byte) (Stat, error) {
	for try := 0; ; try++ {
		st, err := c.Set(ctx, path, data, AnyVersion)
		if err == nil || !errors.Is(err, ErrNoNode) {
			return st, err
		}
		_, err = c.Create(ctx, path, data, Persistent, WithParents())
		if err == nil {
			st, _, err := c.Exists(ctx, path)
			return st, err
		}
		if !errors.Is(err, ErrNodeExists) || try >= 3 {
			return Stat{}, err
		}
	}
}

// ServerTime returns the registry's current time as upstream's
// getRegistryCenterTime does: it persists an empty value at path (for
// example "/{job}/systemTime/current"), which sets the node's mtime on the
// server, and returns that mtime.
func ServerTime(ctx context.Context, c Client, path string) (time.Time, error) {
	st, err := Persist(ctx, c, path, nil)
	if err != nil {
		return time.Time{}, fmt.Errorf("registry time: %w", err)
	}
	return st.ModTime(), nil
}
