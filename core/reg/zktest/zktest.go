package zktest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ejob-io/ejob/internal/testkit"
)

// DefaultTick is the tickTime tests use: sessions can then be as short as
// 2 x 200 ms, so expiry-driven tests stay fast.
const DefaultTick = 200 * time.Millisecond

// Options configures a server.
type Options struct {
	// Tick is ZooKeeper's tickTime (default DefaultTick). Session timeouts
	// are clamped to [2, 20] ticks.
	Tick time.Duration
	// Dir holds config, data and logs (default: a fresh temporary directory).
	Dir string
	// Script is the path of zk.sh (default: $EJOB_ZK_SCRIPT, else
	// scripts/zk.sh found by walking up to the module root).
	Script string
	// JAAS is the text of the server's JAAS file (its Server section, e.g.
	// DigestJAAS's); it turns SASL authentication on (standalone only).
	JAAS string
	// RequireSASL makes the server refuse clients that do not
	// authenticate with SASL (sessionRequireClientSASLAuth=true).
	RequireSASL bool
	// Krb5Conf is the Kerberos configuration file for a JAAS
	// Krb5LoginModule (KDC.Krb5Conf).
	Krb5Conf string
}

// DigestJAAS returns a JAAS Server section for SASL DIGEST-MD5 with the
// given users (name -> password).
func DigestJAAS(users map[string]string) string {
	var b strings.Builder
	b.WriteString("Server {\n  org.apache.zookeeper.server.auth.DigestLoginModule required")
	names := make([]string, 0, len(users))
	for u := range users {
		names = append(names, u)
	}
	sort.Strings(names)
	for _, u := range names {
		fmt.Fprintf(&b, "\n  user_%s=%q", u, users[u])
	}
	b.WriteString(";\n};\n")
	return b.String()
}

// Server is a running ZooKeeper (one node or an ensemble).
type Server struct {
	script   string
	dir      string
	tick     time.Duration
	ensemble bool
	ownsDir  bool

	mu   sync.Mutex
	addr string
}

// Start starts a standalone server for t and stops it when t ends. It fails
// t (never skips) when the server cannot be started.
func Start(t testing.TB, opts Options) *Server {
	t.Helper()
	if opts.Dir == "" {
		opts.Dir = t.TempDir()
	}
	s, err := launch(opts, false)
	if err != nil {
		t.Fatalf("zktest: %v", err)
	}
	t.Cleanup(func() { _ = s.Stop() })
	return s
}

// StartEnsemble starts a 3-node ensemble for t and stops it when t ends.
func StartEnsemble(t testing.TB, opts Options) *Server {
	t.Helper()
	if opts.Dir == "" {
		opts.Dir = t.TempDir()
	}
	s, err := launch(opts, true)
	if err != nil {
		t.Fatalf("zktest: %v", err)
	}
	t.Cleanup(func() { _ = s.Stop() })
	return s
}

// Launch starts a standalone server outside any test, for a TestMain that
// shares one server across the binary; Close it after m.Run.
func Launch(opts Options) (*Server, error) { return launch(opts, false) }

func launch(opts Options, ensemble bool) (*Server, error) {
	if opts.Tick <= 0 {
		opts.Tick = DefaultTick
	}
	script := opts.Script
	if script == "" {
		var err error
		if script, err = findScript(); err != nil {
			return nil, err
		}
	}
	s := &Server{script: script, dir: opts.Dir, tick: opts.Tick, ensemble: ensemble}
	if s.dir == "" {
		d, err := os.MkdirTemp("", "ejob-zk-")
		if err != nil {
			return nil, fmt.Errorf("temp dir: %w", err)
		}
		s.dir, s.ownsDir = d, true
	}
	cmd := "start"
	if ensemble {
		cmd = "ensemble"
	}
	args := []string{cmd, s.dir, "--tick", strconv.FormatInt(s.tick.Milliseconds(), 10)}
	if opts.JAAS != "" {
		p := filepath.Join(s.dir, "server.jaas")
		if err := os.WriteFile(p, []byte(opts.JAAS), 0o600); err != nil {
			return nil, fmt.Errorf("write JAAS file: %w", err)
		}
		args = append(args, "--jaas", p)
		if opts.RequireSASL {
			args = append(args, "--require-sasl")
		}
		if opts.Krb5Conf != "" {
			args = append(args, "--krb5-conf", opts.Krb5Conf)
		}
	}
	out, err := s.run(args...)
	if err != nil {
		if s.ownsDir {
			_ = os.RemoveAll(s.dir)
		}
		return nil, err
	}
	s.addr = out
	return s, nil
}

func findScript() (string, error) { return testkit.Script("zk.sh", "EJOB_ZK_SCRIPT") }

// run runs zk.sh and returns its trimmed stdout; failures carry stderr.
func (s *Server) run(args ...string) (string, error) { return testkit.RunScript(s.script, args...) }

// Addr returns the connect string ("127.0.0.1:PORT" or three of them).
func (s *Server) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addr
}

// Dir returns the server's directory (config, data, zk.log, pid).
func (s *Server) Dir() string { return s.dir }

// Tick returns the server's tickTime.
func (s *Server) Tick() time.Duration { return s.tick }

// Stop stops the server gracefully (sessions survive in its data, as on a
// real restart).
func (s *Server) Stop() error {
	_, err := s.run("stop", s.dir)
	return err
}

// Kill stops the server with SIGKILL.
func (s *Server) Kill() error {
	_, err := s.run("kill", s.dir)
	return err
}

// Restart stops the server if it runs and starts it again on the same
// port(s) and data directory.
func (s *Server) Restart() error {
	if err := s.Stop(); err != nil {
		return err
	}
	return s.StartAgain()
}

// StartAgain starts a stopped or killed server on the same port(s) and data.
func (s *Server) StartAgain() error {
	cmd := "start"
	if s.ensemble {
		cmd = "ensemble"
	}
	out, err := s.run(cmd, s.dir)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.addr = out
	s.mu.Unlock()
	return nil
}

// Close stops the server and removes its directory if Launch created it.
func (s *Server) Close() error {
	err := s.Stop()
	if s.ownsDir {
		err = errors.Join(err, os.RemoveAll(s.dir))
	}
	return err
}
