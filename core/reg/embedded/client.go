package embedded

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/ejob-io/ejob/core/reg"
	"github.com/ejob-io/ejob/core/reg/internal/notify"
)

// Client is one simulated registry connection (an instance) on a Server,
// seeing the tree under its namespace. It implements reg.Client and
// reg.Expirer.
type Client struct {
	srv *Server
	ns  string // "" or "/a/b"
	hub *notify.Hub[reg.ConnEvent]

	// Guarded by srv.mu.
	sess *session
	// rs is sess.rs, written with sess (under srv.mu) and read by Session
	// without the lock: every trigger asks for the session several times,
	// and a lock of the server shared by every client of the process,
	// taken for a pointer, contended with the executions of other jobs.
	rs        atomic.Pointer[reg.Session]
	suspended bool
	suspSeq   int // counts Suspends, so a stale expiry timer does nothing
	closed    bool
	pending   []pendingDelivery // watch events held while suspended
	rwatches  []*rwatch         // live recursive watches (see recursive.go)

	rq *notify.Queue[rdelivery] // recursive-watch events for their fns
}

type pendingDelivery struct {
	w  *watch
	ev reg.WatchEvent
}

var (
	_ reg.Client    = (*Client)(nil)
	_ reg.Expirer   = (*Client)(nil)
	_ reg.InProcess = (*Client)(nil)
)

