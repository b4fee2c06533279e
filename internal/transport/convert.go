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
	}
}

func shardingContextFromProto(m *pb.ShardingContext) spi.ShardingContext {
	out := spi.ShardingContext{
		JobName:            m.GetJobName(),
		TaskID:             m.GetTaskId(),
		ShardingTotalCount: int(m.GetShardingTotalCount()),
		JobParameter:       m.GetJobParameter(),
		ShardingItem:       int(m.GetShardingItem()),
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

func executeResponseToProto(spi.ExecuteResponse) *pb.ExecuteResponse { return &pb.ExecuteResponse{} }

func executeResponseFromProto(*pb.ExecuteResponse) spi.ExecuteResponse { return spi.ExecuteResponse{} }

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
