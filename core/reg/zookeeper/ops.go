package zookeeper

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"

	"github.com/ejob-io/ejob/core/reg"
)

func toStat(s *zk.Stat) reg.Stat {
	if s == nil {
		return reg.Stat{}
	}
	return reg.Stat{
		Czxid: s.Czxid, Mzxid: s.Mzxid, Pzxid: s.Pzxid,
		Ctime: s.Ctime, Mtime: s.Mtime,
		Version: s.Version, Cversion: s.Cversion, Aversion: s.Aversion,
		EphemeralOwner: s.EphemeralOwner, DataLength: s.DataLength, NumChildren: s.NumChildren,
	}
}

type nodeRes struct {
	data     []byte
	children []string
	stat     reg.Stat
	exists   bool
	ch       <-chan zk.Event
}

// Get implements reg.Reader.
func (c *Client) Get(ctx context.Context, path string) ([]byte, reg.Stat, error) {
	r, err := c.read(ctx, "get", path, func(full string) (nodeRes, error) {
		data, st, err := c.conn.Get(full)
		return nodeRes{data: data, stat: toStat(st)}, err
	})
	return r.data, r.stat, err
}

// GetW implements reg.Watcher.
func (c *Client) GetW(ctx context.Context, path string) ([]byte, reg.Stat, <-chan reg.WatchEvent, error) {
	r, err := c.read(ctx, "getw", path, func(full string) (nodeRes, error) {
		data, st, ch, err := c.conn.GetW(full)
		return nodeRes{data: data, stat: toStat(st), ch: ch}, err
	})
	if err != nil {
		return nil, reg.Stat{}, nil, err
	}
	return r.data, r.stat, c.adaptWatch(r.ch), nil
}

// Exists implements reg.Reader.
func (c *Client) Exists(ctx context.Context, path string) (reg.Stat, bool, error) {
	r, err := c.read(ctx, "exists", path, func(full string) (nodeRes, error) {
		ok, st, err := c.conn.Exists(full)
		return nodeRes{exists: ok, stat: toStat(st)}, err
	})
	if !r.exists {
		r.stat = reg.Stat{}
	}
	return r.stat, r.exists, err
}

// ExistsW implements reg.Watcher.
func (c *Client) ExistsW(ctx context.Context, path string) (reg.Stat, bool, <-chan reg.WatchEvent, error) {
	r, err := c.read(ctx, "existsw", path, func(full string) (nodeRes, error) {
		ok, st, ch, err := c.conn.ExistsW(full)
		return nodeRes{exists: ok, stat: toStat(st), ch: ch}, err
	})
	if err != nil {
		return reg.Stat{}, false, nil, err
	}
	if !r.exists {
		r.stat = reg.Stat{}
	}
	return r.stat, r.exists, c.adaptWatch(r.ch), nil
}

// Children implements reg.Reader.
func (c *Client) Children(ctx context.Context, path string) ([]string, error) {
	r, err := c.read(ctx, "children", path, func(full string) (nodeRes, error) {
		names, st, err := c.conn.Children(full)
		return nodeRes{children: names, stat: toStat(st)}, err
	})
	return r.children, err
}

// ChildrenW implements reg.Watcher.
func (c *Client) ChildrenW(ctx context.Context, path string) ([]string, reg.Stat, <-chan reg.WatchEvent, error) {
	r, err := c.read(ctx, "childrenw", path, func(full string) (nodeRes, error) {
		names, st, ch, err := c.conn.ChildrenW(full)
		return nodeRes{children: names, stat: toStat(st), ch: ch}, err
	})
	if err != nil {
		return nil, reg.Stat{}, nil, err
	}
	return r.children, r.stat, c.adaptWatch(r.ch), nil
}

func (c *Client) read(ctx context.Context, op, path string, fn func(full string) (nodeRes, error)) (nodeRes, error) {
	if err := reg.ValidatePath(path, false); err != nil {
		return nodeRes{}, invalid(op, path, err)
	}
	full := c.abs(path)
	return call(ctx, c, op, path, true, func() (nodeRes, error) { return fn(full) })
}

