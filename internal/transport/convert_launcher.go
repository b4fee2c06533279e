package transport

import (
	pb "github.com/ejob-io/ejob/internal/transport/pluginpb"
	"github.com/ejob-io/ejob/spi"
)

func launchValidateRequestToProto(typeName string, r spi.LaunchValidateRequest) *pb.LaunchValidateRequest {
	return &pb.LaunchValidateRequest{Type: typeName, Config: r.Config}
}

func launchValidateRequestFromProto(m *pb.LaunchValidateRequest) spi.LaunchValidateRequest {
	return spi.LaunchValidateRequest{Config: m.GetConfig()}
}

func itemParamsToProto(m map[int]string) map[int64]string {
	if m == nil {
		return nil
	}
	out := make(map[int64]string, len(m))
	for k, v := range m {
		out[int64(k)] = v
	}
	return out
}

func itemParamsFromProto(m map[int64]string) map[int]string {
	if m == nil {
		return nil
	}
	out := make(map[int]string, len(m))
	for k, v := range m {
		out[int(k)] = v
	}
	return out
}

func launchRequestToProto(typeName string, r spi.LaunchRequest) *pb.LaunchRequest {
	items := make([]*pb.LaunchItem, len(r.Items))
	for i, it := range r.Items {
		items[i] = &pb.LaunchItem{Item: int64(it.Item), Env: it.Env}
	}
	a, j := r.App, r.Job
	return &pb.LaunchRequest{
		Type: typeName, Config: r.Config, FireId: r.FireID, ExecutionType: r.ExecutionType,
		App: &pb.LaunchApp{Name: a.Name, Image: a.Image, AppUrl: a.AppURL, BootstrapScript: a.BootstrapScript,
			AppCacheEnable: a.AppCacheEnable, CpuCount: a.CPUCount, MemoryMb: a.MemoryMB},
		Job: &pb.LaunchJob{Name: j.Name, ExecutionType: j.ExecutionType, Cron: j.Cron,
			ShardingTotalCount: int64(j.ShardingTotalCount), CpuCount: j.CPUCount, MemoryMb: j.MemoryMB,
			JobParameter: j.JobParameter, ShardingItemParameters: itemParamsToProto(j.ShardingItemParameters), Props: j.Props},
		Items: items, Labels: r.Labels,
	}
}

func launchRequestFromProto(m *pb.LaunchRequest) spi.LaunchRequest {
	items := make([]spi.LaunchItem, len(m.GetItems()))
	for i, it := range m.GetItems() {
		items[i] = spi.LaunchItem{Item: int(it.GetItem()), Env: it.GetEnv()}
	}
	a, j := m.GetApp(), m.GetJob()
	return spi.LaunchRequest{
		Config: m.GetConfig(), FireID: m.GetFireId(), ExecutionType: m.GetExecutionType(),
		App: spi.LaunchApp{Name: a.GetName(), Image: a.GetImage(), AppURL: a.GetAppUrl(), BootstrapScript: a.GetBootstrapScript(),
			AppCacheEnable: a.GetAppCacheEnable(), CPUCount: a.GetCpuCount(), MemoryMB: a.GetMemoryMb()},
		Job: spi.LaunchJob{Name: j.GetName(), ExecutionType: j.GetExecutionType(), Cron: j.GetCron(),
			ShardingTotalCount: int(j.GetShardingTotalCount()), CPUCount: j.GetCpuCount(), MemoryMB: j.GetMemoryMb(),
			JobParameter: j.GetJobParameter(), ShardingItemParameters: itemParamsFromProto(j.GetShardingItemParameters()), Props: j.GetProps()},
		Items: items, Labels: m.GetLabels(),
	}
}

func launchListRequestToProto(typeName string, r spi.LaunchListRequest) *pb.LaunchListRequest {
	return &pb.LaunchListRequest{Type: typeName, Config: r.Config, JobName: r.JobName}
}

func launchListRequestFromProto(m *pb.LaunchListRequest) spi.LaunchListRequest {
	return spi.LaunchListRequest{Config: m.GetConfig(), JobName: m.GetJobName()}
}

func launchListToProto(l spi.LaunchList) *pb.LaunchList {
	items := make([]*pb.ItemStatus, len(l.Items))
	for i, s := range l.Items {
		items[i] = &pb.ItemStatus{JobName: s.JobName, FireId: s.FireID, Item: int64(s.Item), State: string(s.State),
			Reason: s.Reason, Node: s.Node, Name: s.Name, ExitCode: int64(s.ExitCode),
			StartedUnixNanos: timeToProto(s.Started), FinishedUnixNanos: timeToProto(s.Finished),
			Idle: s.Idle, Fires: int64(s.Fires)}
	}
	return &pb.LaunchList{Items: items}
}

