package zookeeper

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/hashicorp/go-hclog"

	"github.com/ejob-io/ejob/core/reg"
	"github.com/ejob-io/ejob/core/reg/internal/notify"
)

// Client implements reg.Client (and reg.Expirer) on a go-zookeeper Conn.
type Client struct {
	cfg  Config
	log  hclog.Logger
	ns   string // "" or "/a/b"
	acl  []zk.ACL
	conn *zk.Conn
	hub  *notify.Hub[reg.ConnEvent]
	dial func(ctx context.Context, network, addr string) (net.Conn, error)

	closing   chan struct{} // closed by Close
	closeCtx  context.Context
	closeNow  context.CancelFunc // cancels closeCtx, in Close
	closeOnce sync.Once
	loopDone  chan struct{} // go-zookeeper's loop and our state loop exited

	att      *attempts     // the connection attempts, for Connect's errors
	sasl     *saslAuth     // nil: no SASL
	failed   chan struct{} // closed on a final authentication failure
	failOnce sync.Once
	failure  error // set before failed is closed

	evMu   sync.Mutex
	evQ    []stateEvent
	evWake chan struct{}

	cur atomic.Pointer[reg.Session] // the current session, for heard (lock-free)

	wire           atomic.Pointer[sniffConn] // the newest connection, for multiRead
	xid            atomic.Int64              // counts ejob's own requests (multiRead)
	noMultiRead    atomic.Bool               // the server answered multiRead with UNIMPLEMENTED
	rec            *recursive                // recursive watches (recursive.go)
	libw           *libWatches               // go-zookeeper's one-shot watches (library.go)
	deviations     atomic.Int64              // go-zookeeper behaving otherwise than library.go says
	setWatchesSent atomic.Int64              // go-zookeeper's setWatches frames written
	sent           opCounts                  // request frames written, go-zookeeper's and ejob's

	mu        sync.Mutex
	sess      *reg.Session  // nil until the first session
	connected bool          // the current session is reachable
	upCh      chan struct{} // closed while connected; replaced on disconnect
	creds     sessionCreds  // from the last connect response
	conns     map[net.Conn]struct{}
	gate      chan struct{} // non-nil: new connections wait for it to close
}

// opCounts counts request frames by opcode: ZooKeeper's are below 128,
// and the last element counts any other.
type opCounts [129]atomic.Int64

func (o *opCounts) add(op int32) {
	if op < 0 || op >= 128 {
		op = 128
	}
	o[op].Add(1)
}

var (
	_ reg.Client  = (*Client)(nil)
	_ reg.Expirer = (*Client)(nil)
)

