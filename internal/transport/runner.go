package transport

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"github.com/hashicorp/go-plugin/runner"

	"github.com/ejob-io/ejob/internal/proctree"
)

// Running a plugin process (go-plugin's runner.Runner, which Launch gives
// go-plugin as its RunnerFunc).
//
// go-plugin's own runner waits for the plugin's stdout and stderr pipes to
// close before it reaps the process, and its Kill waits for that too; a
// plugin that started a process keeping them open (a wrapper script that
// runs a background child without exec) hangs it forever, and a kill
// leaves that process behind. It also leaves the plugin's socket file
// behind when the plugin is killed, and reports a non-plugin with several
// multi-line messages. So the host runs plugins itself:
//
//   - each plugin leads a process group of its own: a group-wide signal to
//     the host (Ctrl-C, `kill -- -PGID`, `timeout`) does not reach it, and
//     stopping it reaches everything it started in its group;
//   - once the process has exited, its group is killed (nothing it started
//     there survives it) and its output pipes are read for at most
//     pipeGrace more (os/exec's WaitDelay), then given up;
//   - a forced kill (Kill: a failed start, or a plugin that did not exit
//     when asked) sends SIGKILL to the process, its group and every process
//     below it (the SCRIPT job type's scripts lead groups of their own);
//   - the first line on stdout is checked before go-plugin sees it (see
//     checkHandshake): a line that is not an ejob plugin's handshake is
//     refused with one line saying why, and go-plugin never dials it;
//   - the directory go-plugin created for the plugin's Unix socket is
//     removed once the process is gone, however it ended.

// pipeGrace bounds how long the host reads a plugin's stdout and stderr
// after its process exited and its process group was killed. Only a
// process that left the group (setsid) can still hold them then.
const pipeGrace = 2 * time.Second

// maxHandshake bounds the first stdout line the host reads before it
// decides that the output is not a handshake.
const maxHandshake = 8 << 10

// stderrTail is how much of a plugin's last stderr output is kept to
// explain a failed start.
const stderrTail = 2 << 10

// procRunner runs one plugin process. go-plugin calls Start, Stdout,
// Stderr, Wait and Kill; Process calls the others.
type procRunner struct {
	cmd       *exec.Cmd
	log       hclog.Logger
	socketDir string

	stdout *handshakeReader
	stderr *tailReader
	pid    int

	// serving is set once the plugin completed its start: from then on a
	// forced kill is worth a warning.
	serving atomic.Bool
	// killed is set before the host kills the process, so that its exit by
	// SIGKILL is not reported as a crash.
	killed atomic.Bool

	exited  chan struct{} // closed once the process has been reaped
	exitErr error         // cmd.Wait's error; read after exited
	byHost  bool          // the host killed it (not: it exited by itself); read after exited
	done    chan struct{} // closed once the pipes and the socket dir are gone too
}

var _ runner.Runner = (*procRunner)(nil)

// newRunner prepares to run path with args; go-plugin's cmd carries the
// environment it adds (handshake, AutoMTLS, socket directory).
func newRunner(log hclog.Logger, path string, args []string, env []string, gp *exec.Cmd, socketDir string) *procRunner {
	cmd := exec.Command(path, args...)
	cmd.Env = append(env, gp.Env...)
	cmd.SysProcAttr = sysProcAttr()
	// No stdin: a plugin must not read the host's, and a plugin in its
	// own process group reading a terminal would be stopped (SIGTTIN).
	cmd.Stdin = nil
	return &procRunner{cmd: cmd, log: log, socketDir: socketDir,
		exited: make(chan struct{}), done: make(chan struct{})}
}

// Start starts the process with its own pipes for stdout and stderr.
func (r *procRunner) Start(context.Context) error {
	err := r.start()
	if err != nil {
		r.cleanup()
		close(r.exited)
		close(r.done)
	}
	return err
}

