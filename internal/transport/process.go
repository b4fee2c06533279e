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
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"

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
	path   string
	client *plugin.Client
	conn   *Conn
	pid    int
	kill   sync.Once
}

// Launch starts the plugin at cfg.Path, completes the go-plugin handshake
// (gRPC, AutoMTLS on) and checks its Info. Errors name the executable and
// wrap ErrNotPlugin (not executable, exits or prints something else than
// the handshake, no handshake within the start timeout), ErrProtocolVersion
// (another handshake protocol version) or ErrAPIVersion (another
// spi.APIVersion), or ctx's error.
//
// On Linux the plugin gets SIGKILL when the host dies; on every system the
// plugin exits by itself when its parent goes away (see Serve).
func Launch(ctx context.Context, cfg LaunchConfig) (*Process, error) {
	if cfg.Path == "" {
		return nil, errors.New("launch plugin: empty path")
	}
	name := cfg.Name
	if name == "" {
		name = filepath.Base(cfg.Path)
	}
	logger := cfg.Logger
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	level := logger.GetLevel()
	logger = fixedName{logger.Named(name)}
	timeout := cfg.StartTimeout
	if timeout <= 0 {
		timeout = DefaultStartTimeout
	}
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < timeout {
		timeout = time.Until(dl)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("launch plugin %s: %w", cfg.Path, err)
	}
	if timeout <= 0 {
		return nil, fmt.Errorf("launch plugin %s: %w", cfg.Path, context.DeadlineExceeded)
	}

	cmd := exec.Command(cfg.Path, cfg.Args...)
	cmd.SysProcAttr = sysProcAttr()
	// The plugin logs at the host's level (see Logger), so that it does
	// not write lines the host would drop. Set last, so that it wins over
	// the host's own environment.
	cmd.Env = os.Environ()
	if hclog.LevelFromString(level.String()) != hclog.NoLevel {
		cmd.Env = append(cmd.Env, LogLevelEnv+"="+level.String())
	}
	client := plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig:  Handshake(),
		Plugins:          plugin.PluginSet{pluginSetName: &grpcPlugin{name: name, stopGrace: cfg.StopGrace}},
		Cmd:              cmd,
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		AutoMTLS:         true,
		SkipHostEnv:      true, // cmd.Env holds it already
		StartTimeout:     timeout,
		Logger:           logger,
		SyncStdout:       &lineLogger{log: logger, msg: "plugin wrote to stdout", level: hclog.Warn},
		SyncStderr:       &lineLogger{log: logger, msg: "plugin wrote to stderr", level: hclog.Info},
	})
	p := &Process{path: cfg.Path, client: client}

	type result struct {
		conn *Conn
		pid  int
		err  error
	}
	started := make(chan result, 1)
	go func() {
		// The plugin's Pdeathsig fires when the thread that forked it
		// exits (Go issue 27505). Lock this goroutine to its thread and
		// keep it alive until the plugin is gone; the thread is then
		// discarded, never reused.
		runtime.LockOSThread()
		conn, err := p.start()
		pid := 0
		if cmd.Process != nil {
			pid = cmd.Process.Pid
		}
		started <- result{conn: conn, pid: pid, err: err}
		if err == nil {
			<-conn.done
		}
	}()

	var r result
	select {
	case r = <-started:
	case <-ctx.Done():
		go func() {
			if r := <-started; r.err == nil {
				client.Kill()
			}
		}()
		return nil, fmt.Errorf("launch plugin %s: %w", cfg.Path, ctx.Err())
	}
	if r.err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			// go-plugin's timeout was ctx's deadline: report ctx's error.
			return nil, fmt.Errorf("launch plugin %s: %w (%v)", cfg.Path, ctxErr, r.err)
		}
		return nil, r.err
	}
	p.conn, p.pid = r.conn, r.pid
	infoCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if _, err := p.Info(infoCtx); err != nil {
		p.Kill()
		if errors.Is(err, ErrAPIVersion) {
			return nil, err
		}
		return nil, fmt.Errorf("launch plugin %s: %w", cfg.Path, err)
	}
	return p, nil
}

// start spawns the process, handshakes and dials. On error the process is
// gone.
func (p *Process) start() (*Conn, error) {
	if _, err := p.client.Start(); err != nil {
		p.client.Kill()
		return nil, startError(p.path, err)
	}
	rpc, err := p.client.Client()
	if err != nil {
		p.client.Kill()
		return nil, fmt.Errorf("launch plugin %s: connect: %w", p.path, err)
	}
	raw, err := rpc.Dispense(pluginSetName)
	if err != nil {
		p.client.Kill()
		return nil, fmt.Errorf("launch plugin %s: %w: %w", p.path, ErrNotPlugin, err)
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
		return spi.Info{}, fmt.Errorf("plugin %s reports API version %d, host speaks %d: %w",
			p.path, info.APIVersion, spi.APIVersion, ErrAPIVersion)
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

// Pid is the process id.
func (p *Process) Pid() int { return p.pid }

// Kill stops the process: a graceful shutdown request, then SIGKILL after
// two seconds. It returns when the process has exited and is idempotent;
// calls in progress fail with spi.ErrPluginExited.
func (p *Process) Kill() {
	p.kill.Do(p.client.Kill)
}

// fixedName keeps every go-plugin message under the one name Launch chose:
// go-plugin appends the executable's base name with Named, which would
// nest the plugin's lines one level deeper.
type fixedName struct{ hclog.Logger }

func (f fixedName) Named(string) hclog.Logger { return f }

// Info demotes go-plugin's "plugin process exited" for a clean exit to
// Debug: it is logged on every deliberate Kill, and the host's supervisor
// already warns about exits it did not ask for. (An unclean exit is logged
// by go-plugin at Error and passes through unchanged.)
func (f fixedName) Info(msg string, args ...interface{}) {
	if msg == "plugin process exited" {
		f.Logger.Debug(msg, args...)
		return
	}
	f.Logger.Info(msg, args...)
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
