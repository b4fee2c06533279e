package zookeeper

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/ejob-io/ejob/core/reg/zookeeper/internal/zkwire"
)

// sessionCreds is what the server's connect response told us: enough to
// attach a second connection to the same session (Expire).
type sessionCreds struct {
	addr      string
	id        int64
	passwd    []byte
	timeoutMs int32
}

const (
	// ejob's xids (Client.ownXid): negative, so none of go-zookeeper's (1
	// and up), and far below the ones ZooKeeper reserves (-1 watch events,
	// -2 pings, -4 auth, -8 set watches) and the SASL exchange's -16.
	ownXidTop = -1 << 20
	ownXids   = 1 << 30
)

// isOwnXid reports whether a reply is to one of ejob's requests, which
// the connection keeps from go-zookeeper.
func isOwnXid(xid int32) bool { return xid <= ownXidTop && xid > ownXidTop-ownXids }

// sniffConn is go-zookeeper's connection, with ejob's own traffic mixed
// in. It parses the first frame the server sends (the connect response)
// into sessionCreds. With auth set, it reads the whole connect response
// itself and, when it opened or renewed a session, runs auth (the SASL
// exchange) on the connection before handing the response to
// go-zookeeper: go-zookeeper sends nothing while it waits for that
// response, and never sees the exchange. After the connect response it
// reads whole frames and passes go-zookeeper only its own: replies whose
// xid is in ejob's range (multiRead, see multiread.go) go to their waiters
// instead, so requests go-zookeeper has no API for share the session.
// Its Write looks at go-zookeeper's requests (outgoing) and its reader at
// the frames for go-zookeeper (incoming), to follow go-zookeeper's watches
// (library.go) and route notifications to recursive watches
// (recursive.go). Every reliance on go-zookeeper's internals is named in
// library.go.
//
// Its state has three owners (see the package doc for why not one
// goroutine): the fields above rd are set before go-zookeeper's first call
// and only read after; rd is the reading goroutine's alone; st is shared,
// under mu. wmu orders frames on the wire and guards nothing.
type sniffConn struct {
	net.Conn
	addr      string
	report    func(sessionCreds)
	closeHook func(net.Conn)
	// heard is called with the connection's session id on every frame
	// after a connect response that established or renewed a session.
	heard func(id int64)
	// auth, when set, authenticates the connection; authTimeout bounds it.
	auth        func(net.Conn) error
	authTimeout time.Duration
	// att follows the connection attempt until the handshake (and SASL)
	// is done; handshakeBy bounds the handshake: the connect request's
	// write and the connect response's read (go-zookeeper allows ten times
	// its receive timeout, minutes with the default session timeout).
	att          *attempts
	handshakeBy  time.Time
	handshakeFor time.Duration // connectionTimeoutMilliseconds
	// notPlain, when set, tells whether a server that closed the
	// connection without answering speaks TLS instead (probeTLS);
	// isHTTP whether one that has not answered for a second is an HTTP
	// server (probeHTTP).
	notPlain func() bool
	isHTTP   func() bool
	// needAuthFrame: ejob's requests wait until go-zookeeper has written
	// its setAuth (the digest) on this connection, so the server checks
	// them with the credentials go-zookeeper's requests have.
	needAuthFrame bool
	// lib follows go-zookeeper's one-shot watches (library.go); route,
	// when set, hears each watch notification before go-zookeeper and
	// reports whether go-zookeeper gets it (recursive watches,
	// recursive.go).
	// deviation, when set, hears of go-zookeeper behaving otherwise than
	// library.go describes; wroteSetWatches, when set, hears of each
	// setWatches frame written.
	lib             *libWatches
	route           func(sc *sniffConn, typ int32, path string) bool
	deviation       func(what string)
	wroteSetWatches func()
	// sent, when set, counts each request frame written.
	sent *opCounts

	// rd is the reader's: only the goroutine in Read touches it.
	rd readerState

	// wmu is the wire: held across the write of one frame, so frames go
	// out whole and in the order their hooks saw them. It guards no state.
	wmu sync.Mutex

	// mu guards st, the state the reader, the writers and the deadline
	// setters share. Lock order: wmu, then mu; mu is a leaf (nothing is
	// called, locked, read or written on the socket while it is held).
	mu sync.Mutex
	st connState

	// ready opens when ejob's requests may be sent, done when the
	// connection failed or closed, setWatches once go-zookeeper wrote its
	// setWatches. Each is closed once, under mu (openLocked).
	ready, done, setWatches chan struct{}
}