// adaptWatch turns a go-zookeeper one-shot watch into a reg one. The
// goroutine ends when the watch fires, which go-zookeeper guarantees on an
// event, on session expiry and on close.
func (c *Client) adaptWatch(in <-chan zk.Event) <-chan reg.WatchEvent {
	out := make(chan reg.WatchEvent, 1)
	go func() {
		defer close(out)
		ev, ok := <-in
		if !ok {
			out <- reg.WatchEvent{Type: reg.EventNotWatching, Err: reg.ErrClosed}
			return
		}
		we := reg.WatchEvent{Path: c.rel(ev.Path)}
		switch ev.Type {
		case zk.EventNodeCreated:
			we.Type = reg.EventNodeCreated
		case zk.EventNodeDeleted:
			we.Type = reg.EventNodeDeleted
		case zk.EventNodeDataChanged:
			we.Type = reg.EventNodeDataChanged
		case zk.EventNodeChildrenChanged:
			we.Type = reg.EventNodeChildrenChanged
		default:
			we.Type = reg.EventNotWatching
			switch {
			case c.isClosing() || errors.Is(ev.Err, zk.ErrClosing):
				we.Err = reg.ErrClosed
			case ev.Err != nil:
				we.Err = mapErr(ev.Err)
			default:
				we.Err = reg.ErrSessionLost
			}
		}
		out <- we
	}()
	return out
}

func createFlags(m reg.CreateMode) int32 {
	switch m {
	case reg.Ephemeral:
		return zk.FlagEphemeral
	case reg.PersistentSequential:
		return zk.FlagSequence
	case reg.EphemeralSequential:
		return zk.FlagEphemeralSequential
	case reg.Container:
		return zk.FlagContainer
	}
	return zk.FlagPersistent
}

// Create implements reg.Writer. Sequential creates are not retried after a
// connection loss (a retry could leave a second node); callers that need
// that use a protected name (as recipe.Latch does) and look for it.
func (c *Client) Create(ctx context.Context, path string, data []byte, mode reg.CreateMode, opts ...reg.CreateOption) (string, error) {
	if !mode.Valid() {
		return "", invalid("create", path, fmt.Errorf("create mode %v: %w", mode, reg.ErrInvalidArgument))
	}
	if err := reg.ValidatePath(path, mode.IsSequential()); err != nil {
		return "", invalid("create", path, err)
	}
	if path == "/" {
		return "", invalid("create", path, reg.ErrNodeExists)
	}
	o := reg.ApplyCreateOptions(opts)
	full := c.abs(path)
	flags := createFlags(mode)
	data = nonNull(data)
	create := func() (string, error) {
		if mode == reg.Container {
			return c.conn.CreateContainer(full, data, flags, c.acl)
		}
		return c.conn.Create(full, data, flags, c.acl)
	}
	for try := 0; ; try++ {
		p, err := call(ctx, c, "create", path, !mode.IsSequential(), create)
		if err == nil {
			return c.rel(p), nil
		}
		if o.Parents == reg.NoParents || !errors.Is(err, reg.ErrNoNode) || try >= 3 {
			return "", err
		}
		// The parent is missing (or a container parent was just reaped):
		// create the ancestors and try again, as Curator does.
		pm := int32(zk.FlagPersistent)
		if o.Parents == reg.ContainerParents {
			pm = zk.FlagContainer
		}
		if err := c.mkdirs(ctx, reg.Parent(full), pm); err != nil {
			// An ancestor mkdirs found was gone when it created the next
			// one: an empty container the server reaped meanwhile (a
			// job's leader/election after its last leader node went, on
			// a restart). Start over from the top, as for the node.
			if errors.Is(err, reg.ErrNoNode) {
				continue
			}
			return "", &reg.OpError{Op: "create", Path: path, Err: fmt.Errorf("create parents: %w", err)}
		}
	}
}

