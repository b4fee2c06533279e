package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ejob-io/ejob/host/httpapi"
	"github.com/ejob-io/ejob/plugins/tracing/rdb"
	"github.com/ejob-io/ejob/spi"
)

// traceBase is the start of the first recorded execution.
var traceBase = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// startTraced is a server whose event trace is a real RDB sink on SQLite
// holding 25 executions of job a on 10.0.0.1 (started a minute apart,
// the even ones succeeded), 5 of job b on 10.0.0.2, and 3 status events
// of job a.
func startTraced(t *testing.T) *fixture {
	t.Helper()
	sink := rdb.New()
	t.Cleanup(func() { _ = sink.Close() })
	cfg := map[string]string{"driver": "sqlite", "url": filepath.Join(t.TempDir(), "trace.db")}
	req := spi.TraceWriteRequest{Config: cfg}
	for i := range 30 {
		job, ip := "a", "10.0.0.1"
		if i >= 25 {
			job, ip = "b", "10.0.0.2"
		}
		x := spi.ExecutionEvent{ID: fmt.Sprintf("exec-%02d", i), Hostname: "box", IP: ip, JobName: job, Source: "NORMAL_TRIGGER",
			TaskID: job + "@-@0@-@READY@-@" + ip + "@-@42", ShardingItem: i % 3, StartTime: traceBase.Add(time.Duration(i) * time.Minute)}
		if i%2 == 0 {
			x.Success, x.CompleteTime = true, x.StartTime.Add(time.Second)
		}
		req.Executions = append(req.Executions, x)
	}
	for i, st := range []string{"TASK_STAGING", "TASK_RUNNING", "TASK_FINISHED"} {
		req.Statuses = append(req.Statuses, spi.StatusEvent{ID: fmt.Sprintf("status-%d", i), JobName: "a", TaskID: "a@-@0,1@-@READY@-@10.0.0.1@-@42",
			SlaveID: "10.0.0.1", ExecutionType: "READY", ShardingItems: "[0, 1]", State: st, Message: "m",
			CreationTime: traceBase.Add(time.Duration(i) * time.Second)})
	}
	if resp, err := sink.Write(context.Background(), req); err != nil || resp.Rejected != 0 {
		t.Fatalf("write: %+v, %v", resp, err)
	}
	return startWith(t, defaultUsers(t), withConsole(httpapi.Options{Tracer: sink, TracerConfig: cfg}))
}

type tracePage struct {
	Total int                          `json:"total"`
	Rows  []map[string]json.RawMessage `json:"rows"`
}

// query posts body to path and decodes the page of a successful answer.
func (f *fixture) query(path, token, body string) tracePage {
	f.t.Helper()
	st, data := f.do("POST", path, token, strings.NewReader(body))
	env := f.envelope(data)
	if st != http.StatusOK || string(env["success"]) != "true" {
		f.t.Fatalf("POST %s %s: %d %s", path, body, st, data)
	}
	var p tracePage
	if err := json.Unmarshal(env["model"], &p); err != nil {
		f.t.Fatalf("model %s: %v", env["model"], err)
	}
	return p
}

func str(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatalf("%s: not a string", raw)
	}
	return s
}

func TestEventTraceLoginAndGuest(t *testing.T) {
	f := startTraced(t)
	for _, path := range []string{"/api/event-trace/execution", "/api/event-trace/status"} {
		if st, data := f.do("POST", path, "", strings.NewReader(`{}`)); st != http.StatusForbidden {
			t.Errorf("%s without a token: %d %s", path, st, data)
		}
		// A guest reads the history.
		if p := f.query(path, f.login("guest", guestPW), `{"jobName":"a"}`); len(p.Rows) == 0 {
			t.Errorf("%s as guest: no rows", path)
		}
	}
}

