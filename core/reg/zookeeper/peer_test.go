package zookeeper_test

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ejob-io/ejob/core/reg"
	"github.com/ejob-io/ejob/core/reg/zookeeper"
	"github.com/ejob-io/ejob/internal/testkit"
)

// peer is a TCP server that hands every connection it accepts to serve
// (nil: the connection is held open and never read or answered). It counts
// the connections; they are closed when the test ends.
type peer struct {
	addr     string
	accepted atomic.Int32
}

func startPeer(t *testing.T, serve func(net.Conn)) *peer {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &peer{addr: l.Addr().String()}
	var mu sync.Mutex
	var conns []net.Conn
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			p.accepted.Add(1)
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			if serve != nil {
				wg.Add(1)
				go func() {
					defer wg.Done()
					serve(c)
				}()
			}
		}
	}()
	t.Cleanup(func() {
		_ = l.Close()
		mu.Lock()
		for _, c := range conns {
			_ = c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return p
}

// readConnectRequest reads the client's connect request (one frame).
func readConnectRequest(c net.Conn) error {
	var hdr [4]byte
	if _, err := io.ReadFull(c, hdr[:]); err != nil {
		return err
	}
	_, err := io.CopyN(io.Discard, c, int64(binary.BigEndian.Uint32(hdr[:])))
	return err
}

// answerThenHang answers the connect request with a valid connect response
// (a session) and then reads and never answers: a server stuck after the
// handshake, in the SASL exchange.
func answerThenHang(c net.Conn) {
	if readConnectRequest(c) != nil {
		return
	}
	resp := binary.BigEndian.AppendUint32(nil, 0)      // protocolVersion
	resp = binary.BigEndian.AppendUint32(resp, 4000)   // timeOut
	resp = binary.BigEndian.AppendUint64(resp, 0x1234) // sessionId
	resp = binary.BigEndian.AppendUint32(resp, 16)     // passwd
	resp = append(resp, make([]byte, 16)...)
	frame := append(binary.BigEndian.AppendUint32(nil, uint32(len(resp))), resp...)
	if _, err := c.Write(frame); err != nil {
		return
	}
	_, _ = io.Copy(io.Discard, c)
}

// slowConfig is a config whose go-zookeeper handshake allowance is its
// default (ten times two thirds of a 60 s session timeout: 400 s) and
// whose connection timeout does not end an attempt: what bounds Connect
// is its own deadline, maxSleep x maxRetries = wait.
func slowConfig(t *testing.T, addr string, wait time.Duration) zookeeper.Config {
	cfg := testConfig(t, addr, "ns")
	cfg.SessionTimeoutMilliseconds = 60000
	cfg.ConnectionTimeoutMilliseconds = 60000
	cfg.MaxRetries = 1
	cfg.BaseSleepTimeMilliseconds = 1
	cfg.MaxSleepTimeMilliseconds = int(wait / time.Millisecond)
	return cfg
}

// connectWithin runs Connect and fails the test when it has not returned
// within limit (a hung Connect would otherwise hang the test binary).
func connectWithin(t *testing.T, ctx context.Context, cfg zookeeper.Config, limit time.Duration) error {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		c, err := zookeeper.Connect(ctx, cfg)
		if err == nil {
			c.Close()
			err = errors.New("connected")
		}
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case <-time.After(limit):
		t.Fatalf("Connect to %s has not returned after %v", cfg.ServerLists, limit)
		return nil
	}
}

// TestConnectDeadlineInEveryPhase: a server that never completes a phase
// of the connection (the dial, the handshake, the SASL exchange) must not
// hold Connect past its deadline (maxSleep x maxRetries) by more than a
// second, nor past a cancellation of its ctx by more than a second; the
// error says which phase it was in. (go-zookeeper's own handshake read
// allows 400 s with the default session timeout; Close must not wait for
// it.)
func TestConnectDeadlineInEveryPhase(t *testing.T) {
	phases := map[string]struct {
		addr func(t *testing.T) string
		sasl bool
		want string
	}{
		"dial":      {addr: blackhole, want: "dialing 127.0.0.1:"},
		"handshake": {addr: func(t *testing.T) string { return startPeer(t, nil).addr }, want: "accepted the connection"},
		"sasl":      {addr: func(t *testing.T) string { return startPeer(t, answerThenHang).addr }, sasl: true, want: "in the SASL exchange with 127.0.0.1:"},
	}
	for name, ph := range phases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			addr := ph.addr(t)
			t.Run("deadline", func(t *testing.T) {
				const wait = 1500 * time.Millisecond
				cfg := slowConfig(t, addr, wait)
				if ph.sasl {
					cfg.SASL = digestSASL("bob", "secret")
				}
				start := time.Now()
				err := connectWithin(t, context.Background(), cfg, wait+10*time.Second)
				took := time.Since(start)
				if took > wait+time.Second {
					t.Errorf("Connect took %v, want at most its deadline %v + 1s", took, wait)
				}
				if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), ph.want) || !strings.Contains(err.Error(), "within 1.5s") {
					t.Errorf("error %q, want a deadline naming %q", err, ph.want)
				}
			})
			t.Run("cancel", func(t *testing.T) {
				cfg := slowConfig(t, addr, time.Minute)
				if ph.sasl {
					cfg.SASL = digestSASL("bob", "secret")
				}
				ctx, cancel := context.WithCancelCause(context.Background())
				var cancelled atomic.Int64
				time.AfterFunc(1200*time.Millisecond, func() {
					cancelled.Store(time.Now().UnixNano())
					cancel(errors.New("terminated"))
				})
				err := connectWithin(t, ctx, cfg, 10*time.Second)
				took := time.Since(time.Unix(0, cancelled.Load()))
				if cancelled.Load() == 0 {
					t.Fatalf("Connect ended before the cancellation: %v", err)
				}
				if took > time.Second {
					t.Errorf("Connect returned %v after its ctx was cancelled, want within 1s", took)
				}
				if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "interrupted") ||
					!strings.Contains(err.Error(), "terminated") || !strings.Contains(err.Error(), ph.want) {
					t.Errorf("error %q, want an interruption naming %q", err, ph.want)
				}
			})
		})
	}
}