// readerState is what only the reading goroutine (go-zookeeper's, in Read)
// touches: no lock.
type readerState struct {
	authed  bool   // auth ran
	framed  bool   // the connect response was read
	pending []byte // bytes of the current frame go-zookeeper has not read yet
	br      *bufio.Reader
	sessID  int64 // from a valid connect response; 0 before or when expired
	// hold: go-zookeeper's frames wait for its setWatches (the lastZxid
	// race, library.go).
	hold bool
}

// connState is a connection's shared state, guarded by sniffConn.mu.
type connState struct {
	// go-zookeeper's deadlines: readDL is restored after the handshake
	// and SASL, readFor is how far go-zookeeper sets it ahead (for
	// extendReadDeadline); writeDL bounds the connect request.
	readDL  time.Time
	readFor time.Duration
	writeDL time.Time

	writes      int  // go-zookeeper's writes so far
	authWritten bool // go-zookeeper wrote its setAuth
	sessionUp   bool // a connect response established or renewed a session
	saslDone    bool // auth ran (or there is none)
	held        bool // the connection was held (rd.hold), for the writer

	// waiters are ejob's requests in flight, by xid; stdReqs
	// go-zookeeper's watching reads in flight, by xid; recWritten the paths
	// ejob's addWatch was written for.
	waiters    map[int32]waiter
	stdReqs    map[int32]stdReq
	recWritten map[string]bool
}

func newSniffConn(conn net.Conn, addr string, lib *libWatches) *sniffConn {
	return &sniffConn{
		Conn: conn, addr: addr, lib: lib,
		ready: make(chan struct{}), done: make(chan struct{}), setWatches: make(chan struct{}),
		st: connState{waiters: map[int32]waiter{}, stdReqs: map[int32]stdReq{}, recWritten: map[string]bool{}},
	}
}

// openLocked closes ch unless it is closed and reports whether this call
// did. Caller holds s.mu.
func openLocked(ch chan struct{}) bool {
	select {
	case <-ch:
		return false
	default:
		close(ch)
		return true
	}
}

func (s *sniffConn) Read(p []byte) (int, error) {
	if s.auth != nil && !s.rd.authed {
		s.rd.authed = true
		if err := s.authenticate(); err != nil {
			s.shut()
			return 0, err
		}
	}
	for len(s.rd.pending) == 0 {
		if s.rd.br == nil {
			s.rd.br = bufio.NewReaderSize(s.Conn, 64<<10)
		}
		if !s.rd.framed {
			f, err := s.handshake(s.rd.br)
			if err != nil {
				s.shut()
				return 0, err
			}
			s.rd.framed = true
			s.connectResponse(f)
			s.attemptDone(nil)
			s.rd.pending = zkwire.WithLength(f)
			break
		}
		f, err := zkwire.ReadFrameMax(s.rd.br, zkwire.MaxFrame)
		if err != nil {
			s.shut()
			return 0, err
		}
		if id := s.rd.sessID; id != 0 && s.heard != nil {
			s.heard(id)
		}
		if xid := zkwire.Xid(f); isOwnXid(xid) {
			s.deliver(xid, f)
			s.extendReadDeadline()
			continue
		}
		// Before incoming: the watch table must match go-zookeeper's
		// until its setWatches is written.
		if s.rd.hold && zxidHold(f) {
			if err := s.awaitSetWatches(); err != nil {
				return 0, err
			}
			s.rd.hold = false
		}
		if !s.incoming(f) {
			s.extendReadDeadline() // a notification only ejob wanted
			continue
		}
		s.rd.pending = zkwire.WithLength(f)
	}
	n := copy(p, s.rd.pending)
	s.rd.pending = s.rd.pending[n:]
	return n, nil
}