func TestEventTraceExecutions(t *testing.T) {
	f := startTraced(t)
	token := f.login("admin", adminPW)
	const path = "/api/event-trace/execution"

	p := f.query(path, token, `{"jobName":"a"}`)
	if p.Total != 25 || len(p.Rows) != httpapi.DefaultPageSize {
		t.Fatalf("job a: total %d, %d rows; want 25 and a default page of %d", p.Total, len(p.Rows), httpapi.DefaultPageSize)
	}
	want := []string{"id", "hostname", "ip", "taskId", "jobName", "source", "shardingItem", "startTime", "completeTime", "success", "failureCause"}
	if got := slices.Sorted(maps.Keys(p.Rows[0])); !slices.Equal(got, slices.Sorted(slices.Values(want))) {
		t.Errorf("execution fields %v, want %v", got, want)
	}
	// Newest first: exec-24 started last and succeeded.
	r := p.Rows[0]
	if str(t, r["id"]) != "exec-24" || string(r["success"]) != "true" || str(t, r["source"]) != "NORMAL_TRIGGER" || string(r["shardingItem"]) != "0" {
		t.Errorf("first row %v", r)
	}
	if st, err := time.Parse(time.RFC3339, str(t, r["startTime"])); err != nil || !st.Equal(traceBase.Add(24*time.Minute)) {
		t.Errorf("startTime %s: %v", r["startTime"], err)
	}
	if r := p.Rows[1]; str(t, r["id"]) != "exec-23" || string(r["completeTime"]) != "null" || string(r["success"]) != "false" {
		t.Errorf("a running execution: %v", r)
	}

	// Paging: page 3 of 10 holds the 5 oldest.
	p = f.query(path, token, `{"jobName":"a","pageSize":10,"pageNumber":3}`)
	if p.Total != 25 || len(p.Rows) != 5 || str(t, p.Rows[4]["id"]) != "exec-00" {
		t.Errorf("page 3: total %d, rows %v", p.Total, p.Rows)
	}
	// Filters.
	if p := f.query(path, token, `{"jobName":"a","isSuccess":true,"pageSize":100}`); p.Total != 13 || len(p.Rows) != 13 {
		t.Errorf("isSuccess true: total %d, %d rows; want 13", p.Total, len(p.Rows))
	}
	p = f.query(path, token, `{"ip":"10.0.0.2"}`)
	if p.Total != 5 || str(t, p.Rows[0]["jobName"]) != "b" {
		t.Errorf("ip 10.0.0.2: total %d, rows %v", p.Total, p.Rows)
	}
	from, to := traceBase.Add(5*time.Minute).UnixMilli(), traceBase.Add(10*time.Minute).UnixMilli()
	p = f.query(path, token, fmt.Sprintf(`{"jobName":"a","startTime":%d,"endTime":%d}`, from, to))
	if p.Total != 5 || str(t, p.Rows[0]["id"]) != "exec-09" || str(t, p.Rows[4]["id"]) != "exec-05" {
		t.Errorf("start time range: total %d, rows %v", p.Total, p.Rows)
	}
	p = f.query(path, token, fmt.Sprintf(`{"startTimeFrom":%q}`, traceBase.Add(28*time.Minute).Format(time.RFC3339)))
	if p.Total != 2 {
		t.Errorf("startTimeFrom: total %d, want 2", p.Total)
	}

	for _, body := range []string{`{"pageSize":-1}`, `{"pageSize":100000}`, `{"pageNumber":-2}`, `{"startTime":"yesterday"}`} {
		if st, data := f.do("POST", path, token, strings.NewReader(body)); st != http.StatusBadRequest {
			t.Errorf("%s: %d %s, want 400", body, st, data)
		}
	}
}