// TestHandshakeBoundedByConnectionTimeout: a server that accepts and never
// answers holds one connection attempt for connectionTimeoutMilliseconds,
// not go-zookeeper's 400 s: the client moves on to new attempts, and
// Connect's error tells how the last one ended.
func TestHandshakeBoundedByConnectionTimeout(t *testing.T) {
	p := startPeer(t, nil)
	cfg := slowConfig(t, p.addr, 3*time.Second)
	cfg.ConnectionTimeoutMilliseconds = 500
	err := connectWithin(t, context.Background(), cfg, 15*time.Second)
	if want := "the last attempt: ZooKeeper handshake with " + p.addr + ": the server accepted the connection but has not answered the connect request within 500ms (connectionTimeoutMilliseconds)"; !strings.Contains(err.Error(), want) {
		t.Fatalf("error %v, want one naming the last attempt's handshake", err)
	}
	if n := p.accepted.Load(); n < 3 {
		t.Errorf("%d connections in 3s with a 500ms connection timeout, want a new one after each timeout", n)
	}
}

// TestConnectNamesNonZooKeeperServers: an address of serverLists that is an
// HTTP server, a TLS server or something that answers garbage fails Connect
// at once with an error naming the address and what it answered like (an
// HTTP server's answer must not read as "frame of 1213486160 bytes"). A
// server that only closes connections is no proof: Connect waits for its
// deadline and says what the server did.
func TestConnectNamesNonZooKeeperServers(t *testing.T) {
	httpSrv := httptest.NewServer(http.NotFoundHandler()) // no header timeout: it never answers a connect request
	t.Cleanup(httpSrv.Close)
	tlsSrv := httptest.NewTLSServer(http.NotFoundHandler()) // Go's TLS closes a plain connection without a word
	t.Cleanup(tlsSrv.Close)
	writes := func(b []byte) func(net.Conn) {
		return func(c net.Conn) {
			_ = readConnectRequest(c)
			_, _ = c.Write(b)
			_ = c.Close()
		}
	}
	cases := map[string]struct {
		addr string
		want string
	}{
		"http":      {httpSrv.Listener.Addr().String(), "it answered like an HTTP server"},
		"tls":       {tlsSrv.Listener.Addr().String(), "it answered like a TLS server"},
		"tls alert": {startPeer(t, writes([]byte{0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 0x46})).addr, "it answered like a TLS server"},
		"ssh":       {startPeer(t, func(c net.Conn) { _, _ = io.WriteString(c, "SSH-2.0-OpenSSH_9.6\r\n") }).addr, "it answered like an SSH server"},
		"garbage":   {startPeer(t, writes([]byte{0xde, 0xad, 0xbe, 0xef, 0x01})).addr, "it answered like garbage (first bytes 0xdeadbeef)"},
		"short":     {startPeer(t, writes([]byte{0x00, 0x01})).addr, "it answered like garbage (first bytes 0x0001, then it closed the connection)"},
		"bad version": {startPeer(t, writes(append(binary.BigEndian.AppendUint32(nil, 36), 0, 0, 0, 7))).addr,
			"it answered like garbage (first bytes 0x0000002400000007)"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			const wait = 10 * time.Second
			start := time.Now()
			err := connectWithin(t, context.Background(), slowConfig(t, tc.addr, wait), wait+10*time.Second)
			var nz *zookeeper.NotZooKeeperError
			if !errors.Is(err, zookeeper.ErrNotZooKeeper) || !errors.As(err, &nz) || nz.Server != tc.addr {
				t.Fatalf("error %v, want a *NotZooKeeperError for %s", err, tc.addr)
			}
			if want := tc.addr + " is not a ZooKeeper server: " + tc.want; !strings.Contains(err.Error(), want) {
				t.Errorf("error %q lacks %q", err, want)
			}
			if took := time.Since(start); took > wait/2 {
				t.Errorf("Connect took %v: a server that is not ZooKeeper fails it at once", took)
			}
		})
	}
	closers := map[string]func(net.Conn){
		"closes": func(c net.Conn) { _ = c.Close() },
		"reads, closes": func(c net.Conn) {
			_ = readConnectRequest(c)
			_ = c.Close()
		},
	}
	for name, serve := range closers {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			p := startPeer(t, serve)
			err := connectWithin(t, context.Background(), slowConfig(t, p.addr, time.Second), 15*time.Second)
			if errors.Is(err, zookeeper.ErrNotZooKeeper) || !strings.Contains(err.Error(), "closed the connection without answering") {
				t.Fatalf("error %v, want a deadline saying the server closed the connection", err)
			}
		})
	}
}