// extendReadDeadline moves go-zookeeper's read deadline as its next frame
// would (a reply of ejob's is server contact too), so a stream of ejob's
// replies never times out go-zookeeper's read.
func (s *sniffConn) extendReadDeadline() {
	s.mu.Lock()
	d := s.st.readFor
	zero := s.st.readDL.IsZero()
	s.mu.Unlock()
	if !zero && d > 0 {
		_ = s.Conn.SetReadDeadline(time.Now().Add(d))
	}
}

// authenticate reads the connect response, runs auth if it holds a
// session, and keeps the response for go-zookeeper's reads.
func (s *sniffConn) authenticate() error {
	f, err := s.handshake(s.Conn)
	if err != nil {
		return err
	}
	s.rd.framed = true
	s.connectResponse(f)
	if s.rd.sessID != 0 {
		if s.att != nil {
			s.att.begin(s.addr, phaseSASL)
		}
		_ = s.Conn.SetDeadline(time.Now().Add(s.authTimeout))
		err := s.auth(s.Conn)
		s.mu.Lock()
		rd, wd := s.st.readDL, s.st.writeDL
		s.mu.Unlock()
		_ = s.Conn.SetReadDeadline(rd)
		_ = s.Conn.SetWriteDeadline(wd)
		if err != nil {
			s.attemptDone(err)
			return err
		}
	}
	s.attemptDone(nil)
	s.mu.Lock()
	s.st.saslDone = true
	s.readyLocked()
	s.mu.Unlock()
	s.rd.pending = zkwire.WithLength(f)
	return nil
}

// handshake reads the connect response from r within handshakeBy (and
// go-zookeeper's read deadline), then restores go-zookeeper's deadline. A
// failure is recorded with the attempt; a server that closed without a
// word and speaks TLS is named as such.
func (s *sniffConn) handshake(r io.Reader) ([]byte, error) {
	s.mu.Lock()
	rd := s.st.readDL
	s.mu.Unlock()
	_ = s.Conn.SetReadDeadline(earliest(rd, s.handshakeBy))
	var httpPeer atomic.Bool
	var probe *time.Timer
	probed := make(chan struct{})
	if s.isHTTP != nil {
		probe = time.AfterFunc(httpProbeAfter, func() {
			defer close(probed)
			if s.isHTTP() {
				httpPeer.Store(true)
				_ = s.Conn.SetReadDeadline(time.Now()) // ends the read below
			}
		})
	}
	f, err := readConnectResponse(r, s.addr)
	if probe != nil && !probe.Stop() {
		<-probed
	}
	_ = s.Conn.SetReadDeadline(rd)
	if err != nil {
		switch {
		case errors.Is(err, errNoAnswer) && !s.handshakeBy.IsZero() && !time.Now().Before(s.handshakeBy):
			err = &HandshakeError{Server: s.addr, Err: fmt.Errorf("%w within %v (connectionTimeoutMilliseconds)", errNoAnswer, s.handshakeFor)}
		case httpPeer.Load():
			err = &HandshakeError{Server: s.addr, Err: &NotZooKeeperError{Server: s.addr, Like: "an HTTP server"}}
		case errors.Is(err, errSilentClose) && s.notPlain != nil:
			s.attemptDone(err) // while the probe runs
			if s.notPlain() {
				err = &HandshakeError{Server: s.addr, Err: &NotZooKeeperError{Server: s.addr, Like: classify([]byte{0x16, 0x03, 0, 0})}}
			}
		}
		s.attemptDone(err)
		return nil, err
	}
	return f, nil
}

// httpProbeAfter is how long a handshake goes unanswered before the
// server is asked whether it is an HTTP server. A ZooKeeper server
// answers within milliseconds.
const httpProbeAfter = time.Second

// attemptDone ends the connection attempt (err nil: the connection is
// usable).
func (s *sniffConn) attemptDone(err error) {
	if s.att == nil {
		return
	}
	if err != nil {
		s.att.failed(s.addr, err)
		return
	}
	s.att.succeeded(s.addr)
}

