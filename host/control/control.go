package control

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
)

// Sentinel errors.
var (
	// ErrNoHost: no host is running on the file (no socket, or a socket
	// nobody listens on).
	ErrNoHost = errors.New("no ejob host is running")
	// ErrHostRunning: another host holds the file's control socket.
	ErrHostRunning = errors.New("another ejob host is running")
	// ErrUnsafePath: the socket's directory is not the user's alone, the
	// path is not a socket, or it is too long.
	ErrUnsafePath = errors.New("unsafe control socket path")
)

// MaxPathLen is the longest Unix socket path Linux accepts (sun_path
// holds 108 bytes with the terminating NUL).
const MaxPathLen = 107

// Bounds of the server.
const (
	// maxConns is how many connections are served at once; further ones
	// wait in the kernel's backlog.
	maxConns = 32
	// readHeaderTimeout, readTimeout, writeTimeout and idleTimeout bound
	// each request's phases and an idle connection.
	readHeaderTimeout = 5 * time.Second
	readTimeout       = 40 * time.Second
	writeTimeout      = 90 * time.Second
	idleTimeout       = 2 * time.Minute
	maxHeaderBytes    = 64 << 10
	// clientTimeout bounds each request of the commands.
	clientTimeout = 2 * time.Minute
)

// SocketPath is the control socket of the host that runs configFile:
// setting (ejob.controlSocket, absolute or relative to the working
// directory) when it is not empty, else the default of the package doc.
// getenv nil means os.Getenv.
func SocketPath(configFile, setting string, getenv func(string) string) (string, error) {
	paths, err := socketPaths(configFile, setting, getenv)
	if err != nil {
		return "", err
	}
	return paths[0], checkLen(paths[0], "the default path (set ejob.controlSocket to a shorter one)")
}

// Candidates are the paths where the commands look for the control socket
// of the host of configFile: SocketPath's, then (without a setting) the
// same name in the other default directories, for a host started with
// another environment (without XDG_RUNTIME_DIR or TMPDIR: by cron, sudo,
// a system service).
func Candidates(configFile, setting string, getenv func(string) string) ([]string, error) {
	paths, err := socketPaths(configFile, setting, getenv)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, p := range paths {
		if len(p) <= MaxPathLen {
			out = append(out, p)
		}
	}
	if len(out) == 0 {
		return nil, checkLen(paths[0], "the default path (set ejob.controlSocket to a shorter one)")
	}
	return out, nil
}