// Connect validates cfg, connects, waits for the first session (up to
// maxSleepTimeMilliseconds x maxRetries, like upstream's init, or ctx),
// authenticates the digest and creates the namespace node if needed. With
// SASL, every connection is authenticated before go-zookeeper uses it; a
// refusal fails Connect at once with an *AuthError.
func Connect(ctx context.Context, cfg Config) (*Client, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	c := &Client{
		cfg:      cfg,
		log:      cfg.Logger,
		hub:      notify.New[reg.ConnEvent](),
		closing:  make(chan struct{}),
		loopDone: make(chan struct{}),
		evWake:   make(chan struct{}, 1),
		upCh:     make(chan struct{}),
		conns:    make(map[net.Conn]struct{}),
		acl:      zk.WorldACL(zk.PermAll),
		failed:   make(chan struct{}),
		att:      newAttempts(len(distinct(cfg.Servers()))),
	}
	c.closeCtx, c.closeNow = context.WithCancel(context.Background())
	if cfg.SASL.Enabled() {
		a, err := newSASLAuth(cfg.SASL)
		if err != nil {
			return nil, fmt.Errorf("zookeeper: %w", err)
		}
		c.sasl = a
	}
	if cfg.Namespace != "" {
		c.ns = "/" + cfg.Namespace
	}
	c.libw = newLibWatches()
	c.rec = newRecursive(c.ns, c.libw)
	if cfg.Digest != "" || cfg.SASL.ACL {
		c.acl = zk.AuthACL(zk.PermAll) // Curator's CREATOR_ALL_ACL
	}
	c.dial = cfg.Dialer
	if c.dial == nil {
		d := &net.Dialer{}
		c.dial = d.DialContext
	}
	conn, events, err := zk.Connect(cfg.Servers(), ms(cfg.SessionTimeoutMilliseconds),
		zk.WithDialer(c.zkDialer),
		zk.WithHostProvider(&hostProvider{}),
		zk.WithLogger(zkLogger{c.log, c.isClosing}),
		zk.WithEventCallback(c.onEvent),
	)
	if err != nil {
		if c.sasl != nil {
			c.sasl.close()
		}
		return nil, fmt.Errorf("zookeeper: connect %s: %w", cfg.ServerLists, err)
	}
	c.conn = conn
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { // go-zookeeper's own channel: drain it; it closes when its loop exits
		defer wg.Done()
		for range events {
		}
	}()
	stateDone := make(chan struct{})
	go func() {
		defer wg.Done()
		defer close(stateDone)
		c.stateLoop()
	}()
	go func() {
		wg.Wait()
		close(c.loopDone)
	}()

	wait := ms(cfg.MaxSleepTimeMilliseconds * max(cfg.MaxRetries, 1))
	if err := c.firstSession(ctx, wait); err != nil {
		_ = c.Close()
		return nil, err
	}
	if cfg.Digest != "" {
		if _, err := call(ctx, c, "auth", "/", true, func() (struct{}, error) {
			return struct{}{}, c.conn.AddAuth("digest", []byte(cfg.Digest))
		}); err != nil {
			_ = c.Close()
			return nil, fmt.Errorf("zookeeper: digest auth: %w", err)
		}
	}
	if c.ns != "" {
		if err := c.mkdirs(ctx, c.ns, zk.FlagPersistent); err != nil {
			_ = c.Close()
			return nil, fmt.Errorf("zookeeper: create namespace %s: %w", c.ns, err)
		}
	}
	return c, nil
}

// distinct is ss without repeats.
func distinct(ss []string) []string {
	slices.Sort(ss)
	return slices.Compact(ss)
}

// firstSession waits up to wait (or ctx) for the first session. Its
// errors say what the connection attempt in progress is doing (dialing,
// waiting for the handshake's answer, in the SASL exchange) and how the
// last one ended. When every server answered as no ZooKeeper server does,
// it fails at once with their *NotZooKeeperErrors.
func (c *Client) firstSession(ctx context.Context, wait time.Duration) error {
	start := time.Now()
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	servers := c.cfg.ServerLists
	up := c.up()
	select {
	case <-up:
		return nil
	case <-c.failed:
		return fmt.Errorf("zookeeper: %w", c.failure)
	case <-c.att.wrong:
		return fmt.Errorf("zookeeper: %w", c.att.wrongPeers())
	case <-wctx.Done():
	}
	took := roundDur(time.Since(start))
	switch err := ctx.Err(); {
	case errors.Is(err, context.Canceled):
		// The cause (a signal's name, say) tells what interrupted it.
		cause := context.Cause(ctx)
		if !errors.Is(cause, err) {
			cause = fmt.Errorf("%w (%w)", err, cause)
		}
		err = cause
		return fmt.Errorf("zookeeper: connecting to %s interrupted after %v: %s: %w", servers, took, c.att.describe(), err)
	case err != nil:
		return fmt.Errorf("zookeeper: no session with %s before the caller's deadline (%v): %s: %w", servers, took, c.att.describe(), err)
	}
	return fmt.Errorf("zookeeper: no session with %s within %v (maxSleepTimeMilliseconds x maxRetries): %s: %w", servers, wait, c.att.describe(), context.DeadlineExceeded)
}

