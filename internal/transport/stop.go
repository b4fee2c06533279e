package transport

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/ejob-io/ejob/spi"
)

// Stopping an Execute across the process boundary.
//
// A unary gRPC call cancelled by its caller returns on the host at once,
// while the plugin may still be stopping what it started (a SCRIPT signals
// its process group and waits up to its kill grace; a DATAFLOW type
// finishes its batch). The kernel would then believe the item over and let
// another instance take it. So Conn's Execute:
//
//  1. sends an execution id it generated and the caller's deadline in the
//     request, and runs the RPC under a ctx detached from the caller's (no
//     gRPC deadline, not cancelled by the caller; ended only when the
//     process exits or as described below);
//  2. when the caller's ctx ends, sends Cancel(execution id, cause), which
//     cancels the plugin's handler ctx (its Err is context.Canceled, its
//     Cause says why). The plugin applies the caller's deadline itself,
//     from the request, so a timed-out call sees context.DeadlineExceeded
//     as in process; a Cancel for that deadline is then only a backstop;
//  3. waits for the Execute RPC to return, up to the Conn's stop grace, and
//     returns an error wrapping the caller's ctx error and cause (and the
//     plugin's own error, if it returned another one);
//  4. if the grace passes first, cancels the RPC and returns an error
//     wrapping ErrStopTimeout and the caller's ctx error: the plugin may
//     still be running the item, and only killing its process makes sure it
//     stops (host/pluginhost does).
//
// Every plugin of this protocol version serves Cancel; a plugin built
// before it existed (protocol version 1) is refused at the handshake (see
// ProtocolVersion). A Cancel that fails (the plugin busy or gone) leaves
// the execution to the grace of step 4. In execute.go, startExecution does
// step 1, waitOrStop waits for the RPC or for ctx to end, and stop does
// steps 2 to 4.

// DefaultStopGrace is how long a cancelled Execute waits for the plugin's
// Execute to return when LaunchConfig.StopGrace is zero. It covers the
// SCRIPT type's default kill grace (2 s between SIGTERM and SIGKILL).
const DefaultStopGrace = 10 * time.Second

// ErrStopTimeout means a cancelled Execute did not return in the plugin
// within the stop grace: what it started may still be running. The error
// also wraps the caller's ctx error. The host's supervisor kills and
// relaunches the plugin process when it sees it.
var ErrStopTimeout = errors.New("plugin did not stop the execution within the stop grace")

// earlyCancelTTL bounds how long the server remembers a Cancel whose
// Execute it has not seen (yet); maxEarlyCancels bounds how many.
const (
	earlyCancelTTL  = time.Minute
	maxEarlyCancels = 1024
)

// newExecutionID returns a random id for one Execute call.
func newExecutionID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand doc)
	return hex.EncodeToString(b[:])
}

// cancelCause is the cause the plugin's ctx gets from Cancel: it wraps
// context.Canceled, and its text carries the host's reason.
func cancelCause(reason string) error {
	if reason == "" || reason == context.Canceled.Error() {
		return context.Canceled
	}
	return fmt.Errorf("%w by the host: %s", context.Canceled, reason)
}

// executions tracks the running Execute calls of one plugin server by
// execution id, so that Cancel can reach them. Cancel and Execute travel
// on separate HTTP/2 streams and are handled on separate goroutines, so a
// Cancel may be handled before its Execute registers: it is remembered
// (for earlyCancelTTL) and applied when the Execute starts.
type executions struct {
	mu      sync.Mutex
	running map[string]execution
	early   map[string]earlyCancel
}

// execution is a running Execute: its cancel func, its deadline (zero:
// none) and its execution lease (nil: none).
type execution struct {
	cancel   context.CancelCauseFunc
	deadline time.Time
	lease    *leaseTimer // nil: no execution lease
	// live is the execution's output so far (PeekOutput).
	live *spi.LiveOutput
}

type earlyCancel struct {
	cause    error
	deadline bool
	at       time.Time
}

// deadlineBackstop is how long after an execution's own deadline a Cancel
// for that deadline cancels it, should the deadline's timer not have
// fired by then.
const deadlineBackstop = 100 * time.Millisecond

func newExecutions() *executions {
	return &executions{running: map[string]execution{}, early: map[string]earlyCancel{}}
}

// start registers execution id, applying a Cancel that came first; the
// returned func unregisters it.
func (e *executions) start(id string, x execution) (done func()) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if c, ok := e.early[id]; ok {
		delete(e.early, id)
		x.stop(c.cause, c.deadline)
	}
	e.running[id] = x
	return func() {
		e.mu.Lock()
		defer e.mu.Unlock()
		delete(e.running, id)
	}
}

// stop cancels x with cause. When the host's ctx ended at the deadline x
// carries, x's own deadline ends it (its ctx then reports
// context.DeadlineExceeded, as it did when gRPC carried the deadline);
// cancel is only a backstop, deadlineBackstop later.
func (x execution) stop(cause error, deadlineExceeded bool) {
	if deadlineExceeded && !x.deadline.IsZero() {
		time.AfterFunc(max(time.Until(x.deadline), 0)+deadlineBackstop, func() { x.cancel(cause) })
		return
	}
	x.cancel(cause)
}

// cancel cancels execution id with cause and reports whether it was
// running; if not, it is remembered for a later start.
// live returns the output so far of the running execution id, or nil.
func (e *executions) live(id string) *spi.LiveOutput {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.running[id].live
}

func (e *executions) cancel(id string, cause error, deadlineExceeded bool) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if x, ok := e.running[id]; ok {
		x.stop(cause, deadlineExceeded)
		return true
	}
	now := time.Now()
	for k, c := range e.early {
		if now.Sub(c.at) > earlyCancelTTL {
			delete(e.early, k)
		}
	}
	if len(e.early) < maxEarlyCancels {
		e.early[id] = earlyCancel{cause: cause, deadline: deadlineExceeded, at: now}
	}
	return false
}

// stoppedError is the error of an Execute whose caller's ctx ended: it
// wraps the ctx error, its cause when that differs, the plugin's own error
// when it returned another one, and ErrStopTimeout when it did not return
// within the grace.
type stoppedError struct {
	msg  string
	errs []error
}

func (e *stoppedError) Error() string   { return e.msg }
func (e *stoppedError) Unwrap() []error { return e.errs }

// stopped builds the error of an Execute whose caller's ctx ended. plugin
// is the plugin's own (mapped) error, nil if it returned success; timeout
// says that it did not return within grace.
func stopped(ctx context.Context, plugin error, timeout bool, grace time.Duration) error {
	ctxErr := ctx.Err()
	errs := []error{ctxErr}
	msg := ctxErr.Error()
	if cause := context.Cause(ctx); cause != nil && cause != ctxErr {
		errs = append(errs, cause)
		msg += ": " + cause.Error()
	}
	switch {
	case timeout:
		errs = append(errs, ErrStopTimeout)
		msg += fmt.Sprintf("; %v (%v)", ErrStopTimeout, grace)
	case plugin == nil:
		msg += "; the plugin finished the execution"
	case !errors.Is(plugin, ctxErr):
		errs = append(errs, plugin)
		msg += "; the plugin stopped with: " + plugin.Error()
	}
	return &stoppedError{msg: msg, errs: errs}
}