// TestEventTracePageArithmetic: pageNumber 2^63-1 must not wrap the
// offset (it answered total -1904 and the first page's rows): a page that
// would start past tracing.MaxOffset is refused with the largest page
// number allowed, and a page past the end is empty with the true total.
func TestEventTracePageArithmetic(t *testing.T) {
	f := startTraced(t)
	token := f.login("admin", adminPW)
	for path, total := range map[string]int{"/api/event-trace/execution": 30, "/api/event-trace/status": 3} {
		for _, body := range []string{`{"pageSize":1000,"pageNumber":9223372036854775807}`, `{"pageSize":1,"pageNumber":9223372036854775807}`,
			`{"pageSize":1000,"pageNumber":2147485}`, `{"pageNumber":9223372036854775808}`} {
			st, data := f.do("POST", path, token, strings.NewReader(body))
			if env := f.envelope(data); st != http.StatusBadRequest || !strings.Contains(string(env["errorMsg"]), "pageNumber") {
				t.Errorf("%s %s: %d %s, want 400 naming pageNumber", path, body, st, data)
			}
		}
		for _, body := range []string{`{"pageSize":10,"pageNumber":100}`, `{"pageSize":1000,"pageNumber":2147484}`} {
			p := f.query(path, token, body)
			if len(p.Rows) != 0 || p.Rows == nil || p.Total != total {
				t.Errorf("%s %s past the end: total %d, %d rows; want total %d and no rows", path, body, p.Total, len(p.Rows), total)
			}
		}
	}
}

func TestEventTraceStatuses(t *testing.T) {
	f := startTraced(t)
	token := f.login("admin", adminPW)
	p := f.query("/api/event-trace/status", token, `{"jobName":"a","pageSize":2}`)
	if p.Total != 3 || len(p.Rows) != 2 {
		t.Fatalf("statuses: total %d, %d rows", p.Total, len(p.Rows))
	}
	want := []string{"id", "jobName", "originalTaskId", "taskId", "slaveId", "executionType", "shardingItems", "state", "message", "creationTime"}
	if got := slices.Sorted(maps.Keys(p.Rows[0])); !slices.Equal(got, slices.Sorted(slices.Values(want))) {
		t.Errorf("status fields %v, want %v", got, want)
	}
	if r := p.Rows[0]; str(t, r["state"]) != "TASK_FINISHED" || str(t, r["shardingItems"]) != "[0, 1]" || str(t, r["slaveId"]) != "10.0.0.1" {
		t.Errorf("newest status %v", r)
	}
	if p := f.query("/api/event-trace/status", token, `{"jobName":"b"}`); p.Total != 0 || p.Rows == nil {
		t.Errorf("job b: %+v, want an empty page with rows []", p)
	}
}

func TestEventTraceNotConfigured(t *testing.T) {
	f := start(t, defaultUsers(t))
	token := f.login("admin", adminPW)
	for _, path := range []string{"/api/event-trace/execution", "/api/event-trace/status"} {
		st, data := f.do("POST", path, token, strings.NewReader(`{}`))
		env := f.envelope(data)
		if st != http.StatusNotFound || string(env["success"]) != "false" || !strings.Contains(string(env["errorMsg"]), "elasticjob.tracing") {
			t.Errorf("%s without tracing: %d %s", path, st, data)
		}
	}
}

// TestEventTraceEmptyFilters: the bodies ElasticJob-UI sends, every filter
// an empty string (its selects and inputs cleared: isSuccess "" once made
// the Job trace page empty with "cannot unmarshal string"), are no
// filter, as upstream reads them; numbers may come as strings.
func TestEventTraceEmptyFilters(t *testing.T) {
	f := startTraced(t)
	token := f.login("admin", adminPW)
	for _, c := range []struct {
		path, body string
		total      int
	}{
		{"/api/event-trace/execution", `{"jobName":"","ip":"","isSuccess":"","startTime":"","endTime":"","pageSize":10,"pageNumber":1,"sort":"","order":""}`, 30},
		{"/api/event-trace/execution", `{"jobName":"a","isSuccess":"true","pageSize":"100","pageNumber":"1"}`, 13},
		{"/api/event-trace/execution", `{"jobName":"a","isSuccess":"false"}`, 12},
		{"/api/event-trace/execution", `{"isSuccess":null,"pageSize":""}`, 30},
		{"/api/event-trace/status", `{"jobName":"","source":"","executionType":"","state":"","startTime":"","endTime":"","pageSize":10,"pageNumber":1}`, 3},
	} {
		if p := f.query(c.path, token, c.body); p.Total != c.total {
			t.Errorf("%s %s: total %d, want %d", c.path, c.body, p.Total, c.total)
		}
	}
	if st, data := f.do("POST", "/api/event-trace/execution", token, strings.NewReader(`{"isSuccess":"maybe"}`)); st != http.StatusBadRequest || !strings.Contains(string(data), "isSuccess") {
		t.Errorf(`isSuccess "maybe": %d %s, want 400 naming isSuccess`, st, data)
	}
}

