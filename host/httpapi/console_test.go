package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ejob-io/ejob/host/httpapi"
	"github.com/ejob-io/ejob/plugins/tracing/rdb"
	"github.com/ejob-io/ejob/spi"
)

// get reads path with token and decodes the model of a successful answer
// into v.
func (f *fixture) get(path, token string, v any) {
	f.t.Helper()
	st, data := f.do("GET", path, token, nil)
	env := f.envelope(data)
	if st != http.StatusOK || string(env["success"]) != "true" {
		f.t.Fatalf("GET %s: %d %s", path, st, data)
	}
	if err := json.Unmarshal(env["model"], v); err != nil {
		f.t.Fatalf("model of %s: %v\n%s", path, err, env["model"])
	}
}

// withConsole serves the console's endpoints as host/console does.
func withConsole(o httpapi.Options) httpapi.Options {
	o.Console = func(s *httpapi.Server) (http.Handler, error) {
		mux := httpapi.NewMux()
		s.ConsoleRoutes(mux)
		return s.Authenticate(mux), nil
	}
	return o
}

func TestConsoleJobDetail(t *testing.T) {
	f := startWith(t, defaultUsers(t), withConsole(httpapi.Options{}))
	// A guest reads it; nobody without a session does.
	token := f.login("guest", guestPW)
	if st, data := f.do("GET", "/console/api/jobs/j", "", nil); st != http.StatusForbidden {
		t.Errorf("without a token: %d %s", st, data)
	}
	var d map[string]json.RawMessage
	f.get("/console/api/jobs/j", token, &d)
	for k, want := range map[string]string{
		"jobName": `"j"`, "cron": `"0 0/5 * * * ?"`, "shardingTotalCount": "3", "instanceCount": "1", "status": `"OK"`, "state": `"READY"`, "leader": `""`,
		"items": `[{"item":0,"serverIp":"10.0.0.1","instanceId":"10.0.0.1@-@42","status":"PENDING","failover":false,"state":"READY","parameter":"","failoverInstanceId":"","failoverPending":false},` +
			`{"item":1,"serverIp":"10.0.0.1","instanceId":"10.0.0.1@-@42","status":"PENDING","failover":false,"state":"READY","parameter":"","failoverInstanceId":"","failoverPending":false},` +
			`{"item":2,"serverIp":"10.0.0.1","instanceId":"10.0.0.1@-@42","status":"PENDING","failover":false,"state":"READY","parameter":"","failoverInstanceId":"","failoverPending":false}]`,
		"trace": "false", "lastResults": "{}",
		"instances": `[{"instanceId":"10.0.0.1@-@42","serverIp":"10.0.0.1","pid":"42","serverStatus":"ENABLED","leader":false,"items":[0,1,2],"failoverItems":[]}]`,
		"servers":   `[{"serverIp":"10.0.0.1","status":"ENABLED","instances":["10.0.0.1@-@42"]},{"serverIp":"10.0.0.2","status":"ENABLED","instances":[]}]`,
	} {
		if got := string(d[k]); got != want {
			t.Errorf("%s = %s\nwant %s", k, got, want)
		}
	}
	st, data := f.do("GET", "/console/api/jobs/nope", token, nil)
	if env := f.envelope(data); st != http.StatusNotFound || !strings.Contains(string(env["errorMsg"]), "nope") {
		t.Errorf("missing job: %d %s", st, data)
	}
}

