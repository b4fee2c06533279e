package transport

import (
	"context"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/hashicorp/go-hclog"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/ejob-io/ejob/internal/transport/pluginpb"
	"github.com/ejob-io/ejob/spi"
)

// server serves one Implementations over the Plugin gRPC service.
type server struct {
	pb.UnimplementedPluginServer
	r     *router
	execs *executions
}

func newServerImpl(r *router) *server { return &server{r: r, execs: newExecutions()} }

var _ pb.PluginServer = (*server)(nil)

// NewServer returns a gRPC server serving impls the way a plugin process
// does: type routing, error-to-status mapping and panic recovery included.
// Serve uses it inside go-plugin; sdktest serves it over an in-memory
// connection. logger receives recovered panics (nil: discard). opts are
// passed to grpc.NewServer after ejob's own.
func NewServer(impls Implementations, logger hclog.Logger, opts ...grpc.ServerOption) (*grpc.Server, error) {
	r, err := newRouter(impls)
	if err != nil {
		return nil, err
	}
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	all := append([]grpc.ServerOption{grpc.ChainUnaryInterceptor(recoverInterceptor(logger))}, opts...)
	s := grpc.NewServer(all...)
	pb.RegisterPluginServer(s, newServerImpl(r))
	return s, nil
}

// recoverInterceptor turns a panic in a handler into codes.Internal
// "plugin panicked: <value>", logging the stack; the process keeps serving.
func recoverInterceptor(logger hclog.Logger) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (resp any, err error) {
		defer func() {
			if v := recover(); v != nil {
				logger.Error("plugin panicked", "method", info.FullMethod, "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
				resp, err = nil, status.Errorf(codes.Internal, "plugin panicked: %v", v)
			}
		}()
		return handler(ctx, req)
	}
}

func (s *server) Info(context.Context, *pb.InfoRequest) (*pb.InfoResponse, error) {
	return infoToProto(s.r.info), nil
}

func (s *server) Sharding(ctx context.Context, req *pb.ShardingRequest) (*pb.ShardingResponse, error) {
	impl, err := lookup(s.r, s.r.sharding, spi.KindSharding, req.GetType())
	if err != nil {
		return nil, toStatus(err)
	}
	resp, err := impl.Sharding(ctx, shardingRequestFromProto(req))
	if err != nil {
		return nil, toStatus(err)
	}
	return shardingResponseToProto(resp), nil
}

func (s *server) HandleError(ctx context.Context, req *pb.HandleErrorRequest) (*pb.HandleErrorResponse, error) {
	impl, err := lookup(s.r, s.r.errorHandlers, spi.KindErrorHandler, req.GetType())
	if err != nil {
		return nil, toStatus(err)
	}
	resp, err := impl.HandleError(ctx, handleErrorRequestFromProto(req))
	if err != nil {
		return nil, toStatus(err)
	}
	return handleErrorResponseToProto(resp), nil
}

func (s *server) ValidateErrorHandler(ctx context.Context, req *pb.ValidatePropsRequest) (*pb.ValidatePropsResponse, error) {
	impl, err := lookup(s.r, s.r.errorHandlers, spi.KindErrorHandler, req.GetType())
	if err != nil {
		return nil, toStatus(err)
	}
	if err := impl.Validate(ctx, validatePropsRequestFromProto(req)); err != nil {
		return nil, toStatus(err)
	}
	return &pb.ValidatePropsResponse{}, nil
}

func (s *server) Execute(ctx context.Context, req *pb.ExecuteRequest) (*pb.ExecuteResponse, error) {
	impl, err := lookup(s.r, s.r.jobTypes, spi.KindJobType, req.GetType())
	if err != nil {
		return nil, toStatus(err)
	}
	if id := req.GetExecutionId(); id != "" {
		// The host stops this call with Cancel(id) and keeps the RPC open
		// until it returns; the caller's deadline travels in the request.
		var x execution
		ctx, x.cancel = context.WithCancelCause(ctx)
		defer x.cancel(nil)
		if dl := req.GetDeadlineUnixNanos(); dl != 0 {
			var cancelDL context.CancelFunc
			x.deadline = time.Unix(0, dl)
			ctx, cancelDL = context.WithDeadline(ctx, x.deadline)
			defer cancelDL()
		}
		if ttl := req.GetLeaseTtlNanos(); ttl != 0 {
			// The host renews the lease with RenewLease while it is alive;
			// when it stops (paused, frozen), the call ends at the lease.
			x.lease = startLease(time.Duration(ttl), x.cancel)
			defer x.lease.stop()
		}
		defer s.execs.start(id, x)()
	}
	resp, err := impl.Execute(ctx, executeRequestFromProto(req))
	if err != nil {
		return nil, toStatus(err)
	}
	return executeResponseToProto(resp), nil
}

