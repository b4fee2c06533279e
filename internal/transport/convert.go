package transport

import (
	"time"

	pb "github.com/ejob-io/ejob/internal/transport/pluginpb"
	"github.com/ejob-io/ejob/spi"
)

// Converters between spi structs and their protobuf messages: the only
// place that knows both shapes. Decoding yields nil for empty slices and
// maps (ShardingContexts.Items and ShardingItemParameters included), except Assignment.Items, which is always non-nil (the contract says
// an instance without items has an empty list). ShardingParameter keeps nil
// and "" apart through proto3 optional.

func infoToProto(i spi.Info) *pb.InfoResponse {
	out := &pb.InfoResponse{PluginVersion: i.PluginVersion, ApiVersion: int64(i.APIVersion)}
	for _, t := range i.Types {
		out.Types = append(out.Types, &pb.TypeKey{Kind: string(t.Kind), Type: t.Type})
	}
	return out
}

func infoFromProto(m *pb.InfoResponse) spi.Info {
	out := spi.Info{PluginVersion: m.GetPluginVersion(), APIVersion: int(m.GetApiVersion())}
	for _, t := range m.GetTypes() {
		out.Types = append(out.Types, spi.TypeKey{Kind: spi.Kind(t.GetKind()), Type: t.GetType()})
	}
	return out
}

func shardingRequestToProto(typeName string, r spi.ShardingRequest) *pb.ShardingRequest {
	return &pb.ShardingRequest{
		Type:               typeName,
		JobName:            r.JobName,
		Instances:          r.Instances,
		ShardingTotalCount: int64(r.ShardingTotalCount),
	}
}

func shardingRequestFromProto(m *pb.ShardingRequest) spi.ShardingRequest {
	return spi.ShardingRequest{
		JobName:            m.GetJobName(),
		Instances:          m.GetInstances(),
		ShardingTotalCount: int(m.GetShardingTotalCount()),
	}
}

func shardingResponseToProto(r spi.ShardingResponse) *pb.ShardingResponse {
	out := &pb.ShardingResponse{}
	if len(r.Assignments) > 0 {
		out.Assignments = make([]*pb.Assignment, len(r.Assignments))
	}
	for i, a := range r.Assignments {
		items := make([]int64, len(a.Items))
		for j, it := range a.Items {
			items[j] = int64(it)
		}
		out.Assignments[i] = &pb.Assignment{InstanceId: a.InstanceID, Items: items}
	}
	return out
}

func shardingResponseFromProto(m *pb.ShardingResponse) spi.ShardingResponse {
	var out spi.ShardingResponse
	if n := len(m.GetAssignments()); n > 0 {
		out.Assignments = make([]spi.Assignment, n)
	}
	for i, a := range m.GetAssignments() {
		items := make([]int, len(a.GetItems()))
		for j, it := range a.GetItems() {
			items[j] = int(it)
		}
		out.Assignments[i] = spi.Assignment{InstanceID: a.GetInstanceId(), Items: items}
	}
	return out
}

func handleErrorRequestToProto(typeName string, r spi.HandleErrorRequest) *pb.HandleErrorRequest {
	return &pb.HandleErrorRequest{
		Type:         typeName,
		JobName:      r.JobName,
		InstanceId:   r.InstanceID,
		TaskId:       r.TaskID,
		ShardingItem: int64(r.ShardingItem),
		Props:        r.Props,
		Error:        &pb.JobError{Message: r.Error.Message, Detail: r.Error.Detail},
		Tries:        int64(r.Tries),
	}
}

func handleErrorRequestFromProto(m *pb.HandleErrorRequest) spi.HandleErrorRequest {
	return spi.HandleErrorRequest{
		JobName:      m.GetJobName(),
		InstanceID:   m.GetInstanceId(),
		TaskID:       m.GetTaskId(),
		ShardingItem: int(m.GetShardingItem()),
		Props:        propsFromProto(m.GetProps()),
		Error:        spi.JobError{Message: m.GetError().GetMessage(), Detail: m.GetError().GetDetail()},
		Tries:        int(m.GetTries()),
	}
}

func handleErrorResponseToProto(r spi.HandleErrorResponse) *pb.HandleErrorResponse {
	return &pb.HandleErrorResponse{Propagate: r.Propagate}
}

func handleErrorResponseFromProto(m *pb.HandleErrorResponse) spi.HandleErrorResponse {
	return spi.HandleErrorResponse{Propagate: m.GetPropagate()}
}

