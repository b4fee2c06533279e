package transport

import (
	"context"
	"errors"
	"fmt"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/ejob-io/ejob/internal/transport/pluginpb"
	"github.com/ejob-io/ejob/spi"
)

// execute runs one item in the plugin: it starts the Execute RPC, waits
// for it or, when ctx ends first, stops it (see stop.go).
func (c *Conn) execute(ctx context.Context, typeName string, req spi.ExecuteRequest) (spi.ExecuteResponse, error) {
	const op = "execute"
	if err := c.precheck(op, typeName); err != nil {
		return spi.ExecuteResponse{}, err
	}
	if err := ctx.Err(); err != nil {
		if cause := context.Cause(ctx); cause != err {
			err = fmt.Errorf("%w: %w", err, cause)
		}
		return spi.ExecuteResponse{}, c.wrap(op, typeName, fmt.Errorf("not started: %w", err))
	}
	x := c.startExecution(ctx, typeName, req)
	defer x.end()
	resp, err := x.waitOrStop(ctx)
	if err != nil {
		return resp, c.wrap(op, typeName, err)
	}
	return resp, nil
}

// remoteExecution is one Execute RPC in flight, run under a ctx detached from
// its caller's (see stop.go).
type remoteExecution struct {
	c       *Conn
	req     *pb.ExecuteRequest
	lease   spi.Lease // nil: none sent
	results chan executeResult
	// cancelRPC cancels the RPC itself: only once the process is gone or
	// the stop grace has passed.
	cancelRPC context.CancelFunc
	// removeLease stops renewing the execution's lease.
	removeLease func()
}

type executeResult struct {
	resp *pb.ExecuteResponse
	err  error
}

// startExecution sends the Execute RPC with a new execution id, ctx's
// deadline and, when ctx carries an spi.Lease, the lease's time to live;
// the lease is renewed until end.
func (c *Conn) startExecution(ctx context.Context, typeName string, req spi.ExecuteRequest) *remoteExecution {
	x := &remoteExecution{c: c, req: executeRequestToProto(typeName, req), results: make(chan executeResult, 1), removeLease: func() {}}
	x.req.ExecutionId = newExecutionID()
	if dl, ok := ctx.Deadline(); ok {
		x.req.DeadlineUnixNanos = dl.UnixNano()
	}
	if lease, ok := spi.LeaseFrom(ctx); ok {
		// The plugin stops the call when the lease runs out unless renewed
		// (see lease.go).
		var ttl time.Duration
		ttl, x.removeLease = c.leases.add(x.req.ExecutionId, lease)
		if ttl != 0 {
			x.lease, x.req.LeaseTtlNanos = lease, int64(ttl)
		}
	}
	if live := spi.LiveOutputFrom(ctx); live != nil {
		// The host reads a running item's output from the plugin.
		id := x.req.ExecutionId
		live.SetFetch(func(ctx context.Context) (spi.Output, error) {
			r, err := c.client.PeekOutput(ctx, &pb.PeekOutputRequest{ExecutionId: id})
			if err != nil {
				return spi.Output{}, fromStatus(ctx, err, c.exited())
			}
			return outputFromProto(r.GetOutput()), nil
		})
	}
	// The RPC keeps ctx's values but not its cancellation or deadline.
	var rpcCtx context.Context
	rpcCtx, x.cancelRPC = context.WithCancel(context.WithoutCancel(ctx))
	go func() {
		resp, err := c.client.Execute(rpcCtx, x.req)
		x.results <- executeResult{resp, err}
	}()
	return x
}

// end releases what the execution holds once its result is known.
func (x *remoteExecution) end() {
	x.cancelRPC()
	x.removeLease()
}

// waitOrStop waits for the RPC to return, or for the process to exit, or
// for ctx to end; then the plugin is asked to stop the execution. The
// response carries the item's output also when the error is not nil.
func (x *remoteExecution) waitOrStop(ctx context.Context) (spi.ExecuteResponse, error) {
	select {
	case r := <-x.results:
		return x.result(ctx, r)
	case <-x.c.done:
		// The process exited; the RPC ends with the connection, or now.
		x.cancelRPC()
		return x.result(ctx, <-x.results)
	case <-ctx.Done():
		return x.stop(ctx)
	}
}

// result maps the outcome of an RPC that returned by itself.
func (x *remoteExecution) result(ctx context.Context, r executeResult) (spi.ExecuteResponse, error) {
	if r.err == nil {
		return executeResponseFromProto(r.resp), nil
	}
	resp := spi.ExecuteResponse{Output: outputOf(r.err)}
	switch status.Code(r.err) {
	case codes.Canceled:
		if ctx.Err() == nil && x.lease != nil {
			if dl := x.lease.Deadline(); !dl.IsZero() && !time.Now().Before(dl) {
				// The plugin stopped the call at the lease's deadline: the
				// host did not renew it in time.
				return resp, fmt.Errorf("%w: %w", context.Canceled, spi.ErrLeaseExpired)
			}
		}
	case codes.DeadlineExceeded:
		// The plugin applied ctx's deadline a moment before ctx's own timer
		// fired here: report it as ctx's.
		if dl, ok := ctx.Deadline(); ok && !time.Now().Before(dl) {
			<-ctx.Done()
		}
	}
	return resp, fromStatus(ctx, r.err, x.c.exited())
}

// stop asks the plugin to stop the execution, ctx having ended, and waits
// for its Execute to return within the stop grace. It returns the
// execution's error (see stopped) and its output, if the plugin returned
// in time.
func (x *remoteExecution) stop(ctx context.Context) (spi.ExecuteResponse, error) {
	grace := x.c.stopGrace
	cancelCtx, cancelCancel := context.WithTimeout(context.WithoutCancel(ctx), grace)
	cancelled := make(chan struct{})
	go func() {
		defer close(cancelled)
		// A failed Cancel (the plugin busy or gone) leaves the execution to
		// the grace below.
		_, _ = x.c.client.Cancel(cancelCtx, &pb.CancelRequest{
			ExecutionId:      x.req.ExecutionId,
			Reason:           context.Cause(ctx).Error(),
			DeadlineExceeded: x.req.DeadlineUnixNanos != 0 && errors.Is(ctx.Err(), context.DeadlineExceeded),
		})
	}()
	defer func() {
		cancelCancel()
		<-cancelled
	}()
	timer := time.NewTimer(grace)
	defer timer.Stop()
	select {
	case r := <-x.results:
		return x.stopResult(ctx, r)
	case <-x.c.done:
		x.cancelRPC()
		return x.stopResult(ctx, <-x.results)
	case <-timer.C:
		x.cancelRPC()
		<-x.results
		return spi.ExecuteResponse{}, stopped(ctx, nil, true, grace)
	}
}

// stopResult is the outcome of an Execute stopped after ctx ended, from the
// RPC's result (a nil error: the plugin returned success).
func (x *remoteExecution) stopResult(ctx context.Context, r executeResult) (spi.ExecuteResponse, error) {
	if r.err == nil {
		return executeResponseFromProto(r.resp), stopped(ctx, nil, false, 0)
	}
	return spi.ExecuteResponse{Output: outputOf(r.err)}, stopped(ctx, fromStatus(ctx, r.err, x.c.exited()), false, 0)
}
