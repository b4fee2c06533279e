package control_test

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ejob-io/ejob/host/control"
	"github.com/ejob-io/ejob/internal/proctest"
)

// serveOK serves "ok" on l until the test ends.
func serveOK(t *testing.T, l *control.Listener) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- control.Serve(ctx, l, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") }))
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
}

// get asks the host on path for "/", as the commands do.
func get(t *testing.T, cfg, path string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	hc, err := control.Dial(ctx, cfg, []string{path})
	if err != nil {
		return "", err
	}
	defer hc.CloseIdleConnections()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://ejob/", nil)
	resp, err := hc.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

// TestSocketIsOwnerOnly: the socket is created mode 0600 in a directory
// created 0700, and the commands reach the host through it.
func TestSocketIsOwnerOnly(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	path := filepath.Join(dir, "h.sock")
	l, err := control.Listen("ejob.yaml", path, nil)
	if err != nil {
		t.Fatal(err)
	}
	serveOK(t, l)
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Type() != fs.ModeSocket || fi.Mode().Perm() != 0o600 {
		t.Errorf("socket mode %v, want a socket with 0600", fi.Mode())
	}
	di, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if di.Mode().Perm() != 0o700 {
		t.Errorf("directory mode %v, want 0700", di.Mode().Perm())
	}
	if got, err := get(t, "ejob.yaml", path); err != nil || got != "ok" {
		t.Errorf("request through the socket: %q, %v", got, err)
	}
}

// TestDirectoryOthersMayWriteIsRefused: a socket in a directory that
// group or others may write (another user could replace it) is refused
// before anything is created.
func TestDirectoryOthersMayWriteIsRefused(t *testing.T) {
	for _, mode := range []os.FileMode{0o777 | os.ModeSticky, 0o770, 0o702} {
		dir := t.TempDir()
		if err := os.Chmod(dir, mode); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, "h.sock")
		_, err := control.Listen("ejob.yaml", path, nil)
		if !errors.Is(err, control.ErrUnsafePath) || !strings.Contains(err.Error(), "writable by other users") {
			t.Errorf("directory mode %v: %v; want ErrUnsafePath saying it is writable by other users", mode, err)
		}
		if _, err := os.Lstat(path); err == nil {
			t.Errorf("directory mode %v: the socket was created", mode)
		}
	}
}

// TestSecondHostIsRefused: while a host holds a file's socket, a second
// one on the same path is refused, naming the first one's pid; once the
// first has stopped, a host starts there again.
func TestSecondHostIsRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "h.sock")
	l, err := control.Listen("a.yaml", path, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = control.Listen("a.yaml", path, nil)
	if !errors.Is(err, control.ErrHostRunning) || !strings.Contains(err.Error(), "a.yaml") || !strings.Contains(err.Error(), "pid ") {
		t.Errorf("second Listen: %v; want ErrHostRunning naming the file and the pid", err)
	}
	l.Close()
	if _, err := os.Lstat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("socket after Close: %v; want it removed", err)
	}
	l2, err := control.Listen("a.yaml", path, nil)
	if err != nil {
		t.Fatalf("Listen after the first host stopped: %v", err)
	}
	l2.Close()
}

// TestStaleSocketIsReplaced: a socket left behind by a host killed with
// SIGKILL (its lock died with it) tells the commands that no host runs,
// and the next host replaces it.
func TestStaleSocketIsReplaced(t *testing.T) {
	path := filepath.Join(t.TempDir(), "h.sock")
	// A socket file nobody serves, as a killed host leaves it.
	ul, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	ul.SetUnlinkOnClose(false)
	ul.Close()
	if _, err := os.Lstat(path); err != nil {
		t.Fatalf("the stale socket is not there: %v", err)
	}
	_, err = get(t, "a.yaml", path)
	if !errors.Is(err, control.ErrNoHost) || !strings.Contains(err.Error(), "ejob run -c a.yaml") {
		t.Errorf("request to a stale socket: %v; want ErrNoHost saying how to start a host", err)
	}
	var logs strings.Builder
	l, err := control.Listen("a.yaml", path, hclog.New(&hclog.LoggerOptions{Output: &logs}))
	if err != nil {
		t.Fatalf("Listen over a stale socket: %v", err)
	}
	serveOK(t, l)
	if got, err := get(t, "a.yaml", path); err != nil || got != "ok" {
		t.Errorf("request after the stale socket was replaced: %q, %v", got, err)
	}
	if !strings.Contains(logs.String(), "replaced the control socket") {
		t.Errorf("the replacement was not logged: %s", logs.String())
	}
}

// TestNoHostSaysHowToStartOne: with no socket at all the error says which
// file and how to start its host.
func TestNoHostSaysHowToStartOne(t *testing.T) {
	path := filepath.Join(t.TempDir(), "h.sock")
	_, err := get(t, "conf/x.yaml", path)
	if !errors.Is(err, control.ErrNoHost) || !strings.Contains(err.Error(), "`ejob run -c conf/x.yaml`") || !strings.Contains(err.Error(), path) {
		t.Errorf("no host: %v", err)
	}
}