func validatePropsRequestToProto(typeName string, r spi.ValidatePropsRequest) *pb.ValidatePropsRequest {
	return &pb.ValidatePropsRequest{Type: typeName, JobName: r.JobName, Props: r.Props}
}

func validatePropsRequestFromProto(m *pb.ValidatePropsRequest) spi.ValidatePropsRequest {
	return spi.ValidatePropsRequest{JobName: m.GetJobName(), Props: propsFromProto(m.GetProps())}
}

func shardingContextToProto(c spi.ShardingContext) *pb.ShardingContext {
	return &pb.ShardingContext{
		JobName:            c.JobName,
		TaskId:             c.TaskID,
		ShardingTotalCount: int64(c.ShardingTotalCount),
		JobParameter:       c.JobParameter,
		ShardingItem:       int64(c.ShardingItem),
		ShardingParameter:  c.ShardingParameter,
		FencingToken:       c.FencingToken,
	}
}

func shardingContextFromProto(m *pb.ShardingContext) spi.ShardingContext {
	out := spi.ShardingContext{
		JobName:            m.GetJobName(),
		TaskID:             m.GetTaskId(),
		ShardingTotalCount: int(m.GetShardingTotalCount()),
		JobParameter:       m.GetJobParameter(),
		ShardingItem:       int(m.GetShardingItem()),
		FencingToken:       m.GetFencingToken(),
	}
	if m != nil && m.ShardingParameter != nil {
		p := *m.ShardingParameter
		out.ShardingParameter = &p
	}
	return out
}

func executeRequestToProto(typeName string, r spi.ExecuteRequest) *pb.ExecuteRequest {
	return &pb.ExecuteRequest{Type: typeName, Context: shardingContextToProto(r.Context), Props: r.Props}
}

func executeRequestFromProto(m *pb.ExecuteRequest) spi.ExecuteRequest {
	return spi.ExecuteRequest{Context: shardingContextFromProto(m.GetContext()), Props: propsFromProto(m.GetProps())}
}

func executeResponseToProto(r spi.ExecuteResponse) *pb.ExecuteResponse {
	return &pb.ExecuteResponse{Output: outputToProto(r.Output)}
}

func executeResponseFromProto(m *pb.ExecuteResponse) spi.ExecuteResponse {
	return spi.ExecuteResponse{Output: outputFromProto(m.GetOutput())}
}

// outputToProto is nil for no output, so that an item without output
// costs nothing on the wire.
func outputToProto(o spi.Output) *pb.Output {
	if o.IsZero() {
		return nil
	}
	return &pb.Output{Text: o.Text, Cut: o.Cut}
}

func outputFromProto(m *pb.Output) spi.Output {
	return spi.Output{Text: m.GetText(), Cut: m.GetCut()}
}

func outputQueryToProto(typeName string, q spi.OutputQuery) *pb.OutputQuery {
	return &pb.OutputQuery{Type: typeName, Config: q.Config, Id: q.ID}
}

func outputQueryFromProto(m *pb.OutputQuery) spi.OutputQuery {
	return spi.OutputQuery{Config: propsFromProto(m.GetConfig()), ID: m.GetId()}
}

func outputResultToProto(r spi.OutputResult) *pb.OutputResult {
	return &pb.OutputResult{Found: r.Found, Output: outputToProto(r.Output)}
}

func outputResultFromProto(m *pb.OutputResult) spi.OutputResult {
	return spi.OutputResult{Found: m.GetFound(), Output: outputFromProto(m.GetOutput())}
}

func poolSizeRequestToProto(typeName string, r spi.PoolSizeRequest) *pb.PoolSizeRequest {
	return &pb.PoolSizeRequest{Type: typeName, JobName: r.JobName, AvailableCpus: int64(r.AvailableCPUs)}
}

func poolSizeRequestFromProto(m *pb.PoolSizeRequest) spi.PoolSizeRequest {
	return spi.PoolSizeRequest{JobName: m.GetJobName(), AvailableCPUs: int(m.GetAvailableCpus())}
}

func poolSizeResponseToProto(r spi.PoolSizeResponse) *pb.PoolSizeResponse {
	return &pb.PoolSizeResponse{Size: int64(r.Size)}
}

func poolSizeResponseFromProto(m *pb.PoolSizeResponse) spi.PoolSizeResponse {
	return spi.PoolSizeResponse{Size: int(m.GetSize())}
}