// zkDialer adapts cfg.Dialer to go-zookeeper and sniffs session credentials.
func (c *Client) zkDialer(network, address string, timeout time.Duration) (net.Conn, error) {
	// Close ends the dial at once, as it does every other phase.
	ctx, cancel := context.WithTimeout(c.closeCtx, max(timeout, ms(c.cfg.ConnectionTimeoutMilliseconds)))
	defer cancel()
	c.mu.Lock()
	gate := c.gate
	c.mu.Unlock()
	if c.isFailed() {
		// Authentication failed for good: no more connections (go-zookeeper
		// would retry forever), until Close.
		select {
		case <-c.closing:
			return nil, reg.ErrClosed
		case <-ctx.Done():
			return nil, c.failure
		}
	}
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-c.closing:
			return nil, reg.ErrClosed
		}
	}
	c.att.begin(address, phaseDial)
	raw, err := c.dial(ctx, network, address)
	if err != nil {
		if c.isClosing() {
			err = reg.ErrClosed
		}
		c.att.failed(address, err)
		return nil, err
	}
	c.mu.Lock()
	if c.isClosing() {
		// Close has dropped the connections it knew of; this one is
		// dropped here.
		c.mu.Unlock()
		_ = raw.Close()
		return nil, reg.ErrClosed
	}
	c.conns[raw] = struct{}{}
	c.mu.Unlock()
	c.att.begin(address, phaseHandshake)
	sc := newSniffConn(raw, address, c.libw)
	sc.att, sc.handshakeFor = c.att, ms(c.cfg.ConnectionTimeoutMilliseconds)
	sc.handshakeBy = time.Now().Add(sc.handshakeFor)
	sc.notPlain = func() bool { return c.speaksTLS(address) }
	sc.isHTTP = func() bool { return probeHTTP(c.closeCtx, c.dial, address, probeTimeout) }
	sc.report, sc.closeHook, sc.heard = c.setCreds, c.forget, c.heard
	sc.needAuthFrame = c.cfg.Digest != ""
	sc.route = c.rec.notification
	sc.deviation = c.libDeviation
	sc.wroteSetWatches = func() { c.setWatchesSent.Add(1) }
	sc.sent = &c.sent
	if c.sasl != nil {
		sc.auth = func(conn net.Conn) error { return c.authenticate(conn, address) }
		sc.authTimeout = ms(c.cfg.ConnectionTimeoutMilliseconds)
	}
	c.wire.Store(sc)
	return sc, nil
}

// probeTimeout bounds one probe of a server that does not answer like
// ZooKeeper (probeTLS, probeHTTP).
const probeTimeout = 2 * time.Second

// speaksTLS reports (once per server) whether the server at addr, which
// closed a plain connection without answering, completes a TLS
// handshake.
func (c *Client) speaksTLS(addr string) bool {
	if isTLS, probed := c.att.knownTLS(addr); probed {
		return isTLS
	}
	isTLS := probeTLS(c.closeCtx, c.dial, addr, probeTimeout)
	c.att.setTLS(addr, isTLS)
	return isTLS
}

// authenticate runs the SASL exchange on a new connection to addr. A final
// failure fails the client (see Failed); Close interrupts the exchange.
func (c *Client) authenticate(conn net.Conn, addr string) error {
	stop := context.AfterFunc(c.closeCtx, func() { _ = conn.SetDeadline(time.Now()) })
	defer stop()
	err := c.sasl.exchange(conn, addr)
	if errors.Is(err, ErrAuthFailed) {
		c.fail(err)
	} else if err != nil {
		c.log.Warn("zookeeper SASL exchange failed; reconnecting", "server", addr, "error", err)
	}
	return err
}

// fail records a final authentication failure: the session (if any) is
// lost, operations fail with err from now on, and no new connection is
// made.
func (c *Client) fail(err error) {
	c.failOnce.Do(func() {
		c.failure = err
		close(c.failed)
		c.log.Error("zookeeper authentication failed for good; the client gives up", "error", err)
		c.lose(fmt.Errorf("%w: %w", err, reg.ErrSessionLost))
	})
}

