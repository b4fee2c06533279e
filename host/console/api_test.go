package console_test

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

	"github.com/ejob-io/ejob/core/lifecycle"
	"github.com/ejob-io/ejob/host/console"
	"github.com/ejob-io/ejob/host/httpapi"
	"github.com/ejob-io/ejob/plugins/tracing/rdb"
	"github.com/ejob-io/ejob/spi"
)

// model decodes a success envelope's model into v, failing on anything
// else.
func model(t *testing.T, r response, v any) {
	t.Helper()
	var env struct {
		Success bool
		Model   json.RawMessage
	}
	if err := json.Unmarshal([]byte(r.body), &env); err != nil || r.status != 200 || !env.Success {
		t.Fatalf("want a success envelope, got %d %s", r.status, r.body)
	}
	if err := json.Unmarshal(env.Model, v); err != nil {
		t.Fatalf("model: %v: %s", err, env.Model)
	}
}

// traced is a console whose event trace is a real RDB sink on SQLite
// holding execs.
func traced(t *testing.T, execs ...spi.ExecutionEvent) *fixture {
	t.Helper()
	sink := rdb.New()
	t.Cleanup(func() { _ = sink.Close() })
	cfg := map[string]string{"driver": "sqlite", "url": filepath.Join(t.TempDir(), "trace.db")}
	for i := range execs {
		execs[i].ID = fmt.Sprintf("exec-%d", i)
		execs[i].TaskID = execs[i].JobName + "@-@0@-@READY@-@" + execs[i].IP + "@-@42"
		execs[i].Source = "NORMAL_TRIGGER"
	}
	// As a host writes them: every start, then the completions.
	var starts, ends []spi.ExecutionEvent
	for _, e := range execs {
		st := e
		st.CompleteTime, st.Success, st.FailureCause = time.Time{}, false, ""
		starts = append(starts, st)
		if !e.CompleteTime.IsZero() {
			ends = append(ends, e)
		}
	}
	for _, batch := range [][]spi.ExecutionEvent{starts, ends} {
		if len(batch) == 0 {
			continue
		}
		if resp, err := sink.Write(context.Background(), spi.TraceWriteRequest{Config: cfg, Executions: batch}); err != nil || resp.Rejected != 0 {
			t.Fatalf("write: %+v, %v", resp, err)
		}
	}
	return start(t, httpapi.Options{Tracer: sink, TracerConfig: cfg})
}

func TestOverviewWithoutTrace(t *testing.T) {
	f := start(t, httpapi.Options{Ready: func() error { return fmt.Errorf("registry session lost") }})
	b := f.browser()
	b.login("guest", guestPW)
	var m console.OverviewModel
	model(t, b.do("GET", "/console/api/overview", nil, ""), &m)
	if m.Jobs.Total != 1 || m.Jobs.Ready != 1 || m.Instances != 1 || m.Servers != 1 {
		t.Errorf("counts: %+v instances %d servers %d", m.Jobs, m.Instances, m.Servers)
	}
	if m.Trace || len(m.Failures) != 0 || len(m.Late) != 0 {
		t.Errorf("without a trace: trace %v failures %v late %v", m.Trace, m.Failures, m.Late)
	}
	if m.Registry.Ready || m.Registry.NotReady != "registry session lost" {
		t.Errorf("registry: %+v", m.Registry)
	}
	// Disabled and crashed jobs are counted and named.
	if r := b.do("POST", "/api/jobs/j/disable", map[string]string{httpapi.CSRFHeader: b.csrf}, ""); r.status != http.StatusForbidden {
		t.Fatalf("guest disable: %d", r.status)
	}
	a := f.browser()
	a.login("admin", adminPW)
	if r := a.do("POST", "/api/jobs/j/disable", map[string]string{httpapi.CSRFHeader: a.csrf}, ""); r.status != 200 {
		t.Fatalf("disable: %d %s", r.status, r.body)
	}
	model(t, b.do("GET", "/console/api/overview", nil, ""), &m)
	if m.Jobs.Disabled != 1 || m.Jobs.Ready != 0 {
		t.Errorf("after disable: %+v", m.Jobs)
	}
}

