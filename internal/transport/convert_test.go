package transport

import (
	"reflect"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	pb "github.com/ejob-io/ejob/internal/transport/pluginpb"
	"github.com/ejob-io/ejob/spi"
)

// wire marshals and unmarshals m, as the transport does.
func wire[M proto.Message](t *testing.T, m M) M {
	t.Helper()
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	out := m.ProtoReflect().New().Interface().(M)
	if err := proto.Unmarshal(b, out); err != nil {
		t.Fatal(err)
	}
	return out
}

func strPtr(s string) *string { return &s }

// tracingT0() is a time as the wire decodes it (time.Unix, local zone).
func tracingT0() time.Time { return time.Unix(1_700_000_000, 123_456_789) }

func TestConvertRoundTrip(t *testing.T) {
	t.Parallel()
	// Each case converts an spi value to proto, through the wire, and back.
	tests := map[string]struct {
		in   any
		want any // nil: same as in
		trip func(*testing.T, any) any
	}{
		"info": {
			in: spi.Info{PluginVersion: "v1", APIVersion: 1, Types: []spi.TypeKey{{Kind: spi.KindSharding, Type: "AVG"}, {Kind: spi.KindJobType, Type: "SCRIPT"}}},
			trip: func(t *testing.T, v any) any {
				return infoFromProto(wire(t, infoToProto(v.(spi.Info))))
			},
		},
		"info empty": {
			in:   spi.Info{},
			trip: func(t *testing.T, v any) any { return infoFromProto(wire(t, infoToProto(v.(spi.Info)))) },
		},
		"sharding request": {
			in: spi.ShardingRequest{JobName: "j", Instances: []string{"b@-@1", "a@-@2"}, ShardingTotalCount: 1 << 40},
			trip: func(t *testing.T, v any) any {
				m := wire(t, shardingRequestToProto("AVG", v.(spi.ShardingRequest)))
				if m.GetType() != "AVG" {
					t.Errorf("type = %q", m.GetType())
				}
				return shardingRequestFromProto(m)
			},
		},
		"sharding request no instances": {
			in:   spi.ShardingRequest{JobName: "j", Instances: []string{}, ShardingTotalCount: 3},
			want: spi.ShardingRequest{JobName: "j", ShardingTotalCount: 3},
			trip: func(t *testing.T, v any) any {
				return shardingRequestFromProto(wire(t, shardingRequestToProto("AVG", v.(spi.ShardingRequest))))
			},
		},
		"sharding response": {
			in: spi.ShardingResponse{Assignments: []spi.Assignment{{InstanceID: "a", Items: []int{0, 2, 4}}, {InstanceID: "b", Items: []int{}}}},
			trip: func(t *testing.T, v any) any {
				return shardingResponseFromProto(wire(t, shardingResponseToProto(v.(spi.ShardingResponse))))
			},
		},
		"sharding response nil items become empty": {
			in:   spi.ShardingResponse{Assignments: []spi.Assignment{{InstanceID: "a"}}},
			want: spi.ShardingResponse{Assignments: []spi.Assignment{{InstanceID: "a", Items: []int{}}}},
			trip: func(t *testing.T, v any) any {
				return shardingResponseFromProto(wire(t, shardingResponseToProto(v.(spi.ShardingResponse))))
			},
		},
		"sharding response empty": {
			in: spi.ShardingResponse{},
			trip: func(t *testing.T, v any) any {
				return shardingResponseFromProto(wire(t, shardingResponseToProto(v.(spi.ShardingResponse))))
			},
		},
		"handle error request": {
			in: spi.HandleErrorRequest{JobName: "j", InstanceID: "1.2.3.4@-@5", TaskID: "t", ShardingItem: 2,
				Props: map[string]string{"mail.to": "a@b"}, Error: spi.JobError{Message: "m", Detail: "d\nd"}, Tries: 3},
			trip: func(t *testing.T, v any) any {
				return handleErrorRequestFromProto(wire(t, handleErrorRequestToProto("LOG", v.(spi.HandleErrorRequest))))
			},
		},
		"handle error request empty props": {
			in:   spi.HandleErrorRequest{JobName: "j", Props: map[string]string{}},
			want: spi.HandleErrorRequest{JobName: "j"},
			trip: func(t *testing.T, v any) any {
				return handleErrorRequestFromProto(wire(t, handleErrorRequestToProto("LOG", v.(spi.HandleErrorRequest))))
			},
		},
		"handle error response": {
			in: spi.HandleErrorResponse{Propagate: true},
			trip: func(t *testing.T, v any) any {
				return handleErrorResponseFromProto(wire(t, handleErrorResponseToProto(v.(spi.HandleErrorResponse))))
			},
		},
		"validate props request": {
			in: spi.ValidatePropsRequest{JobName: "j", Props: map[string]string{"a": "", "b": "c"}},
			trip: func(t *testing.T, v any) any {
				return validatePropsRequestFromProto(wire(t, validatePropsRequestToProto("X", v.(spi.ValidatePropsRequest))))
			},
		},
		"execute request nil parameter": {
			in: spi.ExecuteRequest{Context: spi.ShardingContext{JobName: "j", TaskID: "t", ShardingTotalCount: 3, JobParameter: "p", ShardingItem: 2, FencingToken: 1<<40 + 5}},
			trip: func(t *testing.T, v any) any {
				return executeRequestFromProto(wire(t, executeRequestToProto("SCRIPT", v.(spi.ExecuteRequest))))
			},
		},
		"execute request empty parameter": {
			in: spi.ExecuteRequest{Context: spi.ShardingContext{JobName: "j", ShardingParameter: strPtr("")}, Props: map[string]string{"k": "v"}},
			trip: func(t *testing.T, v any) any {
				return executeRequestFromProto(wire(t, executeRequestToProto("SCRIPT", v.(spi.ExecuteRequest))))
			},
		},
		"execute request parameter": {
			in: spi.ExecuteRequest{Context: spi.ShardingContext{JobName: "j", ShardingParameter: strPtr("Beijing")}},
			trip: func(t *testing.T, v any) any {
				return executeRequestFromProto(wire(t, executeRequestToProto("SCRIPT", v.(spi.ExecuteRequest))))
			},
		},
		"execute response": {
			in: spi.ExecuteResponse{},
			trip: func(t *testing.T, v any) any {
				return executeResponseFromProto(wire(t, executeResponseToProto(v.(spi.ExecuteResponse))))
			},
		},
		"pool size request": {
			in: spi.PoolSizeRequest{JobName: "j", AvailableCPUs: 64},
			trip: func(t *testing.T, v any) any {
				return poolSizeRequestFromProto(wire(t, poolSizeRequestToProto("CPU", v.(spi.PoolSizeRequest))))
			},
		},
		"pool size response": {
			in: spi.PoolSizeResponse{Size: 7},
			trip: func(t *testing.T, v any) any {
				return poolSizeResponseFromProto(wire(t, poolSizeResponseToProto(v.(spi.PoolSizeResponse))))
			},
		},
		"listener describe request": {
			in: spi.ListenerDescribeRequest{JobName: "j", Props: map[string]string{"listener.x": "1"}},
			trip: func(t *testing.T, v any) any {
				m := wire(t, listenerDescribeRequestToProto("LOG_ONCE", v.(spi.ListenerDescribeRequest)))
				if m.GetType() != "LOG_ONCE" {
					t.Errorf("type = %q", m.GetType())
				}
				return listenerDescribeRequestFromProto(m)
			},
		},
		"listener describe request empty props": {
			in:   spi.ListenerDescribeRequest{JobName: "j", Props: map[string]string{}},
			want: spi.ListenerDescribeRequest{JobName: "j"},
			trip: func(t *testing.T, v any) any {
				return listenerDescribeRequestFromProto(wire(t, listenerDescribeRequestToProto("LOG", v.(spi.ListenerDescribeRequest))))
			},
		},
		"listener description": {
			in: spi.ListenerDescription{Order: spi.DefaultListenerOrder, DistributeOnce: true, StartedTimeout: 1500 * time.Millisecond, CompletedTimeout: time.Nanosecond},
			trip: func(t *testing.T, v any) any {
				return listenerDescriptionFromProto(wire(t, listenerDescriptionToProto(v.(spi.ListenerDescription))))
			},
		},
		"listener description negative order and timeouts": {
			in: spi.ListenerDescription{Order: -7, StartedTimeout: -1, CompletedTimeout: 0},
			trip: func(t *testing.T, v any) any {
				return listenerDescriptionFromProto(wire(t, listenerDescriptionToProto(v.(spi.ListenerDescription))))
			},
		},
		"listener request": {
			in: spi.ListenerRequest{JobName: "j", Props: map[string]string{"k": "v"}, Contexts: spi.ShardingContexts{
				TaskID: "j@-@0,2@-@READY@-@1.2.3.4@-@5", JobName: "j", ShardingTotalCount: 3, JobParameter: "p",
				Items: []int{2, 0}, ShardingItemParameters: map[int]string{0: "a", 2: ""}}},
			trip: func(t *testing.T, v any) any {
				m := wire(t, listenerRequestToProto("LOG", v.(spi.ListenerRequest)))
				if m.GetType() != "LOG" {
					t.Errorf("type = %q", m.GetType())
				}
				return listenerRequestFromProto(m)
			},
		},
		"listener request no items": {
			in: spi.ListenerRequest{JobName: "j", Contexts: spi.ShardingContexts{TaskID: "j@-@@-@READY@-@1.2.3.4@-@5", JobName: "j",
				ShardingTotalCount: 3, Items: []int{}, ShardingItemParameters: map[int]string{}}},
			want: spi.ListenerRequest{JobName: "j", Contexts: spi.ShardingContexts{TaskID: "j@-@@-@READY@-@1.2.3.4@-@5", JobName: "j",
				ShardingTotalCount: 3}},
			trip: func(t *testing.T, v any) any {
				return listenerRequestFromProto(wire(t, listenerRequestToProto("LOG", v.(spi.ListenerRequest))))
			},
		},
		"trace write request": {
			in: spi.TraceWriteRequest{
				Config: map[string]string{"driver": "sqlite", "url": "/tmp/x.db"},
				Executions: []spi.ExecutionEvent{
					{ID: "e1", Hostname: "h", IP: "10.0.0.1", TaskID: "j@-@0,1@-@READY@-@10.0.0.1@-@7", JobName: "j",
						Source: "MISFIRE", ShardingItem: 1, StartTime: tracingT0(), FencingToken: 1<<40 + 3},
					{ID: "e1", Hostname: "h", IP: "10.0.0.1", TaskID: "t", JobName: "j", Source: "NORMAL_TRIGGER",
						ShardingItem: 1 << 33, StartTime: tracingT0(), CompleteTime: tracingT0().Add(time.Second), FailureCause: "boom",
						Output: spi.Output{Text: "out| a\nerr| b ü\n", Cut: 1 << 33}},
				},
				Statuses: []spi.StatusEvent{{ID: "s1", JobName: "j", TaskID: "t", SlaveID: "10.0.0.1", ExecutionType: "READY",
					ShardingItems: "[0, 1]", State: "TASK_ERROR", Message: "{0=x}", CreationTime: tracingT0()}},
			},
			trip: func(t *testing.T, v any) any {
				m := wire(t, traceWriteRequestToProto("RDB", v.(spi.TraceWriteRequest)))
				if m.GetType() != "RDB" {
					t.Errorf("type = %q", m.GetType())
				}
				return traceWriteRequestFromProto(m)
			},
		},
		"trace write response": {
			in: spi.TraceWriteResponse{Rejected: 2, Problems: []string{"a", "b"}},
			trip: func(t *testing.T, v any) any {
				return traceWriteResponseFromProto(wire(t, traceWriteResponseToProto(v.(spi.TraceWriteResponse))))
			},
		},
		"execution query all filters": {
			in: spi.ExecutionQuery{Config: map[string]string{"k": "v"}, ID: "e1", JobName: "j", IP: "1.2.3.4", TaskID: "t",
				Item: new(0), Success: new(false), From: tracingT0(), To: tracingT0().Add(time.Hour), Offset: 20, Limit: 10},
			trip: func(t *testing.T, v any) any {
				return executionQueryFromProto(wire(t, executionQueryToProto("RDB", v.(spi.ExecutionQuery))))
			},
		},
		"execution query no filter": {
			in: spi.ExecutionQuery{},
			trip: func(t *testing.T, v any) any {
				return executionQueryFromProto(wire(t, executionQueryToProto("RDB", v.(spi.ExecutionQuery))))
			},
		},
		"execution page": {
			in: spi.ExecutionPage{Executions: []spi.ExecutionEvent{{ID: "a", StartTime: tracingT0(), Success: true}}, More: true},
			trip: func(t *testing.T, v any) any {
				return executionPageFromProto(wire(t, executionPageToProto(v.(spi.ExecutionPage))))
			},
		},
		"status query and page": {
			in: spi.StatusQuery{JobName: "j", TaskID: "t", From: tracingT0(), Offset: 1, Limit: 2,
				State: "TASK_ERROR", ExecutionType: "FAILOVER", Source: "LITE_EXECUTOR"},
			trip: func(t *testing.T, v any) any {
				return statusQueryFromProto(wire(t, statusQueryToProto("RDB", v.(spi.StatusQuery))))
			},
		},
		"distinct query": {
			in: spi.DistinctQuery{Config: map[string]string{"k": "v"}, Field: spi.ExecutionIPs, Prefix: "10.", Limit: 7},
			trip: func(t *testing.T, v any) any {
				return distinctQueryFromProto(wire(t, distinctQueryToProto("RDB", v.(spi.DistinctQuery))))
			},
		},
		"distinct values": {
			in: spi.DistinctValues{Values: []string{"a", "b"}, More: true},
			trip: func(t *testing.T, v any) any {
				return distinctValuesFromProto(wire(t, distinctValuesToProto(v.(spi.DistinctValues))))
			},
		},
		"status page": {
			in: spi.StatusPage{Statuses: []spi.StatusEvent{{ID: "s", State: "TASK_RUNNING", CreationTime: tracingT0()}}, More: true},
			trip: func(t *testing.T, v any) any {
				return statusPageFromProto(wire(t, statusPageToProto(v.(spi.StatusPage))))
			},
		},
		"purge": {
			in: spi.TracePurgeRequest{Config: map[string]string{"k": "v"}, Before: tracingT0()},
			trip: func(t *testing.T, v any) any {
				return tracePurgeRequestFromProto(wire(t, tracePurgeRequestToProto("RDB", v.(spi.TracePurgeRequest))))
			},
		},
		"purge response": {
			in: spi.TracePurgeResponse{Executions: 3, Statuses: 1 << 40, Outputs: 2},
			trip: func(t *testing.T, v any) any {
				return tracePurgeResponseFromProto(wire(t, tracePurgeResponseToProto(v.(spi.TracePurgeResponse))))
			},
		},
		"execute response with output": {
			in: spi.ExecuteResponse{Output: spi.Output{Text: "HTTP/1.1 200 OK\nok", Cut: 5}},
			trip: func(t *testing.T, v any) any {
				return executeResponseFromProto(wire(t, executeResponseToProto(v.(spi.ExecuteResponse))))
			},
		},
		"execute response without output": {
			in: spi.ExecuteResponse{},
			trip: func(t *testing.T, v any) any {
				m := executeResponseToProto(v.(spi.ExecuteResponse))
				if m.GetOutput() != nil {
					t.Errorf("no output sent as %v", m.GetOutput())
				}
				return executeResponseFromProto(wire(t, m))
			},
		},
		"output query and result": {
			in: spi.OutputQuery{Config: map[string]string{"k": "v"}, ID: "e1"},
			trip: func(t *testing.T, v any) any {
				return outputQueryFromProto(wire(t, outputQueryToProto("RDB", v.(spi.OutputQuery))))
			},
		},
		"output result": {
			in: spi.OutputResult{Found: true, Output: spi.Output{Text: "x", Cut: 3}},
			trip: func(t *testing.T, v any) any {
				return outputResultFromProto(wire(t, outputResultToProto(v.(spi.OutputResult))))
			},
		},
		"trace validate": {
			in: spi.TraceValidateRequest{Config: map[string]string{"driver": "mysql"}},
			trip: func(t *testing.T, v any) any {
				return traceValidateRequestFromProto(wire(t, traceValidateRequestToProto("RDB", v.(spi.TraceValidateRequest))))
			},
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			want := tt.want
			if want == nil {
				want = tt.in
			}
			if got := tt.trip(t, tt.in); !reflect.DeepEqual(got, want) {
				t.Errorf("round trip:\n got  %#v\n want %#v", got, want)
			}
		})
	}
}

// TestShardingParameterPresence checks the wire keeps nil and "" apart.
func TestShardingParameterPresence(t *testing.T) {
	t.Parallel()
	m := wire(t, shardingContextToProto(spi.ShardingContext{}))
	if m.ShardingParameter != nil {
		t.Error("nil parameter arrived present")
	}
	m = wire(t, shardingContextToProto(spi.ShardingContext{ShardingParameter: strPtr("")}))
	if m.ShardingParameter == nil || *m.ShardingParameter != "" {
		t.Error("empty parameter arrived absent")
	}
	if got := shardingContextFromProto(nil); got.ShardingParameter != nil {
		t.Error("nil message gives a parameter")
	}
	if got := executeRequestFromProto(&pb.ExecuteRequest{}); !reflect.DeepEqual(got, spi.ExecuteRequest{}) {
		t.Errorf("empty request = %#v", got)
	}
	if got := listenerRequestFromProto(&pb.ListenerRequest{}); !reflect.DeepEqual(got, spi.ListenerRequest{}) {
		t.Errorf("empty listener request = %#v", got)
	}
}
