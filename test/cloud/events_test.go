package cloud

import (
	"encoding/json"
	"sort"
	"strings"
	"testing"
	"time"
)

// With elasticjob.tracing, each item's run is recorded: its status steps
// and one execution with its outcome, read back through the event paths.
func TestEventTraceRecordsItems(t *testing.T) {
	e := newEnv(t)
	e.tracing = true
	_, c := e.boot()
	c.must("POST", "/api/job/register", e.jobBody("traced", "app", "TRANSIENT", "", 2, "0=sleep1,1=fail", false, false))
	c.must("POST", "/api/job/trigger", "traced")
	type page struct {
		Total int `json:"total"`
		Rows  []struct {
			TaskID       string  `json:"taskId"`
			SlaveID      string  `json:"slaveId"`
			ShardingItem int     `json:"shardingItem"`
			Success      bool    `json:"success"`
			FailureCause string  `json:"failureCause"`
			CompleteTime *string `json:"completeTime"`
			State        string  `json:"state"`
		} `json:"rows"`
	}
	var ex page
	e.eventually(20*time.Second, "two completed executions", func() bool {
		_ = json.Unmarshal(c.must("GET", "/api/job/events/executions?jobName=traced", ""), &ex)
		done := 0
		for _, r := range ex.Rows {
			if r.CompleteTime != nil {
				done++
			}
		}
		return done == 2
	})
	for _, r := range ex.Rows {
		switch {
		case r.ShardingItem == 0 && !r.Success, r.ShardingItem == 1 && (r.Success || !strings.Contains(r.FailureCause, "failed")):
			t.Errorf("execution %+v", r)
		}
	}
	var st page
	_ = json.Unmarshal(c.must("GET", "/api/job/events/statusTraces?jobName=traced&per_page=50", ""), &st)
	var states []string
	for _, r := range st.Rows {
		states = append(states, r.State)
		// A step after the launch names the node the item ran on (the
		// LOCAL launcher's "local"), in its slave id and its task id.
		if r.State != "TASK_STAGING" && (r.SlaveID != "local" || !strings.Contains(r.TaskID, "@-@local@-@")) {
			t.Errorf("status trace %s: slaveId %q, taskId %q; want the node local in both", r.State, r.SlaveID, r.TaskID)
		}
	}
	sort.Strings(states)
	got := strings.Join(states, ",")
	for _, want := range []string{"TASK_FAILED", "TASK_FINISHED", "TASK_RUNNING", "TASK_STAGING,TASK_STAGING"} {
		if !strings.Contains(got, want) {
			t.Errorf("status trace %s lacks %s", got, want)
		}
	}
	if _, msg := c.call("GET", "/api/job/events/statusTraces?per_page=0", ""); !strings.Contains(msg, "per_page") {
		t.Errorf("per_page=0: %q", msg)
	}

	// The online task results count what this leader saw end (item 0
	// succeeded, item 1 failed) before any day row is written.
	var online struct {
		SuccessCount, FailedCount int
		StatisticInterval         string
	}
	_ = json.Unmarshal(c.must("GET", "/api/job/statistics/tasks/results/online", ""), &online)
	if online.SuccessCount < 1 || online.FailedCount < 1 || online.StatisticInterval != "DAY" {
		t.Errorf("online task results %+v, want at least one success and one failure", online)
	}
	// At the start of the next minute the leader writes the minute rows
	// into the tracing database: the items' results, the running counts.
	type resultRow struct {
		ID                        int64
		SuccessCount, FailedCount int
		StatisticInterval         string
		StatisticsTime            *time.Time
	}
	e.eventually(90*time.Second, "minute rows counting the items", func() bool {
		var rows []resultRow
		_ = json.Unmarshal(c.must("GET", "/api/job/statistics/tasks/results?since=last24hours", ""), &rows)
		s, f := 0, 0
		for _, r := range rows {
			if r.ID == 0 || r.StatisticInterval != "MINUTE" || r.StatisticsTime == nil || r.StatisticsTime.Second() != 0 {
				t.Fatalf("minute row %+v", r)
			}
			s, f = s+r.SuccessCount, f+r.FailedCount
		}
		return s >= 1 && f >= 1
	})
	var last resultRow
	_ = json.Unmarshal(c.must("GET", "/api/job/statistics/tasks/results/lastMinute", ""), &last)
	if last.ID == 0 || last.StatisticInterval != "MINUTE" {
		t.Errorf("lastMinute %+v, want the latest minute row", last)
	}
	// The running counts' rows are written in the same minute, after the
	// results'.
	for _, p := range []string{"/api/job/statistics/tasks/running?since=lastWeek", "/api/job/statistics/jobs/running?since=lastWeek"} {
		e.eventually(10*time.Second, p+" rows", func() bool {
			var rows []struct {
				ID           int64
				RunningCount *int
			}
			_ = json.Unmarshal(c.must("GET", p, ""), &rows)
			return len(rows) > 0 && rows[0].ID != 0 && rows[0].RunningCount != nil
		})
	}
	var reg []any
	if err := json.Unmarshal(c.must("GET", "/api/job/statistics/jobs/register", ""), &reg); err != nil {
		t.Errorf("jobs/register: %v", err)
	}
	if _, msg := c.call("GET", "/api/job/statistics/tasks/running?since=yesterday", ""); !strings.HasPrefix(msg, "400: ") || !strings.Contains(msg, "since") {
		t.Errorf("since=yesterday: %q, want 400 naming since", msg)
	}
}

// Without elasticjob.tracing there are no statistics tables: the paths
// that read them are refused by name, not answered with made-up zeros.
func TestStatisticsWithoutTracingRefused(t *testing.T) {
	e := newEnv(t)
	_, c := e.boot()
	for _, p := range []string{"/api/job/statistics/tasks/results/lastWeek", "/api/job/statistics/tasks/running?since=lastWeek",
		"/api/job/statistics/jobs/register", "/api/job/statistics/tasks/results?since=last24hours"} {
		if m, msg := c.call("GET", p, ""); !strings.HasPrefix(msg, "501: ") || !strings.Contains(msg, "elasticjob.tracing") {
			t.Errorf("GET %s = %s, %q; want errorCode 501 naming elasticjob.tracing", p, m, msg)
		}
	}
	if _, msg := c.call("GET", "/api/job/statistics/tasks/results/lastYear", ""); !strings.HasPrefix(msg, "400: ") {
		t.Errorf("period lastYear: %q, want 400", msg)
	}
	// online is then the leader's count since it leads.
	e.eventually(20*time.Second, "online answered by the leader", func() bool {
		m, _ := c.call("GET", "/api/job/statistics/tasks/results/online", "")
		var online struct{ StatisticInterval string }
		return json.Unmarshal(m, &online) == nil && online.StatisticInterval == "online"
	})
}