func TestOverviewFailuresAndLate(t *testing.T) {
	now := time.Now()
	fail := func(job string, item int, ago time.Duration, cause string) spi.ExecutionEvent {
		st := now.Add(-ago)
		return spi.ExecutionEvent{JobName: job, IP: "10.0.0.1", ShardingItem: item, StartTime: st, CompleteTime: st.Add(time.Second), FailureCause: cause}
	}
	t.Run("late", func(t *testing.T) {
		// j fires every 5 minutes; its last run is 2 days old.
		f := traced(t, fail("j", 0, 48*time.Hour, "old"), fail("other", 1, time.Hour, "boom\nstack"), fail("other", 0, 2*time.Hour, "first"))
		b := f.browser()
		b.login("guest", guestPW)
		var m console.OverviewModel
		model(t, b.do("GET", "/console/api/overview", nil, ""), &m)
		if !m.Trace || m.TraceError != "" {
			t.Fatalf("trace %v %q", m.Trace, m.TraceError)
		}
		if len(m.Failures) != 1 || m.Failures[0].JobName != "other" || m.Failures[0].Count != 2 ||
			m.Failures[0].Last.FailureCause != "boom\nstack" || fmt.Sprint(m.Failures[0].Items) != "[0 1]" {
			t.Errorf("failures (the 2-day-old one is outside the window): %+v", m.Failures)
		}
		if len(m.Late) != 1 || m.Late[0].JobName != "j" || m.Late[0].LastStart != nil {
			t.Fatalf("late: %+v", m.Late)
		}
		// The expected fire is j's last 5-minute mark at least a minute ago.
		exp := m.Late[0].Expected
		if exp.After(now.Add(-time.Minute)) || exp.Before(now.Add(-7*time.Minute)) || exp.Minute()%5 != 0 || exp.Second() != 0 {
			t.Errorf("expected fire %v (now %v)", exp, now)
		}
	})
	t.Run("on time", func(t *testing.T) {
		ok := spi.ExecutionEvent{JobName: "j", IP: "10.0.0.1", StartTime: now.Add(-time.Second), CompleteTime: now, Success: true}
		// A started, not completed execution is no failure.
		running := spi.ExecutionEvent{JobName: "j", IP: "10.0.0.1", ShardingItem: 1, StartTime: now.Add(-time.Second)}
		f := traced(t, ok, running)
		b := f.browser()
		b.login("guest", guestPW)
		var m console.OverviewModel
		model(t, b.do("GET", "/console/api/overview", nil, ""), &m)
		if len(m.Late) != 0 || len(m.Failures) != 0 {
			t.Errorf("late %+v failures %+v", m.Late, m.Failures)
		}
	})
}

func TestJobsRows(t *testing.T) {
	now := time.Now()
	f := traced(t, spi.ExecutionEvent{JobName: "j", IP: "10.0.0.1", ShardingItem: 1, StartTime: now.Add(-time.Minute),
		CompleteTime: now.Add(-50 * time.Second), FailureCause: "exit status 3"})
	b := f.browser()
	b.login("guest", guestPW)
	var m console.JobsModel
	model(t, b.do("GET", "/console/api/jobs", nil, ""), &m)
	if len(m.Jobs) != 1 || !m.Trace {
		t.Fatalf("jobs: %+v", m)
	}
	j := m.Jobs[0]
	if j.JobName != "j" || j.Status != lifecycle.StatusOK || j.State != lifecycle.StateReady || j.Cron != "0 0/5 * * * ?" || j.ShardingTotalCount != 2 || j.InstanceCount != 1 {
		t.Errorf("row: %+v", j)
	}
	if j.NextFireTime == nil || !j.NextFireTime.After(m.Now) || j.NextFireTime.After(m.Now.Add(5*time.Minute)) || j.NextFireTime.Minute()%5 != 0 {
		t.Errorf("next fire %v (now %v)", j.NextFireTime, m.Now)
	}
	if j.LastRun == nil || j.LastRun.Success || j.LastRun.FailureCause != "exit status 3" || j.LastRun.Item != 1 {
		t.Errorf("last run: %+v", j.LastRun)
	}
}

func TestCronPreview(t *testing.T) {
	f := start(t, httpapi.Options{})
	b := f.browser()
	b.login("guest", guestPW)
	for _, c := range []struct{ cron, tz, kind string }{
		{"0 0/5 * * * ?", "", "Quartz"}, {"0 15 10 ? * 6L", "Asia/Shanghai", "Quartz"}, {"*/10 * * * *", "UTC", "crontab"},
		{"@every 90s", "", "descriptor"}, {"0 0 12 * * ?", "GMT+08:00", "Quartz"},
	} {
		var m console.PreviewModel
		model(t, b.do("GET", "/console/api/cron/preview?cron="+url.QueryEscape(c.cron)+"&timeZone="+url.QueryEscape(c.tz), nil, ""), &m)
		if len(m.FireTimes) != 5 || !strings.EqualFold(m.Kind, c.kind) {
			t.Errorf("%q in %q: kind %q, %d fire times", c.cron, c.tz, m.Kind, len(m.FireTimes))
			continue
		}
		for i := 1; i < 5; i++ {
			if !m.FireTimes[i].After(m.FireTimes[i-1]) {
				t.Errorf("%q: fire times not increasing: %v", c.cron, m.FireTimes)
			}
		}
	}
	for q, want := range map[string]string{"cron=0+0+25+*+*+%3F": "hour field", "cron=%2A+%2A": "fields", "cron=0+0+12+*+*+%3F&timeZone=Mars/Olympus": "Mars/Olympus"} {
		var m console.PreviewModel
		model(t, b.do("GET", "/console/api/cron/preview?"+q, nil, ""), &m)
		if !strings.Contains(m.Error, want) || len(m.FireTimes) != 0 {
			t.Errorf("preview %s: %+v, want an error with %q", q, m, want)
		}
	}
	for _, q := range []string{"cron=", "cron=@hourly&n=99"} {
		r := b.do("GET", "/console/api/cron/preview?"+q, nil, "")
		if r.status != http.StatusBadRequest || !strings.Contains(r.body, `"success":false`) {
			t.Errorf("preview %s: %d %s", q, r.status, r.body)
		}
	}
}

