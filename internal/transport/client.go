package transport

import (
	"context"
	"fmt"

	"google.golang.org/grpc"

	pb "github.com/ejob-io/ejob/internal/transport/pluginpb"
	"github.com/ejob-io/ejob/spi"
)

// A Connector runs each call of a client on a connection to the plugin. A
// *Conn runs them on itself. The host's plugin supervisor runs them on the
// plugin's current process (launching or relaunching it), bounds the short
// ones with its call timeout and acts on their errors: it relaunches the
// process after spi.ErrPluginExited and kills it after ErrStopTimeout.
type Connector interface {
	// Call runs fn on a connection and returns fn's error. fn maps every
	// error as Conn documents.
	Call(ctx context.Context, call Call, fn func(ctx context.Context, conn *Conn) error) error
}

// Call describes one call of a client to its Connector.
type Call struct {
	// Op is the operation ("sharding", "execute", ...) and Type the type
	// name called.
	Op, Type string
	// Long marks a JobExecutor's Execute: it runs as long as its ctx
	// allows (the job's execution timeout), so a Connector must not bound
	// it with a call timeout. When its ctx ends it returns only once the
	// plugin has stopped the item, or with an error wrapping
	// ErrStopTimeout (see stop.go). Every other call is short.
	Long bool
	// Attrs are key/value pairs that identify the call in the
	// Connector's logs (Execute: the job and the item).
	Attrs []any
}

// NewClient returns the client of the plugin's implementation of kind
// named typeName, whose calls run through conn: an spi.ShardingStrategy
// for spi.KindSharding, an spi.ErrorHandler for spi.KindErrorHandler, and
// so on (see spi.Resolver). It does not check that the plugin serves the
// type; a call for a type it does not serve fails with an error wrapping
// spi.ErrUnknownType. An unknown kind is an error wrapping
// spi.ErrUnknownType.
func NewClient(conn Connector, kind spi.Kind, typeName string) (any, error) {
	c := client{conn: conn, typeName: typeName}
	switch kind {
	case spi.KindSharding:
		return shardingClient(c), nil
	case spi.KindErrorHandler:
		return errorHandlerClient(c), nil
	case spi.KindJobType:
		return jobExecutorClient(c), nil
	case spi.KindThreadPool:
		return threadPoolClient(c), nil
	case spi.KindJobListener:
		return jobListenerClient(c), nil
	case spi.KindTracing:
		return tracerClient(c), nil
	case spi.KindLauncher:
		return launcherClient(c), nil
	}
	return nil, fmt.Errorf("%w: no kind %q in this transport", spi.ErrUnknownType, kind)
}

// ShardingStrategy returns the plugin's sharding strategy typeName.
func (c *Conn) ShardingStrategy(typeName string) spi.ShardingStrategy {
	return shardingClient{conn: c, typeName: typeName}
}

// ErrorHandler returns the plugin's error handler typeName.
func (c *Conn) ErrorHandler(typeName string) spi.ErrorHandler {
	return errorHandlerClient{conn: c, typeName: typeName}
}

// JobExecutor returns the plugin's job type typeName.
func (c *Conn) JobExecutor(typeName string) spi.JobExecutor {
	return jobExecutorClient{conn: c, typeName: typeName}
}

// ThreadPoolSizeProvider returns the plugin's thread-pool size provider
// typeName.
func (c *Conn) ThreadPoolSizeProvider(typeName string) spi.ThreadPoolSizeProvider {
	return threadPoolClient{conn: c, typeName: typeName}
}

// JobListener returns the plugin's job listener typeName.
func (c *Conn) JobListener(typeName string) spi.JobListener {
	return jobListenerClient{conn: c, typeName: typeName}
}

// Tracer returns the plugin's tracing sink typeName.
func (c *Conn) Tracer(typeName string) spi.Tracer {
	return tracerClient{conn: c, typeName: typeName}
}

// Launcher returns the plugin's launcher typeName.
func (c *Conn) Launcher(typeName string) spi.Launcher {
	return launcherClient{conn: c, typeName: typeName}
}

// client is what the clients of every kind are made of: the type name they
// call and the Connector their calls run through.
type client struct {
	conn     Connector
	typeName string
}

