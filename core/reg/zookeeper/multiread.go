package zookeeper

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/go-zookeeper/zk"
	"golang.org/x/sync/errgroup"

	"github.com/ejob-io/ejob/core/reg"
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
	opGetData     = 4
	opGetChildren = 8
	opMultiRead   = 22
	opSetAuth     = 100
	opError       = -1

	codeUnimplemented = -6
	codeNoNode        = -101
	codeNoAuth        = -102

	// ejob's xids: negative, so none of go-zookeeper's (1 and up), and
	// far below the ones ZooKeeper reserves (-1 watch events, -2 pings,
	// -4 auth, -8 set watches) and the SASL exchange's -16.
	ownXidTop = -1 << 20
	ownXids   = 1 << 30

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

func isOwnXid(xid int32) bool { return xid <= ownXidTop && xid > ownXidTop-ownXids }

// maybeReady opens the connection to ejob's requests once it carries an
// authenticated session.
func (s *sniffConn) maybeReady() {
	select {
	case <-s.ready:
		return
	default:
	}
	s.mu.Lock()
	ok := s.sessionUp && s.saslDone
	s.mu.Unlock()
	if !ok {
		return
	}
	if s.needAuthFrame {
		s.wmu.Lock()
		ok = s.authWritten
		s.wmu.Unlock()
		if !ok {
			return
		}
	}
	s.readyOnce.Do(func() { close(s.ready) })
}

// shut fails every request in flight: the connection is gone.
func (s *sniffConn) shut() {
	s.doneOnce.Do(func() { close(s.done) })
}

// waiter is one of ejob's requests in flight.
type waiter struct {
	ch chan []byte
	// onReply, when set, runs on the connection's reader when the reply
	// is read, before any later frame is: in order with the watch
	// notifications around it.
	onReply func(frame []byte)
}

// deliver hands a reply to its waiter (none: the caller gave up).
func (s *sniffConn) deliver(xid int32, frame []byte) {
	s.waitMu.Lock()
	w, ok := s.waiters[xid]
	delete(s.waiters, xid)
	s.waitMu.Unlock()
	if ok {
		if w.onReply != nil {
			w.onReply(frame)
		}
		w.ch <- frame
	}
}

// roundTrip sends one request of ejob's (body after the xid) and returns
// the reply frame. It waits at most wait for the connection to be ready.
// A connection that fails or closes first is zk.ErrConnectionClosed.
func (s *sniffConn) roundTrip(xid int32, body []byte, wait time.Duration, closing <-chan struct{}) ([]byte, error) {
	return s.roundTripHooks(xid, body, wait, closing, nil, nil)
}