// TestNotASocketIsRefused: a regular file at the socket's path is not
// removed.
func TestNotASocketIsRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "h.sock")
	if err := os.WriteFile(path, []byte("data"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := control.Listen("a.yaml", path, nil); !errors.Is(err, control.ErrUnsafePath) {
		t.Errorf("Listen over a regular file: %v; want ErrUnsafePath", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "data" {
		t.Error("the regular file was touched")
	}
}

// TestOtherUserIsRefused: a connection whose peer (SO_PEERCRED) is not
// the host's user is closed unanswered and logged. The test's process is
// the only user at hand, so the host is told to admit another uid.
func TestOtherUserIsRefused(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the peer's user id is read with SO_PEERCRED, on Linux")
	}
	path := filepath.Join(t.TempDir(), "h.sock")
	var logs proctest.Buffer
	l, err := control.ListenAs("a.yaml", path, os.Getuid()+1, hclog.New(&hclog.LoggerOptions{Output: &logs}))
	if err != nil {
		t.Fatal(err)
	}
	serveOK(t, l)
	if got, err := get(t, "a.yaml", path); err == nil {
		t.Errorf("a peer of another user got an answer: %q", got)
	}
	if !strings.Contains(logs.String(), "refused a connection of another user") {
		t.Errorf("the refusal was not logged: %s", logs.String())
	}
}

// TestSocketPath: the host and the commands derive the same short path
// from the same file however it is named (relative, absolute, through a
// symbolic link); different files get different paths; a setting wins.
func TestSocketPath(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "standalone.yaml")
	if err := os.WriteFile(cfg, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.yaml")
	if err := os.Symlink(cfg, link); err != nil {
		t.Fatal(err)
	}
	env := func(k string) string { return map[string]string{"XDG_RUNTIME_DIR": "/run/user/1000"}[k] }
	want, err := control.SocketPath(cfg, "", env)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(want, "/run/user/1000/ejob/standalone-") || !strings.HasSuffix(want, ".sock") {
		t.Errorf("default path %s, want /run/user/1000/ejob/standalone-HASH.sock", want)
	}
	t.Chdir(dir)
	for _, name := range []string{"standalone.yaml", "./standalone.yaml", link} {
		if got, _ := control.SocketPath(name, "", env); got != want {
			t.Errorf("SocketPath(%s) = %s, want %s", name, got, want)
		}
	}
	if other, _ := control.SocketPath(filepath.Join(dir, "other.yaml"), "", env); other == want {
		t.Error("two files share a socket")
	}
	noXDG := func(k string) string { return map[string]string{"TMPDIR": "/var/tmp"}[k] }
	if got, _ := control.SocketPath(cfg, "", noXDG); !strings.HasPrefix(got, "/var/tmp/ejob-") {
		t.Errorf("without XDG_RUNTIME_DIR: %s, want under $TMPDIR/ejob-UID", got)
	}
	if got, _ := control.SocketPath(cfg, "/run/ejob/a.sock", env); got != "/run/ejob/a.sock" {
		t.Errorf("with a setting: %s", got)
	}
	long := "/" + strings.Repeat("d", 120) + "/a.sock"
	if _, err := control.SocketPath(cfg, long, env); !errors.Is(err, control.ErrUnsafePath) || !strings.Contains(err.Error(), "at most 107") {
		t.Errorf("a 128-byte path: %v; want ErrUnsafePath naming the limit", err)
	}
}

// TestCommandsFindAHostStartedWithAnotherEnvironment: a host started
// without XDG_RUNTIME_DIR (by cron, sudo, a system service) listens under
// $TMPDIR; the commands, run where XDG_RUNTIME_DIR is set, still find it.
func TestCommandsFindAHostStartedWithAnotherEnvironment(t *testing.T) {
	xdg, tmp := t.TempDir(), t.TempDir()
	cfg := filepath.Join(t.TempDir(), "a.yaml")
	hostEnv := func(k string) string { return map[string]string{"TMPDIR": tmp}[k] }
	cliEnv := func(k string) string { return map[string]string{"TMPDIR": tmp, "XDG_RUNTIME_DIR": xdg}[k] }
	path, err := control.SocketPath(cfg, "", hostEnv)
	if err != nil {
		t.Fatal(err)
	}
	l, err := control.Listen(cfg, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	serveOK(t, l)
	paths, err := control.Candidates(cfg, "", cliEnv)
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) != 3 || !strings.HasPrefix(paths[0], xdg) || paths[1] != path {
		t.Fatalf("Candidates = %v, want the XDG path, then %s, then /tmp's", paths, path)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	hc, err := control.Dial(ctx, cfg, paths)
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	resp, err := hc.Get("http://ejob/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if _, err := control.Dial(ctx, cfg, paths[:1]); !errors.Is(err, control.ErrNoHost) {
		t.Errorf("Dial of the XDG path alone: %v; want ErrNoHost", err)
	}
}