func (c *Client) isFailed() bool {
	select {
	case <-c.failed:
		return true
	default:
		return false
	}
}

// Failed is closed when the client gives up after a final authentication
// failure (a refused SASL login, on the first connection or on any later
// one): nothing it does can succeed any more, so its owner should stop;
// Failure says why. A host exits non-zero then.
func (c *Client) Failed() <-chan struct{} { return c.failed }

// Failure returns the error that closed Failed (nil before): an
// *AuthError, in whose chain is ErrAuthFailed.
func (c *Client) Failure() error {
	if !c.isFailed() {
		return nil
	}
	return c.failure
}

func (c *Client) setCreds(cr sessionCreds) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cr.id != 0 {
		c.creds = cr
	}
}

// heard records server contact for session id (every read on a connection
// of that session): the session's LastHeard, from which its expiry is
// presumed while disconnected. A session object for id may not exist yet
// (the connect response is read before the state event): then its creation
// time stands in.
func (c *Client) heard(id int64) {
	if s := c.cur.Load(); s != nil && s.ID() == id {
		s.Touch(time.Now())
	}
}

// libDeviation logs go-zookeeper behaving otherwise than library.go
// describes (a version other than the one it describes).
func (c *Client) libDeviation(what string) {
	c.deviations.Add(1)
	c.log.Warn("zookeeper: go-zookeeper deviates from what the adapter relies on", "what", what)
}

func (c *Client) forget(conn net.Conn) {
	c.mu.Lock()
	delete(c.conns, conn)
	c.mu.Unlock()
}

// stateEvent is a go-zookeeper session state with the session id current
// when it happened.
type stateEvent struct {
	state zk.State
	id    int64
}

// onEvent is go-zookeeper's callback: it must not block, so it only queues.
// It runs synchronously after go-zookeeper read the connect response, so
// the sniffed session id is the one this state belongs to.
func (c *Client) onEvent(ev zk.Event) {
	if ev.Type != zk.EventSession {
		return
	}
	c.mu.Lock()
	id := c.creds.id
	c.mu.Unlock()
	c.evMu.Lock()
	c.evQ = append(c.evQ, stateEvent{ev.State, id})
	c.evMu.Unlock()
	select {
	case c.evWake <- struct{}{}:
	default:
	}
}

// stateLoop owns the session state: it turns go-zookeeper's states into
// reg.ConnEvents and declares a session lost after a disconnection longer
// than its negotiated timeout (as Curator does).
func (c *Client) stateLoop() {
	var lostTimer *time.Timer
	var lostC <-chan time.Time
	stopTimer := func() {
		if lostTimer != nil {
			lostTimer.Stop()
			lostTimer, lostC = nil, nil
		}
	}
	defer stopTimer()
	for {
		c.evMu.Lock()
		q := c.evQ
		c.evQ = nil
		c.evMu.Unlock()
		for _, ev := range q {
			switch ev.state {
			case zk.StateHasSession:
				stopTimer()
				c.onSession(ev.id)
			case zk.StateDisconnected, zk.StateConnecting:
				if c.onDisconnect() {
					stopTimer()
					// The session is presumed lost once the server has
					// not been heard from for the negotiated timeout,
					// counted from the last contact, not from when the
					// disconnection was noticed (go-zookeeper notices a
					// stalled connection only after 2/3 of the timeout).
					c.mu.Lock()
					sess := c.sess
					c.mu.Unlock()
					wait := ms(c.cfg.SessionTimeoutMilliseconds)
					if dl, ok := sess.ExpiryDeadline(); ok {
						wait = max(time.Until(dl), 0)
					}
					lostTimer = time.NewTimer(wait)
					lostC = lostTimer.C
				}
			case zk.StateExpired:
				stopTimer()
				c.lose(fmt.Errorf("expired by the server: %w", reg.ErrSessionLost))
			case zk.StateAuthFailed:
				c.log.Error("zookeeper authentication failed")
			}
		}
		select {
		case <-c.evWake:
		case <-lostC:
			lostTimer, lostC = nil, nil
			c.lose(fmt.Errorf("nothing heard from the server for the session timeout: %w", reg.ErrSessionLost))
		case <-c.closing:
			return
		}
	}
}