func (r *procRunner) start() error {
	outR, outW, err := os.Pipe()
	if err != nil {
		return err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return err
	}
	r.cmd.Stdout, r.cmd.Stderr = outW, errW
	err = r.cmd.Start()
	// The child has its copies; the host keeps only the read ends, so
	// that they reach EOF once every process holding a write end is gone.
	outW.Close()
	errW.Close()
	if err != nil {
		outR.Close()
		errR.Close()
		var pe *os.PathError // "fork/exec PATH: ERRNO": the path is said already
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return &startErr{err: err}
	}
	r.pid = r.cmd.Process.Pid
	r.stdout = &handshakeReader{pipe: newPipe(outR)}
	r.stderr = &tailReader{pipe: newPipe(errR)}
	go r.wait()
	return nil
}

// startErr is a failure to execute the file at all.
type startErr struct{ err error }

func (e *startErr) Error() string { return "cannot execute it: " + e.err.Error() }
func (e *startErr) Unwrap() error { return e.err }

// wait reaps the process, kills what remains of its group, reads its pipes
// for at most pipeGrace more and removes its socket directory.
func (r *procRunner) wait() {
	err := r.cmd.Wait()
	r.exitErr, r.byHost = err, r.killed.Load() && killedBySIGKILL(err)
	killGroup(r.pid)
	close(r.exited)
	t := time.NewTimer(pipeGrace)
	defer t.Stop()
	for _, p := range []*pipe{r.stdout.pipe, r.stderr.pipe} {
		select {
		case <-p.eof:
			continue
		case <-t.C:
			r.log.Warn("processes the plugin started outside its process group keep its output open; giving it up",
				"pid", r.pid, "after", pipeGrace)
		}
		break
	}
	r.stdout.close()
	r.stderr.close()
	r.cleanup()
	close(r.done)
}

// cleanup removes the socket directory go-plugin made for this process:
// a plugin that did not exit cleanly leaves its socket file there.
func (r *procRunner) cleanup() {
	if r.socketDir != "" {
		if err := os.RemoveAll(r.socketDir); err != nil {
			r.log.Warn("cannot remove the plugin's socket directory", "dir", r.socketDir, "error", err)
		}
	}
}

// Wait returns once the process has been reaped and its pipes and socket
// directory are gone (so that Process.Done means all of it): its exit
// error, or nil when the host killed it (that exit is not a crash worth an
// error log). go-plugin calls it once it has read the pipes to their end.
func (r *procRunner) Wait(context.Context) error {
	<-r.done
	if r.byHost {
		return nil
	}
	return r.exitErr
}

// Kill sends SIGKILL to the process, its process group and every process
// below it; the pipes and the socket directory follow (see wait). go-plugin
// calls it when a start fails and when the plugin did not exit within 2 s
// of being asked to; Process.Kill when even asking is stuck.
func (r *procRunner) Kill(context.Context) error {
	r.kill("it did not exit within 2s of being asked to")
	return nil
}

func (r *procRunner) kill(why string) {
	if r.pid == 0 {
		return
	}
	r.killed.Store(true)
	select {
	case <-r.exited:
		return
	default:
	}
	if r.serving.Load() {
		r.log.Warn("killing the plugin process, its process group and the processes it started: "+why, "pid", r.pid)
	}
	below := proctree.Descendants(r.pid)
	killGroup(r.pid)
	_ = r.cmd.Process.Kill()
	proctree.Kill(below)
}

func (r *procRunner) Stdout() io.ReadCloser { return r.stdout }
func (r *procRunner) Stderr() io.ReadCloser { return r.stderr }
func (r *procRunner) Name() string          { return r.cmd.Path }

// Diagnose: the host explains failed starts itself (see startFailure).
func (r *procRunner) Diagnose(context.Context) string { return "" }

func (r *procRunner) ID() string {
	if r.pid == 0 {
		return ""
	}
	return strconv.Itoa(r.pid)
}

func (r *procRunner) PluginToHost(network, addr string) (string, string, error) {
	return network, addr, nil
}

func (r *procRunner) HostToPlugin(network, addr string) (string, string, error) {
	return network, addr, nil
}