func propsFromProto(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	return m
}

func listenerDescribeRequestToProto(typeName string, r spi.ListenerDescribeRequest) *pb.ListenerDescribeRequest {
	return &pb.ListenerDescribeRequest{Type: typeName, JobName: r.JobName, Props: r.Props}
}

func listenerDescribeRequestFromProto(m *pb.ListenerDescribeRequest) spi.ListenerDescribeRequest {
	return spi.ListenerDescribeRequest{JobName: m.GetJobName(), Props: propsFromProto(m.GetProps())}
}

func listenerDescriptionToProto(d spi.ListenerDescription) *pb.ListenerDescription {
	return &pb.ListenerDescription{
		Order:                 int64(d.Order),
		DistributeOnce:        d.DistributeOnce,
		StartedTimeoutNanos:   int64(d.StartedTimeout),
		CompletedTimeoutNanos: int64(d.CompletedTimeout),
	}
}

func listenerDescriptionFromProto(m *pb.ListenerDescription) spi.ListenerDescription {
	return spi.ListenerDescription{
		Order:            int(m.GetOrder()),
		DistributeOnce:   m.GetDistributeOnce(),
		StartedTimeout:   time.Duration(m.GetStartedTimeoutNanos()),
		CompletedTimeout: time.Duration(m.GetCompletedTimeoutNanos()),
	}
}

func shardingContextsToProto(c spi.ShardingContexts) *pb.ShardingContexts {
	out := &pb.ShardingContexts{
		TaskId:             c.TaskID,
		JobName:            c.JobName,
		ShardingTotalCount: int64(c.ShardingTotalCount),
		JobParameter:       c.JobParameter,
	}
	if len(c.Items) > 0 {
		out.Items = make([]int64, len(c.Items))
		for i, it := range c.Items {
			out.Items[i] = int64(it)
		}
	}
	if len(c.ShardingItemParameters) > 0 {
		out.ShardingItemParameters = make(map[int64]string, len(c.ShardingItemParameters))
		for k, v := range c.ShardingItemParameters {
			out.ShardingItemParameters[int64(k)] = v
		}
	}
	return out
}

func shardingContextsFromProto(m *pb.ShardingContexts) spi.ShardingContexts {
	out := spi.ShardingContexts{
		TaskID:             m.GetTaskId(),
		JobName:            m.GetJobName(),
		ShardingTotalCount: int(m.GetShardingTotalCount()),
		JobParameter:       m.GetJobParameter(),
	}
	if n := len(m.GetItems()); n > 0 {
		out.Items = make([]int, n)
		for i, it := range m.GetItems() {
			out.Items[i] = int(it)
		}
	}
	if n := len(m.GetShardingItemParameters()); n > 0 {
		out.ShardingItemParameters = make(map[int]string, n)
		for k, v := range m.GetShardingItemParameters() {
			out.ShardingItemParameters[int(k)] = v
		}
	}
	return out
}

func listenerRequestToProto(typeName string, r spi.ListenerRequest) *pb.ListenerRequest {
	return &pb.ListenerRequest{Type: typeName, JobName: r.JobName, Props: r.Props, Contexts: shardingContextsToProto(r.Contexts)}
}

func listenerRequestFromProto(m *pb.ListenerRequest) spi.ListenerRequest {
	return spi.ListenerRequest{
		JobName:  m.GetJobName(),
		Props:    propsFromProto(m.GetProps()),
		Contexts: shardingContextsFromProto(m.GetContexts()),
	}
}

// timeToProto is t in Unix nanoseconds, 0 for the zero time.
func timeToProto(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// timeFromProto is the inverse of timeToProto (local time zone).
func timeFromProto(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n)
}

func executionEventToProto(e spi.ExecutionEvent) *pb.ExecutionEvent {
	return &pb.ExecutionEvent{
		Id: e.ID, Hostname: e.Hostname, Ip: e.IP, TaskId: e.TaskID, JobName: e.JobName, Source: e.Source,
		ShardingItem: int64(e.ShardingItem), StartTimeUnixNanos: timeToProto(e.StartTime),
		CompleteTimeUnixNanos: timeToProto(e.CompleteTime), Success: e.Success, FailureCause: e.FailureCause,
		Output: outputToProto(e.Output), FencingToken: e.FencingToken,
	}
}

