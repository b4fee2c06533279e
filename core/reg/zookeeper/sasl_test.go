package zookeeper_test

import (
	"context"
	"encoding/binary"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ejob-io/ejob/core/reg"
	"github.com/ejob-io/ejob/core/reg/zktest"
	"github.com/ejob-io/ejob/core/reg/zookeeper"
)

func digestSASL(user, password string) zookeeper.SASL {
	return zookeeper.SASL{Mechanism: "DIGEST-MD5", Username: user, Password: password}
}

// countingDialer counts the connections a client opens.
func countingDialer(n *atomic.Int32) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		n.Add(1)
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}
}

// refusedAtOnce connects with cfg and wants a final SASL failure (an
// *AuthError) holding each of wants, after one connection: a refused login
// is not retried. It returns the error.
func refusedAtOnce(ctx context.Context, t *testing.T, cfg zookeeper.Config, wants ...string) error {
	t.Helper()
	var dials atomic.Int32
	cfg.Dialer = countingDialer(&dials)
	c, err := zookeeper.Connect(ctx, cfg)
	if err == nil {
		c.Close()
		t.Fatal("connected")
	}
	var ae *zookeeper.AuthError
	if !errors.As(err, &ae) || !errors.Is(err, zookeeper.ErrAuthFailed) {
		t.Fatalf("error %v (%T), want an *AuthError", err, err)
	}
	for _, want := range wants {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if n := dials.Load(); n != 1 {
		t.Errorf("%d connections, want 1: a refused login is not retried", n)
	}
	return err
}

// waitNewSession waits until c reports a session other than old.
func waitNewSession(t *testing.T, c *zookeeper.Client, old *reg.Session) *reg.Session {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	events := c.WatchConnection(ctx)
	for ev := range events {
		if ev.Session != nil && ev.Session != old && ev.State == reg.StateNewSession {
			return ev.Session
		}
		if s := c.Session(); s != nil && s != old && s.Err() == nil && ev.State != reg.StateSuspended && ev.State != reg.StateLost {
			return s
		}
	}
	t.Fatalf("no new session after %v", old)
	return nil
}

// TestSASLDigestMD5 runs the client against a ZooKeeper that requires
// SASL DIGEST-MD5: the right password gets a session, with sasl ACLs that
// refuse another identity; the session is authenticated again after an
// expiry and after a server restart; a wrong password, and a password
// changed on the server while the client runs, fail for good.
func TestSASLDigestMD5(t *testing.T) {
	users := map[string]string{"bob": "secret", "alice": "wonderland"}
	srv := zktest.Start(t, zktest.Options{JAAS: zktest.DigestJAAS(users), RequireSASL: true})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	bobCfg := testConfig(t, srv.Addr(), "sasl")
	bobCfg.SASL = digestSASL("bob", "secret")
	bobCfg.SASL.ACL = true
	bob := connect(t, bobCfg)
	if _, err := bob.Create(ctx, "/owned", []byte("bob's"), reg.Persistent); err != nil {
		t.Fatal(err)
	}

	t.Run("no SASL is refused", func(t *testing.T) {
		cfg := testConfig(t, srv.Addr(), "sasl")
		cfg.MaxRetries = 0
		c, err := zookeeper.Connect(ctx, cfg)
		if err == nil {
			_, _, err = c.Get(ctx, "/owned")
			c.Close()
		}
		if !errors.Is(err, reg.ErrNoAuth) || !strings.Contains(err.Error(), "requires SASL") {
			t.Fatalf("a client without SASL: %v, want ErrNoAuth saying the server requires SASL", err)
		}
	})

	t.Run("sasl ACL refuses another identity", func(t *testing.T) {
		cfg := testConfig(t, srv.Addr(), "sasl")
		cfg.SASL = digestSASL("alice", "wonderland")
		alice := connect(t, cfg)
		if _, err := alice.Set(ctx, "/owned", []byte("alice's"), reg.AnyVersion); !errors.Is(err, reg.ErrNoAuth) {
			t.Errorf("alice's Set = %v, want ErrNoAuth", err)
		}
		if _, _, err := alice.Get(ctx, "/owned"); !errors.Is(err, reg.ErrNoAuth) {
			t.Errorf("alice's Get = %v, want ErrNoAuth", err)
		}
		// multiRead goes on the SASL-authenticated connection: bob's
		// identity reads his node, alice's is refused it per op.
		if res, err := alice.MultiRead(ctx, reg.GetOp("/owned")); err != nil || !errors.Is(res[0].Err, reg.ErrNoAuth) {
			t.Errorf("alice's MultiRead = %+v, %v; want ErrNoAuth for /owned", res, err)
		}
		if res, err := bob.MultiRead(ctx, reg.GetOp("/owned")); err != nil || res[0].Err != nil || !strings.HasSuffix(string(res[0].Data), "bob's") {
			t.Errorf("bob's MultiRead = %+v, %v", res, err)
		}
		if _, err := bob.Set(ctx, "/owned", []byte("still bob's"), reg.AnyVersion); err != nil {
			t.Errorf("bob's Set: %v", err)
		}
	})

	t.Run("JAAS file", func(t *testing.T) {
		jaas := filepath.Join(t.TempDir(), "jaas.conf")
		os.WriteFile(jaas, []byte(`/* as for zkCli */
Client {
  org.apache.zookeeper.server.auth.DigestLoginModule required
  username="bob"
  password="secret";
};
`), 0o600)
		cfg := testConfig(t, srv.Addr(), "sasl")
		cfg.SASL = zookeeper.SASL{JAASFile: jaas}
		c := connect(t, cfg)
		if _, err := c.Set(ctx, "/owned", []byte("bob via JAAS"), reg.AnyVersion); err != nil {
			t.Errorf("Set as bob through the JAAS file: %v", err)
		}
	})

	t.Run("wrong password fails at once", func(t *testing.T) {
		cfg := testConfig(t, srv.Addr(), "sasl")
		cfg.SASL = digestSASL("bob", "not-the-password")
		err := refusedAtOnce(ctx, t, cfg, "DIGEST-MD5", `"bob"`, "SESSIONCLOSEDREQUIRESASLAUTH")
		if strings.Contains(err.Error(), "not-the-password") {
			t.Errorf("error %q shows the password", err)
		}
	})

	t.Run("expiry authenticates the new session", func(t *testing.T) {
		old := bob.Session()
		if err := bob.Expire(ctx); err != nil {
			t.Fatal(err)
		}
		waitNewSession(t, bob, old)
		if _, err := bob.Set(ctx, "/owned", []byte("after expiry"), reg.AnyVersion); err != nil {
			t.Errorf("Set after the expiry: %v", err)
		}
		if _, err := bob.Create(ctx, "/eph", nil, reg.Ephemeral); err != nil {
			t.Errorf("Create after the expiry: %v", err)
		}
	})

	t.Run("restart authenticates the reconnection", func(t *testing.T) {
		if err := srv.Restart(); err != nil {
			t.Fatal(err)
		}
		if _, err := bob.Set(ctx, "/owned", []byte("after restart"), reg.AnyVersion); err != nil {
			t.Errorf("Set after the restart: %v", err)
		}
	})

	t.Run("password changed on the server fails the running client", func(t *testing.T) {
		if err := srv.Stop(); err != nil {
			t.Fatal(err)
		}
		changed := zktest.DigestJAAS(map[string]string{"bob": "rotated", "alice": "wonderland"})
		if err := os.WriteFile(filepath.Join(srv.Dir(), "jaas.conf"), []byte(changed), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := srv.StartAgain(); err != nil {
			t.Fatal(err)
		}
		select {
		case <-bob.Failed():
		case <-ctx.Done():
			t.Fatal("the client did not give up after the server refused its password")
		}
		if err := bob.Failure(); !errors.Is(err, zookeeper.ErrAuthFailed) {
			t.Errorf("Failure() = %v, want ErrAuthFailed", err)
		}
		if _, _, err := bob.Get(ctx, "/owned"); !errors.Is(err, zookeeper.ErrAuthFailed) {
			t.Errorf("Get after the failure = %v, want ErrAuthFailed", err)
		}
		if s := bob.Session(); s.Err() == nil {
			t.Errorf("session %v still live after the failure", s)
		}
	})
}

// TestSASLOptional: a server with SASL that does not require it serves
// SASL and plain clients alike; a server without SASL makes a SASL client
// fail clearly.
func TestSASLOptional(t *testing.T) {
	srv := zktest.Start(t, zktest.Options{JAAS: zktest.DigestJAAS(map[string]string{"bob": "secret"})})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cfg := testConfig(t, srv.Addr(), "optional")
	cfg.SASL = digestSASL("bob", "secret")
	cfg.SASL.ACL = true
	bob := connect(t, cfg)
	if _, err := bob.Create(ctx, "/bob", nil, reg.Persistent); err != nil {
		t.Fatal(err)
	}
	plain := connect(t, testConfig(t, srv.Addr(), "plain"))
	if _, err := plain.Create(ctx, "/plain", nil, reg.Persistent); err != nil {
		t.Errorf("a plain client's Create: %v", err)
	}
	intruder := connect(t, testConfig(t, srv.Addr(), "optional"))
	if _, err := intruder.Set(ctx, "/bob", []byte("x"), reg.AnyVersion); !errors.Is(err, reg.ErrNoAuth) {
		t.Errorf("a plain client's Set on bob's node = %v, want ErrNoAuth", err)
	}

	t.Run("server without SASL", func(t *testing.T) {
		cfg := testConfig(t, server.Addr(), "nosasl")
		cfg.SASL = digestSASL("bob", "secret")
		_, err := zookeeper.Connect(ctx, cfg)
		if !errors.Is(err, zookeeper.ErrAuthFailed) || !strings.Contains(err.Error(), "no SASL configured") {
			t.Errorf("Connect = %v, want a final failure saying the server has no SASL", err)
		}
	})
}

// tamperConn flips a bit in the last byte of the n-th frame (1: the
// connect response) the server sends, as a man in the middle would.
type tamperConn struct {
	net.Conn
	n      int
	frame  int    // frames started so far
	hdr    []byte // the current frame's length, while incomplete
	remain int    // body bytes left in the current frame
}

func (c *tamperConn) Read(p []byte) (int, error) {
	k, err := c.Conn.Read(p)
	for i := 0; i < k; i++ {
		if c.remain == 0 {
			c.hdr = append(c.hdr, p[i])
			if len(c.hdr) == 4 {
				c.remain = int(binary.BigEndian.Uint32(c.hdr))
				c.hdr = c.hdr[:0]
				c.frame++
			}
			continue
		}
		c.remain--
		if c.remain == 0 && c.frame == c.n {
			p[i] ^= 0x01
		}
	}
	return k, err
}

// tamperingDialer tampers with the n-th frame of each connection.
func tamperingDialer(n int) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		var d net.Dialer
		c, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &tamperConn{Conn: c, n: n}, nil
	}
}

// TestSASLServerMustProveItself: a DIGEST-MD5 server whose rspauth (the
// third frame) does not prove it knows the password is refused, for good.
func TestSASLServerMustProveItself(t *testing.T) {
	srv := zktest.Start(t, zktest.Options{JAAS: zktest.DigestJAAS(map[string]string{"bob": "secret"}), RequireSASL: true})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cfg := testConfig(t, srv.Addr(), "mitm")
	cfg.SASL = digestSASL("bob", "secret")
	cfg.Dialer = tamperingDialer(3)
	_, err := zookeeper.Connect(ctx, cfg)
	if !errors.Is(err, zookeeper.ErrAuthFailed) || !strings.Contains(err.Error(), "rspauth does not prove") {
		t.Errorf("Connect = %v, want a final failure: the server's rspauth is wrong", err)
	}
}