// startFailure explains why the plugin did not start, in one line wrapping
// ErrNotPlugin or ErrProtocolVersion; gpErr is go-plugin's error. The
// process has been killed (go-plugin does that on a failed start).
func (r *procRunner) startFailure(gpErr error, timeout time.Duration) error {
	var se *startErr
	if errors.As(gpErr, &se) {
		return fmt.Errorf("%w: %w", ErrNotPlugin, se)
	}
	if err := r.stdout.refused(); err != nil {
		return err
	}
	r.kill("") // should go-plugin not have
	<-r.done   // exited, and its stderr read to the end (or given up)
	out := r.stdout.printed()
	var reason string
	switch {
	case !r.byHost && r.exitErr == nil:
		reason = "it exited (status 0) without printing the plugin handshake"
	case !r.byHost:
		reason = fmt.Sprintf("it exited (%v) without printing the plugin handshake", r.exitErr)
	case strings.Contains(gpErr.Error(), "timeout") && len(out) > 0:
		reason = fmt.Sprintf("it printed %q but no complete handshake line within %v", clip(out), timeout)
	case strings.Contains(gpErr.Error(), "timeout"):
		reason = fmt.Sprintf("it printed nothing on stdout within %v (a plugin prints its handshake line at once; "+
			"this looks like a program that waits or runs for a long time)", timeout)
	case len(out) == 0:
		reason = "it closed its stdout without printing the plugin handshake"
	default:
		reason = oneLine(gpErr.Error())
	}
	if tail := r.stderr.lastLine(); tail != "" {
		reason += fmt.Sprintf("; its stderr ended with %q", tail)
	}
	return fmt.Errorf("%w: %s", ErrNotPlugin, reason)
}

// pipe is the read end of one of the plugin's output pipes. Once closed by
// the host, a Read (even one blocked) returns io.EOF: the stream ends.
type pipe struct {
	f       *os.File
	eof     chan struct{}
	eofOnce sync.Once
}

func newPipe(f *os.File) *pipe { return &pipe{f: f, eof: make(chan struct{})} }

func (p *pipe) read(b []byte) (int, error) {
	n, err := p.f.Read(b)
	if errors.Is(err, os.ErrClosed) {
		err = io.EOF
	}
	if err == io.EOF {
		p.ended()
	}
	return n, err
}

func (p *pipe) ended() { p.eofOnce.Do(func() { close(p.eof) }) }

func (p *pipe) close() {
	p.ended()
	_ = p.f.Close()
}

// handshakeReader is the plugin's stdout as go-plugin reads it. It holds
// back the first line until it is complete and checked (checkHandshake):
// a line that is not an ejob plugin's handshake ends the stream instead,
// so go-plugin refuses the plugin without dialing anything, and refused
// says why.
type handshakeReader struct {
	*pipe

	mu      sync.Mutex
	first   []byte // the first line as read so far (up to maxHandshake)
	checked bool
	pending []byte // checked bytes go-plugin has not read yet
	reason  error  // why the first line was refused
}

func (h *handshakeReader) Read(b []byte) (int, error) {
	h.mu.Lock()
	checked, pending := h.checked, h.pending
	h.mu.Unlock()
	if checked {
		if len(pending) > 0 {
			n := copy(b, pending)
			h.mu.Lock()
			h.pending = h.pending[n:]
			h.mu.Unlock()
			return n, nil
		}
		return h.pipe.read(b)
	}
	buf := make([]byte, 1024)
	for {
		n, err := h.pipe.read(buf)
		h.mu.Lock()
		h.first = append(h.first, buf[:n]...)
		i := bytes.IndexByte(h.first, '\n')
		switch {
		case i >= 0:
			if h.reason = checkHandshake(string(h.first[:i])); h.reason == nil {
				h.checked, h.pending = true, h.first
				h.mu.Unlock()
				return h.Read(b)
			}
		case len(h.first) >= maxHandshake:
			h.reason = fmt.Errorf("%w: it printed %q on stdout, not a plugin handshake line", ErrNotPlugin, clip(h.first))
		case err != nil:
			if len(h.first) > 0 {
				h.reason = fmt.Errorf("%w: it printed %q and closed its stdout without completing a plugin handshake line", ErrNotPlugin, clip(h.first))
			}
			h.mu.Unlock()
			return 0, err
		default:
			h.mu.Unlock()
			continue
		}
		h.mu.Unlock()
		h.pipe.ended() // go-plugin stops reading: nothing to wait for
		return 0, io.EOF
	}
}

// refused is why the first line was refused, nil if it was not.
func (h *handshakeReader) refused() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.reason
}

// printed is what the plugin printed before its handshake was complete.
func (h *handshakeReader) printed() []byte {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]byte(nil), h.first...)
}

