package transport

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"github.com/hashicorp/go-plugin/runner"

	"github.com/ejob-io/ejob/spi"
)

// DefaultStartTimeout bounds spawn + handshake when LaunchConfig.StartTimeout
// is zero.
const DefaultStartTimeout = 10 * time.Second

// LaunchConfig says how to start a plugin process.
type LaunchConfig struct {
	// Path is the executable.
	Path string
	// Args are extra arguments (the ejob binary serves its built-ins under
	// a hidden subcommand).
	Args []string
	// Name labels the plugin in logs and errors; default: the base name of
	// Path.
	Name string
	// Logger is the host logger (nil: discard). The plugin's stderr log
	// lines are re-levelled under Logger.Named(Name), as are go-plugin's own
	// messages about the process and anything the plugin writes to its
	// stdout or stderr after it started serving.
	Logger hclog.Logger
	// StartTimeout bounds spawn + handshake; default DefaultStartTimeout.
	// Launch's ctx deadline also applies.
	StartTimeout time.Duration
	// StopGrace bounds how long a JobExecutor's Execute whose ctx ended
	// waits for the plugin's Execute to return, so that the caller knows
	// the item stopped; default DefaultStopGrace. When it passes, Execute
	// returns an error wrapping ErrStopTimeout (see Conn).
	StopGrace time.Duration
}

// Process is one running plugin process. Its methods are safe for
// concurrent use.
type Process struct {
	client *plugin.Client
	runner *procRunner // set by go-plugin's Start (RunnerFunc)
	conn   *Conn
	kill   sync.Once
}

// exitGrace bounds Kill's request to the plugin to exit: go-plugin waits
// 2 s for the exit after the request, but the request itself waits for a
// plugin that does not read it (a stopped process).
const exitGrace = 3 * time.Second

// Launch starts the plugin at cfg.Path, completes the go-plugin handshake
// (gRPC, AutoMTLS on) and checks its Info. Errors are one line naming the
// executable and wrap ErrNotPlugin (saying why: not executable, a native
// executable not built with the SDK, it exited or printed something else
// than the handshake, or printed nothing within the start timeout),
// ErrProtocolVersion (another handshake protocol version) or ErrAPIVersion
// (another spi.APIVersion), or ctx's error.
//
// The plugin runs in a process group of its own (see runner.go). On Linux
// it gets SIGTERM when the host dies; on every system it exits by itself
// when its parent goes away (see Serve).
func Launch(ctx context.Context, cfg LaunchConfig) (*Process, error) {
	if cfg.Path == "" {
		return nil, errors.New("launch plugin: empty path")
	}
	p, err := launch(ctx, cfg)
	if err != nil {
		return nil, &LaunchError{Path: cfg.Path, Err: err}
	}
	return p, nil
}

// LaunchError is Launch's error: it names the executable once, Err says
// what went wrong.
type LaunchError struct {
	Path string
	Err  error
}

func (e *LaunchError) Error() string { return "launch plugin " + e.Path + ": " + e.Err.Error() }
func (e *LaunchError) Unwrap() error { return e.Err }