func TestEditConfig(t *testing.T) {
	f := start(t, httpapi.Options{})
	a := f.browser()
	a.login("admin", adminPW)
	var m console.ConfigModel
	model(t, a.do("GET", "/console/api/jobs/j/config", nil, ""), &m)
	if m.Config.Props["email.password"] == "hunter2-secret" || fmt.Sprint(m.MaskedProps) != "[email.password]" || m.Version == 0 && m.Config.JobName != "j" {
		t.Fatalf("config model: %+v", m)
	}
	csrf := map[string]string{httpapi.CSRFHeader: a.csrf}
	put := func(mutate func(*lifecycle.ConfigJSON), version int32) response {
		cj := m.Config
		cj.Props = map[string]string{}
		for k, v := range m.Config.Props {
			cj.Props[k] = v
		}
		mutate(&cj)
		body, err := json.Marshal(map[string]any{"config": cj, "version": version})
		if err != nil {
			t.Fatal(err)
		}
		return a.do("PUT", "/console/api/jobs/j/config", csrf, string(body))
	}
	stored := func() lifecycle.StoredConfig {
		st, err := lifecycle.GetConfig(context.Background(), f.c, "j")
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	before := stored()
	// Invalid keys: each named, nothing written.
	r := put(func(c *lifecycle.ConfigJSON) { c.Cron = "0 0 25 * * ?"; c.ShardingTotalCount = 0 }, m.Version)
	var refused struct{ Model console.SaveError }
	if err := json.Unmarshal([]byte(r.body), &refused); err != nil || r.status != http.StatusBadRequest ||
		refused.Model.Fields["cron"] == "" || refused.Model.Fields["shardingTotalCount"] == "" {
		t.Fatalf("invalid PUT: %d %s", r.status, r.body)
	}
	if after := stored(); after.Version != before.Version || after.Config.Cron != before.Config.Cron {
		t.Fatalf("an invalid config was written: %+v", after.Config)
	}
	// Without the CSRF token, or as a guest: refused.
	g := f.browser()
	g.login("guest", guestPW)
	body := `{"config":{"jobName":"j","cron":"0 0 1 * * ?","shardingTotalCount":2},"version":` + fmt.Sprint(m.Version) + `}`
	if r := g.do("PUT", "/console/api/jobs/j/config", map[string]string{httpapi.CSRFHeader: g.csrf}, body); r.status != http.StatusForbidden {
		t.Errorf("guest PUT: %d %s", r.status, r.body)
	}
	if r := a.do("PUT", "/console/api/jobs/j/config", nil, body); r.status != http.StatusForbidden {
		t.Errorf("PUT without CSRF: %d %s", r.status, r.body)
	}
	// Valid: written, the masked secret kept.
	r = put(func(c *lifecycle.ConfigJSON) {
		c.Cron = "*/10 * * * *"
		c.TimeZone = "Asia/Shanghai"
		c.Props["extra"] = "x"
	}, m.Version)
	if r.status != 200 {
		t.Fatalf("valid PUT: %d %s", r.status, r.body)
	}
	after := stored()
	if after.Config.Cron != "*/10 * * * *" || after.Config.TimeZone != "Asia/Shanghai" || after.Config.Props["email.password"] != "hunter2-secret" ||
		after.Config.Props["extra"] != "x" {
		t.Fatalf("stored after PUT: %+v", after.Config)
	}
	// A stale version conflicts.
	r = put(func(c *lifecycle.ConfigJSON) { c.Description = "late edit" }, m.Version)
	if r.status != http.StatusConflict {
		t.Fatalf("stale PUT: %d %s", r.status, r.body)
	}
	// The job name cannot change.
	r = put(func(c *lifecycle.ConfigJSON) { c.JobName = "k" }, after.Version)
	if r.status != http.StatusBadRequest {
		t.Fatalf("renaming PUT: %d %s", r.status, r.body)
	}
}