func executionEventFromProto(m *pb.ExecutionEvent) spi.ExecutionEvent {
	return spi.ExecutionEvent{
		ID: m.GetId(), Hostname: m.GetHostname(), IP: m.GetIp(), TaskID: m.GetTaskId(), JobName: m.GetJobName(),
		Source: m.GetSource(), ShardingItem: int(m.GetShardingItem()), StartTime: timeFromProto(m.GetStartTimeUnixNanos()),
		CompleteTime: timeFromProto(m.GetCompleteTimeUnixNanos()), Success: m.GetSuccess(), FailureCause: m.GetFailureCause(),
		Output: outputFromProto(m.GetOutput()), FencingToken: m.GetFencingToken(),
	}
}

func statusEventToProto(e spi.StatusEvent) *pb.StatusEvent {
	return &pb.StatusEvent{
		Id: e.ID, JobName: e.JobName, OriginalTaskId: e.OriginalTaskID, TaskId: e.TaskID, SlaveId: e.SlaveID,
		ExecutionType: e.ExecutionType, ShardingItems: e.ShardingItems, State: e.State, Message: e.Message,
		CreationTimeUnixNanos: timeToProto(e.CreationTime),
	}
}

func statusEventFromProto(m *pb.StatusEvent) spi.StatusEvent {
	return spi.StatusEvent{
		ID: m.GetId(), JobName: m.GetJobName(), OriginalTaskID: m.GetOriginalTaskId(), TaskID: m.GetTaskId(),
		SlaveID: m.GetSlaveId(), ExecutionType: m.GetExecutionType(), ShardingItems: m.GetShardingItems(),
		State: m.GetState(), Message: m.GetMessage(), CreationTime: timeFromProto(m.GetCreationTimeUnixNanos()),
	}
}

// convertAll converts every element of in with f; nil for an empty in.
func convertAll[In, Out any](in []In, f func(In) Out) []Out {
	if len(in) == 0 {
		return nil
	}
	out := make([]Out, len(in))
	for i, v := range in {
		out[i] = f(v)
	}
	return out
}

func traceValidateRequestToProto(typeName string, r spi.TraceValidateRequest) *pb.TraceValidateRequest {
	return &pb.TraceValidateRequest{Type: typeName, Config: r.Config}
}

func traceValidateRequestFromProto(m *pb.TraceValidateRequest) spi.TraceValidateRequest {
	return spi.TraceValidateRequest{Config: propsFromProto(m.GetConfig())}
}

func traceWriteRequestToProto(typeName string, r spi.TraceWriteRequest) *pb.TraceWriteRequest {
	return &pb.TraceWriteRequest{
		Type: typeName, Config: r.Config,
		Executions: convertAll(r.Executions, executionEventToProto),
		Statuses:   convertAll(r.Statuses, statusEventToProto),
	}
}

func traceWriteRequestFromProto(m *pb.TraceWriteRequest) spi.TraceWriteRequest {
	return spi.TraceWriteRequest{
		Config:     propsFromProto(m.GetConfig()),
		Executions: convertAll(m.GetExecutions(), executionEventFromProto),
		Statuses:   convertAll(m.GetStatuses(), statusEventFromProto),
	}
}

func traceWriteResponseToProto(r spi.TraceWriteResponse) *pb.TraceWriteResponse {
	return &pb.TraceWriteResponse{Rejected: int64(r.Rejected), Problems: r.Problems}
}

func traceWriteResponseFromProto(m *pb.TraceWriteResponse) spi.TraceWriteResponse {
	return spi.TraceWriteResponse{Rejected: int(m.GetRejected()), Problems: m.GetProblems()}
}

func executionQueryToProto(typeName string, q spi.ExecutionQuery) *pb.ExecutionQuery {
	out := &pb.ExecutionQuery{
		Type: typeName, Config: q.Config, Id: q.ID, JobName: q.JobName, Ip: q.IP, TaskId: q.TaskID, Success: q.Success,
		FromUnixNanos: timeToProto(q.From), ToUnixNanos: timeToProto(q.To), Offset: int64(q.Offset), Limit: int64(q.Limit),
	}
	if q.Item != nil {
		item := int64(*q.Item)
		out.Item = &item
	}
	return out
}