// Connect opens a client with a new session under namespace (created as
// needed, like Curator's namespace facade; "" means the server root).
func (s *Server) Connect(namespace string) (*Client, error) {
	ns := strings.Trim(namespace, "/")
	c := &Client{srv: s, hub: notify.New[reg.ConnEvent](), rq: notify.NewQueue(deliverRecursive)}
	if ns != "" {
		c.ns = "/" + ns
		if err := reg.ValidatePath(c.ns, false); err != nil {
			return nil, fmt.Errorf("embedded: namespace %q: %w", namespace, err)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c.setSession(s.newSession(c))
	if c.ns != "" {
		if err := c.mkdirsLocked(c.ns, reg.Persistent); err != nil {
			return nil, fmt.Errorf("embedded: create namespace %q: %w", c.ns, err)
		}
	}
	return c, nil
}

// InProcess implements reg.InProcess: every call is served in the calling
// goroutine.
func (c *Client) InProcess() bool { return true }

// Namespace implements reg.Client.
func (c *Client) Namespace() string { return strings.TrimPrefix(c.ns, "/") }

func (c *Client) abs(p string) string {
	if p == "/" && c.ns != "" {
		return c.ns
	}
	return c.ns + p
}

// lookup is srv.lookup(c.abs(path)) without building the full path.
// Caller holds srv.mu.
func (c *Client) lookup(path string) *node {
	n := c.srv.lookupFrom(c.srv.root, c.ns)
	if n == nil {
		return nil
	}
	return c.srv.lookupFrom(n, path)
}

func (c *Client) rel(full string) string {
	if c.ns == "" {
		return full
	}
	if full == c.ns {
		return "/"
	}
	return strings.TrimPrefix(full, c.ns)
}

// deliver hands a watch event to its channel, or holds it while suspended.
// Caller holds srv.mu.
func (c *Client) deliver(w *watch, ev reg.WatchEvent) {
	if c.suspended && ev.Type != reg.EventNotWatching {
		c.pending = append(c.pending, pendingDelivery{w, ev})
		return
	}
	w.ch <- ev // buffered 1, receives exactly once
	close(w.ch)
}

// begin checks ctx and the client's state; on success srv.mu is held and the
// caller must unlock.
func (c *Client) begin(ctx context.Context, op, path string, sequential bool) error {
	if err := reg.ValidatePath(path, sequential); err != nil {
		return &reg.OpError{Op: op, Path: path, Err: err}
	}
	if err := ctx.Err(); err != nil {
		return &reg.OpError{Op: op, Path: path, Err: err}
	}
	c.srv.mu.Lock()
	var err error
	switch {
	case c.closed:
		err = reg.ErrClosed
	case c.suspended:
		err = reg.ErrConnectionLoss
	}
	if err != nil {
		c.srv.mu.Unlock()
		return &reg.OpError{Op: op, Path: path, Err: err}
	}
	if c.srv.timeout > 0 {
		// The last contact matters to a session that can expire
		// (reg.Session.ExpiryDeadline); a clock read a request otherwise.
		c.sess.rs.Touch(time.Now())
	}
	return nil
}

func opErr(op, path string, err error) error {
	if err == nil {
		return nil
	}
	return &reg.OpError{Op: op, Path: path, Err: err}
}

// Get implements reg.Reader.
func (c *Client) Get(ctx context.Context, path string) ([]byte, reg.Stat, error) {
	data, st, _, err := c.get(ctx, "get", path, false)
	return data, st, err
}

// GetW implements reg.Watcher.
func (c *Client) GetW(ctx context.Context, path string) ([]byte, reg.Stat, <-chan reg.WatchEvent, error) {
	return c.get(ctx, "getw", path, true)
}

func (c *Client) get(ctx context.Context, op, path string, w bool) ([]byte, reg.Stat, <-chan reg.WatchEvent, error) {
	if err := c.begin(ctx, op, path, false); err != nil {
		return nil, reg.Stat{}, nil, err
	}
	defer c.srv.mu.Unlock()
	n := c.lookup(path)
	if n == nil {
		return nil, reg.Stat{}, nil, opErr(op, path, reg.ErrNoNode)
	}
	var ch <-chan reg.WatchEvent
	if w {
		ch = c.srv.addWatch(c.sess, watchKey{c.abs(path), watchData})
	}
	return n.dataOf(), n.statCopy(), ch, nil
}

// Exists implements reg.Reader.
func (c *Client) Exists(ctx context.Context, path string) (reg.Stat, bool, error) {
	st, ok, _, err := c.exists(ctx, "exists", path, false)
	return st, ok, err
}

// ExistsW implements reg.Watcher.
func (c *Client) ExistsW(ctx context.Context, path string) (reg.Stat, bool, <-chan reg.WatchEvent, error) {
	return c.exists(ctx, "existsw", path, true)
}

func (c *Client) exists(ctx context.Context, op, path string, w bool) (reg.Stat, bool, <-chan reg.WatchEvent, error) {
	if err := c.begin(ctx, op, path, false); err != nil {
		return reg.Stat{}, false, nil, err
	}
	defer c.srv.mu.Unlock()
	n := c.lookup(path)
	var ch <-chan reg.WatchEvent
	if w {
		kind := watchExist
		if n != nil {
			kind = watchData
		}
		// ZooKeeper keys an exists watch on an existing node as a data watch.
		ch = c.srv.addWatch(c.sess, watchKey{c.abs(path), kind})
	}
	if n == nil {
		return reg.Stat{}, false, ch, nil
	}
	return n.statCopy(), true, ch, nil
}

// Children implements reg.Reader.
func (c *Client) Children(ctx context.Context, path string) ([]string, error) {
	names, _, _, err := c.children(ctx, "children", path, false)
	return names, err
}

// ChildrenW implements reg.Watcher.
func (c *Client) ChildrenW(ctx context.Context, path string) ([]string, reg.Stat, <-chan reg.WatchEvent, error) {
	return c.children(ctx, "childrenw", path, true)
}

func (c *Client) children(ctx context.Context, op, path string, w bool) ([]string, reg.Stat, <-chan reg.WatchEvent, error) {
	if err := c.begin(ctx, op, path, false); err != nil {
		return nil, reg.Stat{}, nil, err
	}
	defer c.srv.mu.Unlock()
	full := c.abs(path)
	n := c.srv.lookup(full)
	if n == nil {
		return nil, reg.Stat{}, nil, opErr(op, path, reg.ErrNoNode)
	}
	names := n.childNames()
	var ch <-chan reg.WatchEvent
	if w {
		ch = c.srv.addWatch(c.sess, watchKey{full, watchChild})
	}
	return names, n.statCopy(), ch, nil
}

// Create implements reg.Writer.
func (c *Client) Create(ctx context.Context, path string, data []byte, mode reg.CreateMode, opts ...reg.CreateOption) (string, error) {
	if !mode.Valid() {
		return "", opErr("create", path, fmt.Errorf("create mode %v: %w", mode, reg.ErrInvalidArgument))
	}
	if path == "/" {
		return "", opErr("create", path, reg.ErrNodeExists)
	}
	o := reg.ApplyCreateOptions(opts)
	if err := c.begin(ctx, "create", path, mode.IsSequential()); err != nil {
		return "", err
	}
	defer c.srv.mu.Unlock()
	full := c.abs(path)
	if o.Parents != reg.NoParents {
		pm := reg.Persistent
		if o.Parents == reg.ContainerParents {
			pm = reg.Container
		}
		if err := c.mkdirsLocked(parentOf(full), pm); err != nil {
			return "", opErr("create", path, err)
		}
	}
	t := c.srv.begin()
	created, err := t.create(full, data, mode, c.sess.id)
	if err != nil {
		t.rollback()
		return "", opErr("create", path, err)
	}
	t.commit()
	return c.rel(created), nil
}

// mkdirsLocked creates full and its missing ancestors with mode and empty
// data. Caller holds srv.mu.
func (c *Client) mkdirsLocked(full string, mode reg.CreateMode) error {
	if full == "/" {
		return nil
	}
	cur := ""
	for _, p := range strings.Split(full[1:], "/") {
		cur += "/" + p
		if c.srv.lookup(cur) != nil {
			continue
		}
		t := c.srv.begin()
		if _, err := t.create(cur, nil, mode, c.sess.id); err != nil {
			t.rollback()
			if errors.Is(err, reg.ErrNodeExists) {
				continue
			}
			return err
		}
		t.commit()
	}
	return nil
}

// Set implements reg.Writer.
func (c *Client) Set(ctx context.Context, path string, data []byte, version int32) (reg.Stat, error) {
	if err := c.begin(ctx, "set", path, false); err != nil {
		return reg.Stat{}, err
	}
	defer c.srv.mu.Unlock()
	t := c.srv.begin()
	st, err := t.set(c.abs(path), data, version)
	if err != nil {
		t.rollback()
		return reg.Stat{}, opErr("set", path, err)
	}
	t.commit()
	return st, nil
}

// Delete implements reg.Writer.
func (c *Client) Delete(ctx context.Context, path string, version int32) error {
	if err := c.begin(ctx, "delete", path, false); err != nil {
		return err
	}
	defer c.srv.mu.Unlock()
	t := c.srv.begin()
	if err := t.delete(c.abs(path), version); err != nil {
		t.rollback()
		return opErr("delete", path, err)
	}
	t.commit()
	return nil
}

// Multi implements reg.Writer.
func (c *Client) Multi(ctx context.Context, ops ...reg.Op) ([]reg.OpResult, error) {
	for i, op := range ops {
		if err := validateOp(op); err != nil {
			return nil, opErr("multi", op.Path, &reg.MultiError{Index: i, Op: op, Err: err})
		}
	}
	if err := c.begin(ctx, "multi", "/", false); err != nil {
		return nil, err
	}
	defer c.srv.mu.Unlock()
	t := c.srv.begin()
	res := make([]reg.OpResult, len(ops))
	for i, op := range ops {
		var err error
		switch op.Kind {
		case reg.OpCheck:
			err = checkNode(c.lookup(op.Path), op.Version)
		case reg.OpCreate:
			var p string
			if p, err = t.create(c.abs(op.Path), op.Data, op.Mode, c.sess.id); err == nil {
				res[i].Path = c.rel(p)
				res[i].Czxid = t.zxid
			}
		case reg.OpSet:
			res[i].Stat, err = t.set(c.abs(op.Path), op.Data, op.Version)
		case reg.OpDelete:
			err = t.delete(c.abs(op.Path), op.Version)
		}
		if err != nil {
			t.rollback()
			return nil, opErr("multi", op.Path, &reg.MultiError{Index: i, Op: op, Err: err})
		}
	}
	t.commit()
	return res, nil
}

func validateOp(op reg.Op) error {
	switch op.Kind {
	case reg.OpCheck, reg.OpSet, reg.OpDelete:
		return reg.ValidatePath(op.Path, false)
	case reg.OpCreate:
		if !op.Mode.Valid() {
			return fmt.Errorf("create mode %v in a transaction: %w", op.Mode, reg.ErrInvalidArgument)
		}
		return reg.ValidatePath(op.Path, op.Mode.IsSequential())
	}
	return fmt.Errorf("op kind %v: %w", op.Kind, reg.ErrInvalidArgument)
}

// Session implements reg.Client.
func (c *Client) Session() *reg.Session { return c.rs.Load() }

// setSession makes sess the client's session. Caller holds srv.mu.
func (c *Client) setSession(sess *session) {
	c.sess = sess
	c.rs.Store(sess.rs)
}

// WatchConnection implements reg.Client.
func (c *Client) WatchConnection(ctx context.Context) <-chan reg.ConnEvent {
	c.srv.mu.Lock()
	defer c.srv.mu.Unlock()
	first := reg.ConnEvent{State: reg.StateConnected, Session: c.sess.rs}
	if c.suspended {
		first.State = reg.StateSuspended
	}
	if c.closed {
		first = reg.ConnEvent{State: reg.StateLost, Session: c.sess.rs}
	}
	return c.hub.Subscribe(ctx, first)
}

// Expire implements reg.Expirer: the server ends the current session as on a
// timeout (its ephemerals go, its watches end with NotWatching), the client
// reports StateLost and opens a new session (StateNewSession) at once, or on
// Resume when suspended.
func (c *Client) Expire(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.srv.mu.Lock()
	defer c.srv.mu.Unlock()
	if c.closed {
		return reg.ErrClosed
	}
	c.expireLocked(c.sess)
	return nil
}

func (c *Client) expireLocked(sess *session) {
	if sess != c.sess || sess.rs.Err() != nil {
		return
	}
	c.srv.endSession(sess, fmt.Errorf("%v expired: %w", sess.rs, reg.ErrSessionLost))
	c.hub.Publish(reg.ConnEvent{State: reg.StateLost, Session: sess.rs})
	if !c.suspended {
		c.newSessionLocked()
	}
}

func (c *Client) newSessionLocked() {
	c.setSession(c.srv.newSession(c))
	c.hub.Publish(reg.ConnEvent{State: reg.StateNewSession, Session: c.sess.rs})
	c.resyncRecursive()
}

// Suspend simulates a lost connection that keeps the session: operations fail
// with ErrConnectionLoss, watch events are held, StateSuspended is reported.
func (c *Client) Suspend() {
	c.srv.mu.Lock()
	defer c.srv.mu.Unlock()
	if c.closed || c.suspended {
		return
	}
	for _, w := range c.rwatches {
		c.pauseStore(w)
	}
	c.suspended = true
	c.suspSeq++
	seq := c.suspSeq
	sess := c.sess
	sess.rs.Touch(time.Now())
	if d := c.srv.timeout; d > 0 {
		// The server expires the session once it has not heard from the
		// client for the timeout; the client notices at the same moment.
		time.AfterFunc(d, func() {
			c.srv.mu.Lock()
			defer c.srv.mu.Unlock()
			if c.suspended && !c.closed && c.suspSeq == seq {
				c.expireLocked(sess)
			}
		})
	}
	c.hub.Publish(reg.ConnEvent{State: reg.StateSuspended, Session: sess.rs})
}

// Resume ends a Suspend: with the same session (StateReconnected, held watch
// events delivered) or, if it expired meanwhile, a new one (StateNewSession).
func (c *Client) Resume() {
	c.srv.mu.Lock()
	defer c.srv.mu.Unlock()
	if c.closed || !c.suspended {
		return
	}
	c.suspended = false
	if err := c.sess.rs.Err(); err != nil {
		for _, p := range c.pending {
			p.w.ch <- reg.WatchEvent{Type: reg.EventNotWatching, Path: p.ev.Path, Err: err}
			close(p.w.ch)
		}
		c.pending = nil
		c.newSessionLocked()
		return
	}
	for _, p := range c.pending {
		c.deliver(p.w, p.ev)
	}
	c.pending = nil
	c.sess.rs.Touch(time.Now())
	c.hub.Publish(reg.ConnEvent{State: reg.StateReconnected, Session: c.sess.rs})
	c.resyncRecursive()
}

// Close implements reg.Client: the session ends (ephemerals deleted, watches
// end with ErrClosed) and the connection-state streams close. It returns
// once the recursive watches' fns have had their last call.
func (c *Client) Close() error {
	c.srv.mu.Lock()
	if c.closed {
		c.srv.mu.Unlock()
		return nil
	}
	c.closed = true
	c.suspended = false
	for _, p := range c.pending {
		p.w.ch <- reg.WatchEvent{Type: reg.EventNotWatching, Path: p.ev.Path, Err: reg.ErrClosed}
		close(p.w.ch)
	}
	c.pending = nil
	for _, w := range slices.Clone(c.rwatches) {
		c.endRecursive(w, reg.ErrClosed)
	}
	c.srv.endSession(c.sess, fmt.Errorf("%v closed: %w", c.sess.rs, reg.ErrClosed))
	c.srv.mu.Unlock()
	c.hub.Close()
	c.rq.Wait() // no recursive-watch fn runs once Close has returned
	return nil
}

// MultiRead implements reg.MultiReader: every op under one lock, so the
// results are one consistent view (ZooKeeper promises less).
func (c *Client) MultiRead(ctx context.Context, ops ...reg.ReadOp) ([]reg.ReadResult, error) {
	return c.MultiReadAppend(ctx, nil, ops...)
}

var _ reg.MultiReadAppender = (*Client)(nil)

// MultiReadAppend implements reg.MultiReadAppender: MultiRead's results
// appended to dst.
func (c *Client) MultiReadAppend(ctx context.Context, dst []reg.ReadResult, ops ...reg.ReadOp) ([]reg.ReadResult, error) {
	for _, op := range ops {
		if err := reg.ValidateReadOp(op); err != nil {
			return dst, err
		}
	}
	if err := c.begin(ctx, "multiread", "/", false); err != nil {
		return dst, err
	}
	defer c.srv.mu.Unlock()
	base := len(dst)
	dst = slices.Grow(dst, len(ops))[:base+len(ops)]
	out := dst[base:]
	clear(out)
	for i, op := range ops {
		n := c.lookup(op.Path)
		if n == nil {
			out[i].Err = opErr(op.Kind.String(), op.Path, reg.ErrNoNode)
			continue
		}
		switch op.Kind {
		case reg.ReadGet:
			out[i].Data, out[i].Stat = n.dataOf(), n.statCopy()
		case reg.ReadChildren:
			out[i].Children = n.childNames()
		}
	}
	return dst, nil
}