// earliest is the earlier of a deadline and a bound (zero: none).
func earliest(dl, bound time.Time) time.Time {
	if bound.IsZero() || (!dl.IsZero() && dl.Before(bound)) {
		return dl
	}
	return bound
}

// SetDeadline, SetReadDeadline and SetWriteDeadline record go-zookeeper's
// deadlines, which authenticate replaces for the exchange.
func (s *sniffConn) SetDeadline(t time.Time) error {
	s.mu.Lock()
	s.st.readDL, s.st.writeDL = t, t
	if !t.IsZero() {
		s.st.readFor = time.Until(t)
	}
	s.mu.Unlock()
	return s.Conn.SetDeadline(t)
}

func (s *sniffConn) SetReadDeadline(t time.Time) error {
	s.mu.Lock()
	s.st.readDL = t
	if !t.IsZero() {
		s.st.readFor = time.Until(t)
	}
	s.mu.Unlock()
	return s.Conn.SetReadDeadline(t)
}

func (s *sniffConn) SetWriteDeadline(t time.Time) error {
	s.mu.Lock()
	s.st.writeDL = t
	s.mu.Unlock()
	return s.Conn.SetWriteDeadline(t)
}

// Write passes go-zookeeper's frames (one per Write: go-zookeeper encodes
// each request, length included, into one buffer), looks at them
// (outgoing) and notes its setAuth. A setAuth whose write fails is reported
// written, and the connection is closed instead (go-zookeeper/zk#163, see
// library.go): the request fails once, when its reader sees the closed
// connection, and go-zookeeper reconnects as after any other drop.
func (s *sniffConn) Write(p []byte) (int, error) {
	s.wmu.Lock()
	s.mu.Lock()
	s.st.writes++
	first := s.st.writes == 1
	wd := s.st.writeDL
	s.mu.Unlock()
	// The first write is the connect request, which has no request header.
	setAuth := !first && len(p) >= 12 && int32(binary.BigEndian.Uint32(p[8:])) == zkwire.OpSetAuth
	if !first {
		s.outgoing(p)
	}
	if first && !s.handshakeBy.IsZero() {
		_ = s.Conn.SetWriteDeadline(earliest(wd, s.handshakeBy))
	}
	n, err := s.Conn.Write(p)
	if first && err != nil {
		s.attemptDone(&HandshakeError{Server: s.addr, Err: fmt.Errorf("send the connect request: %w", err)})
	}
	s.wmu.Unlock()
	if err != nil {
		s.shut()
		if setAuth {
			_ = s.Conn.Close()
			return len(p), nil
		}
		return n, err
	}
	if setAuth {
		s.mu.Lock()
		s.st.authWritten = true
		s.readyLocked()
		s.mu.Unlock()
	}
	return n, nil
}

func (s *sniffConn) Close() error {
	s.shut()
	s.closeHook(s.Conn)
	return s.Conn.Close()
}

// awaitSetWatches waits until go-zookeeper has written its setWatches on
// this connection (the lastZxid race, library.go), or its read deadline has
// passed: a go-zookeeper that holds watches and sends no setWatches
// deviates from what library.go relies on, and its reader goes on.
func (s *sniffConn) awaitSetWatches() error {
	s.mu.Lock()
	dl := s.st.readDL
	s.mu.Unlock()
	var expired <-chan time.Time
	if !dl.IsZero() {
		t := time.NewTimer(time.Until(dl))
		defer t.Stop()
		expired = t.C
	}
	select {
	case <-s.setWatches:
	case <-s.done:
		return fmt.Errorf("read from %s: %w", s.addr, net.ErrClosed)
	case <-expired:
		s.deviate("go-zookeeper holds watches but wrote no setWatches by its read deadline")
	}
	return nil
}