// socketPaths is setting, or the default name in each default directory,
// the host's first.
func socketPaths(configFile, setting string, getenv func(string) string) ([]string, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	if setting != "" {
		p, err := filepath.Abs(setting)
		if err != nil {
			return nil, fmt.Errorf("ejob.controlSocket %q: %w", setting, err)
		}
		return []string{p}, checkLen(p, "ejob.controlSocket")
	}
	abs, err := filepath.Abs(configFile)
	if err != nil {
		return nil, fmt.Errorf("control socket of %s: %w", configFile, err)
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		abs = real
	}
	sum := sha256.Sum256([]byte(abs))
	base := strings.TrimSuffix(filepath.Base(abs), filepath.Ext(abs))
	if len(base) > 24 {
		base = base[:24]
	}
	name := base + "-" + hex.EncodeToString(sum[:8]) + ".sock"
	var out []string
	for _, d := range defaultDirs(getenv) {
		if p := filepath.Join(d, name); !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out, nil
}

// defaultDirs are $XDG_RUNTIME_DIR/ejob, $TMPDIR/ejob-UID and
// /tmp/ejob-UID, those that apply, the host's first.
func defaultDirs(getenv func(string) string) []string {
	var dirs []string
	if d := getenv("XDG_RUNTIME_DIR"); filepath.IsAbs(d) {
		dirs = append(dirs, filepath.Join(d, "ejob"))
	}
	user := "ejob-" + strconv.Itoa(os.Getuid())
	if tmp := getenv("TMPDIR"); filepath.IsAbs(tmp) {
		dirs = append(dirs, filepath.Join(tmp, user))
	}
	return append(dirs, filepath.Join("/tmp", user))
}

func checkLen(p, what string) error {
	if len(p) > MaxPathLen {
		return fmt.Errorf("control socket %s: %d bytes, a Unix socket path has at most %d: %s: %w", p, len(p), MaxPathLen, what, ErrUnsafePath)
	}
	return nil
}

// Listener is a host's control socket, listening. Accept returns only
// connections whose peer is the host's user.
type Listener struct {
	net.Listener
	path  string
	lock  *os.File
	log   hclog.Logger
	uid   int
	slots chan struct{}
	once  sync.Once
}

// Listen takes the control socket at path for the host of configFile
// (named in messages): it creates its directory (0700) if missing and
// refuses one that another user may write (ErrUnsafePath), takes the lock
// file path+".lock" or fails with ErrHostRunning (naming the pid that
// holds it), replaces a socket left by a host that is gone, and listens
// with mode 0600.
func Listen(configFile, path string, log hclog.Logger) (*Listener, error) {
	return listen(configFile, path, os.Getuid(), log)
}

// listen is Listen admitting peers of user id uid.
func listen(configFile, path string, uid int, log hclog.Logger) (*Listener, error) {
	if log == nil {
		log = hclog.NewNullLogger()
	}
	if err := checkLen(path, "ejob.controlSocket"); err != nil {
		return nil, err
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("control socket directory: %w", err)
	}
	if err := checkDir(dir); err != nil {
		return nil, err
	}
	lock, err := takeLock(configFile, path+".lock")
	if err != nil {
		return nil, err
	}
	l, err := listenSocket(path, log)
	if err != nil {
		lock.Close()
		return nil, err
	}
	return &Listener{Listener: l, path: path, lock: lock, log: log, uid: uid, slots: make(chan struct{}, maxConns)}, nil
}

// checkDir refuses a directory that is not the user's (or root's) or
// that group or others may write: another user could then replace the
// socket.
func checkDir(dir string) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("control socket directory: %w", err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("control socket directory %s is not a directory (a symbolic link is refused): %w", dir, ErrUnsafePath)
	}
	if uid, ok := owner(fi); ok && uid != os.Getuid() && uid != 0 {
		return fmt.Errorf("control socket directory %s belongs to user id %d, not to this user (%d): %w", dir, uid, os.Getuid(), ErrUnsafePath)
	}
	if fi.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("control socket directory %s is writable by other users (mode %04o): choose a directory only its owner may write: %w",
			dir, fi.Mode().Perm(), ErrUnsafePath)
	}
	return nil
}

// takeLock opens and locks (flock, exclusive, without waiting) the lock
// file p and writes this process's pid in it. A lock file that was
// replaced between open and lock (a host removing it as it exits) is
// opened again.
func takeLock(configFile, p string) (*os.File, error) {
	for range 5 {
		f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			return nil, fmt.Errorf("control socket lock: %w", err)
		}
		if err := tryLock(f); err != nil {
			pid, _ := os.ReadFile(p)
			f.Close()
			if errors.Is(err, errLocked) {
				return nil, fmt.Errorf("%w on %s (pid %s, control socket %s): stop it first, or give this host a config file of its own",
					ErrHostRunning, configFile, strings.TrimSpace(string(pid)), strings.TrimSuffix(p, ".lock"))
			}
			return nil, fmt.Errorf("control socket lock %s: %w", p, err)
		}
		held, err1 := f.Stat()
		now, err2 := os.Stat(p)
		if err1 == nil && err2 == nil && os.SameFile(held, now) {
			if err := f.Truncate(0); err == nil {
				_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
			}
			return f, nil
		}
		f.Close()
	}
	return nil, fmt.Errorf("control socket lock %s: replaced while being taken, again and again", p)
}

// listenSocket listens on path (mode 0600), removing a socket there
// first: the caller holds the lock, so no host serves it.
func listenSocket(path string, log hclog.Logger) (net.Listener, error) {
	fi, err := os.Lstat(path)
	switch {
	case err == nil && fi.Mode().Type() != fs.ModeSocket:
		return nil, fmt.Errorf("control socket %s exists and is not a socket: %w", path, ErrUnsafePath)
	case err == nil:
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("remove the stale control socket: %w", err)
		}
		log.Info("replaced the control socket of a host that ended without removing it", "socket", path)
	case !errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("control socket: %w", err)
	}
	l, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("control socket: %w", err)
	}
	// The directory admits no other user's writes, and Accept checks each
	// peer: the moment between bind and chmod lets no one else in.
	if err := os.Chmod(path, 0o600); err != nil {
		l.Close()
		return nil, fmt.Errorf("control socket: %w", err)
	}
	return l, nil
}