// unary makes one short call: the plugin's rpc with req, the response
// converted by fromProto, errors mapped as Conn documents.
func unary[PReq, PResp, Resp any](ctx context.Context, c client, op string,
	rpc func(pb.PluginClient, context.Context, *PReq, ...grpc.CallOption) (*PResp, error),
	req *PReq, fromProto func(*PResp) Resp,
) (Resp, error) {
	var resp Resp
	err := c.conn.Call(ctx, Call{Op: op, Type: c.typeName}, func(ctx context.Context, conn *Conn) error {
		if err := conn.precheck(op, c.typeName); err != nil {
			return err
		}
		r, err := rpc(conn.client, ctx, req)
		if err != nil {
			return conn.fail(ctx, op, c.typeName, err)
		}
		resp = fromProto(r)
		return nil
	})
	return resp, err
}

// ignore is the fromProto of a call whose response carries nothing.
func ignore[PResp any](*PResp) struct{} { return struct{}{} }

type shardingClient client

var _ spi.ShardingStrategy = shardingClient{}

func (s shardingClient) Sharding(ctx context.Context, req spi.ShardingRequest) (spi.ShardingResponse, error) {
	return unary(ctx, client(s), "sharding", pb.PluginClient.Sharding, shardingRequestToProto(s.typeName, req), shardingResponseFromProto)
}

type errorHandlerClient client

var _ spi.ErrorHandler = errorHandlerClient{}

func (h errorHandlerClient) HandleError(ctx context.Context, req spi.HandleErrorRequest) (spi.HandleErrorResponse, error) {
	return unary(ctx, client(h), "handle error", pb.PluginClient.HandleError, handleErrorRequestToProto(h.typeName, req), handleErrorResponseFromProto)
}

func (h errorHandlerClient) Validate(ctx context.Context, req spi.ValidatePropsRequest) error {
	_, err := unary(ctx, client(h), "validate error handler", pb.PluginClient.ValidateErrorHandler, validatePropsRequestToProto(h.typeName, req), ignore)
	return err
}

type jobExecutorClient client

var _ spi.JobExecutor = jobExecutorClient{}

// Execute runs the item in the plugin. When ctx ends first, it stops the
// plugin's Execute and waits for it to return (see stop.go).
func (j jobExecutorClient) Execute(ctx context.Context, req spi.ExecuteRequest) (spi.ExecuteResponse, error) {
	var resp spi.ExecuteResponse
	call := Call{Op: "execute", Type: j.typeName, Long: true, Attrs: []any{"job", req.Context.JobName, "item", req.Context.ShardingItem}}
	err := j.conn.Call(ctx, call, func(ctx context.Context, conn *Conn) (err error) {
		resp, err = conn.execute(ctx, j.typeName, req)
		return err
	})
	return resp, err
}

func (j jobExecutorClient) Validate(ctx context.Context, req spi.ValidatePropsRequest) error {
	_, err := unary(ctx, client(j), "validate job type", pb.PluginClient.ValidateJobType, validatePropsRequestToProto(j.typeName, req), ignore)
	return err
}

type threadPoolClient client

var _ spi.ThreadPoolSizeProvider = threadPoolClient{}

func (t threadPoolClient) PoolSize(ctx context.Context, req spi.PoolSizeRequest) (spi.PoolSizeResponse, error) {
	return unary(ctx, client(t), "pool size", pb.PluginClient.PoolSize, poolSizeRequestToProto(t.typeName, req), poolSizeResponseFromProto)
}

type jobListenerClient client

var _ spi.JobListener = jobListenerClient{}

func (l jobListenerClient) Describe(ctx context.Context, req spi.ListenerDescribeRequest) (spi.ListenerDescription, error) {
	return unary(ctx, client(l), "describe job listener", pb.PluginClient.DescribeJobListener, listenerDescribeRequestToProto(l.typeName, req), listenerDescriptionFromProto)
}

func (l jobListenerClient) BeforeJobExecuted(ctx context.Context, req spi.ListenerRequest) error {
	_, err := unary(ctx, client(l), "before job executed", pb.PluginClient.BeforeJobExecuted, listenerRequestToProto(l.typeName, req), ignore)
	return err
}

