// Package regcount wraps a reg.Client and counts the requests made through
// it, for benchmarks and diagnostics: how many registry round trips one
// trigger, one resharding or one startup costs.
//
// Every Reader, Writer and Watcher call counts as one request whether it
// succeeds or fails, and a Multi or a MultiRead counts as one request
// however many ops it carries. Session, WatchConnection, Namespace and Close are not requests.
// The counts are taken at the reg.Client interface: a call the
// implementation turns into several wire requests (a Create that first
// creates missing parents, a retry after a connection loss, a MultiRead
// sent as several multiRead requests) still counts once.
package regcount

import (
	"context"
	"sync/atomic"

	"github.com/ejob-io/ejob/core/reg"
)

// Kind is a request class.
type Kind int

// Request classes.
const (
	// Read: Get, Exists, Children, and MultiRead (one request however
	// many ops it carries, like Multi).
	Read Kind = iota + 1
	// Write: Create, Set, Delete.
	Write
	// Multi: one transaction, whatever its size.
	Multi
	// Watch: GetW, ExistsW, ChildrenW (a read that also arms a watch),
	// and WatchRecursive (one request per call, however many events it
	// delivers).
	Watch
)

func (k Kind) String() string {
	switch k {
	case Read:
		return "read"
	case Write:
		return "write"
	case Multi:
		return "multi"
	case Watch:
		return "watch"
	}
	return "unknown"
}

// Call describes one counted request, for an Observer.
type Call struct {
	Kind   Kind
	Method string // "Get", "Create", "Multi", ...
	Path   string // namespace-relative; a Multi's or MultiRead's first op path ("" if none)
	Ops    int    // number of ops of a Multi or MultiRead, else 1
}

// Counts are request totals by class.
type Counts struct {
	Reads, Writes, Multis, Watches int64
}

// Total is the number of requests of every class.
func (c Counts) Total() int64 { return c.Reads + c.Writes + c.Multis + c.Watches }

// Sub returns c - o (the requests made between two snapshots).
func (c Counts) Sub(o Counts) Counts {
	return Counts{c.Reads - o.Reads, c.Writes - o.Writes, c.Multis - o.Multis, c.Watches - o.Watches}
}

// Add returns c + o.
func (c Counts) Add(o Counts) Counts {
	return Counts{c.Reads + o.Reads, c.Writes + o.Writes, c.Multis + o.Multis, c.Watches + o.Watches}
}

// Option configures a Client.
type Option func(*Client)

// WithObserver calls f for every request, before it is made, from the
// calling goroutine. f must be safe for concurrent use and quick.
func WithObserver(f func(Call)) Option { return func(c *Client) { c.observe = f } }

// Client is a reg.Client that counts the requests made through it. It is
// safe for concurrent use.
type Client struct {
	inner   reg.Client
	observe func(Call)

	reads, writes, multis, watches atomic.Int64
}

var (
	_ reg.Client           = (*Client)(nil)
	_ reg.RecursiveWatcher = (*Client)(nil)
	_ reg.StoreWatcher     = (*Client)(nil)
)

// New wraps c.
func New(c reg.Client, opts ...Option) *Client {
	cc := &Client{inner: c}
	for _, o := range opts {
		o(cc)
	}
	return cc
}

// Unwrap returns the wrapped client (for its optional interfaces, such as
// reg.Expirer).
func (c *Client) Unwrap() reg.Client { return c.inner }

// Counts returns the totals so far.
func (c *Client) Counts() Counts {
	return Counts{c.reads.Load(), c.writes.Load(), c.multis.Load(), c.watches.Load()}
}

func (c *Client) count(k Kind, method, path string, ops int) {
	switch k {
	case Read:
		c.reads.Add(1)
	case Write:
		c.writes.Add(1)
	case Multi:
		c.multis.Add(1)
	case Watch:
		c.watches.Add(1)
	}
	if c.observe != nil {
		c.observe(Call{Kind: k, Method: method, Path: path, Ops: ops})
	}
}

// Get implements reg.Reader.
func (c *Client) Get(ctx context.Context, path string) ([]byte, reg.Stat, error) {
	c.count(Read, "Get", path, 1)
	return c.inner.Get(ctx, path)
}

// Exists implements reg.Reader.
func (c *Client) Exists(ctx context.Context, path string) (reg.Stat, bool, error) {
	c.count(Read, "Exists", path, 1)
	return c.inner.Exists(ctx, path)
}

// Children implements reg.Reader.
func (c *Client) Children(ctx context.Context, path string) ([]string, error) {
	c.count(Read, "Children", path, 1)
	return c.inner.Children(ctx, path)
}

// MultiRead implements reg.MultiReader: one read request.
func (c *Client) MultiRead(ctx context.Context, ops ...reg.ReadOp) ([]reg.ReadResult, error) {
	path := ""
	if len(ops) > 0 {
		path = ops[0].Path
	}
	c.count(Read, "MultiRead", path, len(ops))
	return c.inner.MultiRead(ctx, ops...)
}