func launch(ctx context.Context, cfg LaunchConfig) (*Process, error) {
	name := cfg.Name
	if name == "" {
		name = filepath.Base(cfg.Path)
	}
	logger := cfg.Logger
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	level := logger.GetLevel()
	timeout := cfg.StartTimeout
	if timeout <= 0 {
		timeout = DefaultStartTimeout
	}
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < timeout {
		timeout = time.Until(dl)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if timeout <= 0 {
		return nil, context.DeadlineExceeded
	}
	if err := checkExecutable(cfg.Path); err != nil {
		return nil, err
	}

	p := &Process{}
	logger = fixedName{Logger: logger.Named(name), p: p}
	// The plugin logs at the host's level (see Logger), so that it does
	// not write lines the host would drop. Set last, so that it wins over
	// the host's own environment; go-plugin's variables follow.
	env := os.Environ()
	if hclog.LevelFromString(level.String()) != hclog.NoLevel {
		env = append(env, LogLevelEnv+"="+level.String())
	}
	p.client = plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig: Handshake(),
		Plugins:         plugin.PluginSet{pluginSetName: &grpcPlugin{name: name, stopGrace: cfg.StopGrace}},
		RunnerFunc: func(_ hclog.Logger, cmd *exec.Cmd, socketDir string) (runner.Runner, error) {
			p.runner = newRunner(logger, cfg.Path, cfg.Args, env, cmd, socketDir)
			return p.runner, nil
		},
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		AutoMTLS:         true,
		SkipHostEnv:      true, // env holds it already
		StartTimeout:     timeout,
		Logger:           logger,
		SyncStdout:       &lineLogger{log: logger, msg: "plugin wrote to stdout", level: hclog.Warn},
		SyncStderr:       &lineLogger{log: logger, msg: "plugin wrote to stderr", level: hclog.Info},
	})

	type result struct {
		conn *Conn
		err  error
	}
	started := make(chan result, 1)
	go func() {
		// The plugin's Pdeathsig fires when the thread that forked it
		// exits (Go issue 27505). Lock this goroutine to its thread and
		// keep it alive until the plugin is gone; the thread is then
		// discarded, never reused.
		runtime.LockOSThread()
		conn, err := p.start(timeout)
		started <- result{conn: conn, err: err}
		if p.runner != nil {
			<-p.runner.exited
		}
	}()

	var r result
	select {
	case r = <-started:
	case <-ctx.Done():
		go func() {
			if r := <-started; r.err == nil {
				p.Kill()
			}
		}()
		return nil, ctx.Err()
	}
	if r.err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			// The start timeout was ctx's deadline: report ctx's error.
			return nil, fmt.Errorf("%w (%v)", ctxErr, r.err)
		}
		return nil, r.err
	}
	p.conn = r.conn
	infoCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if _, err := p.Info(infoCtx); err != nil {
		p.Kill()
		return nil, err
	}
	return p, nil
}

// start spawns the process, handshakes and dials. On error the process and
// everything it started are gone.
func (p *Process) start(timeout time.Duration) (*Conn, error) {
	if _, err := p.client.Start(); err != nil {
		if p.runner != nil {
			err = p.runner.startFailure(err, timeout)
		} else {
			err = fmt.Errorf("%w: %w", ErrNotPlugin, err)
		}
		p.client.Kill()
		return nil, err
	}
	p.runner.serving.Store(true)
	rpc, err := p.client.Client()
	if err != nil {
		p.Kill()
		return nil, fmt.Errorf("connect: %w", err)
	}
	raw, err := rpc.Dispense(pluginSetName)
	if err != nil {
		p.Kill()
		return nil, fmt.Errorf("%w: %w", ErrNotPlugin, err)
	}
	return raw.(*Conn), nil
}

// Conn returns the connection to the plugin.
func (p *Process) Conn() *Conn { return p.conn }

// Info asks the plugin what it serves and refuses (ErrAPIVersion) a plugin
// built against another spi.APIVersion.
func (p *Process) Info(ctx context.Context) (spi.Info, error) {
	info, err := p.conn.Info(ctx)
	if err != nil {
		return spi.Info{}, err
	}
	if info.APIVersion != spi.APIVersion {
		return spi.Info{}, fmt.Errorf("%w: the plugin reports API version %d, this host speaks %d; rebuild the plugin against this ejob release",
			ErrAPIVersion, info.APIVersion, spi.APIVersion)
	}
	return info, nil
}

// Exited reports whether the process has exited.
func (p *Process) Exited() bool {
	select {
	case <-p.conn.done:
		return true
	default:
		return false
	}
}

// Done is closed when the process has exited.
func (p *Process) Done() <-chan struct{} { return p.conn.done }

// Pid is the process id. The process leads a process group of the same
// id.
func (p *Process) Pid() int { return p.runner.pid }

// Kill stops the process: a request to exit, then, if it has not exited 2 s
// later (or the request is stuck for exitGrace), SIGKILL to the process,
// its process group and every process below it. It returns once the
// process has exited and its output pipes and socket are gone (what it
// started outside its group may keep its pipes open for pipeGrace, after
// which they are given up), and is idempotent; calls in progress fail with
// spi.ErrPluginExited.
func (p *Process) Kill() {
	p.kill.Do(func() {
		done := make(chan struct{})
		go func() {
			defer close(done)
			p.client.Kill()
		}()
		t := time.NewTimer(exitGrace)
		defer t.Stop()
		select {
		case <-done:
		case <-t.C:
			p.runner.kill(fmt.Sprintf("it did not take the request to exit within %v", exitGrace))
			<-done
		}
		<-p.runner.done
	})
}