func (l jobListenerClient) AfterJobExecuted(ctx context.Context, req spi.ListenerRequest) error {
	_, err := unary(ctx, client(l), "after job executed", pb.PluginClient.AfterJobExecuted, listenerRequestToProto(l.typeName, req), ignore)
	return err
}

type tracerClient client

var _ spi.Tracer = tracerClient{}

func (t tracerClient) Validate(ctx context.Context, req spi.TraceValidateRequest) error {
	_, err := unary(ctx, client(t), "validate tracing", pb.PluginClient.ValidateTracing, traceValidateRequestToProto(t.typeName, req), ignore)
	return err
}

func (t tracerClient) Write(ctx context.Context, req spi.TraceWriteRequest) (spi.TraceWriteResponse, error) {
	return unary(ctx, client(t), "write traces", pb.PluginClient.WriteTraces, traceWriteRequestToProto(t.typeName, req), traceWriteResponseFromProto)
}

func (t tracerClient) QueryExecutions(ctx context.Context, q spi.ExecutionQuery) (spi.ExecutionPage, error) {
	return unary(ctx, client(t), "query executions", pb.PluginClient.QueryExecutions, executionQueryToProto(t.typeName, q), executionPageFromProto)
}

func (t tracerClient) QueryStatuses(ctx context.Context, q spi.StatusQuery) (spi.StatusPage, error) {
	return unary(ctx, client(t), "query statuses", pb.PluginClient.QueryStatuses, statusQueryToProto(t.typeName, q), statusPageFromProto)
}

func (t tracerClient) QueryOutput(ctx context.Context, q spi.OutputQuery) (spi.OutputResult, error) {
	return unary(ctx, client(t), "query output", pb.PluginClient.QueryOutput, outputQueryToProto(t.typeName, q), outputResultFromProto)
}

func (t tracerClient) Purge(ctx context.Context, req spi.TracePurgeRequest) (spi.TracePurgeResponse, error) {
	return unary(ctx, client(t), "purge traces", pb.PluginClient.PurgeTraces, tracePurgeRequestToProto(t.typeName, req), tracePurgeResponseFromProto)
}

func (t tracerClient) Distinct(ctx context.Context, q spi.DistinctQuery) (spi.DistinctValues, error) {
	return unary(ctx, client(t), "distinct traces", pb.PluginClient.DistinctTraces, distinctQueryToProto(t.typeName, q), distinctValuesFromProto)
}

var _ spi.StatisticsStore = tracerClient{}

func (t tracerClient) AddStatistics(ctx context.Context, req spi.StatisticsAddRequest) (spi.StatisticsAddResponse, error) {
	_, err := unary(ctx, client(t), "add statistics", pb.PluginClient.AddStatistics, statisticsAddRequestToProto(t.typeName, req), ignore)
	return spi.StatisticsAddResponse{}, err
}

func (t tracerClient) QueryStatistics(ctx context.Context, q spi.StatisticsQuery) (spi.StatisticsPage, error) {
	return unary(ctx, client(t), "query statistics", pb.PluginClient.QueryStatistics, statisticsQueryToProto(t.typeName, q), statisticsPageFromProto)
}

type launcherClient client

var _ spi.Launcher = launcherClient{}

func (l launcherClient) Validate(ctx context.Context, req spi.LaunchValidateRequest) error {
	_, err := unary(ctx, client(l), "validate launcher", pb.PluginClient.ValidateLauncher, launchValidateRequestToProto(l.typeName, req), ignore)
	return err
}

func (l launcherClient) Launch(ctx context.Context, req spi.LaunchRequest) (spi.LaunchResponse, error) {
	_, err := unary(ctx, client(l), "launch", pb.PluginClient.Launch, launchRequestToProto(l.typeName, req), ignore)
	return spi.LaunchResponse{}, err
}

func (l launcherClient) List(ctx context.Context, req spi.LaunchListRequest) (spi.LaunchList, error) {
	return unary(ctx, client(l), "list launched", pb.PluginClient.ListLaunched, launchListRequestToProto(l.typeName, req), launchListFromProto)
}

func (l launcherClient) Stop(ctx context.Context, req spi.LaunchStopRequest) (spi.LaunchStopResponse, error) {
	return unary(ctx, client(l), "stop launched", pb.PluginClient.StopLaunched, launchStopRequestToProto(l.typeName, req), launchStopResponseFromProto)
}