func (h *handshakeReader) Close() error { return nil } // see procRunner.wait

// tailReader is the plugin's stderr as go-plugin reads it; it keeps the
// last stderrTail bytes to explain a failed start.
type tailReader struct {
	*pipe
	mu   sync.Mutex
	tail []byte
}

func (t *tailReader) Read(b []byte) (int, error) {
	n, err := t.pipe.read(b)
	t.mu.Lock()
	t.tail = append(t.tail, b[:n]...)
	if len(t.tail) > stderrTail {
		t.tail = append(t.tail[:0], t.tail[len(t.tail)-stderrTail:]...)
	}
	t.mu.Unlock()
	return n, err
}

func (t *tailReader) Close() error { return nil } // see procRunner.wait

// lastLine is the last non-empty line the plugin wrote to stderr.
func (t *tailReader) lastLine() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	lines := strings.Split(strings.TrimSpace(string(t.tail)), "\n")
	return clip([]byte(strings.TrimSpace(lines[len(lines)-1])))
}

// checkHandshake checks the first line a plugin prints on stdout,
// go-plugin's handshake "CORE|APP|NETWORK|ADDRESS|PROTOCOL|CERT": the core
// and ejob protocol versions, a Unix socket that exists (go-plugin listens
// before it prints) or a TCP address, gRPC, and the certificate AutoMTLS
// needs. It returns nil or an error wrapping ErrNotPlugin or
// ErrProtocolVersion.
func checkHandshake(line string) error {
	line = strings.TrimSpace(line)
	parts := strings.Split(line, "|")
	notPlugin := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrNotPlugin, fmt.Sprintf(format, args...))
	}
	if len(parts) < 4 {
		return notPlugin("it printed %q on stdout, not a plugin handshake line", clip([]byte(line)))
	}
	if parts[0] != strconv.Itoa(plugin.CoreProtocolVersion) {
		return fmt.Errorf("%w: it speaks go-plugin core protocol %q, this host %d; rebuild the plugin against this ejob release",
			ErrProtocolVersion, clip([]byte(parts[0])), plugin.CoreProtocolVersion)
	}
	if parts[1] != strconv.Itoa(ProtocolVersion) {
		return fmt.Errorf("%w: it speaks ejob plugin protocol version %q, this host speaks ejob plugin protocol version %d; "+
			"rebuild the plugin against this ejob release", ErrProtocolVersion, clip([]byte(parts[1])), ProtocolVersion)
	}
	switch network, addr := parts[2], parts[3]; network {
	case "unix":
		fi, err := os.Stat(addr)
		if err != nil || fi.Mode()&os.ModeSocket == 0 {
			return notPlugin("its handshake names the Unix socket %q, which does not exist", clip([]byte(addr)))
		}
	case "tcp":
		if _, err := net.ResolveTCPAddr("tcp", addr); err != nil {
			return notPlugin("its handshake names the TCP address %q: %v", clip([]byte(addr)), err)
		}
	default:
		return notPlugin("its handshake names the network %q (want unix or tcp)", clip([]byte(network)))
	}
	if len(parts) < 5 || parts[4] != string(plugin.ProtocolGRPC) {
		proto := string(plugin.ProtocolNetRPC)
		if len(parts) >= 5 {
			proto = parts[4]
		}
		return notPlugin("it serves the %q protocol; ejob plugins serve gRPC (build it with sdk.Serve)", clip([]byte(proto)))
	}
	if len(parts) < 6 || parts[5] == "" {
		return notPlugin("its handshake carries no TLS certificate; ejob plugins answer the host's AutoMTLS (build it with sdk.Serve)")
	}
	der, err := base64.RawStdEncoding.DecodeString(parts[5])
	if err == nil {
		_, err = x509.ParseCertificate(der)
	}
	if err != nil {
		return notPlugin("its handshake carries an invalid TLS certificate: %v", err)
	}
	return nil
}

// clip shortens what a non-plugin printed for an error message.
func clip(b []byte) string {
	const limit = 120
	s := strings.TrimSpace(string(b))
	if len(s) > limit {
		s = s[:limit] + "…"
	}
	return s
}

// oneLine joins a multi-line message into one line.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