// setWatchesWritten notes go-zookeeper's setWatches frame p (under wmu).
// The first on a held connection is checked against the watch table: it
// lists the table when it is the only frame (go-zookeeper splits the
// request only near 128 KiB), a part of it otherwise.
func (s *sniffConn) setWatchesWritten(p []byte) {
	if s.wroteSetWatches != nil {
		s.wroteSetWatches()
	}
	s.mu.Lock()
	first, held := openLocked(s.setWatches), s.st.held
	s.mu.Unlock()
	if !first || !held {
		return
	}
	got, ok := setWatchesPaths(p)
	want := s.lib.snapshot()
	switch {
	case !ok:
		s.deviate("a setWatches frame it cannot decode")
	case len(p) < 64<<10 && !maps.Equal(got, want):
		s.deviate(fmt.Sprintf("setWatches lists %v, the watch table %v", got, want))
	case !within(got, want):
		s.deviate(fmt.Sprintf("setWatches lists watches the watch table lacks (%d listed, %d in the table)", len(got), len(want)))
	}
}

// within reports whether every watch in part is in all.
func within(part, all map[string]stdBits) bool {
	for p, b := range part {
		if all[p]&b != b {
			return false
		}
	}
	return true
}

func (s *sniffConn) deviate(what string) {
	if s.deviation != nil {
		s.deviation(what)
	}
}

// connectResponse parses the connect response frame (on the reader).
func (s *sniffConn) connectResponse(f []byte) {
	cr, ok := parseConnectResponse(f)
	if !ok {
		return
	}
	cr.addr = s.addr
	s.report(cr)
	id := cr.id
	if cr.timeoutMs <= 0 {
		id = 0
	}
	s.lib.session(id)
	// go-zookeeper re-sets the watches of a session it holds (library.go).
	s.rd.hold = id != 0 && s.lib.any()
	s.mu.Lock()
	s.st.held = s.rd.hold
	s.mu.Unlock()
	if cr.id != 0 && cr.timeoutMs > 0 {
		s.rd.sessID = cr.id
		if s.heard != nil {
			s.heard(cr.id)
		}
		s.mu.Lock()
		s.st.sessionUp = true
		if s.auth == nil {
			s.st.saslDone = true
		}
		s.readyLocked()
		s.mu.Unlock()
	}
}

// parseConnectResponse decodes a connect response frame.
func parseConnectResponse(b []byte) (sessionCreds, bool) {
	r, ok := zkwire.ParseConnectResponse(b)
	return sessionCreds{id: r.SessionID, passwd: r.Passwd, timeoutMs: r.TimeoutMs}, ok
}

// readyLocked opens the connection to ejob's requests once it carries an
// authenticated session (and, with a digest, go-zookeeper wrote its
// setAuth). Caller holds s.mu.
func (s *sniffConn) readyLocked() {
	if s.st.sessionUp && s.st.saslDone && (s.st.authWritten || !s.needAuthFrame) {
		openLocked(s.ready)
	}
}

