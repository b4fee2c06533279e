package hostile

import (
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/ejob-io/ejob/internal/testkit"
)

// connectDeadline is the registry client's wait for its first session with
// the default regCenter settings: maxSleepTimeMilliseconds (3000) x
// maxRetries (3), as upstream's init.
const connectDeadline = 9 * time.Second

// hangingRegistry listens on 127.0.0.1, accepts every connection and never
// reads from it nor answers: a registry address that hangs. It returns the
// address and the number of connections accepted so far.
func hangingRegistry(t *testing.T) (string, *atomic.Int32) {
	addr, accepted, _ := hangingRegistryAt(t)
	return addr, accepted
}

// hangingRegistryAt is hangingRegistry that also reports when it accepted
// its first connection (Unix nanoseconds, 0 before any).
func hangingRegistryAt(t *testing.T) (string, *atomic.Int32, *atomic.Int64) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var accepted atomic.Int32
	var first atomic.Int64
	var mu sync.Mutex
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			first.CompareAndSwap(0, time.Now().UnixNano())
			accepted.Add(1)
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		_ = l.Close()
		<-done
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
	})
	return l.Addr().String(), &accepted, &first
}

// registryConfig is e.config's text with serverLists set to addr.
func (e *env) registryConfig(addr string) string {
	return strings.Replace(e.config(""), "serverLists: "+zk.Addr(), "serverLists: "+addr, 1)
}

// TestHostileHangingRegistryEndsAtTheDeadline: with a registry address that
// accepts connections and never answers, `ejob run` and a CLI command
// (`ejob jobs`) must end within the connect deadline (9 s) + 1 s, with an
// error naming the address and what it did, not wait out go-zookeeper's
// handshake read (400 s with the default session timeout). The deadline is
// counted from the first connection the registry accepts, so the process's
// own start-up on a loaded machine is not charged to it.
func TestHostileHangingRegistryEndsAtTheDeadline(t *testing.T) {
	for _, cmd := range []string{"run", "jobs"} {
		t.Run(cmd, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			addr, _, first := hangingRegistryAt(t)
			cfg := e.write("ejob.yaml", e.registryConfig(addr))
			r := e.ejob(connectDeadline+30*time.Second, cmd, "-c", cfg)
			ended := time.Now()
			if first.Load() == 0 {
				t.Fatalf("ejob %s never connected to the registry:\n%s", cmd, r.stderr)
			}
			if took := ended.Sub(time.Unix(0, first.Load())); took > connectDeadline+time.Second {
				t.Errorf("ejob %s ended %v after its first connection, want at most the connect deadline %v + 1s", cmd, took, connectDeadline)
			}
			want := "no session with " + addr + " within 9s (maxSleepTimeMilliseconds x maxRetries): " + addr + " accepted the connection"
			if r.code != 1 || !strings.Contains(r.stderr, want) {
				t.Errorf("exit %d, stderr:\n%s\nwant exit 1 and %q", r.code, r.stderr, want)
			}
		})
	}
}

// TestHostileHangingRegistrySIGTERM: SIGTERM to `ejob run` or a CLI command
// (`ejob jobs`) while its registry address has accepted the connection and
// not answered must end it within 1 s, saying the connect was interrupted,
// in which phase and by what; SIGKILL must not be the only way out.
func TestHostileHangingRegistrySIGTERM(t *testing.T) {
	for _, cmd := range []string{"run", "jobs"} {
		t.Run(cmd, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			addr, accepted := hangingRegistry(t)
			cfg := e.write("ejob.yaml", e.registryConfig(addr))
			p := e.start(cmd, cmd, "-c", cfg)
			testkit.Eventually(t, 20*time.Second, "ejob to connect to the hanging registry", func() bool { return accepted.Load() > 0 })
			if !p.alive() {
				t.Fatalf("ejob %s exited before SIGTERM:\n%s", cmd, p.out.String())
			}
			sent := time.Now()
			if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			select {
			case <-p.exited:
				if took := time.Since(sent); took > time.Second {
					t.Errorf("ejob %s exited %v after SIGTERM, want within 1s", cmd, took)
				}
			case <-time.After(20 * time.Second):
				t.Fatalf("ejob %s still running 20s after SIGTERM", cmd)
			}
			// The listener accepts before the client's dial returns: the
			// phase is the dial's end or the handshake.
			want := regexp.MustCompile(`connecting to ` + regexp.QuoteMeta(addr) + ` interrupted after [^:]+: (dialing ` +
				regexp.QuoteMeta(addr) + `|` + regexp.QuoteMeta(addr) + ` accepted the connection) .*terminated`)
			if out := p.out.String(); !want.MatchString(out) {
				t.Errorf("output:\n%s\nwant it to match %s (the interruption, its phase and the signal)", out, want)
			}
		})
	}
}

// TestHostileRegistryNotZooKeeper: a registry address that is an HTTP or a
// TLS server makes `ejob run` fail at once with an error saying the
// address is not a ZooKeeper server and what it answered like, not as
// "authentication failed: frame of 1213486160 bytes" (the bytes "HTTP").
func TestHostileRegistryNotZooKeeper(t *testing.T) {
	httpSrv := httptest.NewUnstartedServer(http.NotFoundHandler())
	httpSrv.Config.ReadHeaderTimeout = 10 * time.Second // as ejob serve's
	httpSrv.Start()
	t.Cleanup(httpSrv.Close)
	tlsSrv := httptest.NewTLSServer(http.NotFoundHandler())
	t.Cleanup(tlsSrv.Close)
	for name, tc := range map[string]struct{ addr, like string }{
		"http": {httpSrv.Listener.Addr().String(), "an HTTP server"},
		"tls":  {tlsSrv.Listener.Addr().String(), "a TLS server"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			cfg := e.write("ejob.yaml", e.registryConfig(tc.addr))
			r := e.ejob(connectDeadline+30*time.Second, "run", "-c", cfg)
			want := tc.addr + " is not a ZooKeeper server: it answered like " + tc.like
			if r.code != 1 || !strings.Contains(r.stderr, want) {
				t.Errorf("exit %d, stderr:\n%s\nwant exit 1 and %q", r.code, r.stderr, want)
			}
			if r.took > connectDeadline {
				t.Errorf("ejob run took %v: a server that is not ZooKeeper fails it before the connect deadline", r.took)
			}
		})
	}
}
