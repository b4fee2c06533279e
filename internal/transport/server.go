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

// server serves one plugin set over the Plugin gRPC service.
type server struct {
	pb.UnimplementedPluginServer
	plugins spi.Plugins
	execs   *executions
}

// newServerImpl checks p (spi.Plugins.Validate) and serves it.
func newServerImpl(p spi.Plugins) (*server, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return &server{plugins: p, execs: newExecutions()}, nil
}

var _ pb.PluginServer = (*server)(nil)

// NewServer returns a gRPC server serving p the way a plugin process
// does: type routing, error-to-status mapping and panic recovery included.
// Serve uses it inside go-plugin; sdktest serves it over an in-memory
// connection. logger receives recovered panics (nil: discard). opts are
// passed to grpc.NewServer after ejob's own. An invalid p (see
// spi.Plugins.Validate) is an error wrapping spi.ErrInvalidConfig.
func NewServer(p spi.Plugins, logger hclog.Logger, opts ...grpc.ServerOption) (*grpc.Server, error) {
	impl, err := newServerImpl(p)
	if err != nil {
		return nil, err
	}
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	all := append([]grpc.ServerOption{grpc.ChainUnaryInterceptor(recoverInterceptor(logger))}, opts...)
	s := grpc.NewServer(all...)
	pb.RegisterPluginServer(s, impl)
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

// handle serves one call: it resolves the request's type name to an
// implementation of interface I, calls method on it and converts the
// response (toProto) or the error (toStatus).
func handle[I, Req, Resp, PResp any](ctx context.Context, s *server, typeName string,
	method func(I, context.Context, Req) (Resp, error), req Req, toProto func(Resp) *PResp,
) (*PResp, error) {
	impl, err := spi.Resolve[I](s.plugins, typeName)
	if err != nil {
		return nil, toStatus(err)
	}
	resp, err := method(impl, ctx, req)
	if err != nil {
		return nil, toStatus(err)
	}
	return toProto(resp), nil
}

// noResponse adapts a method that returns only an error to handle.
func noResponse[I, Req any](method func(I, context.Context, Req) error) func(I, context.Context, Req) (struct{}, error) {
	return func(impl I, ctx context.Context, req Req) (struct{}, error) {
		return struct{}{}, method(impl, ctx, req)
	}
}

// empty is the toProto of a response without fields.
func empty[PResp any](struct{}) *PResp { return new(PResp) }

func (s *server) Info(context.Context, *pb.InfoRequest) (*pb.InfoResponse, error) {
	return infoToProto(s.plugins.Info()), nil
}

func (s *server) Sharding(ctx context.Context, req *pb.ShardingRequest) (*pb.ShardingResponse, error) {
	return handle(ctx, s, req.GetType(), spi.ShardingStrategy.Sharding, shardingRequestFromProto(req), shardingResponseToProto)
}

func (s *server) HandleError(ctx context.Context, req *pb.HandleErrorRequest) (*pb.HandleErrorResponse, error) {
	return handle(ctx, s, req.GetType(), spi.ErrorHandler.HandleError, handleErrorRequestFromProto(req), handleErrorResponseToProto)
}

func (s *server) ValidateErrorHandler(ctx context.Context, req *pb.ValidatePropsRequest) (*pb.ValidatePropsResponse, error) {
	return handle(ctx, s, req.GetType(), noResponse(spi.ErrorHandler.Validate), validatePropsRequestFromProto(req), empty[pb.ValidatePropsResponse])
}

// Execute runs the item. When the request carries an execution id (every
// host of this protocol sends one), the host stops the call with Cancel
// and keeps the RPC open until it returns; the caller's deadline and the
// execution lease travel in the request (see stop.go and lease.go).
func (s *server) Execute(ctx context.Context, req *pb.ExecuteRequest) (*pb.ExecuteResponse, error) {
	if id := req.GetExecutionId(); id != "" {
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
		x.live = new(spi.LiveOutput)
		ctx = spi.WithLiveOutput(ctx, x.live)
		defer s.execs.start(id, x)()
	}
	impl, err := spi.Resolve[spi.JobExecutor](s.plugins, req.GetType())
	if err != nil {
		return nil, toStatus(err)
	}
	resp, err := impl.Execute(ctx, executeRequestFromProto(req))
	if err != nil {
		return nil, withOutput(toStatus(err), resp.Output)
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
	return handle(ctx, s, req.GetType(), noResponse(spi.JobExecutor.Validate), validatePropsRequestFromProto(req), empty[pb.ValidatePropsResponse])
}

func (s *server) PoolSize(ctx context.Context, req *pb.PoolSizeRequest) (*pb.PoolSizeResponse, error) {
	return handle(ctx, s, req.GetType(), spi.ThreadPoolSizeProvider.PoolSize, poolSizeRequestFromProto(req), poolSizeResponseToProto)
}

func (s *server) DescribeJobListener(ctx context.Context, req *pb.ListenerDescribeRequest) (*pb.ListenerDescription, error) {
	return handle(ctx, s, req.GetType(), spi.JobListener.Describe, listenerDescribeRequestFromProto(req), listenerDescriptionToProto)
}

func (s *server) BeforeJobExecuted(ctx context.Context, req *pb.ListenerRequest) (*pb.ListenerResponse, error) {
	return handle(ctx, s, req.GetType(), noResponse(spi.JobListener.BeforeJobExecuted), listenerRequestFromProto(req), empty[pb.ListenerResponse])
}

func (s *server) AfterJobExecuted(ctx context.Context, req *pb.ListenerRequest) (*pb.ListenerResponse, error) {
	return handle(ctx, s, req.GetType(), noResponse(spi.JobListener.AfterJobExecuted), listenerRequestFromProto(req), empty[pb.ListenerResponse])
}

func (s *server) ValidateTracing(ctx context.Context, req *pb.TraceValidateRequest) (*pb.TraceValidateResponse, error) {
	return handle(ctx, s, req.GetType(), noResponse(spi.Tracer.Validate), traceValidateRequestFromProto(req), empty[pb.TraceValidateResponse])
}

func (s *server) WriteTraces(ctx context.Context, req *pb.TraceWriteRequest) (*pb.TraceWriteResponse, error) {
	return handle(ctx, s, req.GetType(), spi.Tracer.Write, traceWriteRequestFromProto(req), traceWriteResponseToProto)
}

func (s *server) QueryExecutions(ctx context.Context, req *pb.ExecutionQuery) (*pb.ExecutionPage, error) {
	return handle(ctx, s, req.GetType(), spi.Tracer.QueryExecutions, executionQueryFromProto(req), executionPageToProto)
}

func (s *server) QueryStatuses(ctx context.Context, req *pb.StatusQuery) (*pb.StatusPage, error) {
	return handle(ctx, s, req.GetType(), spi.Tracer.QueryStatuses, statusQueryFromProto(req), statusPageToProto)
}

// PeekOutput returns the output so far of a running Execute.
func (s *server) PeekOutput(ctx context.Context, req *pb.PeekOutputRequest) (*pb.OutputResult, error) {
	live := s.execs.live(req.GetExecutionId())
	if live == nil {
		return &pb.OutputResult{}, nil
	}
	o, err := live.Snapshot(ctx)
	if err != nil {
		return nil, toStatus(err)
	}
	return &pb.OutputResult{Found: true, Output: outputToProto(o)}, nil
}

func (s *server) QueryOutput(ctx context.Context, req *pb.OutputQuery) (*pb.OutputResult, error) {
	return handle(ctx, s, req.GetType(), spi.Tracer.QueryOutput, outputQueryFromProto(req), outputResultToProto)
}

func (s *server) PurgeTraces(ctx context.Context, req *pb.TracePurgeRequest) (*pb.TracePurgeResponse, error) {
	return handle(ctx, s, req.GetType(), spi.Tracer.Purge, tracePurgeRequestFromProto(req), tracePurgeResponseToProto)
}

func (s *server) DistinctTraces(ctx context.Context, req *pb.DistinctQuery) (*pb.DistinctValues, error) {
	return handle(ctx, s, req.GetType(), spi.Tracer.Distinct, distinctQueryFromProto(req), distinctValuesToProto)
}

// statisticsStore is the tracer's spi.StatisticsStore, or an error
// wrapping spi.ErrUnsupported when the tracer keeps no statistics.
func statisticsStore(t spi.Tracer) (spi.StatisticsStore, error) {
	st, ok := t.(spi.StatisticsStore)
	if !ok {
		return nil, fmt.Errorf("%w: the tracer (%T) keeps no statistics tables", spi.ErrUnsupported, t)
	}
	return st, nil
}

func (s *server) AddStatistics(ctx context.Context, req *pb.StatisticsAddRequest) (*pb.StatisticsAddResponse, error) {
	add := func(t spi.Tracer, ctx context.Context, r spi.StatisticsAddRequest) (spi.StatisticsAddResponse, error) {
		st, err := statisticsStore(t)
		if err != nil {
			return spi.StatisticsAddResponse{}, err
		}
		return st.AddStatistics(ctx, r)
	}
	return handle(ctx, s, req.GetType(), add, statisticsAddRequestFromProto(req), func(spi.StatisticsAddResponse) *pb.StatisticsAddResponse { return &pb.StatisticsAddResponse{} })
}

func (s *server) QueryStatistics(ctx context.Context, req *pb.StatisticsQuery) (*pb.StatisticsPage, error) {
	query := func(t spi.Tracer, ctx context.Context, q spi.StatisticsQuery) (spi.StatisticsPage, error) {
		st, err := statisticsStore(t)
		if err != nil {
			return spi.StatisticsPage{}, err
		}
		return st.QueryStatistics(ctx, q)
	}
	return handle(ctx, s, req.GetType(), query, statisticsQueryFromProto(req), statisticsPageToProto)
}

func (s *server) ValidateLauncher(ctx context.Context, req *pb.LaunchValidateRequest) (*pb.LaunchValidateResponse, error) {
	return handle(ctx, s, req.GetType(), noResponse(spi.Launcher.Validate), launchValidateRequestFromProto(req), empty[pb.LaunchValidateResponse])
}

func (s *server) Launch(ctx context.Context, req *pb.LaunchRequest) (*pb.LaunchResponse, error) {
	return handle(ctx, s, req.GetType(), spi.Launcher.Launch, launchRequestFromProto(req), func(spi.LaunchResponse) *pb.LaunchResponse { return &pb.LaunchResponse{} })
}

func (s *server) ListLaunched(ctx context.Context, req *pb.LaunchListRequest) (*pb.LaunchList, error) {
	return handle(ctx, s, req.GetType(), spi.Launcher.List, launchListRequestFromProto(req), launchListToProto)
}

func (s *server) StopLaunched(ctx context.Context, req *pb.LaunchStopRequest) (*pb.LaunchStopResponse, error) {
	return handle(ctx, s, req.GetType(), spi.Launcher.Stop, launchStopRequestFromProto(req), launchStopResponseToProto)
}
