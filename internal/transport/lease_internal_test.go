package transport

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	pb "github.com/ejob-io/ejob/internal/transport/pluginpb"
	"github.com/ejob-io/ejob/spi"
)

// TestLeaseTimer: a lease renewed before it ends runs on; one that is not
// ends exactly its ttl after the last renewal, with cause
// spi.ErrLeaseExpired, and cannot be renewed any more. On synctest's clock.
func TestLeaseTimer(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		const ttl = 50 * time.Millisecond
		ctx, cancel := context.WithCancelCause(t.Context())
		lt := startLease(ttl, cancel)
		var last time.Time
		for range 5 {
			time.Sleep(ttl - time.Millisecond)
			if !lt.renew(ttl) {
				t.Fatal("renew of a live lease failed")
			}
			last = time.Now()
		}
		synctest.Wait()
		if ctx.Err() != nil {
			t.Fatal("a renewed lease expired")
		}
		<-ctx.Done()
		if d := time.Since(last); d != ttl {
			t.Errorf("expired %v after the last renewal, want %v", d, ttl)
		}
		if !errors.Is(context.Cause(ctx), spi.ErrLeaseExpired) {
			t.Errorf("cause = %v", context.Cause(ctx))
		}
		if lt.renew(time.Minute) {
			t.Error("renew of an expired lease succeeded")
		}
	})
}

// TestLeaseFrozenHost: while its host renews an execution's lease, the
// plugin runs it past many lease periods; once the host is frozen (a
// stopped process: nothing it sends arrives), the plugin cancels the
// execution exactly one lease after the last renewal that arrived, with
// cause spi.ErrLeaseExpired, and the host's Execute reports it. The host's
// Conn and the plugin's server run in one synctest bubble, connected
// without a network (directConn), on synctest's clock.
func TestLeaseFrozenHost(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		const lease = 300 * time.Millisecond
		job := &leasedJob{started: make(chan struct{}), ended: make(chan struct{})}
		srv, err := newServerImpl(spi.Plugins{JobTypes: map[string]spi.JobExecutor{"LEASED": job}})
		if err != nil {
			t.Fatal(err)
		}
		cc := &directConn{srv: srv}
		conn := newConn(cc, "leasetest", nil, 0)
		// The host's lease moves on while it hears from its registry,
		// which a frozen host does not.
		var deadline time.Time
		ctx := spi.WithLease(t.Context(), spi.LeaseFunc(func() time.Time {
			if !cc.frozen.Load() {
				deadline = time.Now().Add(lease)
			}
			return deadline
		}))
		errc := make(chan error, 1)
		go func() {
			_, err := conn.JobExecutor("LEASED").Execute(ctx, spi.ExecuteRequest{Context: spi.ShardingContext{JobName: "leased"}})
			errc <- err
		}()
		<-job.started

		time.Sleep(10 * lease) // renewed all along
		synctest.Wait()
		select {
		case <-job.ended:
			t.Fatalf("the plugin ended a renewed execution: %v", job.cause)
		default:
		}

		cc.frozen.Store(true)
		<-job.ended
		if !errors.Is(job.cause, spi.ErrLeaseExpired) {
			t.Errorf("plugin's ctx cause = %v, want %v", job.cause, spi.ErrLeaseExpired)
		}
		if d := job.at.Sub(cc.lastRenewal()); d != lease {
			t.Errorf("plugin cancelled %v after the last renewal it received, want the lease (%v)", d, lease)
		}
		if err := <-errc; !errors.Is(err, context.Canceled) || !errors.Is(err, spi.ErrLeaseExpired) {
			t.Errorf("Execute = %v, want context.Canceled and spi.ErrLeaseExpired", err)
		}
		// The renewal goroutine ends at its next period (the bubble's
		// clock stops when this function returns).
		time.Sleep(2 * leaseMaxPeriod)
	})
}

// leasedJob waits for its ctx and records when and why it ended.
type leasedJob struct {
	started, ended chan struct{}
	at             time.Time
	cause          error
}

func (j *leasedJob) Execute(ctx context.Context, _ spi.ExecuteRequest) (spi.ExecuteResponse, error) {
	close(j.started)
	<-ctx.Done()
	j.at, j.cause = time.Now(), context.Cause(ctx)
	close(j.ended)
	return spi.ExecuteResponse{}, ctx.Err()
}

func (j *leasedJob) Validate(context.Context, spi.ValidatePropsRequest) error { return nil }

// directConn is a grpc.ClientConnInterface that calls a plugin server's
// handlers in-process, without a network, so that every goroutine of a
// test stays in its synctest bubble. A call whose ctx ends returns at once
// with the ctx's status, as over gRPC. While frozen, calls do not reach
// the server (as from a stopped host process): they wait for their ctx.
type directConn struct {
	srv     pb.PluginServer
	frozen  atomic.Bool
	renewal atomic.Int64 // unix nanos of the last RenewLease that reached srv
}

func (d *directConn) lastRenewal() time.Time { return time.Unix(0, d.renewal.Load()) }

func (d *directConn) Invoke(ctx context.Context, method string, args, reply any, _ ...grpc.CallOption) error {
	if d.frozen.Load() {
		<-ctx.Done()
		return status.FromContextError(ctx.Err()).Err()
	}
	var handler grpc.MethodHandler
	for _, m := range pb.Plugin_ServiceDesc.Methods {
		if method == "/"+pb.Plugin_ServiceDesc.ServiceName+"/"+m.MethodName {
			handler = m.Handler
		}
	}
	if handler == nil {
		return status.Errorf(codes.Unimplemented, "unknown method %s", method)
	}
	if method == pb.Plugin_RenewLease_FullMethodName {
		d.renewal.Store(time.Now().UnixNano())
	}
	type result struct {
		resp any
		err  error
	}
	done := make(chan result, 1)
	go func() {
		dec := func(in any) error {
			proto.Merge(in.(proto.Message), args.(proto.Message))
			return nil
		}
		resp, err := handler(d.srv, ctx, dec, nil)
		done <- result{resp, err}
	}()
	select {
	case r := <-done:
		if r.err != nil {
			return r.err
		}
		proto.Merge(reply.(proto.Message), r.resp.(proto.Message))
		return nil
	case <-ctx.Done():
		return status.FromContextError(ctx.Err()).Err()
	}
}

func (d *directConn) NewStream(context.Context, *grpc.StreamDesc, string, ...grpc.CallOption) (grpc.ClientStream, error) {
	return nil, status.Error(codes.Unimplemented, "directConn: no streams")
}