// TestNotZooKeeperAmongServers: one wrong address in serverLists does not
// fail Connect while another is a ZooKeeper server.
func TestNotZooKeeperAmongServers(t *testing.T) {
	httpSrv := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(httpSrv.Close)
	cfg := testConfig(t, httpSrv.Listener.Addr().String()+","+server.Addr(), "ns")
	cfg.MaxSleepTimeMilliseconds, cfg.MaxRetries = 5000, 2
	c := connect(t, cfg)
	if _, _, err := c.Exists(context.Background(), "/"); err != nil {
		t.Fatal(err)
	}
}

// TestCloseWhileReconnectingToAHangingServer: a client whose session's
// server was replaced by one that accepts and never answers closes at
// once (a host stopping on SIGTERM while ZooKeeper hangs).
func TestCloseWhileReconnectingToAHangingServer(t *testing.T) {
	hang := startPeer(t, nil)
	var toHang atomic.Bool
	cfg := testConfig(t, server.Addr(), "ns")
	cfg.SessionTimeoutMilliseconds = 60000
	cfg.Dialer = func(ctx context.Context, network, addr string) (net.Conn, error) {
		if toHang.Load() {
			addr = hang.addr
		}
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}
	c, err := zookeeper.Connect(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	events := c.WatchConnection(t.Context())
	toHang.Store(true)
	c.DropConnection()
	for ev := range events {
		if ev.State == reg.StateSuspended {
			break
		}
	}
	testkit.Eventually(t, 10*time.Second, "a reconnection to the hanging server", func() bool { return hang.accepted.Load() > 0 })
	closed := make(chan time.Duration, 1)
	start := time.Now()
	go func() {
		_ = c.Close()
		closed <- time.Since(start)
	}()
	select {
	case took := <-closed:
		if took > time.Second {
			t.Errorf("Close took %v during a handshake with a server that never answers, want under 1s", took)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("Close has not returned after 15s during a handshake with a server that never answers")
	}
}
