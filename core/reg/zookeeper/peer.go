package zookeeper

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// ErrNotZooKeeper is in the chain of a *NotZooKeeperError: the server at
// an address of serverLists answered the connect request in a way no
// ZooKeeper server does. Retrying cannot help; the address is wrong.
var ErrNotZooKeeper = errors.New("not a ZooKeeper server")

// NotZooKeeperError names a server that is not a (plain) ZooKeeper server
// and what it answered like.
type NotZooKeeperError struct {
	Server string // host:port
	// Like says what the answer looked like: "an HTTP server", "a TLS
	// server" or "garbage (first bytes 0x...)".
	Like string
}

func (e *NotZooKeeperError) Error() string {
	return fmt.Sprintf("%s is %s: it answered like %s", e.Server, ErrNotZooKeeper, e.Like)
}

func (e *NotZooKeeperError) Unwrap() error { return ErrNotZooKeeper }

// HandshakeError is one connection attempt that failed before the server
// sent a valid connect response (the ZooKeeper handshake).
type HandshakeError struct {
	Server string
	Err    error
}

func (e *HandshakeError) Error() string {
	var nz *NotZooKeeperError
	if errors.As(e.Err, &nz) && nz.Server == e.Server {
		return e.Err.Error()
	}
	return fmt.Sprintf("ZooKeeper handshake with %s: %v", e.Server, e.Err)
}

func (e *HandshakeError) Unwrap() error { return e.Err }

// Bounds of a connect response: jute ConnectResponse{int protocolVersion,
// int timeOut, long sessionId, buffer passwd} (16 bytes of password), and
// since ZooKeeper 3.4 a bool readOnly. Anything far outside is no
// ZooKeeper server.
const (
	minConnectResponse = 20
	maxConnectResponse = 1024
)

// readConnectResponse reads the server's first frame, the connect
// response, from r (the connection to addr) and checks that it is one.
// Errors are *HandshakeError; a peer that answered as no ZooKeeper server
// does gets a *NotZooKeeperError inside.
func readConnectResponse(r io.Reader, addr string) ([]byte, error) {
	fail := func(err error) ([]byte, error) { return nil, &HandshakeError{Server: addr, Err: err} }
	var hdr [4]byte
	n, err := io.ReadFull(r, hdr[:])
	switch {
	case err == nil:
	case n == 0 && (errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET)):
		return fail(errSilentClose)
	case n > 0 && isEOF(err):
		return fail(&NotZooKeeperError{Server: addr, Like: "garbage (" + firstBytes(hdr[:n]) + ", then it closed the connection)"})
	case isTimeout(err):
		return fail(errNoAnswer)
	default:
		return fail(err)
	}
	size := binary.BigEndian.Uint32(hdr[:])
	if size < minConnectResponse || size > maxConnectResponse {
		return fail(&NotZooKeeperError{Server: addr, Like: classify(hdr[:])})
	}
	b := make([]byte, size)
	readBody := func(b []byte) error {
		if _, err := io.ReadFull(r, b); err != nil {
			if isTimeout(err) {
				return fmt.Errorf("the connect response stopped after %d bytes: %w", len(hdr)+len(b), errNoAnswer)
			}
			return fmt.Errorf("read the connect response: %w", err)
		}
		return nil
	}
	// protocolVersion first: a peer that sent a plausible length by chance
	// is named before the rest of a frame it will never send.
	if err := readBody(b[:4]); err != nil {
		return fail(err)
	}
	if v := binary.BigEndian.Uint32(b); v != 0 {
		return fail(&NotZooKeeperError{Server: addr, Like: "garbage (" + firstBytes(append(hdr[:], b[:4]...)) + ")"})
	}
	if err := readBody(b[4:]); err != nil {
		return fail(err)
	}
	return b, nil
}

// errSilentClose and errNoAnswer describe a handshake that got no bytes.
var (
	errSilentClose = errors.New("the server closed the connection without answering the connect request (a TLS-only port such as ZooKeeper's secureClientPort does this, as does a server at its maxClientCnxns)")
	errNoAnswer    = errors.New("the server accepted the connection but has not answered the connect request")
)

// classify names what a frame header that is no connect response's
// length looks like.
func classify(hdr []byte) string {
	switch {
	case string(hdr) == "HTTP":
		return "an HTTP server"
	case hdr[0] == 0x15 && hdr[1] == 0x03, hdr[0] == 0x16 && hdr[1] == 0x03:
		return "a TLS server (ejob connects to ZooKeeper without TLS: use its clientPort)"
	case string(hdr) == "SSH-":
		return "an SSH server"
	}
	return "garbage (" + firstBytes(hdr) + ")"
}

func firstBytes(b []byte) string { return fmt.Sprintf("first bytes 0x%x", b) }

func isEOF(err error) bool { return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) }

func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, os.ErrDeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
}

