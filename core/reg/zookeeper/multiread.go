package zookeeper

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"
	"golang.org/x/sync/errgroup"

	"github.com/ejob-io/ejob/core/reg"
	"github.com/ejob-io/ejob/core/reg/zookeeper/internal/zkwire"
)

// ZooKeeper 3.6's multiRead (zookeeper.jute): RequestHeader{xid,
// type=multiRead} and a MultiOperationRecord of getData / getChildren ops,
// each MultiHeader{type, done=false, err=-1} and its request record, ended
// by MultiHeader{-1, true, -1}. The reply is ReplyHeader{xid, zxid, err}
// and a MultiResponse: per op a MultiHeader{type, false, err} and
// GetDataResponse{data, stat}, GetChildrenResponse{children} or, for a
// failed op, type error and ErrorResponse{err}; then MultiHeader{-1, true,
// -1}. go-zookeeper v1.0.4 has no API for it, so ejob writes it on
// go-zookeeper's connection itself (sniffConn) with xids of its own.
const (
	// multiReadOps is how many ops one multiRead request carries, and
	// multiReadInFlight how many requests one MultiRead has in flight. A
	// request costs the server about a plain read plus ~2 µs per op
	// (measured on ZooKeeper 3.8: 8,000 gets as 1 request each took 0.6-1 s,
	// in requests of 64 45 ms, of 256 22 ms).
	multiReadOps      = 256
	multiReadInFlight = 4
)

// errUnimplemented: the server does not know the request (multiRead or
// addWatch: before 3.6). Such a server answers UNIMPLEMENTED and closes the
// connection, so the first request against it costs one reconnection (the
// session survives it).
var errUnimplemented = fmt.Errorf("zookeeper: the server answered UNIMPLEMENTED (multiRead and addWatch need ZooKeeper 3.6+): %w", reg.ErrUnimplemented)

// ownXid is the xid of ejob's next request of its own (see isOwnXid).
func (c *Client) ownXid() int32 { return int32(ownXidTop - c.xid.Add(1)%ownXids) }

// ownRequest sends body (a request after its xid) on the current
// connection with an xid of ejob's and returns the reply frame.
func (c *Client) ownRequest(body []byte) ([]byte, error) {
	sc := c.wire.Load()
	if sc == nil {
		return nil, zk.ErrConnectionClosed
	}
	return sc.roundTrip(c.ownXid(), body, ms(c.cfg.ConnectionTimeoutMilliseconds), c.closing)
}

// MultiRead implements reg.MultiReader with ZooKeeper's multiRead, or with
// pipelined plain reads against a server older than 3.6.
func (c *Client) MultiRead(ctx context.Context, ops ...reg.ReadOp) ([]reg.ReadResult, error) {
	for _, op := range ops {
		if err := reg.ValidateReadOp(op); err != nil {
			return nil, err
		}
	}
	if c.noMultiRead.Load() {
		return reg.ReadEach(ctx, c, ops...)
	}
	out := make([]reg.ReadResult, len(ops))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(multiReadInFlight)
	for lo := 0; lo < len(ops); lo += multiReadOps {
		hi := min(lo+multiReadOps, len(ops))
		g.Go(func() error {
			res, err := call(gctx, c, "multiread", ops[lo].Path, true, func() ([]reg.ReadResult, error) {
				return c.multiRead(ops[lo:hi], c.abs)
			})
			if err != nil {
				return err
			}
			copy(out[lo:hi], res)
			return nil
		})
	}
	err := g.Wait()
	if c.refusedMultiRead(err) {
		return reg.ReadEach(ctx, c, ops...)
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

// refusedMultiRead reports whether err is the server's refusal of
// multiRead, and then notes (once) that it has none.
func (c *Client) refusedMultiRead(err error) bool {
	if !errors.Is(err, errUnimplemented) {
		return false
	}
	if c.noMultiRead.CompareAndSwap(false, true) {
		c.log.Info("the ZooKeeper server has no multiRead (3.6+): reading nodes one by one", "error", err)
	}
	return true
}

// multiRead sends ops as one multiRead request on the current connection,
// their paths made server paths by abs.
func (c *Client) multiRead(ops []reg.ReadOp, abs func(string) string) ([]reg.ReadResult, error) {
	w := zkwire.W{}
	w.Int32(zkwire.OpMultiRead)
	for _, op := range ops {
		t := int32(zkwire.OpGetData)
		if op.Kind == reg.ReadChildren {
			t = zkwire.OpGetChildren
		}
		w.MultiHeader(t, false, -1)
		w.String(abs(op.Path))
		w.Bool(false) // watch
	}
	w.MultiHeader(-1, true, -1)
	f, err := c.ownRequest(w.B)
	if err != nil {
		return nil, err
	}
	return decodeMultiRead(f, ops)
}

// codeErr is the go-zookeeper error for a ZooKeeper error code (mapErr
// turns it into a reg sentinel).
func codeErr(code int32) error {
	switch code {
	case zkwire.CodeNoNode:
		return zk.ErrNoNode
	case zkwire.CodeNoAuth:
		return zk.ErrNoAuth
	case zkwire.CodeUnimplemented:
		return errUnimplemented
	case zkwire.CodeConnectionLoss:
		return zk.ErrConnectionClosed
	case zkwire.CodeSessionExpired:
		return zk.ErrSessionExpired
	case zkwire.CodeSessionMoved:
		return zk.ErrSessionMoved
	}
	return fmt.Errorf("zookeeper error code %d", code)
}

// decodeMultiRead decodes a multiRead reply frame (xid first) for ops.
func decodeMultiRead(f []byte, ops []reg.ReadOp) ([]reg.ReadResult, error) {
	out := make([]reg.ReadResult, len(ops))
	code, err := zkwire.WalkMulti(f, len(ops), func(j *zkwire.R, i int, typ, code int32) {
		op := ops[i]
		r := &out[i]
		switch {
		case typ == zkwire.OpError:
			code = j.Int32()
			r.Err = &reg.OpError{Op: op.Kind.String(), Path: op.Path, Err: mapErr(codeErr(code))}
		case typ == zkwire.OpGetData && op.Kind == reg.ReadGet:
			r.Data = j.Buffer()
			r.Stat = j.Stat()
		case typ == zkwire.OpGetChildren && op.Kind == reg.ReadChildren:
			n := j.Int32()
			if n >= 0 && j.Need(int(n)*4) {
				r.Children = make([]string, n)
				for k := range r.Children {
					r.Children[k] = string(j.Buffer())
				}
			}
		default:
			j.Err = fmt.Errorf("result %d of type %d (error code %d) for a %s", i, typ, code, op.Kind)
		}
	})
	if code != 0 {
		return nil, codeErr(code)
	}
	if err != nil {
		return nil, fmt.Errorf("malformed multiRead reply: %w", err)
	}
	return out, nil
}
