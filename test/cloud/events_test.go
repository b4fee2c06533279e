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
	// succeeded, item 1 failed); the periods and lists upstream reads from
	// its statistics tables are refused by name, not answered with zeros.
	var online struct {
		SuccessCount, FailedCount int
	}
	_ = json.Unmarshal(c.must("GET", "/api/job/statistics/tasks/results/online", ""), &online)
	if online.SuccessCount < 1 || online.FailedCount < 1 {
		t.Errorf("online task results %+v, want at least one success and one failure", online)
	}
	for _, p := range []string{"/api/job/statistics/tasks/results/lastWeek", "/api/job/statistics/tasks/running", "/api/job/statistics/jobs/register"} {
		if m, msg := c.call("GET", p, ""); !strings.HasPrefix(msg, "501: ") || !strings.Contains(msg, "no statistics tables") {
			t.Errorf("GET %s = %s, %q; want errorCode 501 saying no statistics tables are kept", p, m, msg)
		}
	}
}
