package httpapi

import (
	"context"

	"github.com/ejob-io/ejob/core/reg"
)

// CacheReader is a lifecycle.Reader over a watch-fed cache of the whole
// namespace (a reg.TreeCache at "/"), so that a read endpoint costs no
// registry round trip; until the cache has loaded, reads go to Client.
// The cache lags a write by one watch event (about a millisecond).
type CacheReader struct {
	Cache  *reg.TreeCache
	Client reg.Client
}

func (c CacheReader) loaded() bool {
	select {
	case <-c.Cache.Initialized():
		return true
	default:
		return false
	}
}

// Namespace implements lifecycle.Reader.
func (c CacheReader) Namespace() string { return c.Client.Namespace() }

// Get implements reg.Reader.
func (c CacheReader) Get(ctx context.Context, path string) ([]byte, reg.Stat, error) {
	if !c.loaded() {
		return c.Client.Get(ctx, path)
	}
	data, st, ok := c.Cache.Get(path)
	if !ok {
		return nil, reg.Stat{}, reg.ErrNoNode
	}
	return data, st, nil
}

// Exists implements reg.Reader.
func (c CacheReader) Exists(ctx context.Context, path string) (reg.Stat, bool, error) {
	if !c.loaded() {
		return c.Client.Exists(ctx, path)
	}
	_, st, ok := c.Cache.Get(path)
	return st, ok, nil
}

// Children implements reg.Reader.
func (c CacheReader) Children(ctx context.Context, path string) ([]string, error) {
	if !c.loaded() {
		return c.Client.Children(ctx, path)
	}
	names, ok := c.Cache.Children(path)
	if !ok {
		return nil, reg.ErrNoNode
	}
	return names, nil
}
