package transport

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/go-hclog"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/ejob-io/ejob/internal/transport/pluginpb"
	"github.com/ejob-io/ejob/spi"
)

// Conn is a connected plugin, over any gRPC connection. Its accessors return
// spi implementations that forward each call, with its ctx (cancellation
// and deadline cross the process boundary), to the plugin. They do not check
// that the plugin serves the type; a call for a type it does not serve fails
// with an error wrapping spi.ErrUnknownType that lists the types it serves.
//
// Every error a Conn call returns is mapped in one place (see errors.go):
//
//	plugin process gone / connection unavailable -> wraps spi.ErrPluginExited
//	codes.Unimplemented                          -> wraps spi.ErrUnsupported
//	codes.InvalidArgument                        -> wraps spi.ErrInvalidConfig
//	codes.NotFound (unknown type)                -> wraps spi.ErrUnknownType
//	codes.Canceled / DeadlineExceeded            -> wraps context.Canceled / context.DeadlineExceeded
//	anything else                                -> the plugin's message
//
// each wrapped with the plugin's name, the operation and the type name. The
// plugin's own error text is kept. A panic inside a plugin method arrives as
// an error "plugin panicked: <value>"; the plugin keeps serving.
//
// JobExecutor's Execute is the exception to "cancellation crosses the
// boundary at once": when its ctx ends, it asks the plugin to stop and
// returns only once the plugin's Execute has returned, up to the stop grace
// (see stop.go). Its error then wraps ctx's error and cause, or also
// ErrStopTimeout when the grace passed first. Every other call returns as
// soon as its ctx ends: they are short and the host bounds them with a call
// timeout, and nothing relies on them having stopped in the plugin.
//
// When Execute's ctx carries an spi.Lease, the plugin stops the call at
// the lease's deadline unless the Conn renews it (see lease.go), so that an
// item ends with its session even while the host process is paused; the
// error then wraps context.Canceled and spi.ErrLeaseExpired.
//
// A Conn is safe for concurrent use.
type Conn struct {
	name      string
	client    pb.PluginClient
	done      <-chan struct{}
	stopGrace time.Duration
	log       hclog.Logger // nil: discard
	leases    leaseRenewer
}

// NewConn returns a Conn over cc. name labels errors (the plugin's name or
// path). done, if not nil, is closed when the plugin process has exited;
// calls then fail at once with spi.ErrPluginExited. A cancelled Execute
// waits up to DefaultStopGrace for the plugin to stop.
func NewConn(cc grpc.ClientConnInterface, name string, done <-chan struct{}) *Conn {
	return newConn(cc, name, done, 0)
}

func newConn(cc grpc.ClientConnInterface, name string, done <-chan struct{}, stopGrace time.Duration) *Conn {
	if stopGrace <= 0 {
		stopGrace = DefaultStopGrace
	}
	c := &Conn{name: name, client: pb.NewPluginClient(cc), done: done, stopGrace: stopGrace}
	c.leases.c = c
	return c
}

func (c *Conn) exited() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// precheck fails fast when the process is known to be gone.
func (c *Conn) precheck(op, typeName string) error {
	if c.exited() {
		return c.wrap(op, typeName, &remoteError{msg: spi.ErrPluginExited.Error(), sentinel: spi.ErrPluginExited})
	}
	return nil
}

func (c *Conn) wrap(op, typeName string, err error) error {
	if typeName == "" {
		return fmt.Errorf("plugin %s: %s: %w", c.name, op, err)
	}
	return fmt.Errorf("plugin %s: %s %q: %w", c.name, op, typeName, err)
}

func (c *Conn) fail(ctx context.Context, op, typeName string, err error) error {
	return c.wrap(op, typeName, fromStatus(ctx, err, c.exited()))
}

// Info asks the plugin what it serves. It does not check APIVersion
// (Process.Info does).
func (c *Conn) Info(ctx context.Context) (spi.Info, error) {
	if err := c.precheck("info", ""); err != nil {
		return spi.Info{}, err
	}
	resp, err := c.client.Info(ctx, &pb.InfoRequest{})
	if err != nil {
		return spi.Info{}, c.fail(ctx, "info", "", err)
	}
	return infoFromProto(resp), nil
}

// Call implements Connector: it runs fn on c.
func (c *Conn) Call(ctx context.Context, _ Call, fn func(context.Context, *Conn) error) error {
	return fn(ctx, c)
}