// MultiReadAppend implements reg.MultiReadAppender: one read request, as
// MultiRead (through the wrapped client's MultiReadAppend when it has one).
func (c *Client) MultiReadAppend(ctx context.Context, dst []reg.ReadResult, ops ...reg.ReadOp) ([]reg.ReadResult, error) {
	m, ok := c.inner.(reg.MultiReadAppender)
	if !ok {
		res, err := c.MultiRead(ctx, ops...)
		if err != nil {
			return dst, err
		}
		return append(dst, res...), nil
	}
	path := ""
	if len(ops) > 0 {
		path = ops[0].Path
	}
	c.count(Read, "MultiRead", path, len(ops))
	return m.MultiReadAppend(ctx, dst, ops...)
}

// Create implements reg.Writer.
func (c *Client) Create(ctx context.Context, path string, data []byte, mode reg.CreateMode, opts ...reg.CreateOption) (string, error) {
	c.count(Write, "Create", path, 1)
	return c.inner.Create(ctx, path, data, mode, opts...)
}

// Set implements reg.Writer.
func (c *Client) Set(ctx context.Context, path string, data []byte, version int32) (reg.Stat, error) {
	c.count(Write, "Set", path, 1)
	return c.inner.Set(ctx, path, data, version)
}

// Delete implements reg.Writer.
func (c *Client) Delete(ctx context.Context, path string, version int32) error {
	c.count(Write, "Delete", path, 1)
	return c.inner.Delete(ctx, path, version)
}

// Multi implements reg.Writer.
func (c *Client) Multi(ctx context.Context, ops ...reg.Op) ([]reg.OpResult, error) {
	path := ""
	if len(ops) > 0 {
		path = ops[0].Path
	}
	c.count(Multi, "Multi", path, len(ops))
	return c.inner.Multi(ctx, ops...)
}

// GetW implements reg.Watcher.
func (c *Client) GetW(ctx context.Context, path string) ([]byte, reg.Stat, <-chan reg.WatchEvent, error) {
	c.count(Watch, "GetW", path, 1)
	return c.inner.GetW(ctx, path)
}

// ExistsW implements reg.Watcher.
func (c *Client) ExistsW(ctx context.Context, path string) (reg.Stat, bool, <-chan reg.WatchEvent, error) {
	c.count(Watch, "ExistsW", path, 1)
	return c.inner.ExistsW(ctx, path)
}

// ChildrenW implements reg.Watcher.
func (c *Client) ChildrenW(ctx context.Context, path string) ([]string, reg.Stat, <-chan reg.WatchEvent, error) {
	c.count(Watch, "ChildrenW", path, 1)
	return c.inner.ChildrenW(ctx, path)
}

// WatchRecursive implements reg.RecursiveWatcher: one Watch request. A
// wrapped client without recursive watches makes no request: the call
// fails with ErrUnimplemented, as against a server before 3.6.
func (c *Client) WatchRecursive(ctx context.Context, path string, fn func(reg.WatchEvent)) error {
	rw, ok := c.inner.(reg.RecursiveWatcher)
	if !ok {
		return &reg.OpError{Op: "watchrecursive", Path: path, Err: reg.ErrUnimplemented}
	}
	c.count(Watch, "WatchRecursive", path, 1)
	return rw.WatchRecursive(ctx, path, fn)
}

// WatchRecursiveInline implements reg.InlineRecursiveWatcher: one Watch
// request; WatchRecursive's when the wrapped client has no inline watches.
func (c *Client) WatchRecursiveInline(ctx context.Context, path string, fn func(reg.WatchEvent)) error {
	in, ok := c.inner.(reg.InlineRecursiveWatcher)
	if !ok {
		return c.WatchRecursive(ctx, path, fn)
	}
	c.count(Watch, "WatchRecursive", path, 1)
	return in.WatchRecursiveInline(ctx, path, fn)
}

// WatchStore implements reg.StoreWatcher: one Watch request (the Store's
// reads are none: a cache's reads of its copy). It fails with
// ErrUnimplemented, making no request, when the wrapped client has no
// store watches.
func (c *Client) WatchStore(ctx context.Context, fn func(reg.WatchEvent)) (reg.Store, error) {
	sw, ok := c.inner.(reg.StoreWatcher)
	if !ok {
		return nil, &reg.OpError{Op: "watchstore", Path: "/", Err: reg.ErrUnimplemented}
	}
	c.count(Watch, "WatchRecursive", "/", 1)
	return sw.WatchStore(ctx, fn)
}

// Session implements reg.Client (not a request).
func (c *Client) Session() *reg.Session { return c.inner.Session() }

// WatchConnection implements reg.Client (not a request).
func (c *Client) WatchConnection(ctx context.Context) <-chan reg.ConnEvent {
	return c.inner.WatchConnection(ctx)
}

// Namespace implements reg.Client.
func (c *Client) Namespace() string { return c.inner.Namespace() }

// Close implements reg.Client (closes the wrapped client).
func (c *Client) Close() error { return c.inner.Close() }