// fixedName keeps every go-plugin message under the one name Launch chose:
// go-plugin appends the executable's base name with Named, which would
// nest the plugin's lines one level deeper. It also tones down go-plugin's
// messages that the host says better itself (see Info, Warn, Error).
type fixedName struct {
	hclog.Logger
	p *Process
}

func (f fixedName) Named(string) hclog.Logger { return f }

// Trace and Debug pass a plugin's lines on with their fields in a fixed
// order (see ordered); Info, Warn and Error do too.
func (f fixedName) Trace(msg string, args ...interface{}) { f.Logger.Trace(msg, ordered(args)...) }
func (f fixedName) Debug(msg string, args ...interface{}) { f.Logger.Debug(msg, ordered(args)...) }

// ordered puts the fields of a line the plugin logged in a fixed order.
// go-plugin re-logs each of the plugin's JSON lines with its fields
// taken from a map, in a random order on every line, and "timestamp"
// appended last: those fields are sorted by key, the timestamp kept
// last. Other argument lists are returned as they are.
func ordered(args []interface{}) []interface{} {
	n := len(args)
	if n < 4 || n%2 != 0 || args[n-2] != "timestamp" {
		return args
	}
	type kv struct {
		k string
		v interface{}
	}
	pairs := make([]kv, 0, n/2-1)
	for i := 0; i < n-2; i += 2 {
		k, ok := args[i].(string)
		if !ok {
			return args
		}
		pairs = append(pairs, kv{k, args[i+1]})
	}
	slices.SortStableFunc(pairs, func(a, b kv) int { return strings.Compare(a.k, b.k) })
	out := make([]interface{}, 0, n)
	for _, p := range pairs {
		out = append(out, p.k, p.v)
	}
	return append(out, args[n-2:]...)
}

// serving reports whether the plugin completed its start.
func (f fixedName) serving() bool { return f.p.runner != nil && f.p.runner.serving.Load() }

// Warn demotes go-plugin's "plugin failed to exit gracefully" to Debug: it
// precedes every forced kill, of a failed start too, and the runner warns
// when it kills a plugin that was serving.
func (f fixedName) Warn(msg string, args ...interface{}) {
	if msg == "plugin failed to exit gracefully" {
		f.Logger.Debug(msg, args...)
		return
	}
	f.Logger.Warn(msg, ordered(args)...)
}

// Error demotes go-plugin's "plugin process exited" with an error to
// Debug while the plugin had not completed its start: Launch's error says
// why it did not.
func (f fixedName) Error(msg string, args ...interface{}) {
	if msg == "plugin process exited" && !f.serving() {
		f.Logger.Debug(msg, args...)
		return
	}
	f.Logger.Error(msg, ordered(args)...)
}

// Info demotes go-plugin's "plugin process exited" for a clean exit to
// Debug: it is logged on every deliberate Kill, and the host's supervisor
// already warns about exits it did not ask for. (An unclean exit is logged
// by go-plugin at Error, see Error.)
func (f fixedName) Info(msg string, args ...interface{}) {
	if msg == "plugin process exited" {
		f.Logger.Debug(msg, args...)
		return
	}
	f.Logger.Info(msg, ordered(args)...)
}

// maxLine bounds a buffered partial line of lineLogger.
const maxLine = 64 << 10

// lineLogger logs each line written to it; it receives what the plugin
// writes to os.Stdout / os.Stderr after go-plugin redirected them.
type lineLogger struct {
	log   hclog.Logger
	msg   string
	level hclog.Level

	mu  sync.Mutex
	buf []byte
}

func (w *lineLogger) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, b...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			if len(w.buf) >= maxLine {
				w.log.Log(w.level, w.msg, "line", string(w.buf))
				w.buf = w.buf[:0]
			}
			return len(b), nil
		}
		w.log.Log(w.level, w.msg, "line", string(bytes.TrimSuffix(w.buf[:i], []byte{'\r'})))
		w.buf = w.buf[i+1:]
	}
}