// execute runs the item in the plugin. When ctx ends first, it stops the
// plugin's Execute and waits for it to return (see stop.go).
func (c *Conn) execute(ctx context.Context, typeName string, req spi.ExecuteRequest) (spi.ExecuteResponse, error) {
	j := struct {
		c        *Conn
		typeName string
	}{c, typeName}
	const op = "execute"
	if err := j.c.precheck(op, j.typeName); err != nil {
		return spi.ExecuteResponse{}, err
	}
	if err := ctx.Err(); err != nil {
		if cause := context.Cause(ctx); cause != err {
			err = fmt.Errorf("%w: %w", err, cause)
		}
		return spi.ExecuteResponse{}, j.c.wrap(op, j.typeName, fmt.Errorf("not started: %w", err))
	}
	m := executeRequestToProto(j.typeName, req)
	m.ExecutionId = newExecutionID()
	if dl, ok := ctx.Deadline(); ok {
		m.DeadlineUnixNanos = dl.UnixNano()
	}
	lease, hasLease := spi.LeaseFrom(ctx)
	if hasLease {
		l := lease
		// The plugin stops the call when the lease runs out unless renewed
		// (see lease.go).
		ttl, remove := j.c.leases.add(m.ExecutionId, l)
		defer remove()
		m.LeaseTtlNanos = int64(ttl)
	}
	// The RPC keeps ctx's values but not its cancellation or deadline.
	rpcCtx, cancelRPC := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelRPC()
	type result struct {
		resp *pb.ExecuteResponse
		err  error
	}
	results := make(chan result, 1)
	go func() {
		resp, err := j.c.client.Execute(rpcCtx, m)
		results <- result{resp, err}
	}()

	var r result
	select {
	case r = <-results:
	case <-j.c.done:
		// The process exited; the RPC ends with the connection, or now.
		cancelRPC()
		r = <-results
	case <-ctx.Done():
	}
	if ctx.Err() == nil || r.resp != nil || r.err != nil {
		if r.err != nil {
			if status.Code(r.err) == codes.Canceled && ctx.Err() == nil && m.LeaseTtlNanos != 0 {
				if dl := lease.Deadline(); !dl.IsZero() && !time.Now().Before(dl) {
					// The plugin stopped the call at the lease's deadline:
					// the host did not renew it in time.
					return spi.ExecuteResponse{}, j.c.wrap(op, j.typeName, fmt.Errorf("%w: %w", context.Canceled, spi.ErrLeaseExpired))
				}
			}
			if status.Code(r.err) == codes.DeadlineExceeded {
				// The plugin applied ctx's deadline a moment before ctx's
				// own timer fired here: report it as ctx's.
				if dl, ok := ctx.Deadline(); ok && !time.Now().Before(dl) {
					<-ctx.Done()
				}
			}
			return spi.ExecuteResponse{}, j.c.fail(ctx, op, j.typeName, r.err)
		}
		return executeResponseFromProto(r.resp), nil
	}

	// ctx ended: ask the plugin to stop, and wait for it within the grace.
	grace := j.c.stopGrace
	timer := time.NewTimer(grace)
	defer timer.Stop()
	cancelCtx, cancelCancel := context.WithTimeout(context.WithoutCancel(ctx), grace)
	cancelled := make(chan struct{})
	go func() {
		defer close(cancelled)
		reason := context.Cause(ctx).Error()
		_, err := j.c.client.Cancel(cancelCtx, &pb.CancelRequest{ExecutionId: m.ExecutionId, Reason: reason,
			DeadlineExceeded: m.DeadlineUnixNanos != 0 && errors.Is(ctx.Err(), context.DeadlineExceeded)})
		if status.Code(err) == codes.Unimplemented {
			// A plugin built before Cancel: cancel the RPC, as it
			// always was.
			cancelRPC()
		}
	}()
	defer func() {
		cancelCancel()
		<-cancelled
	}()
	select {
	case r := <-results:
		return spi.ExecuteResponse{}, j.c.wrap(op, j.typeName, c.stopResult(ctx, r.err))
	case <-j.c.done:
		cancelRPC()
		r := <-results
		return spi.ExecuteResponse{}, j.c.wrap(op, j.typeName, c.stopResult(ctx, r.err))
	case <-timer.C:
		cancelRPC()
		<-results
		return spi.ExecuteResponse{}, j.c.wrap(op, j.typeName, stopped(ctx, nil, true, grace))
	}
}

// stopResult is the error of an Execute stopped after ctx ended, from the
// RPC's error (nil: the plugin returned success).
func (c *Conn) stopResult(ctx context.Context, rpcErr error) error {
	if rpcErr == nil {
		return stopped(ctx, nil, false, 0)
	}
	return stopped(ctx, fromStatus(ctx, rpcErr, c.exited()), false, 0)
}
