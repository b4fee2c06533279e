package pluginhost

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ejob-io/ejob/internal/proctree"
	"github.com/ejob-io/ejob/internal/transport"
	"github.com/ejob-io/ejob/spi"
)

// Relaunch backoff: a process that exits within stableAfter of its start
// (or fails to start) counts as a quick exit; consecutive quick exits double
// the wait before the next launch, from minBackoff up to maxBackoff. The
// relaunch after a process that ran stably is immediate.
const (
	minBackoff  = 100 * time.Millisecond
	maxBackoff  = 30 * time.Second
	stableAfter = 10 * time.Second
)

// supervisor owns one plugin binary's process: started on first use, shared
// by every type the binary serves, relaunched after it exits.
type supervisor struct {
	cat  *Catalog
	bin  Binary
	args []string
	log  hclog.Logger

	// sem is a one-slot semaphore guarding the fields below; a channel so
	// that waiting for it honours ctx.
	sem      chan struct{}
	proc     *transport.Process
	started  time.Time
	lastExit time.Time
	crashes  int
	closed   bool
}

func (c *Catalog) newSupervisor(bin Binary, args []string) *supervisor {
	s := &supervisor{cat: c, bin: bin, args: args, sem: make(chan struct{}, 1),
		log: c.log.With("plugin", filepath.Base(bin.Path))}
	c.sups = append(c.sups, s)
	return s
}

func (s *supervisor) acquire(ctx context.Context) error {
	select {
	case s.sem <- struct{}{}:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("wait for plugin %s: %w", s.bin.Path, ctx.Err())
	}
}

func (s *supervisor) release() { <-s.sem }

func (s *supervisor) backoff() time.Duration {
	if s.crashes == 0 {
		return 0
	}
	return min(minBackoff<<min(s.crashes-1, 20), maxBackoff)
}

// process returns the running process, launching it when there is none.
func (s *supervisor) process(ctx context.Context) (*transport.Process, error) {
	if err := s.acquire(ctx); err != nil {
		return nil, err
	}
	defer s.release()
	if s.closed {
		return nil, fmt.Errorf("%w: plugin catalog is closed", spi.ErrPluginExited)
	}
	if s.proc != nil && !s.proc.Exited() {
		return s.proc, nil
	}
	if s.proc != nil {
		s.noteExitLocked("plugin process exited")
	}
	if wait := time.Until(s.lastExit.Add(s.backoff())); wait > 0 {
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("%w: %s is restarting after %d quick exits (next launch in %v): %w",
				spi.ErrPluginExited, s.bin.Path, s.crashes, wait.Round(time.Millisecond), ctx.Err())
		}
	}
	if !s.bin.Builtin {
		// Pinning and permissions are verified before every launch: the
		// file may have been replaced since discovery.
		if _, err := s.cat.check(s.bin.Path); err != nil {
			s.crashes++
			s.lastExit = time.Now()
			return nil, fmt.Errorf("plugin %s: %w", s.bin.Path, err)
		}
	}
	proc, err := transport.Launch(ctx, s.cat.launchConfig(s.bin.Path, s.args, s.bin.Builtin))
	if err != nil {
		s.crashes++
		s.lastExit = time.Now()
		return nil, err // it names the binary
	}
	s.log.Debug("plugin process started", "pid", proc.Pid())
	if !s.started.IsZero() && s.cat.cfg.Observer != nil {
		s.cat.cfg.Observer.Restarted(filepath.Base(s.bin.Path))
	}
	s.proc, s.started = proc, time.Now()
	return proc, nil
}

// noteExitLocked records that the current process is gone.
func (s *supervisor) noteExitLocked(msg string) {
	if time.Since(s.started) < stableAfter {
		s.crashes++
	} else {
		s.crashes = 0
	}
	s.lastExit = time.Now()
	s.log.Warn(msg+"; it will be relaunched on next use", "pid", s.proc.Pid(), "quick_exits", s.crashes)
	s.proc.Kill()
	s.proc = nil
}

// discard drops proc after a call reported it gone, so the next call
// relaunches even if the exit has not been observed yet.
func (s *supervisor) discard(proc *transport.Process) {
	s.sem <- struct{}{}
	defer s.release()
	if s.proc == proc {
		s.noteExitLocked("plugin process went away during a call")
	}
}

// killStuck kills proc, which did not stop a cancelled execution within
// the stop grace, and the processes it had started (other calls' scripts
// too: those calls fail with the process), and returns once it has exited.
// The next call relaunches the plugin at once: this is not a crash, so it
// does not count towards the relaunch backoff.
func (s *supervisor) killStuck(proc *transport.Process, call transport.Call, err error) {
	s.log.Error("plugin did not stop a cancelled execution within the stop grace; killing the plugin process "+
		"(its other calls in flight fail, and it is relaunched on next use)",
		slices.Concat(call.Attrs, []any{"type", call.Type, "pid", proc.Pid(), "stop_grace", s.cat.cfg.StopGrace, "error", err})...)
	s.sem <- struct{}{}
	if s.proc == proc {
		s.proc = nil
		s.lastExit = time.Now()
	}
	s.release()
	// What the plugin started for its executions (SCRIPT: a process group
	// per script) would outlive it and keep running items nobody tracks.
	// They go first: go-plugin's Kill asks the plugin to exit and waits up
	// to 2 s before it forces it.
	if below := proctree.Descendants(proc.Pid()); len(below) > 0 {
		proctree.Kill(below)
		s.log.Warn("killed the processes the stuck plugin had started", slices.Concat(call.Attrs, []any{"count", len(below)})...)
	}
	proc.Kill()
}

func (s *supervisor) close() {
	s.sem <- struct{}{}
	defer s.release()
	s.closed = true
	if s.proc != nil {
		s.proc.Kill()
		s.proc = nil
	}
}

// Call implements transport.Connector: the one call path of every type the
// binary serves. It runs fn on the current process, launching it if there
// is none. A short call gets the catalog's CallTimeout unless ctx already
// ends sooner; a long one (a job type's Execute) is bounded by ctx alone,
// since a job may legitimately run for hours.
//
// An error wrapping spi.ErrPluginExited drops the process, so that the next
// call relaunches it. An error wrapping transport.ErrStopTimeout (an
// Execute whose ctx ended and that the plugin did not stop within the stop
// grace) kills the process, the only way to be sure the item stopped, and
// Call returns once it is gone: the kernel never believes an item stopped
// while the plugin still runs it. Every other call in flight on that
// process then fails with spi.ErrPluginExited, and the next call relaunches
// it.
func (s *supervisor) Call(ctx context.Context, call transport.Call, fn func(context.Context, *transport.Conn) error) error {
	if !call.Long {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, s.cat.cfg.CallTimeout)
		defer cancel()
	}
	proc, err := s.process(ctx)
	if err != nil {
		return err
	}
	err = fn(ctx, proc.Conn())
	if err != nil && ctx.Err() == nil && s.cat.cfg.Observer != nil {
		s.cat.cfg.Observer.CallFailed(filepath.Base(s.bin.Path))
	}
	switch {
	case err == nil:
	case errors.Is(err, transport.ErrStopTimeout):
		s.killStuck(proc, call, err)
		err = fmt.Errorf("%w (plugin process %d killed to stop it)", err, proc.Pid())
	case errors.Is(err, spi.ErrPluginExited):
		s.discard(proc)
	}
	return err
}

var _ transport.Connector = (*supervisor)(nil)