func executionQueryFromProto(m *pb.ExecutionQuery) spi.ExecutionQuery {
	out := spi.ExecutionQuery{
		Config: propsFromProto(m.GetConfig()), ID: m.GetId(), JobName: m.GetJobName(), IP: m.GetIp(), TaskID: m.GetTaskId(),
		From: timeFromProto(m.GetFromUnixNanos()), To: timeFromProto(m.GetToUnixNanos()),
		Offset: int(m.GetOffset()), Limit: int(m.GetLimit()),
	}
	if m.Item != nil {
		item := int(m.GetItem())
		out.Item = &item
	}
	if m.Success != nil {
		success := m.GetSuccess()
		out.Success = &success
	}
	return out
}

func executionPageToProto(p spi.ExecutionPage) *pb.ExecutionPage {
	return &pb.ExecutionPage{Executions: convertAll(p.Executions, executionEventToProto), More: p.More}
}

func executionPageFromProto(m *pb.ExecutionPage) spi.ExecutionPage {
	return spi.ExecutionPage{Executions: convertAll(m.GetExecutions(), executionEventFromProto), More: m.GetMore()}
}

func statusQueryToProto(typeName string, q spi.StatusQuery) *pb.StatusQuery {
	return &pb.StatusQuery{
		Type: typeName, Config: q.Config, JobName: q.JobName, TaskId: q.TaskID,
		FromUnixNanos: timeToProto(q.From), ToUnixNanos: timeToProto(q.To), Offset: int64(q.Offset), Limit: int64(q.Limit),
		State: q.State, ExecutionType: q.ExecutionType, Source: q.Source,
	}
}

func statusQueryFromProto(m *pb.StatusQuery) spi.StatusQuery {
	return spi.StatusQuery{
		Config: propsFromProto(m.GetConfig()), JobName: m.GetJobName(), TaskID: m.GetTaskId(),
		From: timeFromProto(m.GetFromUnixNanos()), To: timeFromProto(m.GetToUnixNanos()),
		Offset: int(m.GetOffset()), Limit: int(m.GetLimit()),
		State: m.GetState(), ExecutionType: m.GetExecutionType(), Source: m.GetSource(),
	}
}

func statusPageToProto(p spi.StatusPage) *pb.StatusPage {
	return &pb.StatusPage{Statuses: convertAll(p.Statuses, statusEventToProto), More: p.More}
}

func statusPageFromProto(m *pb.StatusPage) spi.StatusPage {
	return spi.StatusPage{Statuses: convertAll(m.GetStatuses(), statusEventFromProto), More: m.GetMore()}
}

func tracePurgeRequestToProto(typeName string, r spi.TracePurgeRequest) *pb.TracePurgeRequest {
	return &pb.TracePurgeRequest{Type: typeName, Config: r.Config, BeforeUnixNanos: timeToProto(r.Before)}
}

func tracePurgeRequestFromProto(m *pb.TracePurgeRequest) spi.TracePurgeRequest {
	return spi.TracePurgeRequest{Config: propsFromProto(m.GetConfig()), Before: timeFromProto(m.GetBeforeUnixNanos())}
}

func tracePurgeResponseToProto(r spi.TracePurgeResponse) *pb.TracePurgeResponse {
	return &pb.TracePurgeResponse{Executions: r.Executions, Statuses: r.Statuses, Outputs: r.Outputs}
}

func tracePurgeResponseFromProto(m *pb.TracePurgeResponse) spi.TracePurgeResponse {
	return spi.TracePurgeResponse{Executions: m.GetExecutions(), Statuses: m.GetStatuses(), Outputs: m.GetOutputs()}
}

func distinctQueryToProto(typeName string, q spi.DistinctQuery) *pb.DistinctQuery {
	return &pb.DistinctQuery{Type: typeName, Config: q.Config, Field: string(q.Field), Prefix: q.Prefix, Limit: int64(q.Limit)}
}

func distinctQueryFromProto(m *pb.DistinctQuery) spi.DistinctQuery {
	return spi.DistinctQuery{Config: propsFromProto(m.GetConfig()), Field: spi.DistinctField(m.GetField()), Prefix: m.GetPrefix(), Limit: int(m.GetLimit())}
}

func distinctValuesToProto(v spi.DistinctValues) *pb.DistinctValues {
	return &pb.DistinctValues{Values: v.Values, More: v.More}
}

func distinctValuesFromProto(m *pb.DistinctValues) spi.DistinctValues {
	return spi.DistinctValues{Values: m.GetValues(), More: m.GetMore()}
}
