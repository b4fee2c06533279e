package coord

import (
	"bytes"
	"context"
	"fmt"
	"sync/atomic"

	"github.com/ejob-io/ejob/core/config"
	"github.com/ejob-io/ejob/core/reg"
)

// configState is the job's configuration as this instance knows it, its
// one owner: the latest config (from the tree cache's node, or read
// fresh), the bytes parsed last and what they parse to, the node refused
// last and why, and the sharding item parameters parsed last. Each
// pointer is read without a lock, so that a trigger takes none.
type configState struct {
	*jobBase

	// cur is the latest known config. Written by the start (setUpConfig,
	// refresh) and the event loop (config events); read by every fire on
	// its worker goroutine, the job's queue, the pump's clock
	// (pump.wanted) and the host (Job.Config): atomic.
	cur atomic.Pointer[config.JobConfiguration]
	// parsed is the config node parsed last, bad the one refused last
	// while it is the node's (parse). Written by parse on the start, the
	// event loop and the fires that read the node fresh (load); bad is
	// read too by every fire's check and the host's metrics and console
	// (ConfigError): atomic.
	parsed atomic.Pointer[parsedConfig]
	bad    atomic.Pointer[badConfig]
	// params is the shardingItemParameters parsed last (itemParameters),
	// written and read by the fires' contexts, each on the worker goroutine
	// the trigger loop hands it to, which changes from fire to fire: atomic.
	params atomic.Pointer[parsedParams]
}

// err is nil while the config node is valid, else why it is not
// (Job.ConfigError).
func (c *configState) err() error {
	if b := c.bad.Load(); b != nil {
		return b.err
	}
	return nil
}

// get returns the cached configuration (the tree's latest), else reads
// it directly.
func (c *configState) get(ctx context.Context) (*config.JobConfiguration, error) {
	if cur := c.cur.Load(); cur != nil {
		return cur, nil
	}
	return c.load(ctx)
}

// load reads the config node directly (upstream's load(false)). The
// result is shared (see parse): callers must not modify it.
func (c *configState) load(ctx context.Context) (*config.JobConfiguration, error) {
	data, ok, err := c.s.get(ctx, c.s.p.Config())
	if err != nil {
		return nil, wrap("read config", err)
	}
	if !ok {
		if cur := c.cur.Load(); cur != nil {
			return cur, nil
		}
		return nil, fmt.Errorf("read config: %w", reg.ErrNoNode)
	}
	return c.parse([]byte(data))
}

// parsedConfig is the bytes of a config node and the config they parse to
// (as Equal compares: setUpConfig stores what this process wrote with the
// config it wrote, whose wire state, never marshalled here, may differ).
type parsedConfig struct {
	data []byte // never modified (see parse)
	cfg  *config.JobConfiguration
}

// parse parses a config node's bytes, or returns the config parsed
// last time when the bytes are the same (every execution reads the node:
// parsing its YAML each time was about a quarter of the kernel's CPU per
// run). The result is shared: callers must not modify it (Config hands
// out a copy). It keeps data: the caller must not modify it afterwards
// (it is a copy of its own or a tree event's, which no one modifies).
//
// A node that does not parse or breaks a bound (config.Decode) is an error
// wrapping ErrConfigInvalid; it is logged once (the same bytes again give
// the same error without a log line), and ConfigError reports it until a
// valid node is parsed.
func (c *configState) parse(data []byte) (*config.JobConfiguration, error) {
	if p := c.parsed.Load(); p != nil && bytes.Equal(p.data, data) {
		c.valid()
		return p.cfg, nil
	}
	if b := c.bad.Load(); b != nil && bytes.Equal(b.data, data) {
		return nil, b.err
	}
	cfg, err := config.Decode(data)
	if err != nil {
		c.invalid(data, err)
		return nil, c.bad.Load().err
	}
	c.parsed.Store(&parsedConfig{data: data, cfg: cfg})
	c.valid()
	return cfg, nil
}

// badConfig is a config node's bytes that parse refused, and why.
type badConfig struct {
	data []byte
	err  error // wraps ErrConfigInvalid
}

// invalid records data, the config node's bytes, as refused for
// cause (a config.Decode error), and logs it unless it was refused last.
func (c *configState) invalid(data []byte, cause error) {
	err := fmt.Errorf("%w: %w", ErrConfigInvalid, cause)
	if prev := c.bad.Swap(&badConfig{data: data, err: err}); prev != nil && bytes.Equal(prev.data, data) {
		return // refused and logged already (a concurrent parse, or the start)
	}
	c.log.Error("the job's configuration in the registry is invalid; the job does not fire until a valid one is written "+
		"(PUT /api/jobs/config; for a node that parses, also the console or `ejob job set`)", "error", cause)
}

// valid clears a refusal of the config node once a valid node was
// parsed.
func (c *configState) valid() {
	if c.bad.Load() == nil {
		return
	}
	if c.bad.Swap(nil) != nil {
		c.log.Info("the job's configuration in the registry is valid again; the job fires again")
	}
}

// parsedParams is shardingItemParameters and what it parses to.
type parsedParams struct {
	text   string
	params map[int]string
}

// itemParameters parses shardingItemParameters, or returns what the same
// text parsed to at the last trigger. The result is shared: callers must
// not modify it.
func (c *configState) itemParameters(text string) (map[int]string, error) {
	if text == "" {
		return nil, nil
	}
	if p := c.params.Load(); p != nil && p.text == text {
		return p.params, nil
	}
	params, err := config.ParseShardingItemParameters(text)
	if err != nil {
		return nil, err
	}
	c.params.Store(&parsedParams{text: text, params: params})
	return params, nil
}

// refresh sets the configuration from the config node the tree cache
// shows (nil: none loaded yet).
func (c *configState) refresh(cache *reg.CacheView) {
	if cache == nil {
		return
	}
	// The cache's own bytes (Peek), never modified: what configState.parse keeps
	// of them is then shared with the cache, not a second copy.
	data, _, ok := cache.Peek(c.s.p.Config())
	if !ok {
		return
	}
	if p := c.parsed.Load(); p != nil && bytes.Equal(p.data, data) {
		// Parsed already (setUpConfig keeps what it wrote): keep the
		// cache's bytes instead of that copy.
		c.parsed.CompareAndSwap(p, &parsedConfig{data: data, cfg: p.cfg})
		c.cur.Store(p.cfg)
		return
	}
	if cfg, err := c.parse(data); err == nil {
		c.cur.Store(cfg)
	}
}
