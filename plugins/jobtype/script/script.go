package script

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/ejob-io/ejob/spi"
)

// TypeName is the job type this package implements. Lookups are
// case-insensitive (spi.NormalizeType); this is the canonical spelling.
const TypeName = "SCRIPT"

// The props SCRIPT reads.
const (
	// PropCommandLine is upstream's required prop: the command line to
	// run, split by ParseCommandLine.
	PropCommandLine = "script.command.line"
	// PropArgvQuirk is ejob's own prop (upstream ignores it): "upstream"
	// quotes arguments as upstream does (see Argv and docs/jobtypes.md);
	// absent, empty or "none" passes the split arguments as they are.
	PropArgvQuirk = "script.argv.quirk"
)

// Values of PropArgvQuirk.
const (
	QuirkUpstream = "upstream"
	QuirkNone     = "none"
)

// MsgNoCommandLine is upstream's message for a missing or empty
// script.command.line.
const MsgNoCommandLine = "Cannot find script command line, job is not executed."

// DefaultKillGrace is how long a cancelled item's process group has
// between SIGTERM and SIGKILL when Executor.KillGrace is zero.
const DefaultKillGrace = 2 * time.Second

// Logger receives the script's output, one call per line: stdout lines at
// Info, stderr lines at Warn, the line as the message and the fields job,
// item and stream (stdout or stderr). hclog.Logger (sdk.Logger()) and
// *slog.Logger satisfy it.
type Logger interface {
	Info(msg string, args ...any)
	Warn(msg string, args ...any)
}

// Executor is the SCRIPT job type. The zero value is ready to use; set the
// fields before the first Execute and do not change them afterwards. It is
// safe for concurrent use if its Logger is.
type Executor struct {
	// Logger receives the scripts' output lines; nil means slog.Default().
	Logger Logger
	// KillGrace is the time between SIGTERM and SIGKILL when an item's
	// context ends while its script runs; zero means DefaultKillGrace.
	// Execute returns earlier once the script and everything in its
	// process group are gone (an orphaned zombie counts as present, so
	// where PID 1 does not reap orphans, such as a container without an
	// init, a cancelled item whose script left children takes the whole
	// grace). KillGrace also bounds how long Execute waits for the
	// script's output to close after the script exits (a background child
	// may hold it open).
	KillGrace time.Duration
}

var _ spi.JobExecutor = (*Executor)(nil)

// New returns the SCRIPT executor logging the scripts' output to logger
// (nil means slog.Default()).
func New(logger Logger) *Executor { return &Executor{Logger: logger} }

// Validate implements spi.JobExecutor: script.command.line must be present
// and parse (ParseCommandLine), and script.argv.quirk, when set, must be
// "upstream" or "none". Errors wrap spi.ErrInvalidConfig and name the
// property. Whether the executable exists is not checked: it may exist
// only on the hosts that run the job.
func (e *Executor) Validate(ctx context.Context, req spi.ValidatePropsRequest) error {
	_, err := commandArgv(req.Props)
	return err
}

// ExitError reports a script that exited with a non-zero status.
type ExitError struct {
	// Code is the exit status; for a script killed by a signal it is 128
	// plus the signal number, as the JVM reports it.
	Code int
	// Signal names the signal that killed the script, or is empty.
	Signal string
	// StderrTail is the end of the script's stderr: its last lines, at
	// most 20 of them and 4 KiB.
	StderrTail string
}

// Error uses upstream's wording (commons-exec's ExecuteException), then
// the signal and the stderr tail.
func (e *ExitError) Error() string {
	msg := fmt.Sprintf("Process exited with an error: %d (Exit value: %d)", e.Code, e.Code)
	if e.Signal != "" {
		msg += "; killed by signal " + e.Signal
	}
	if e.StderrTail != "" {
		msg += fmt.Sprintf("; stderr tail: %q", e.StderrTail)
	}
	return msg
}