// Path is the socket's path.
func (l *Listener) Path() string { return l.path }

// Accept returns the next connection whose peer is the host's user; a
// connection of another user is logged and closed. At most maxConns are
// open at once: Accept waits for one to close.
func (l *Listener) Accept() (net.Conn, error) {
	for {
		l.slots <- struct{}{}
		c, err := l.Listener.Accept()
		if err != nil {
			<-l.slots
			return nil, err
		}
		uid, pid, ok, err := peer(c)
		if err == nil && (!ok || uid == l.uid) {
			return &conn{Conn: c, release: func() { <-l.slots }}, nil
		}
		if err != nil {
			l.log.Warn("control socket: refused a connection whose peer cannot be read", "error", err)
		} else {
			l.log.Warn("control socket: refused a connection of another user", "uid", uid, "pid", pid, "host_uid", l.uid)
		}
		c.Close()
		<-l.slots
	}
}

// Close stops listening and removes the socket and the lock file.
func (l *Listener) Close() error {
	var err error
	l.once.Do(func() {
		if cerr := l.Listener.Close(); cerr != nil && !errors.Is(cerr, net.ErrClosed) {
			err = cerr
		}
		// Removed while still held: a host starting now finds either the
		// held file (and refuses) or none (and creates its own).
		_ = os.Remove(l.lock.Name())
		l.lock.Close()
	})
	return err
}

// conn releases its slot once closed.
type conn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *conn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}

// Serve serves h on l until ctx ends, then closes l (removing the
// socket) and returns once the requests in flight have ended (at most
// 5 s more).
func Serve(ctx context.Context, l *Listener, h http.Handler) error {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: readHeaderTimeout, ReadTimeout: readTimeout,
		WriteTimeout: writeTimeout, IdleTimeout: idleTimeout, MaxHeaderBytes: maxHeaderBytes,
		BaseContext: func(net.Listener) context.Context { return ctx }}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(l) }()
	select {
	case err := <-done:
		l.Close()
		return fmt.Errorf("control socket: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if srv.Shutdown(sctx) != nil {
		_ = srv.Close() // a request still running after 5 s
	}
	<-done
	return l.Close()
}

// Dial returns an HTTP client whose requests go to the first of paths
// (Candidates) where a host listens; ErrNoHost (with the command that
// starts one) when none does.
func Dial(ctx context.Context, configFile string, paths []string) (*http.Client, error) {
	var d net.Dialer
	for _, path := range paths {
		if fi, err := os.Lstat(path); err == nil {
			if uid, ok := owner(fi); ok && uid != os.Getuid() {
				return nil, fmt.Errorf("control socket %s belongs to user id %d: only the user the host runs as may steer it (this is user id %d)",
					path, uid, os.Getuid())
			}
		}
		c, err := d.DialContext(ctx, "unix", path)
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ECONNREFUSED) {
			continue
		}
		if errors.Is(err, fs.ErrPermission) {
			return nil, fmt.Errorf("control socket %s: %w: only the user the host runs as may steer it", path, err)
		}
		if err != nil {
			return nil, fmt.Errorf("control socket %s: %w", path, err)
		}
		c.Close()
		return &http.Client{
			Transport: &http.Transport{
				DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
					return d.DialContext(ctx, "unix", path)
				},
				MaxIdleConnsPerHost: 4,
				IdleConnTimeout:     30 * time.Second,
			},
			// A host that stopped answering fails the command.
			Timeout: clientTimeout,
		}, nil
	}
	return nil, fmt.Errorf("%w on %s (a file without regCenter is steered through its host's control socket %s): start one with `ejob run -c %s`",
		ErrNoHost, configFile, strings.Join(paths, " or "), configFile)
}
