package zookeeper_test

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ejob-io/ejob/core/reg"
	"github.com/ejob-io/ejob/core/reg/recipe"
	"github.com/ejob-io/ejob/core/reg/zktest"
	"github.com/ejob-io/ejob/core/reg/zookeeper"
)

// TestConfigDefaults ports ZookeeperConfigurationTest.
func TestConfigDefaults(t *testing.T) {
	c := zookeeper.DefaultConfig("localhost:2181", "ns")
	if c.BaseSleepTimeMilliseconds != 1000 || c.MaxSleepTimeMilliseconds != 3000 || c.MaxRetries != 3 ||
		c.SessionTimeoutMilliseconds != 60000 || c.ConnectionTimeoutMilliseconds != 15000 || c.Digest != "" {
		t.Fatalf("defaults %+v", c)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	// Zero durations mean the defaults, as upstream.
	if err := (zookeeper.Config{ServerLists: "a:1,b:2"}).Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestConfigValidate(t *testing.T) {
	base := zookeeper.DefaultConfig("127.0.0.1:2181", "ns")
	cases := map[string]struct {
		mut   func(*zookeeper.Config)
		field string
	}{
		"no servers":     {func(c *zookeeper.Config) { c.ServerLists = " , " }, "serverLists"},
		"no port":        {func(c *zookeeper.Config) { c.ServerLists = "host" }, "serverLists"},
		"bad port":       {func(c *zookeeper.Config) { c.ServerLists = "host:99999" }, "serverLists"},
		"slash ns":       {func(c *zookeeper.Config) { c.Namespace = "/ns" }, "namespace"},
		"bad ns":         {func(c *zookeeper.Config) { c.Namespace = "a//b" }, "namespace"},
		"neg retries":    {func(c *zookeeper.Config) { c.MaxRetries = -1 }, "maxRetries"},
		"neg session":    {func(c *zookeeper.Config) { c.SessionTimeoutMilliseconds = -5 }, "sessionTimeoutMilliseconds"},
		"sleep inverted": {func(c *zookeeper.Config) { c.MaxSleepTimeMilliseconds = 10 }, "maxSleepTimeMilliseconds"},
		"digest":         {func(c *zookeeper.Config) { c.Digest = "nopassword" }, "digest"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := base
			tc.mut(&c)
			err := c.Validate()
			if !errors.Is(err, reg.ErrInvalidArgument) || !strings.Contains(err.Error(), tc.field) {
				t.Fatalf("Validate() = %v, want an error naming %s", err, tc.field)
			}
			if _, err := zookeeper.Connect(context.Background(), c); !errors.Is(err, reg.ErrInvalidArgument) {
				t.Fatalf("Connect accepted an invalid config: %v", err)
			}
		})
	}
}

// TestInitFailure ports ZookeeperRegistryCenterInitFailureTest: no server,
// an error after maxSleep x maxRetries.
func TestInitFailure(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	cfg := testConfig(t, addr, "ns")
	cfg.MaxRetries, cfg.MaxSleepTimeMilliseconds = 2, 200
	start := time.Now()
	_, err = zookeeper.Connect(context.Background(), cfg)
	if err == nil || !strings.Contains(err.Error(), addr) {
		t.Fatalf("Connect to nothing = %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("init failure took %v", d)
	}
}

// TestDigest ports ZookeeperRegistryCenterForAuthTest.
func TestDigest(t *testing.T) {
	ctx := context.Background()
	ns := fmt.Sprintf("auth-%d", time.Now().UnixNano())
	cfg := testConfig(t, server.Addr(), ns)
	cfg.Digest = "digest:password"
	a := connect(t, cfg)
	if _, err := a.Create(ctx, "/test/deep/nested", []byte("deepNested"), reg.Persistent, reg.WithParents()); err != nil {
		t.Fatal(err)
	}
	// assertInitWithDigestSuccess: another client with the digest reads it.
	b := connect(t, cfg)
	if d, _, err := b.Get(ctx, "/test/deep/nested"); err != nil || string(d) != "deepNested" {
		t.Fatalf("get with digest: %q %v", d, err)
	}
	// assertInitWithDigestFailure: without it, NoAuth.
	c := connect(t, testConfig(t, server.Addr(), ns))
	if _, _, err := c.Get(ctx, "/test/deep/nested"); !errors.Is(err, reg.ErrNoAuth) {
		t.Fatalf("get without digest: %v", err)
	}
	if _, err := c.Create(ctx, "/test/x", nil, reg.Persistent); !errors.Is(err, reg.ErrNoAuth) {
		t.Fatalf("create without digest: %v", err)
	}
	// MultiRead: refused per op without the digest, served with it, also
	// right after a reconnect (ejob's multiRead waits until go-zookeeper
	// has re-sent the digest on the new connection).
	if res, err := c.MultiRead(ctx, reg.GetOp("/test/deep/nested"), reg.ChildrenOp("/test")); err != nil || !errors.Is(res[0].Err, reg.ErrNoAuth) || !errors.Is(res[1].Err, reg.ErrNoAuth) {
		t.Fatalf("MultiRead without digest = %+v, %v", res, err)
	}
	stop := make(chan struct{})
	readErr := make(chan error, 1)
	reads := 0
	go func() {
		defer close(readErr)
		for {
			select {
			case <-stop:
				return
			default:
			}
			res, err := b.MultiRead(ctx, reg.GetOp("/test/deep/nested"))
			if err == nil {
				err = res[0].Err
			}
			if err != nil {
				readErr <- err
				return
			}
			reads++
		}
	}()
	events := b.WatchConnection(ctx)
	expectState(t, events, reg.StateConnected)
	for range 5 {
		b.DropConnection()
		expectState(t, events, reg.StateSuspended)
		expectState(t, events, reg.StateReconnected)
		// The next drop may come while go-zookeeper re-sends the digest
		// (see TestDigestDropDuringAuthResend).
	}
	if _, _, err := b.Get(ctx, "/test/deep/nested"); err != nil {
		t.Fatal(err)
	}
	close(stop)
	if err := <-readErr; err != nil {
		t.Fatalf("MultiRead with digest across reconnects: %v", err)
	}
	if reads == 0 {
		t.Fatal("no MultiRead completed")
	}
}

// authDropConn is a connection that fails like a dropped one the moment the
// client writes a setAuth frame (opcode 100), once armed.
type authDropConn struct {
	net.Conn
	armed *atomic.Bool
	hits  *atomic.Int32
}

func (c authDropConn) Write(p []byte) (int, error) {
	if len(p) >= 12 && binary.BigEndian.Uint32(p[8:]) == 100 && c.armed.CompareAndSwap(true, false) {
		c.hits.Add(1)
		_ = c.Conn.Close()
		return 0, net.ErrClosed
	}
	return c.Conn.Write(p)
}

// TestDigestDropDuringAuthResend: the connection dropping while
// go-zookeeper re-sends the digest on a reconnect (its resendZkAuth) must
// not wedge the client: it reconnects within the session, as after any
// other drop. (go-zookeeper v1.0.4 hangs its loop there for good when the
// setAuth write fails: go-zookeeper/zk#163.)
func TestDigestDropDuringAuthResend(t *testing.T) {
	ctx := context.Background()
	var armed atomic.Bool
	var hits atomic.Int32
	cfg := testConfig(t, server.Addr(), fmt.Sprintf("authdrop-%d", time.Now().UnixNano()))
	cfg.Digest = "digest:password"
	cfg.Dialer = func(ctx context.Context, network, addr string) (net.Conn, error) {
		var d net.Dialer
		conn, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return authDropConn{Conn: conn, armed: &armed, hits: &hits}, nil
	}
	c := connect(t, cfg)
	if _, err := c.Create(ctx, "/guarded", []byte("v"), reg.Persistent); err != nil {
		t.Fatal(err)
	}
	events := c.WatchConnection(ctx)
	expectState(t, events, reg.StateConnected)
	for i := range 3 {
		armed.Store(true)
		c.DropConnection()
		// Reconnected comes with the connect response, before go-zookeeper
		// re-sends the digest; that write fails, so the client is
		// suspended again, and must reconnect once more.
		for _, want := range []reg.ConnState{reg.StateSuspended, reg.StateReconnected, reg.StateSuspended, reg.StateReconnected} {
			timer := time.NewTimer(20 * time.Second)
			select {
			case ev := <-events:
				if ev.State != want {
					t.Fatalf("drop %d: %v, want %v (setAuth writes failed: %d)", i, ev.State, want, hits.Load())
				}
			case <-timer.C:
				t.Fatalf("drop %d: no %v (setAuth writes failed: %d)", i, want, hits.Load())
			}
			timer.Stop()
		}
		if got := hits.Load(); got != int32(i+1) {
			t.Fatalf("drop %d: %d setAuth writes failed, want %d", i, got, i+1)
		}
		// The digest is in force on the new connection.
		if d, _, err := c.Get(ctx, "/guarded"); err != nil || string(d) != "v" {
			t.Fatalf("drop %d: get = %q, %v", i, d, err)
		}
	}
}

// TestServerRestart: a server restart within the session timeout keeps the
// session (Suspended, then Reconnected) and its ephemeral nodes.
func TestServerRestart(t *testing.T) {
	// A 1 s tick allows a 20 s session: the restart (a JVM start, several
	// seconds on a loaded 2-core machine) must stay within it.
	srv := zktest.Start(t, zktest.Options{Tick: time.Second})
	ctx := context.Background()
	cfg := testConfig(t, srv.Addr(), "restart")
	cfg.SessionTimeoutMilliseconds = 20000 // the most 20 ticks allow
	c := connect(t, cfg)
	events := c.WatchConnection(ctx)
	expectState(t, events, reg.StateConnected)
	sess := c.Session()
	if _, err := c.Create(ctx, "/eph", nil, reg.Ephemeral); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	expectState(t, events, reg.StateSuspended)
	ev := expectState(t, events, reg.StateReconnected)
	t.Logf("restart to reconnect: %v", time.Since(start))
	if ev.Session != sess || sess.Err() != nil {
		t.Fatal("session changed over a short restart")
	}
	if _, ok, err := c.Exists(ctx, "/eph"); !ok || err != nil {
		t.Fatalf("ephemeral after restart: %v %v", ok, err)
	}
	// Operations issued while the server is down wait for it (bounded).
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	expectState(t, events, reg.StateSuspended)
	done := make(chan error, 1)
	go func() {
		_, err := c.Set(ctx, "/eph", []byte("x"), reg.AnyVersion)
		done <- err
	}()
	if err := srv.StartAgain(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("set across a restart: %v", err)
	}
}

// TestLostWhileDisconnected: disconnected longer than the session timeout,
// the client declares the session lost (as Curator does) without waiting for
// the server; when it comes back the client reports a new session.
func TestLostWhileDisconnected(t *testing.T) {
	srv := zktest.Start(t, zktest.Options{})
	ctx := context.Background()
	cfg := testConfig(t, srv.Addr(), "lost")
	cfg.SessionTimeoutMilliseconds = 1000
	c := connect(t, cfg)
	events := c.WatchConnection(ctx)
	expectState(t, events, reg.StateConnected)
	sess := c.Session()
	if err := srv.Kill(); err != nil {
		t.Fatal(err)
	}
	expectState(t, events, reg.StateSuspended)
	expectState(t, events, reg.StateLost)
	if !errors.Is(sess.Err(), reg.ErrSessionLost) {
		t.Fatalf("session error %v", sess.Err())
	}
	if err := srv.StartAgain(); err != nil {
		t.Fatal(err)
	}
	ev := expectState(t, events, reg.StateNewSession)
	if ev.Session == sess || ev.Session.Err() != nil || c.Session() != ev.Session {
		t.Fatal("no usable new session")
	}
	if _, err := c.Create(ctx, "/eph", nil, reg.Ephemeral); err != nil {
		t.Fatal(err)
	}
}

// TestEnsemble runs the basics on a 3-node ensemble.
func TestEnsemble(t *testing.T) {
	srv := zktest.StartEnsemble(t, zktest.Options{})
	if n := len(strings.Split(srv.Addr(), ",")); n != 3 {
		t.Fatalf("ensemble address %q", srv.Addr())
	}
	ctx := context.Background()
	a := connect(t, testConfig(t, srv.Addr(), "ens"))
	b := connect(t, testConfig(t, srv.Addr(), "ens"))
	if _, err := a.Create(ctx, "/x", []byte("1"), reg.Ephemeral); err != nil {
		t.Fatal(err)
	}
	if ok, err := recipe.Elect(ctx, b, "/latch", "/leader", []byte("b")); err != nil || !ok {
		t.Fatalf("elect: %v %v", ok, err)
	}
	if err := a.Expire(ctx); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, ok, err := b.Exists(ctx, "/x")
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("ephemeral survived expiry on the ensemble")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func expectState(t *testing.T, ch <-chan reg.ConnEvent, want reg.ConnState) reg.ConnEvent {
	t.Helper()
	timer := time.NewTimer(20 * time.Second)
	defer timer.Stop()
	for {
		select {
		case ev, ok := <-ch:
			if !ok {
				t.Fatalf("events closed waiting for %v", want)
			}
			if ev.State == want {
				return ev
			}
			t.Logf("connection state %v (waiting for %v)", ev.State, want)
		case <-timer.C:
			t.Fatalf("no %v", want)
		}
	}
}

// TestCuratorLatchInterop runs Apache Curator's own LeaderLatch (Debian's
// libcurator-recipes-java, installed by zk.sh) against recipe.Latch on the
// same latch path: each waits for the other and takes over on release.
func TestCuratorLatchInterop(t *testing.T) {
	java := compileCurator(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ns := fmt.Sprintf("interop-%d", time.Now().UnixNano())
	const path = "/job/leader/election/latch"
	g := connect(t, testConfig(t, server.Addr(), ns))

	// 1. Curator leads; the Go latch queues behind it and takes over.
	j := java.start(t, ns, path, "java-1")
	j.expect(t, "STARTED")
	j.expect(t, "LEADER")
	gl := recipe.NewLatch(g, path, "go-1")
	acquired := make(chan error, 1)
	go func() { acquired <- gl.Acquire(ctx) }()
	waitChildren(t, g, path, 2)
	names, err := g.Children(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	recipe.SortLatchNodes(names)
	nodeRE := regexp.MustCompile(`^_c_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}-latch-\d{10}$`)
	for _, n := range names {
		if !nodeRE.MatchString(n) {
			t.Fatalf("node name %q", n)
		}
	}
	if d, _, err := g.Get(ctx, path+"/"+names[0]); err != nil || string(d) != "java-1" {
		t.Fatalf("Curator's node data %q %v", d, err)
	}
	if d, _, err := g.Get(ctx, path+"/"+names[1]); err != nil || string(d) != "go-1" {
		t.Fatalf("our node data %q %v", d, err)
	}
	if gl.IsOwner() {
		t.Fatal("Go owns the latch while Curator leads")
	}
	j.send(t, "release")
	j.expect(t, "RELEASED")
	select {
	case err := <-acquired:
		if err != nil {
			t.Fatal(err)
		}
	case <-ctx.Done():
		t.Fatal("Go latch never took over from Curator")
	}

	// 2. Go leads; Curator queues behind it and takes over on release.
	j2 := java.start(t, ns, path, "java-2")
	j2.expect(t, "STARTED")
	waitChildren(t, g, path, 2)
	if j2.saw("LEADER") {
		t.Fatal("Curator leads while Go holds the latch")
	}
	if err := gl.Release(ctx); err != nil {
		t.Fatal(err)
	}
	j2.expect(t, "LEADER")
}

func waitChildren(t *testing.T, c reg.Client, path string, n int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		names, err := c.Children(context.Background(), path)
		if err == nil && len(names) == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s has %v, want %d children (%v)", path, names, n, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

type curator struct {
	classpath string
	dir       string
}

func compileCurator(t *testing.T) curator {
	t.Helper()
	script := os.Getenv("EJOB_ZK_SCRIPT")
	if script == "" {
		script = filepath.Join("..", "..", "..", "scripts", "zk.sh")
	}
	out, err := exec.Command("bash", script, "curator-classpath").Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("zk.sh curator-classpath: %v\n%s", err, ee.Stderr)
		}
		t.Fatal(err)
	}
	cp := strings.TrimSpace(string(out))
	dir := t.TempDir()
	cmd := exec.Command("javac", "-cp", cp, "-d", dir, filepath.Join("testdata", "CuratorLatch.java"))
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("javac: %v\n%s", err, b)
	}
	return curator{classpath: cp + ":" + dir, dir: dir}
}

type javaProc struct {
	stdin io.WriteCloser
	lines chan string
	seen  []string
}

func (c curator) start(t *testing.T, ns, path, id string) *javaProc {
	t.Helper()
	cmd := exec.Command("java", "-Xshare:auto", "-XX:TieredStopAtLevel=1",
		"-Dorg.slf4j.simpleLogger.defaultLogLevel=warn", "-cp", c.classpath,
		"CuratorLatch", server.Addr(), ns, path, id)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = testWriter{t}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &javaProc{stdin: stdin, lines: make(chan string, 16)}
	go func() {
		defer close(p.lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
	}()
	t.Cleanup(func() {
		_ = stdin.Close() // EOF: the program closes its client and exits
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	return p
}

func (p *javaProc) expect(t *testing.T, want string) {
	t.Helper()
	if p.saw(want) {
		return
	}
	timer := time.NewTimer(30 * time.Second)
	defer timer.Stop()
	for {
		select {
		case l, ok := <-p.lines:
			if !ok {
				t.Fatalf("Curator program exited before %q (saw %v)", want, p.seen)
			}
			p.seen = append(p.seen, l)
			if l == want {
				return
			}
		case <-timer.C:
			t.Fatalf("Curator program did not print %q (saw %v)", want, p.seen)
		}
	}
}

// saw drains what is already printed and reports whether want was among it.
func (p *javaProc) saw(want string) bool {
	for {
		select {
		case l, ok := <-p.lines:
			if !ok {
				return false
			}
			p.seen = append(p.seen, l)
			continue
		default:
		}
		break
	}
	for _, l := range p.seen {
		if l == want {
			return true
		}
	}
	return false
}

func (p *javaProc) send(t *testing.T, line string) {
	t.Helper()
	if _, err := io.WriteString(p.stdin, line+"\n"); err != nil {
		t.Fatal(err)
	}
}