// TestEventTraceStatusFilters: state, executionType and source filter
// the status trace as upstream's query does (they were once ignored: every
// row came back).
func TestEventTraceStatusFilters(t *testing.T) {
	f := startTraced(t)
	token := f.login("admin", adminPW)
	for body, want := range map[string][]string{
		`{"state":"TASK_RUNNING"}`:                           {"status-1"},
		`{"jobName":"a","state":"TASK_FAILED"}`:              {},
		`{"executionType":"READY"}`:                          {"status-2", "status-1", "status-0"},
		`{"executionType":"FAILOVER"}`:                       {},
		`{"source":"LITE_EXECUTOR","state":"TASK_FINISHED"}`: {"status-2"},
		`{"source":"CLOUD_EXECUTOR"}`:                        {},
	} {
		p := f.query("/api/event-trace/status", token, body)
		got := []string{}
		for _, r := range p.Rows {
			got = append(got, str(t, r["id"]))
		}
		if !slices.Equal(got, want) || p.Total != len(want) {
			t.Errorf("%s: %v total %d, want %v", body, got, p.Total, want)
		}
	}
}

// TestEventTracePrefixLists: upstream's autocomplete lists, the model a
// list of strings ([] when nothing matches), a guest may read them.
func TestEventTracePrefixLists(t *testing.T) {
	f := startTraced(t)
	token := f.login("guest", guestPW)
	for path, want := range map[string]string{
		"/api/event-trace/execution/jobNames":    `["a","b"]`,
		"/api/event-trace/execution/jobNames/":   `["a","b"]`,
		"/api/event-trace/status/jobNames/":      `["a"]`,
		"/api/event-trace/execution/jobNames/a":  `["a"]`,
		"/api/event-trace/execution/jobNames/zz": `[]`,
		"/api/event-trace/execution/ip":          `["10.0.0.1","10.0.0.2"]`,
		"/api/event-trace/execution/ip/10.0.0.2": `["10.0.0.2"]`,
		"/api/event-trace/status/jobNames":       `["a"]`,
		"/api/event-trace/status/jobNames/b":     `[]`,
	} {
		st, data := f.do("GET", path, token, nil)
		env := f.envelope(data)
		if st != http.StatusOK || string(env["success"]) != "true" || string(env["model"]) != want {
			t.Errorf("GET %s: %d %s, want model %s", path, st, data, want)
		}
	}
	if st, data := f.do("GET", "/api/event-trace/execution/ip/%00", token, nil); st != http.StatusBadRequest || !strings.Contains(string(data), "prefix") {
		t.Errorf("a NUL prefix: %d %s, want 400 naming prefix", st, data)
	}
	g := startWith(t, defaultUsers(t), withConsole(httpapi.Options{}))
	if st, data := g.do("GET", "/api/event-trace/execution/jobNames/a", g.login("admin", adminPW), nil); st != http.StatusNotFound || !strings.Contains(string(data), "not configured") {
		t.Errorf("without tracing: %d %s, want 404 not configured", st, data)
	}
}