// nonNull returns data, or empty data for nil. go-zookeeper sends a nil
// slice as ZooKeeper's null (length -1); Curator never writes null (its
// parents get new byte[0], ElasticJob's values String.getBytes), and Java's
// getDirectly dereferences what it reads, so ejob never writes null either.
func nonNull(data []byte) []byte {
	if data == nil {
		return []byte{}
	}
	return data
}

// mkdirs creates full and its missing ancestors (full paths) as flag nodes
// with empty data, as Curator's ZKPaths.mkdirs. Curator asks whether each
// ancestor exists, one request after another from the root; mkdirs reads
// them all in one multiRead and creates the missing ones from the first
// missing down, without asking about the ones below it (a node under a
// missing one cannot exist; one another client creates meanwhile is
// NodeExists here, which is success). Re-registering thousands of jobs
// whose election containers the server has reaped takes a request a job
// for what Curator's way asks in five.
func (c *Client) mkdirs(ctx context.Context, full string, flag int32) error {
	if full == "/" {
		return nil
	}
	paths := ancestry(full)
	first, known, err := c.firstMissing(ctx, paths)
	if err != nil {
		return err
	}
	for ; !known && first < len(paths); first++ {
		cur := paths[first]
		ok, err := call(ctx, c, "exists", cur, true, func() (bool, error) {
			ok, _, err := c.conn.Exists(cur)
			return ok, err
		})
		if err != nil {
			return err
		}
		known = !ok
		if known {
			break
		}
	}
	for _, p := range paths[first:] {
		_, err := call(ctx, c, "create", p, true, func() (string, error) {
			if flag == zk.FlagContainer {
				return c.conn.CreateContainer(p, []byte{}, flag, c.acl)
			}
			return c.conn.Create(p, []byte{}, flag, c.acl)
		})
		if err != nil && !errors.Is(err, reg.ErrNodeExists) {
			return err
		}
	}
	return nil
}

// firstMissing reads paths (a node's ancestry, root first) in one
// multiRead and returns the index of the first that does not exist, known
// true; or, where the read cannot tell (one path, a server without
// multiRead, an answer other than the node or NoNode), the index from
// which mkdirs must ask one by one, known false. A node the client may not
// read (NoAuth) exists.
func (c *Client) firstMissing(ctx context.Context, paths []string) (int, bool, error) {
	if len(paths) < 2 || c.noMultiRead.Load() {
		return 0, false, nil
	}
	ops := make([]reg.ReadOp, len(paths))
	for i, p := range paths {
		ops[i] = reg.GetOp(p)
	}
	res, err := call(ctx, c, "multiread", paths[0], true, func() ([]reg.ReadResult, error) {
		return c.multiRead(ops, func(full string) string { return full })
	})
	if c.refusedMultiRead(err) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	for i, r := range res {
		switch {
		case r.Err == nil, errors.Is(r.Err, reg.ErrNoAuth):
		case errors.Is(r.Err, reg.ErrNoNode):
			return i, true, nil
		default:
			return i, false, nil
		}
	}
	return len(paths), true, nil
}

// ancestry is full's ancestors and full itself, root first: "/a/b" is
// "/a", "/a/b".
func ancestry(full string) []string {
	var out []string
	for i := 1; i <= len(full); i++ {
		if i == len(full) || full[i] == '/' {
			if i > 1 && full[i-1] != '/' {
				out = append(out, full[:i])
			}
		}
	}
	return out
}

// Set implements reg.Writer.
func (c *Client) Set(ctx context.Context, path string, data []byte, version int32) (reg.Stat, error) {
	if err := reg.ValidatePath(path, false); err != nil {
		return reg.Stat{}, invalid("set", path, err)
	}
	full := c.abs(path)
	data = nonNull(data)
	st, err := call(ctx, c, "set", path, true, func() (*zk.Stat, error) { return c.conn.Set(full, data, version) })
	if err != nil {
		return reg.Stat{}, err
	}
	return toStat(st), nil
}