func (c *Client) onSession(id int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var ev reg.ConnEvent
	timeout := time.Duration(c.creds.timeoutMs) * time.Millisecond
	newSession := func() *reg.Session {
		s := reg.NewSession(id)
		s.SetTimeout(timeout)
		c.cur.Store(s)
		return s
	}
	switch {
	case c.sess == nil:
		c.sess = newSession()
		ev = reg.ConnEvent{State: reg.StateConnected, Session: c.sess}
	case c.sess.ID() == id && c.sess.Err() == nil:
		if c.connected {
			return
		}
		if timeout > 0 {
			c.sess.SetTimeout(timeout)
		}
		c.sess.Touch(time.Now())
		ev = reg.ConnEvent{State: reg.StateReconnected, Session: c.sess}
	default:
		if c.sess.Err() == nil {
			c.sess.End(fmt.Errorf("%v replaced by session 0x%x: %w", c.sess, id, reg.ErrSessionLost))
			c.hub.Publish(reg.ConnEvent{State: reg.StateLost, Session: c.sess})
		}
		c.sess = newSession()
		ev = reg.ConnEvent{State: reg.StateNewSession, Session: c.sess}
	}
	c.connected = true
	close(c.upCh)
	c.log.Debug("zookeeper session", "state", ev.State, "session", fmt.Sprintf("0x%x", id))
	c.hub.Publish(ev)
	if ev.State != reg.StateConnected {
		// Server-side watches are per connection.
		c.rearm(c.wire.Load())
	}
}

// onDisconnect reports whether this is a new suspension.
func (c *Client) onDisconnect() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.connected || c.isClosing() {
		return false
	}
	c.connected = false
	c.upCh = make(chan struct{})
	c.log.Debug("zookeeper connection suspended", "session", c.sess)
	c.hub.Publish(reg.ConnEvent{State: reg.StateSuspended, Session: c.sess})
	return true
}

func (c *Client) lose(cause error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sess == nil || c.sess.Err() != nil || c.isClosing() {
		return
	}
	c.sess.End(fmt.Errorf("%v: %w", c.sess, cause))
	c.log.Warn("zookeeper session lost", "session", c.sess, "cause", cause)
	c.hub.Publish(reg.ConnEvent{State: reg.StateLost, Session: c.sess})
}

func (c *Client) isClosing() bool {
	select {
	case <-c.closing:
		return true
	default:
		return false
	}
}

// waitConnected blocks until a session is reachable or ctx ends.
func (c *Client) waitConnected(ctx context.Context) error {
	if c.isFailed() {
		return c.failure
	}
	up := c.up()
	select {
	case <-up:
		return nil
	case <-c.failed:
		return c.failure
	case <-c.closing:
		return reg.ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
}

// up returns the channel that is closed while the client is connected.
func (c *Client) up() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.upCh
}

// connectedNow reports whether the client is connected, without waiting:
// attemptOnce then needs no timeout context. A context derived from the
// caller's gives that context a map of its children, which keeps its size
// once they are gone: a job's long-lived context kept ~250 B after its
// first call.
func (c *Client) connectedNow() bool {
	if c.isFailed() {
		return false
	}
	up := c.up()
	select {
	case <-up:
		return true
	default:
		return false
	}
}