// probeTLS reports whether the server at addr completes (or answers with
// an alert) a TLS handshake within d: it tells a TLS-only port from a
// server that closes plain connections for other reasons. Nothing is
// sent after the handshake, so the server's certificate is not checked.
func probeTLS(ctx context.Context, dial func(ctx context.Context, network, addr string) (net.Conn, error), addr string, d time.Duration) bool {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	raw, err := dial(ctx, "tcp", addr)
	if err != nil {
		return false
	}
	defer raw.Close()
	host, _, _ := net.SplitHostPort(addr)
	//nolint:gosec // a probe: the handshake's outcome is all it wants, no data is exchanged
	conn := tls.Client(raw, &tls.Config{ServerName: host, InsecureSkipVerify: true})
	err = conn.HandshakeContext(ctx)
	var alert tls.AlertError
	return err == nil || errors.As(err, &alert)
}

// probeHTTP reports whether the server at addr answers an HTTP request
// within d like an HTTP server. An HTTP server waits for the end of a
// request line that a connect request never sends, so it answers the
// connect request only at its header timeout, if ever: this asks it on a
// connection of its own. (A ZooKeeper server reads the request as a frame
// too long and closes that connection.)
func probeHTTP(ctx context.Context, dial func(ctx context.Context, network, addr string) (net.Conn, error), addr string, d time.Duration) bool {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	conn, err := dial(ctx, "tcp", addr)
	if err != nil {
		return false
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Now()) })
	defer stop()
	if _, err := io.WriteString(conn, "HEAD / HTTP/1.0\r\nHost: "+addr+"\r\n\r\n"); err != nil {
		return false
	}
	var b [5]byte
	_, err = io.ReadFull(conn, b[:])
	return err == nil && string(b[:]) == "HTTP/"
}

// attempts follows the client's connection attempts: what the newest one
// is doing, how the last failed one ended, and which servers answered as
// no ZooKeeper server does. Connect's errors are made of it.
type attempts struct {
	mu      sync.Mutex
	server  string
	phase   string // "" (none running), phaseDial, phaseHandshake, phaseSASL
	since   time.Time
	last    error            // the last failed attempt's error
	notZK   map[string]error // server -> *NotZooKeeperError
	servers int              // how many servers serverLists has
	wrong   chan struct{}    // closed once every server answered as no ZooKeeper
	once    sync.Once
	tls     map[string]bool // server -> probed: it speaks TLS
}

const (
	phaseDial      = "dialing"
	phaseHandshake = "handshake"
	phaseSASL      = "SASL"
)

func newAttempts(servers int) *attempts {
	return &attempts{servers: servers, notZK: map[string]error{}, tls: map[string]bool{}, wrong: make(chan struct{})}
}

func (a *attempts) begin(server, phase string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.server, a.phase, a.since = server, phase, time.Now()
}

// failed records an attempt's failure; a *NotZooKeeperError counts toward
// closing wrong.
func (a *attempts) failed(server string, err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.server == server {
		a.phase = ""
	}
	a.last = err
	var nz *NotZooKeeperError
	if errors.As(err, &nz) {
		a.notZK[server] = err
		if len(a.notZK) >= a.servers {
			a.once.Do(func() { close(a.wrong) })
		}
	} else {
		delete(a.notZK, server)
	}
}

// succeeded records a usable connection to server.
func (a *attempts) succeeded(server string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.server == server {
		a.phase = ""
	}
	a.last = nil
	delete(a.notZK, server)
}

// wrongPeers returns the *NotZooKeeperErrors, one per server, once every
// server answered as no ZooKeeper server does.
func (a *attempts) wrongPeers() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	var errs peerErrors
	for _, err := range a.notZK {
		var nz *NotZooKeeperError
		if errors.As(err, &nz) {
			errs = append(errs, nz)
		}
	}
	slices.SortFunc(errs, func(x, y *NotZooKeeperError) int { return strings.Compare(x.Server, y.Server) })
	return errs
}

// peerErrors are the servers that are no ZooKeeper servers, in one line.
type peerErrors []*NotZooKeeperError

func (p peerErrors) Error() string {
	s := make([]string, len(p))
	for i, e := range p {
		s[i] = e.Error()
	}
	return strings.Join(s, "; ")
}

func (p peerErrors) Unwrap() []error {
	errs := make([]error, len(p))
	for i, e := range p {
		errs[i] = e
	}
	return errs
}

// describe says what the newest attempt is doing and how the last failed
// one ended, for an error of Connect.
func (a *attempts) describe() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	var s string
	switch a.phase {
	case phaseDial:
		s = fmt.Sprintf("dialing %s for %v", a.server, roundDur(time.Since(a.since)))
	case phaseHandshake:
		s = fmt.Sprintf("%s accepted the connection %v ago and has not answered the ZooKeeper connect request", a.server, roundDur(time.Since(a.since)))
	case phaseSASL:
		s = fmt.Sprintf("in the SASL exchange with %s for %v", a.server, roundDur(time.Since(a.since)))
	}
	if a.last != nil {
		if s != "" {
			s += "; "
		}
		s += "the last attempt: " + a.last.Error()
	}
	if s == "" {
		return "no connection attempt made"
	}
	return s
}

// knownTLS and setTLS cache probeTLS's verdict per server.
func (a *attempts) knownTLS(server string) (isTLS, probed bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	isTLS, probed = a.tls[server]
	return isTLS, probed
}

func (a *attempts) setTLS(server string, isTLS bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.tls[server] = isTLS
}

func roundDur(d time.Duration) time.Duration { return d.Round(100 * time.Millisecond) }
