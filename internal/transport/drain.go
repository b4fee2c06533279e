package transport

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
)

// terminationGrace bounds how long a terminating plugin waits for its
// in-flight calls to return after cancelling them. It covers a job type's
// own kill grace (SCRIPT: SIGTERM, then SIGKILL of the process group after
// 2 s) so that nothing the plugin started outlives it.
const terminationGrace = 5 * time.Second

// drainer ends a plugin cleanly when its host goes away (SIGTERM from the
// kernel via Pdeathsig, or the parent watcher): it cancels every in-flight
// call's ctx, so that job types stop what they started (a SCRIPT kills its
// process group), waits up to terminationGrace for the calls to return,
// and exits. Without it, a host killed by SIGKILL would leave a script
// running, and a survivor would fail the item over while it still runs.
type drainer struct {
	base   context.Context
	cancel context.CancelFunc
	calls  sync.WaitGroup
	once   sync.Once
	log    hclog.Logger
}

func newDrainer(log hclog.Logger) *drainer {
	base, cancel := context.WithCancel(context.Background())
	return &drainer{base: base, cancel: cancel, log: log}
}

// interceptor ties each call's ctx to the drainer and counts the call.
func (d *drainer) interceptor() grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		d.calls.Add(1)
		defer d.calls.Done()
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		stop := context.AfterFunc(d.base, cancel)
		defer stop()
		return handler(ctx, req)
	}
}

// terminate cancels in-flight calls, waits for them within
// terminationGrace, and exits the process. It runs once.
func (d *drainer) terminate(reason string) {
	d.once.Do(func() {
		// Cancel before logging: the log goes to the host's pipe, which may
		// be gone with the host.
		d.cancel()
		removeSocketDir()
		d.log.Warn("host went away; stopping in-flight calls and exiting", "reason", reason)
		done := make(chan struct{})
		go func() {
			d.calls.Wait()
			close(done)
		}()
		select {
		case <-done:
		case <-time.After(terminationGrace):
			d.log.Error("in-flight calls did not stop within the grace period; exiting anyway", "grace", terminationGrace)
		}
		stopDescendants(d.log)
		os.Exit(1)
	})
}

// onSignals handles SIGTERM and SIGINT. A plugin stops when its host
// tells it to or dies, never on a signal meant for the host: a group-wide
// SIGTERM (systemd's KillMode=control-group, `timeout`, `kill -- -PGID`)
// or a terminal's SIGINT must let the host drain its running items through
// the plugin. So a signal is obeyed only when the parent has changed, which
// is how the SIGTERM that Launch arranges for the kernel to send when the
// host dies (Pdeathsig) arrives: the kernel re-parents the plugin before it
// signals it. Any other is logged and ignored.
//
// It also ignores SIGPIPE: once the host is gone, a write to its
// stdout/stderr pipes must fail with EPIPE, not kill the plugin (Go's
// default for fds 1 and 2) before it has stopped what its calls started.
func (d *drainer) onSignals(ppid int) {
	signal.Ignore(syscall.SIGPIPE)
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		for sig := range ch {
			if now := os.Getppid(); now != ppid {
				d.terminate(fmt.Sprintf("%v; parent %d went away (new parent %d)", sig, ppid, now))
				return
			}
			d.log.Info("ignoring the signal: an ejob plugin stops when its host tells it to or exits", "signal", sig.String())
		}
	}()
}

// removeSocketDir removes the directory the host made for this process's
// go-plugin socket (PLUGIN_UNIX_SOCKET_DIR), once the host is gone: the
// host removes it after a plugin exits, but a host that died cannot. Only
// a directory go-plugin made for this one process is removed (its name
// starts with "plugin-dir").
func removeSocketDir() {
	if dir := os.Getenv(plugin.EnvUnixSocketDir); dir != "" && strings.HasPrefix(filepath.Base(dir), "plugin-dir") {
		_ = os.RemoveAll(dir)
	}
}