// roundTripHooks is roundTrip with hooks: onWrite runs just before the
// request is written, under the connection's write lock (no other frame
// goes out between them); onReply as waiter.onReply.
func (s *sniffConn) roundTripHooks(xid int32, body []byte, wait time.Duration, closing <-chan struct{}, onWrite func(), onReply func([]byte)) ([]byte, error) {
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-s.ready:
	case <-s.done:
		return nil, zk.ErrConnectionClosed
	case <-closing:
		return nil, zk.ErrClosing
	case <-t.C:
		return nil, fmt.Errorf("connection not ready within %v: %w", wait, zk.ErrConnectionClosed)
	}
	ch := make(chan []byte, 1)
	s.waitMu.Lock()
	s.waiters[xid] = waiter{ch: ch, onReply: onReply}
	s.waitMu.Unlock()
	defer func() {
		s.waitMu.Lock()
		delete(s.waiters, xid)
		s.waitMu.Unlock()
	}()
	frame := binary.BigEndian.AppendUint32(make([]byte, 0, 8+len(body)), uint32(4+len(body)))
	frame = binary.BigEndian.AppendUint32(frame, uint32(xid))
	frame = append(frame, body...)
	// No write deadline of its own: it would race go-zookeeper's. A write
	// that blocks (the server stopped reading) ends when go-zookeeper's
	// read deadline closes the connection.
	s.wmu.Lock()
	if onWrite != nil {
		onWrite()
	}
	_, err := s.Conn.Write(frame)
	s.wmu.Unlock()
	if err != nil {
		s.shut()
		_ = s.Conn.Close()
		return nil, fmt.Errorf("%w: %w", zk.ErrConnectionClosed, err)
	}
	select {
	case f := <-ch:
		return f, nil
	case <-s.done:
		// A reply read before the connection failed still counts: a server
		// without multiRead answers UNIMPLEMENTED and then closes the
		// connection (its UnimplementedRequestProcessor).
		select {
		case f := <-ch:
			return f, nil
		default:
		}
		return nil, zk.ErrConnectionClosed
	case <-closing:
		return nil, zk.ErrClosing
	}
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
				return c.multiRead(ops[lo:hi])
			})
			if err != nil {
				return err
			}
			copy(out[lo:hi], res)
			return nil
		})
	}
	err := g.Wait()
	if errors.Is(err, errUnimplemented) {
		if c.noMultiRead.CompareAndSwap(false, true) {
			c.log.Info("the ZooKeeper server has no multiRead (3.6+): reading nodes one by one", "error", err)
		}
		return reg.ReadEach(ctx, c, ops...)
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

// multiRead sends ops as one multiRead request on the current connection.
func (c *Client) multiRead(ops []reg.ReadOp) ([]reg.ReadResult, error) {
	w := juteW{}
	w.int32(opMultiRead)
	for _, op := range ops {
		t := int32(opGetData)
		if op.Kind == reg.ReadChildren {
			t = opGetChildren
		}
		w.multiHeader(t, false, -1)
		w.string(c.abs(op.Path))
		w.bool(false) // watch
	}
	w.multiHeader(-1, true, -1)
	f, err := c.ownRequest(w.b)
	if err != nil {
		return nil, err
	}
	return decodeMultiRead(f, ops)
}

// codeErr is the go-zookeeper error for a ZooKeeper error code (mapErr
// turns it into a reg sentinel).
func codeErr(code int32) error {
	switch code {
	case codeNoNode:
		return zk.ErrNoNode
	case codeNoAuth:
		return zk.ErrNoAuth
	case codeUnimplemented:
		return errUnimplemented
	case -4: // connectionLoss
		return zk.ErrConnectionClosed
	case -112: // sessionExpired
		return zk.ErrSessionExpired
	case -118: // sessionMoved
		return zk.ErrSessionMoved
	}
	return fmt.Errorf("zookeeper error code %d", code)
}

// walkMulti reads a multi or multiRead reply frame (xid first) of n ops:
// a non-zero error code in its reply header is returned as code; else fn
// gets each result's index, header type and error code, and reads the
// result's record from j (setting j.err for one it cannot read). err is
// a malformed frame's.
func walkMulti(f []byte, n int, fn func(j *jute, i int, typ, code int32)) (code int32, err error) {
	j := &jute{b: f}
	j.int32() // xid
	j.int64() // zxid
	if code := j.int32(); j.err == nil && code != 0 {
		return code, nil
	}
	count := 0
	for {
		typ, done, code := j.int32(), j.bool(), j.int32()
		if j.err != nil || done {
			break
		}
		if count >= n {
			j.err = fmt.Errorf("more than %d results", n)
			break
		}
		fn(j, count, typ, code)
		count++
	}
	if j.err == nil && count != n {
		j.err = fmt.Errorf("%d results for %d ops", count, n)
	}
	return 0, j.err
}

// decodeMultiRead decodes a multiRead reply frame (xid first) for ops.
func decodeMultiRead(f []byte, ops []reg.ReadOp) ([]reg.ReadResult, error) {
	out := make([]reg.ReadResult, len(ops))
	code, err := walkMulti(f, len(ops), func(j *jute, i int, typ, code int32) {
		op := ops[i]
		r := &out[i]
		switch {
		case typ == opError:
			code = j.int32()
			r.Err = &reg.OpError{Op: op.Kind.String(), Path: op.Path, Err: mapErr(codeErr(code))}
		case typ == opGetData && op.Kind == reg.ReadGet:
			r.Data = j.buffer()
			r.Stat = j.stat()
		case typ == opGetChildren && op.Kind == reg.ReadChildren:
			n := j.int32()
			if n >= 0 && j.need(int(n)*4) {
				r.Children = make([]string, n)
				for k := range r.Children {
					r.Children[k] = string(j.buffer())
				}
			}
		default:
			j.err = fmt.Errorf("result %d of type %d (error code %d) for a %s", i, typ, code, op.Kind)
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