func launchListFromProto(m *pb.LaunchList) spi.LaunchList {
	items := make([]spi.ItemStatus, len(m.GetItems()))
	for i, s := range m.GetItems() {
		items[i] = spi.ItemStatus{JobName: s.GetJobName(), FireID: s.GetFireId(), Item: int(s.GetItem()),
			State: spi.ItemState(s.GetState()), Reason: s.GetReason(), Node: s.GetNode(), Name: s.GetName(),
			ExitCode: int(s.GetExitCode()), Started: timeFromProto(s.GetStartedUnixNanos()),
			Finished: timeFromProto(s.GetFinishedUnixNanos()), Idle: s.GetIdle(), Fires: int(s.GetFires())}
	}
	return spi.LaunchList{Items: items}
}

func launchStopRequestToProto(typeName string, r spi.LaunchStopRequest) *pb.LaunchStopRequest {
	return &pb.LaunchStopRequest{Type: typeName, Config: r.Config, JobName: r.JobName, FireId: r.FireID}
}

func launchStopRequestFromProto(m *pb.LaunchStopRequest) spi.LaunchStopRequest {
	return spi.LaunchStopRequest{Config: m.GetConfig(), JobName: m.GetJobName(), FireID: m.GetFireId()}
}

func launchStopResponseToProto(r spi.LaunchStopResponse) *pb.LaunchStopResponse {
	return &pb.LaunchStopResponse{Stopped: int64(r.Stopped)}
}

func launchStopResponseFromProto(m *pb.LaunchStopResponse) spi.LaunchStopResponse {
	return spi.LaunchStopResponse{Stopped: int(m.GetStopped())}
}

func statisticsRowsToProto(rows []spi.StatisticsRow) []*pb.StatisticsRow {
	out := make([]*pb.StatisticsRow, len(rows))
	for i, r := range rows {
		out[i] = &pb.StatisticsRow{Id: r.ID, SuccessCount: int64(r.SuccessCount), FailedCount: int64(r.FailedCount), Count: int64(r.Count),
			StatisticsUnixNanos: timeToProto(r.StatisticsTime), CreationUnixNanos: timeToProto(r.CreationTime)}
	}
	return out
}

func statisticsRowsFromProto(rows []*pb.StatisticsRow) []spi.StatisticsRow {
	out := make([]spi.StatisticsRow, len(rows))
	for i, r := range rows {
		out[i] = spi.StatisticsRow{ID: r.GetId(), SuccessCount: int(r.GetSuccessCount()), FailedCount: int(r.GetFailedCount()), Count: int(r.GetCount()),
			StatisticsTime: timeFromProto(r.GetStatisticsUnixNanos()), CreationTime: timeFromProto(r.GetCreationUnixNanos())}
	}
	return out
}

func statisticsAddRequestToProto(typeName string, r spi.StatisticsAddRequest) *pb.StatisticsAddRequest {
	return &pb.StatisticsAddRequest{Type: typeName, Config: r.Config, Table: string(r.Table), Rows: statisticsRowsToProto(r.Rows)}
}

func statisticsAddRequestFromProto(m *pb.StatisticsAddRequest) spi.StatisticsAddRequest {
	return spi.StatisticsAddRequest{Config: propsFromProto(m.GetConfig()), Table: spi.StatisticsTable(m.GetTable()), Rows: statisticsRowsFromProto(m.GetRows())}
}

func statisticsQueryToProto(typeName string, q spi.StatisticsQuery) *pb.StatisticsQuery {
	return &pb.StatisticsQuery{Type: typeName, Config: q.Config, Table: string(q.Table), FromUnixNanos: timeToProto(q.From), Latest: q.Latest, Limit: int64(q.Limit)}
}

func statisticsQueryFromProto(m *pb.StatisticsQuery) spi.StatisticsQuery {
	return spi.StatisticsQuery{Config: propsFromProto(m.GetConfig()), Table: spi.StatisticsTable(m.GetTable()), From: timeFromProto(m.GetFromUnixNanos()),
		Latest: m.GetLatest(), Limit: int(m.GetLimit())}
}

func statisticsPageToProto(p spi.StatisticsPage) *pb.StatisticsPage {
	return &pb.StatisticsPage{Rows: statisticsRowsToProto(p.Rows), More: p.More}
}

func statisticsPageFromProto(m *pb.StatisticsPage) spi.StatisticsPage {
	return spi.StatisticsPage{Rows: statisticsRowsFromProto(m.GetRows()), More: m.GetMore()}
}