// call runs one go-zookeeper operation bounded by ctx: each attempt waits
// for a connection (up to connectionTimeoutMilliseconds) and retryable
// failures are retried with Curator's ExponentialBackoffRetry while
// maxRetries allows.
func call[T any](ctx context.Context, c *Client, op, path string, retry bool, fn func() (T, error)) (T, error) {
	var zero T
	for attempt := 0; ; attempt++ {
		if c.isClosing() {
			return zero, &reg.OpError{Op: op, Path: path, Err: reg.ErrClosed}
		}
		if err := ctx.Err(); err != nil {
			return zero, &reg.OpError{Op: op, Path: path, Err: err}
		}
		v, err := attemptOnce(ctx, c, fn)
		if err == nil {
			return v, nil
		}
		if errors.Is(err, errCtx) {
			return zero, &reg.OpError{Op: op, Path: path, Err: ctx.Err()}
		}
		if c.isClosing() {
			return zero, &reg.OpError{Op: op, Path: path, Err: reg.ErrClosed}
		}
		err = mapErr(err)
		if !retry || !retryable(err) || attempt >= c.cfg.MaxRetries {
			return zero, &reg.OpError{Op: op, Path: path, Err: err}
		}
		sleep := c.backoff(attempt)
		c.log.Debug("zookeeper operation retry", "op", op, "path", path, "attempt", attempt+1, "sleep", sleep, "error", err)
		t := time.NewTimer(sleep)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return zero, &reg.OpError{Op: op, Path: path, Err: fmt.Errorf("%w (last error: %w)", ctx.Err(), err)}
		case <-c.closing:
			t.Stop()
			return zero, &reg.OpError{Op: op, Path: path, Err: reg.ErrClosed}
		}
	}
}

var errCtx = errors.New("context done")

type result[T any] struct {
	v   T
	err error
}

// attemptOnce waits for a connection (at most connectionTimeoutMilliseconds;
// not connected then counts as a connection loss) and runs fn. go-zookeeper
// has no ctx, so fn runs in its own goroutine and is abandoned (it finishes
// when the server answers or the connection drops) if ctx ends first.
func attemptOnce[T any](ctx context.Context, c *Client, fn func() (T, error)) (T, error) {
	var zero T
	if !c.connectedNow() {
		wctx, cancel := context.WithTimeout(ctx, ms(c.cfg.ConnectionTimeoutMilliseconds))
		err := c.waitConnected(wctx)
		cancel()
		switch {
		case err == nil:
		case ctx.Err() != nil:
			return zero, errCtx
		case errors.Is(err, reg.ErrClosed), errors.Is(err, ErrAuthFailed):
			return zero, err
		default:
			return zero, fmt.Errorf("not connected within %dms: %w", c.cfg.ConnectionTimeoutMilliseconds, zk.ErrConnectionClosed)
		}
	}
	ch := make(chan result[T], 1)
	go func() {
		v, err := fn()
		ch <- result[T]{v, err}
	}()
	select {
	case r := <-ch:
		return r.v, r.err
	case <-ctx.Done():
		return zero, errCtx
	case <-c.closing:
		return zero, reg.ErrClosed
	}
}

// backoff is Curator's ExponentialBackoffRetry.getSleepTimeMs.
func (c *Client) backoff(retryCount int) time.Duration {
	n := 1 << (retryCount + 1)
	sleep := c.cfg.BaseSleepTimeMilliseconds * max(1, rand.IntN(n))
	return ms(min(sleep, c.cfg.MaxSleepTimeMilliseconds))
}

func (c *Client) abs(p string) string {
	if p == "/" && c.ns != "" {
		return c.ns
	}
	return c.ns + p
}

func (c *Client) rel(full string) string { return relPath(c.ns, full) }

// relPath is full relative to namespace ns ("" or "/a/b").
func relPath(ns, full string) string {
	if ns == "" {
		return full
	}
	if full == ns {
		return "/"
	}
	return strings.TrimPrefix(full, ns)
}

func invalid(op, path string, err error) error { return &reg.OpError{Op: op, Path: path, Err: err} }

// Namespace implements reg.Client.
func (c *Client) Namespace() string { return c.cfg.Namespace }

// Session implements reg.Client.
func (c *Client) Session() *reg.Session {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sess
}