// Execute implements spi.JobExecutor: it runs the item's argv (see Argv)
// without a shell, in the working directory and with the environment of
// this process, stdin at EOF, in a new process group. It returns nil when
// the script exits 0; an error wrapping spi.ErrInvalidConfig for a missing
// or unparsable command line (upstream's message when missing); an error
// wrapping *ExitError for a non-zero exit; an error wrapping the exec
// error when the program cannot start. When ctx ends first, the process
// group gets SIGTERM, then SIGKILL after KillGrace, and the error wraps
// ctx.Err(). Once the script started, the response carries its output
// (stdout and stderr lines in the order they arrived, behind
// spi.StdoutPrefix and spi.StderrPrefix, the last spi.MaxOutputBytes
// kept), whatever the outcome; while it runs, the lines go into the
// ctx's spi.LiveOutput too, if it carries one.
func (e *Executor) Execute(ctx context.Context, req spi.ExecuteRequest) (spi.ExecuteResponse, error) {
	sc := req.Context
	argv, err := Argv(req.Props, sc)
	if err != nil {
		return spi.ExecuteResponse{}, err
	}
	// The host wraps the error with the job and item; saying them here
	// again would repeat them in every failure line.
	const where = "script"
	if err := ctx.Err(); err != nil {
		return spi.ExecuteResponse{}, fmt.Errorf("%s not started: %w", where, err)
	}
	var logger Logger = slog.Default()
	if e.Logger != nil {
		logger = e.Logger
	}
	grace := e.KillGrace
	if grace <= 0 {
		grace = DefaultKillGrace
	}

	out := new(spi.OutputBuffer)
	if live := spi.LiveOutputFrom(ctx); live != nil {
		out = &live.OutputBuffer // the host may show it while the script runs
	}
	stdout := newLineLogger(logger.Info, sc.JobName, sc.ShardingItem, "stdout", false, out, spi.StdoutPrefix)
	stderr := newLineLogger(logger.Warn, sc.JobName, sc.ShardingItem, "stderr", true, out, spi.StderrPrefix)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin = nil // the null device: the script reads EOF, as upstream closes stdin at once
	cmd.Env = append(scriptEnv(os.Environ()), EnvFencingToken+"="+strconv.FormatInt(sc.FencingToken, 10))
	cmd.Stdout = stdout
	cmd.Stderr = stderr
	cmd.WaitDelay = grace
	newProcessGroup(cmd)
	if err := cmd.Start(); err != nil {
		return spi.ExecuteResponse{}, fmt.Errorf("%s: Execute script failure: %w", where, err)
	}
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()

	select {
	case err = <-waited:
	case <-ctx.Done():
		stopGroup(cmd.Process.Pid, grace, waited)
		stdout.flush()
		stderr.flush()
		return spi.ExecuteResponse{Output: out.Output()}, fmt.Errorf("%s: stopped (process group %d signalled): %w", where, cmd.Process.Pid, ctx.Err())
	}
	stdout.flush()
	stderr.flush()
	resp := spi.ExecuteResponse{Output: out.Output()}

	var exitErr *exec.ExitError
	switch {
	case err == nil:
		return resp, nil
	case errors.Is(err, exec.ErrWaitDelay):
		// The script exited 0 but something it started kept its output
		// open; the exit status decides, as upstream's does.
		logger.Warn("script exited but its output stayed open (a background process?); output no longer logged",
			"job", sc.JobName, "item", sc.ShardingItem)
		return resp, nil
	case errors.As(err, &exitErr):
		code, sig := exitStatus(exitErr.ProcessState)
		return resp, fmt.Errorf("%s: Execute script failure: %w", where,
			&ExitError{Code: code, Signal: sig, StderrTail: stderr.tail()})
	}
	return resp, fmt.Errorf("%s: Execute script failure: %w", where, err)
}

// stopGroup stops the process group pgid after its context ended:
// SIGTERM, then SIGKILL to whatever is left once grace has passed, unless
// by then the leader is reaped (waited delivered) and the group is empty.
// It returns after waited has delivered.
func stopGroup(pgid int, grace time.Duration, waited <-chan error) {
	signalGroup(pgid, false)
	deadline := time.NewTimer(grace)
	defer deadline.Stop()
	// Polling is the only portable way to learn that the group's other
	// members (grandchildren) are gone; it is bounded by grace.
	poll := time.NewTicker(20 * time.Millisecond)
	defer poll.Stop()
	reaped := false
	for {
		select {
		case <-waited:
			reaped = true
			if !groupAlive(pgid) {
				return
			}
		case <-poll.C:
			if reaped && !groupAlive(pgid) {
				return
			}
		case <-deadline.C:
			signalGroup(pgid, true)
			if !reaped {
				<-waited
			}
			return
		}
	}
}

// EnvFencingToken is the environment variable that carries the item's
// fencing token (spi.ShardingContext.FencingToken; "0": no fence).
const EnvFencingToken = "EJOB_FENCING_TOKEN"

// scriptEnv is the plugin process's environment without the variables the
// ejob host's go-plugin handshake sets for the plugin itself (its magic
// cookie, protocol versions, AutoMTLS client certificate, port range and
// socket directory): they are the plugin's, not the script's. An
// EJOB_FENCING_TOKEN of the host's is dropped too: the item's own is set.
func scriptEnv(env []string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		switch name {
		case "EJOB_PLUGIN_MAGIC_COOKIE", "PLUGIN_PROTOCOL_VERSIONS", "PLUGIN_CLIENT_CERT",
			"PLUGIN_MIN_PORT", "PLUGIN_MAX_PORT", "PLUGIN_UNIX_SOCKET_DIR", "PLUGIN_UNIX_SOCKET_GROUP",
			"PLUGIN_MULTIPLEX_GRPC", EnvFencingToken:
			continue
		}
		out = append(out, kv)
	}
	return out
}