// shut fails every request in flight: the connection is gone.
func (s *sniffConn) shut() {
	s.mu.Lock()
	openLocked(s.done)
	s.mu.Unlock()
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
	s.mu.Lock()
	w, ok := s.st.waiters[xid]
	delete(s.st.waiters, xid)
	s.mu.Unlock()
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
	s.mu.Lock()
	s.st.waiters[xid] = waiter{ch: ch, onReply: onReply}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.st.waiters, xid)
		s.mu.Unlock()
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
	if s.sent != nil && len(body) >= 4 {
		s.sent.add(int32(binary.BigEndian.Uint32(body)))
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

// outgoing looks at a frame go-zookeeper is about to write (under wmu):
// it notes its setWatches, remembers its watching reads, and drops the
// watch flag of a getData or exists on a path this connection has a
// recursive watch on.
func (s *sniffConn) outgoing(p []byte) {
	if len(p) < 12 {
		return
	}
	xid := int32(binary.BigEndian.Uint32(p[4:]))
	op := int32(binary.BigEndian.Uint32(p[8:]))
	if s.sent != nil {
		s.sent.add(op)
	}
	switch op {
	case zkwire.OpSetWatches:
		s.setWatchesWritten(p)
		return
	case zkwire.OpGetData, zkwire.OpExists, zkwire.OpGetChildren2, zkwire.OpGetChildren:
	default:
		return
	}
	// Request body: ustring path, bool watch.
	if len(p) < 16 {
		return
	}
	n := int(int32(binary.BigEndian.Uint32(p[12:])))
	if n < 0 || len(p) < 16+n+1 {
		return
	}
	watch := 16 + n
	if p[watch] == 0 {
		return
	}
	path := string(p[16:watch])
	s.mu.Lock()
	s.st.stdReqs[xid] = stdReq{path: path, op: op}
	if (op == zkwire.OpGetData || op == zkwire.OpExists) && s.st.recWritten[path] {
		p[watch] = 0
	}
	s.mu.Unlock()
}

// noteAddWatch records that an addWatch for path was written on s (ok),
// or refused.
func (s *sniffConn) noteAddWatch(path string, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ok {
		s.st.recWritten[path] = true
	} else {
		delete(s.st.recWritten, path)
	}
}

// incoming looks at a frame for go-zookeeper (on the reader) and reports
// whether go-zookeeper gets it: the reply to a watching read arms
// go-zookeeper's watch in the table; a notification is routed (see
// recursive.go) and disarms what it fires when go-zookeeper gets it.
func (s *sniffConn) incoming(f []byte) bool {
	if len(f) < 16 {
		return true
	}
	xid := int32(binary.BigEndian.Uint32(f))
	if xid != zkwire.XidNotification {
		if xid > 0 {
			s.mu.Lock()
			req, ok := s.st.stdReqs[xid]
			delete(s.st.stdReqs, xid)
			s.mu.Unlock()
			if ok {
				s.lib.replied(req, zkwire.ReplyCode(f))
			}
		}
		return true
	}
	// WatcherEvent: int type, int state, ustring path.
	j := &zkwire.R{B: f[16:]}
	typ := j.Int32()
	j.Int32()
	path := string(j.Buffer())
	if j.Err != nil {
		return true
	}
	if s.route != nil && !s.route(s, typ, path) {
		return false
	}
	s.lib.fire(typ, path)
	return true
}

// closeSessionAs attaches to the session in cr from a second connection and
// closes it: the server ends the session exactly as on expiry (ephemerals
// deleted, the original connection dropped; its reconnect is told the
// session expired). This is Curator's KillSession technique.
// auth, when set, authenticates the connection first (a server that
// requires SASL takes no other request before).
func closeSessionAs(ctx context.Context, dial func(ctx context.Context, network, addr string) (net.Conn, error), auth func(net.Conn, string) error, cr sessionCreds) error {
	conn, err := dial(ctx, "tcp", cr.addr)
	if err != nil {
		return fmt.Errorf("dial %s: %w", cr.addr, err)
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	} else {
		_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	}
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Now()) })
	defer stop()

	if err := zkwire.WriteFrame(conn, zkwire.ConnectRequest(cr.timeoutMs, cr.id, cr.passwd)); err != nil {
		return fmt.Errorf("send connect: %w", err)
	}
	resp, err := zkwire.ReadFrame(conn)
	if err != nil {
		return fmt.Errorf("read connect response: %w", err)
	}
	got, ok := parseConnectResponse(resp)
	if !ok {
		return errors.New("malformed connect response")
	}
	if got.id == 0 {
		return nil // already expired
	}
	if auth != nil {
		if err := auth(conn, cr.addr); err != nil {
			return err
		}
	}
	// RequestHeader: int xid, int type (closeSession = -11).
	closeReq := zkwire.W{}
	closeReq.Int32(1)
	closeReq.Int32(zkwire.OpCloseSession)
	if err := zkwire.WriteFrame(conn, closeReq.B); err != nil {
		return fmt.Errorf("send close: %w", err)
	}
	for {
		// Skip watch notifications (xid -1) until the close reply.
		f, err := zkwire.ReadFrame(conn)
		if err != nil {
			return fmt.Errorf("read close reply: %w", err)
		}
		if len(f) >= 4 && zkwire.Xid(f) == 1 {
			return nil
		}
	}
}