// WatchConnection implements reg.Client.
func (c *Client) WatchConnection(ctx context.Context) <-chan reg.ConnEvent {
	c.mu.Lock()
	defer c.mu.Unlock()
	first := reg.ConnEvent{State: reg.StateConnected, Session: c.sess}
	switch {
	case c.isClosing() || (c.sess != nil && c.sess.Err() != nil):
		first.State = reg.StateLost
	case !c.connected:
		first.State = reg.StateSuspended
	}
	return c.hub.Subscribe(ctx, first)
}

// Expire implements reg.Expirer: a second connection attaches to the current
// session and closes it, so the server ends it exactly as on a timeout
// (Curator's KillSession technique). The client's own reconnections are held
// meanwhile, so it cannot re-attach first. Expire returns once the client
// has seen the loss (StateLost); StateNewSession follows when it has
// reconnected.
func (c *Client) Expire(ctx context.Context) error {
	if c.isClosing() {
		return reg.ErrClosed
	}
	c.mu.Lock()
	cr, sess := c.creds, c.sess
	if c.gate != nil {
		c.mu.Unlock()
		return errors.New("zookeeper: expire: already expiring")
	}
	gate := make(chan struct{})
	c.gate = gate
	c.mu.Unlock()
	release := func() {
		c.mu.Lock()
		if c.gate == gate {
			c.gate = nil
			close(gate)
		}
		c.mu.Unlock()
	}
	defer release()
	if cr.id == 0 || sess == nil {
		return errors.New("zookeeper: expire: no session yet")
	}
	var auth func(net.Conn, string) error
	if c.sasl != nil {
		auth = c.sasl.exchange
	}
	if err := closeSessionAs(ctx, c.dial, auth, cr); err != nil {
		return fmt.Errorf("zookeeper: expire session 0x%x: %w", cr.id, err)
	}
	// The server drops the session's old connection when the second one
	// attaches, but not always at once; make sure it is gone, so the client
	// reconnects (once released) and learns of the expiry.
	c.DropConnection()
	release()
	if sess.ID() != cr.id {
		return nil
	}
	select {
	case <-sess.Done():
		return nil
	case <-c.closing:
		return reg.ErrClosed
	case <-ctx.Done():
		return fmt.Errorf("zookeeper: expire session 0x%x: waiting for the client to notice: %w", cr.id, ctx.Err())
	}
}

// DropConnection closes the client's TCP connections without ending the
// session, as a network fault would: the client reports StateSuspended, and
// go-zookeeper reconnects (StateReconnected) within the session timeout.
func (c *Client) DropConnection() {
	c.mu.Lock()
	conns := make([]net.Conn, 0, len(c.conns))
	for conn := range c.conns {
		conns = append(conns, conn)
	}
	c.mu.Unlock()
	for _, conn := range conns {
		_ = conn.Close()
	}
}

// Close implements reg.Client: the session is closed on the server (its
// ephemerals deleted), recursive watches end with ErrClosed, and Close
// returns once every goroutine of the client has exited (the recursive
// watches' fns have had their last call). Close is prompt in every phase:
// a dial, a handshake or a SASL exchange in progress ends at once; with a
// connected session, the server has up to a second to answer the close
// request. Without one, go-zookeeper's own Close (which waits a second
// for an answer to a close request nothing can send) ends in the
// background.
func (c *Client) Close() error {
	c.closeOnce.Do(func() {
		close(c.closing)
		c.closeNow()
		c.mu.Lock()
		connected := c.connected
		c.mu.Unlock()
		zkClosed := make(chan struct{})
		go func() {
			defer close(zkClosed)
			c.conn.Close()
		}()
		if connected {
			<-zkClosed
		}
		// go-zookeeper's loop may be blocked reading a server that does
		// not answer (its handshake allows minutes): closing the sockets
		// ends every read at once.
		c.DropConnection()
		<-c.loopDone
		c.rec.closeAll()
		if c.sasl != nil {
			c.sasl.close()
		}
		c.mu.Lock()
		if c.sess != nil {
			c.sess.End(fmt.Errorf("%v closed: %w", c.sess, reg.ErrClosed))
		}
		c.mu.Unlock()
		c.hub.Close()
	})
	return nil
}