func TestConsoleRecentExecutions(t *testing.T) {
	f := startTraced(t)
	token := f.login("guest", guestPW)
	var r httpapi.Recent
	f.get("/console/api/jobs/a/executions?limit=5", token, &r)
	if len(r.Rows) != 5 || !r.More || r.Rows[0].ID != "exec-24" || r.Rows[4].ID != "exec-20" {
		t.Errorf("limit 5: more %v, rows %+v", r.More, r.Rows)
	}
	if x := r.Rows[0]; !x.Success || x.CompleteTime == nil || x.CompleteTime.Sub(*x.StartTime) != time.Second {
		t.Errorf("newest row %+v", x)
	}
	// Default limit, a time range (RFC 3339 and epoch ms), an item.
	f.get("/console/api/jobs/a/executions", token, &r)
	if len(r.Rows) != 25 || r.More {
		t.Errorf("all of a: %d rows, more %v; want 25, false", len(r.Rows), r.More)
	}
	q := url.Values{"since": {traceBase.Add(20 * time.Minute).Format(time.RFC3339)}, "until": {fmt.Sprint(traceBase.Add(23 * time.Minute).UnixMilli())}}
	f.get("/console/api/jobs/a/executions?"+q.Encode(), token, &r)
	if len(r.Rows) != 3 || r.Rows[0].ID != "exec-22" || r.Rows[2].ID != "exec-20" {
		t.Errorf("since/until: %+v", r.Rows)
	}
	f.get("/console/api/jobs/a/executions?item=1", token, &r)
	if len(r.Rows) != 8 {
		t.Errorf("item 1: %d rows, want 8", len(r.Rows))
	}
	for _, x := range r.Rows {
		if x.ShardingItem != 1 || x.JobName != "a" {
			t.Errorf("item 1: row %+v", x)
		}
	}
	for _, bad := range []string{"limit=0", "limit=1001", "limit=x", "item=-1", "since=yesterday", "until=never"} {
		if st, data := f.do("GET", "/console/api/jobs/a/executions?"+bad, token, nil); st != http.StatusBadRequest {
			t.Errorf("%s: %d %s, want 400", bad, st, data)
		}
	}

	g := startWith(t, defaultUsers(t), withConsole(httpapi.Options{}))
	st, data := g.do("GET", "/console/api/jobs/j/executions", g.login("admin", adminPW), nil)
	if env := g.envelope(data); st != http.StatusNotFound || !strings.Contains(string(env["errorMsg"]), "elasticjob.tracing") {
		t.Errorf("without tracing: %d %s", st, data)
	}
}

// Each item of the detail has its newest finished execution: an item that
// fails every run shows its failure (the sharding table once showed such
// an item as "Pending" like the others), a running newer row does not
// hide the last result, and items whose rows are older than the job's
// newest lastResultRows are looked up one by one.
func TestConsoleJobDetailLastResults(t *testing.T) {
	sink := rdb.New()
	t.Cleanup(func() { _ = sink.Close() })
	cfg := map[string]string{"driver": "sqlite", "url": filepath.Join(t.TempDir(), "trace.db")}
	req := spi.TraceWriteRequest{Config: cfg}
	add := func(id string, item int, at time.Time, done, ok bool) {
		x := spi.ExecutionEvent{ID: id, Hostname: "box", IP: "10.0.0.1", JobName: "j", Source: "NORMAL_TRIGGER",
			TaskID: "j@-@0@-@READY@-@10.0.0.1@-@42", ShardingItem: item, StartTime: at}
		req.Executions = append(req.Executions, x)
		if done { // as a host records it: the start, then the end
			x.CompleteTime, x.Success = at.Add(time.Second), ok
			if !ok {
				x.FailureCause = "cannot reach db for item " + fmt.Sprint(item)
			}
			req.Executions = append(req.Executions, x)
		}
	}
	add("old-1-ok", 1, traceBase, true, true)
	add("old-2-failed", 2, traceBase, true, false)
	add("new-2-ok", 2, traceBase.Add(time.Minute), true, true)
	add("new-1-running", 1, traceBase.Add(2*time.Minute), false, false)
	for i := range 520 {
		add(fmt.Sprintf("item0-%03d", i), 0, traceBase.Add(time.Hour+time.Duration(i)*time.Second), true, false)
	}
	if resp, err := sink.Write(context.Background(), req); err != nil || resp.Rejected != 0 {
		t.Fatalf("write: %+v, %v", resp, err)
	}
	f := startWith(t, defaultUsers(t), withConsole(httpapi.Options{Tracer: sink, TracerConfig: cfg}))
	var d httpapi.JobDetail
	f.get("/console/api/jobs/j", f.login("guest", guestPW), &d)
	if !d.Trace || d.TraceError != "" {
		t.Fatalf("trace %v, error %q", d.Trace, d.TraceError)
	}
	got := map[int]string{}
	for item, x := range d.LastResults {
		got[item] = fmt.Sprintf("%s %v %s", x.ID, x.Success, x.FailureCause)
	}
	want := map[int]string{0: "item0-519 false cannot reach db for item 0", 1: "old-1-ok true ", 2: "new-2-ok true "}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("last results = %v\nwant %v", got, want)
	}
	if x := d.LastResults[0]; x.CompleteTime == nil || x.StartTime == nil {
		t.Errorf("item 0's last result has no times: %+v", x)
	}
}