// Cancel cancels the running Execute with the request's execution id (see
// stop.go). It does not wait for that Execute to return.
func (s *server) Cancel(_ context.Context, req *pb.CancelRequest) (*pb.CancelResponse, error) {
	if req.GetExecutionId() == "" {
		return nil, status.Error(codes.InvalidArgument, "cancel: empty execution id")
	}
	running := s.execs.cancel(req.GetExecutionId(), cancelCause(req.GetReason()), req.GetDeadlineExceeded())
	return &pb.CancelResponse{Running: running}, nil
}

// RenewLease extends the leases of running Execute calls (see lease.go).
func (s *server) RenewLease(_ context.Context, req *pb.RenewLeaseRequest) (*pb.RenewLeaseResponse, error) {
	resp := &pb.RenewLeaseResponse{}
	for _, r := range req.GetRenewals() {
		if !s.execs.renew(r.GetExecutionId(), time.Duration(r.GetTtlNanos())) {
			resp.Unknown = append(resp.Unknown, r.GetExecutionId())
		}
	}
	return resp, nil
}

func (s *server) ValidateJobType(ctx context.Context, req *pb.ValidatePropsRequest) (*pb.ValidatePropsResponse, error) {
	impl, err := lookup(s.r, s.r.jobTypes, spi.KindJobType, req.GetType())
	if err != nil {
		return nil, toStatus(err)
	}
	if err := impl.Validate(ctx, validatePropsRequestFromProto(req)); err != nil {
		return nil, toStatus(err)
	}
	return &pb.ValidatePropsResponse{}, nil
}

func (s *server) PoolSize(ctx context.Context, req *pb.PoolSizeRequest) (*pb.PoolSizeResponse, error) {
	impl, err := lookup(s.r, s.r.threadPools, spi.KindThreadPool, req.GetType())
	if err != nil {
		return nil, toStatus(err)
	}
	resp, err := impl.PoolSize(ctx, poolSizeRequestFromProto(req))
	if err != nil {
		return nil, toStatus(err)
	}
	return poolSizeResponseToProto(resp), nil
}

func (s *server) DescribeJobListener(ctx context.Context, req *pb.ListenerDescribeRequest) (*pb.ListenerDescription, error) {
	impl, err := lookup(s.r, s.r.jobListeners, spi.KindJobListener, req.GetType())
	if err != nil {
		return nil, toStatus(err)
	}
	resp, err := impl.Describe(ctx, listenerDescribeRequestFromProto(req))
	if err != nil {
		return nil, toStatus(err)
	}
	return listenerDescriptionToProto(resp), nil
}

func (s *server) BeforeJobExecuted(ctx context.Context, req *pb.ListenerRequest) (*pb.ListenerResponse, error) {
	impl, err := lookup(s.r, s.r.jobListeners, spi.KindJobListener, req.GetType())
	if err != nil {
		return nil, toStatus(err)
	}
	if err := impl.BeforeJobExecuted(ctx, listenerRequestFromProto(req)); err != nil {
		return nil, toStatus(err)
	}
	return &pb.ListenerResponse{}, nil
}

func (s *server) AfterJobExecuted(ctx context.Context, req *pb.ListenerRequest) (*pb.ListenerResponse, error) {
	impl, err := lookup(s.r, s.r.jobListeners, spi.KindJobListener, req.GetType())
	if err != nil {
		return nil, toStatus(err)
	}
	if err := impl.AfterJobExecuted(ctx, listenerRequestFromProto(req)); err != nil {
		return nil, toStatus(err)
	}
	return &pb.ListenerResponse{}, nil
}
