package transport

import (
	"context"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
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
		os.Exit(1)
	})
}

// onSIGTERM terminates on SIGTERM, which Launch arranges for the kernel to
// send when the host dies (Pdeathsig). It also ignores SIGPIPE: once the
// host is gone, a write to its stdout/stderr pipes must fail with EPIPE, not
// kill the plugin (Go's default for fds 1 and 2) before it has stopped
// what its calls started.
func (d *drainer) onSIGTERM() {
	signal.Ignore(syscall.SIGPIPE)
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGTERM)
	go func() {
		<-ch
		d.terminate("SIGTERM")
	}()
}