// Delete implements reg.Writer.
func (c *Client) Delete(ctx context.Context, path string, version int32) error {
	if err := reg.ValidatePath(path, false); err != nil {
		return invalid("delete", path, err)
	}
	full := c.abs(path)
	_, err := call(ctx, c, "delete", path, true, func() (struct{}, error) {
		return struct{}{}, c.conn.Delete(full, version)
	})
	return err
}

// Multi implements reg.Writer. It is not retried after a connection loss:
// whether it was applied is unknown, and the caller decides.
func (c *Client) Multi(ctx context.Context, ops ...reg.Op) ([]reg.OpResult, error) {
	reqs := make([]any, len(ops))
	for i, op := range ops {
		full := c.abs(op.Path)
		var err error
		switch op.Kind {
		case reg.OpCheck:
			err = reg.ValidatePath(op.Path, false)
			reqs[i] = &zk.CheckVersionRequest{Path: full, Version: op.Version}
		case reg.OpCreate:
			if !op.Mode.Valid() {
				err = fmt.Errorf("create mode %v in a transaction: %w", op.Mode, reg.ErrInvalidArgument)
			} else {
				err = reg.ValidatePath(op.Path, op.Mode.IsSequential())
			}
			reqs[i] = &zk.CreateRequest{Path: full, Data: nonNull(op.Data), Acl: c.acl, Flags: createFlags(op.Mode)}
		case reg.OpSet:
			err = reg.ValidatePath(op.Path, false)
			reqs[i] = &zk.SetDataRequest{Path: full, Data: nonNull(op.Data), Version: op.Version}
		case reg.OpDelete:
			err = reg.ValidatePath(op.Path, false)
			reqs[i] = &zk.DeleteRequest{Path: full, Version: op.Version}
		default:
			err = fmt.Errorf("op kind %v: %w", op.Kind, reg.ErrInvalidArgument)
		}
		if err != nil {
			return nil, invalid("multi", op.Path, &reg.MultiError{Index: i, Op: op, Err: err})
		}
	}
	type multiRes struct {
		rs  []zk.MultiResponse
		err error
	}
	// go-zookeeper v1.0.4 reports no zxid for a create in a transaction
	// and cannot create a container there (multitxn.go): a transaction
	// that creates a node is written by ejob itself.
	own := hasCreate(ops)
	r, err := call(ctx, c, "multi", "/", false, func() (multiRes, error) {
		var rs []zk.MultiResponse
		var err error
		if own {
			rs, err = c.multiTxn(ops)
		} else {
			rs, err = c.conn.Multi(reqs...)
		}
		if err != nil && len(rs) > 0 {
			return multiRes{rs: rs, err: err}, nil // an op failed: report which
		}
		return multiRes{rs: rs}, err
	})
	if err != nil {
		return nil, err
	}
	if r.err != nil {
		for i, res := range r.rs {
			if res.Error != nil && i < len(ops) {
				return nil, &reg.OpError{Op: "multi", Path: ops[i].Path, Err: &reg.MultiError{Index: i, Op: ops[i], Err: mapErr(res.Error)}}
			}
		}
		return nil, &reg.OpError{Op: "multi", Path: "/", Err: mapErr(r.err)}
	}
	out := make([]reg.OpResult, len(ops))
	for i, res := range r.rs {
		if i >= len(out) {
			break
		}
		if ops[i].Kind == reg.OpCreate {
			out[i].Path = c.rel(res.String)
		}
		if ops[i].Kind == reg.OpCreate && res.Stat != nil {
			out[i].Czxid = res.Stat.Czxid
		}
		if ops[i].Kind == reg.OpSet {
			out[i].Stat = toStat(res.Stat)
		}
	}
	return out, nil
}
