package spitest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ejob-io/ejob/spi"
)

// TracerOptions tells the tracing suite how to reach a store.
type TracerOptions struct {
	// Config returns the settings of a fresh, empty store; each check
	// calls it once. Required.
	Config func() map[string]string
	// InvalidConfig are named settings Validate must reject with an error
	// wrapping spi.ErrInvalidConfig.
	InvalidConfig map[string]map[string]string
}

// TestTracer runs every check of TracerChecks(opts) against tr, each as a
// subtest of t.
func TestTracer(t *testing.T, tr spi.Tracer, opts TracerOptions) {
	t.Helper()
	RunChecks(t, tr, TracerChecks(opts))
}

// suiteT0 is a whole second (some stores keep seconds only).
func suiteT0() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.Local) }

func suiteExec(id, job string, item int, start time.Time) spi.ExecutionEvent {
	return spi.ExecutionEvent{ID: id, Hostname: "host", IP: "10.0.0.9", TaskID: job + "@-@0,1@-@READY@-@10.0.0.9@-@1",
		JobName: job, Source: "NORMAL_TRIGGER", ShardingItem: item, StartTime: start}
}

func suiteDone(e spi.ExecutionEvent, cause string) spi.ExecutionEvent {
	e.CompleteTime, e.Success, e.FailureCause = e.StartTime.Add(time.Second), cause == "", cause
	return e
}

func executionIDs(ctx context.Context, tr spi.Tracer, q spi.ExecutionQuery) ([]string, spi.ExecutionPage, error) {
	p, err := tr.QueryExecutions(ctx, q)
	if err != nil {
		return nil, p, fmt.Errorf("QueryExecutions(%+v): %w", q, err)
	}
	var ids []string
	for _, e := range p.Executions {
		ids = append(ids, e.ID)
	}
	return ids, p, nil
}

// TracerChecks returns the conformance checks of the spi.Tracer contract:
//
//   - write_and_query: a batch of starts, completions (one failed) and
//     status events is stored; the queries return one completed row per
//     item with its outcome and cause, and the statuses newest first;
//   - completion_before_start: a completion written before its start is
//     kept completed;
//   - retried_batch_stored_once: the same batch written twice stores each
//     event once;
//   - filters_and_paging: newest first, Limit and Offset with More, and
//     the job, item, success and time filters;
//   - status_filters: the status query's job, state, execution type and
//     source (LITE_EXECUTOR for every lite event) filters;
//   - distinct: Distinct lists the job names and IPs of the executions
//     and the job names of the status events by prefix, LIKE's wildcards
//     in a prefix taken literally, at most Limit with More; an unknown
//     field is an error wrapping spi.ErrUnsupported;
//   - output: a completion's output is stored once (also when its batch
//     is written twice); QueryOutput returns it whole, QueryExecutions'
//     row an excerpt of its last spi.OutputExcerptChars characters with
//     Cut counting the rest, the ID filter selects one execution, and an
//     execution without output is not Found;
//   - fencing_token: each execution's row carries the fencing token its
//     start and completion carried (also when the completion is written
//     first, or the batch twice), 0 for one without;
//   - purge: Purge deletes what started (was created) before its time,
//     the executions' outputs with them;
//   - invalid_config: Validate rejects each of opts.InvalidConfig with an
//     error wrapping spi.ErrInvalidConfig.
func TracerChecks(opts TracerOptions) []Check[spi.Tracer] {
	t0 := suiteT0()
	batch := func(cfg map[string]string) spi.TraceWriteRequest {
		a, b := suiteExec("conf-a", "job", 0, t0), suiteExec("conf-b", "job", 1, t0)
		st := func(id, state string, at time.Time) spi.StatusEvent {
			return spi.StatusEvent{ID: id, JobName: "job", TaskID: a.TaskID, SlaveID: "10.0.0.9", ExecutionType: "READY",
				ShardingItems: "[0, 1]", State: state, CreationTime: at}
		}
		return spi.TraceWriteRequest{Config: cfg,
			Executions: []spi.ExecutionEvent{a, b, suiteDone(a, ""), suiteDone(b, "boom")},
			Statuses:   []spi.StatusEvent{st("conf-s1", "TASK_STAGING", t0), st("conf-s2", "TASK_ERROR", t0.Add(time.Second))},
		}
	}
	checkBatch := func(ctx context.Context, tr spi.Tracer, cfg map[string]string) error {
		p, err := tr.QueryExecutions(ctx, spi.ExecutionQuery{Config: cfg, JobName: "job"})
		if err != nil {
			return fmt.Errorf("QueryExecutions: %w", err)
		}
		if len(p.Executions) != 2 {
			return fmt.Errorf("QueryExecutions: %d rows, want 2: %+v", len(p.Executions), p.Executions)
		}
		for _, e := range p.Executions {
			ok := e.ID == "conf-a" && e.Success && e.FailureCause == "" ||
				e.ID == "conf-b" && !e.Success && e.FailureCause == "boom"
			if !ok || e.CompleteTime.IsZero() || e.StartTime.IsZero() || e.IP != "10.0.0.9" || e.Source != "NORMAL_TRIGGER" {
				return fmt.Errorf("QueryExecutions: row %+v", e)
			}
		}
		sp, err := tr.QueryStatuses(ctx, spi.StatusQuery{Config: cfg, JobName: "job"})
		if err != nil {
			return fmt.Errorf("QueryStatuses: %w", err)
		}
		if len(sp.Statuses) != 2 || sp.Statuses[0].State != "TASK_ERROR" || sp.Statuses[1].State != "TASK_STAGING" {
			return fmt.Errorf("QueryStatuses: %+v, want TASK_ERROR then TASK_STAGING", sp.Statuses)
		}
		return nil
	}
	return []Check[spi.Tracer]{
		{Name: "write_and_query", Run: func(ctx context.Context, tr spi.Tracer) error {
			cfg := opts.Config()
			if _, err := tr.Write(ctx, batch(cfg)); err != nil {
				return fmt.Errorf("Write: %w", err)
			}
			return checkBatch(ctx, tr, cfg)
		}},
		{Name: "completion_before_start", Run: func(ctx context.Context, tr spi.Tracer) error {
			cfg := opts.Config()
			e := suiteExec("conf-late", "job", 0, t0)
			for _, ev := range []spi.ExecutionEvent{suiteDone(e, ""), e} {
				if _, err := tr.Write(ctx, spi.TraceWriteRequest{Config: cfg, Executions: []spi.ExecutionEvent{ev}}); err != nil {
					return fmt.Errorf("Write: %w", err)
				}
			}
			p, err := tr.QueryExecutions(ctx, spi.ExecutionQuery{Config: cfg})
			if err != nil {
				return fmt.Errorf("QueryExecutions: %w", err)
			}
			if len(p.Executions) != 1 || !p.Executions[0].Success || p.Executions[0].CompleteTime.IsZero() {
				return fmt.Errorf("after the completion then the start: %+v, want one completed success", p.Executions)
			}
			return nil
		}},
		{Name: "retried_batch_stored_once", Run: func(ctx context.Context, tr spi.Tracer) error {
			cfg := opts.Config()
			for range 2 {
				if _, err := tr.Write(ctx, batch(cfg)); err != nil {
					return fmt.Errorf("Write: %w", err)
				}
			}
			return checkBatch(ctx, tr, cfg)
		}},
		{Name: "filters_and_paging", Run: func(ctx context.Context, tr spi.Tracer) error {
			cfg := opts.Config()
			req := spi.TraceWriteRequest{Config: cfg}
			for i := range 5 {
				e := suiteExec(fmt.Sprint("conf-", i), "job", i%2, t0.Add(time.Duration(i)*time.Minute))
				req.Executions = append(req.Executions, e, suiteDone(e, map[bool]string{true: "x"}[i == 3]))
			}
			req.Executions = append(req.Executions, suiteExec("conf-other", "other", 0, t0))
			if _, err := tr.Write(ctx, req); err != nil {
				return fmt.Errorf("Write: %w", err)
			}
			item1, failed := 1, false
			for _, c := range []struct {
				q    spi.ExecutionQuery
				want []string
				more bool
			}{
				{spi.ExecutionQuery{JobName: "job", Limit: 2}, []string{"conf-4", "conf-3"}, true},
				{spi.ExecutionQuery{JobName: "job", Limit: 2, Offset: 4}, []string{"conf-0"}, false},
				{spi.ExecutionQuery{JobName: "job", Item: &item1}, []string{"conf-3", "conf-1"}, false},
				{spi.ExecutionQuery{JobName: "job", Success: &failed}, []string{"conf-3"}, false},
				{spi.ExecutionQuery{JobName: "job", From: t0.Add(time.Minute), To: t0.Add(3 * time.Minute)}, []string{"conf-2", "conf-1"}, false},
				{spi.ExecutionQuery{JobName: "other"}, []string{"conf-other"}, false},
			} {
				c.q.Config = cfg
				ids, p, err := executionIDs(ctx, tr, c.q)
				if err != nil {
					return err
				}
				if !slices.Equal(ids, c.want) || p.More != c.more {
					return fmt.Errorf("query %+v: %v more=%v, want %v more=%v", c.q, ids, p.More, c.want, c.more)
				}
			}
			return nil
		}},
		{Name: "status_filters", Run: func(ctx context.Context, tr spi.Tracer) error {
			cfg := opts.Config()
			req := batch(cfg)
			other := req.Statuses[0]
			other.ID, other.JobName, other.ExecutionType, other.State = "conf-s3", "other", "FAILOVER", "TASK_RUNNING"
			req.Statuses = append(req.Statuses, other)
			if _, err := tr.Write(ctx, req); err != nil {
				return fmt.Errorf("Write: %w", err)
			}
			for _, c := range []struct {
				q    spi.StatusQuery
				want []string
			}{
				{spi.StatusQuery{}, []string{"conf-s2", "conf-s1", "conf-s3"}},
				{spi.StatusQuery{State: "TASK_ERROR"}, []string{"conf-s2"}},
				{spi.StatusQuery{JobName: "job", State: "TASK_RUNNING"}, nil},
				{spi.StatusQuery{ExecutionType: "FAILOVER"}, []string{"conf-s3"}},
				{spi.StatusQuery{Source: "LITE_EXECUTOR", State: "TASK_STAGING"}, []string{"conf-s1"}},
				{spi.StatusQuery{Source: "CLOUD_EXECUTOR"}, nil},
			} {
				c.q.Config = cfg
				p, err := tr.QueryStatuses(ctx, c.q)
				if err != nil {
					return fmt.Errorf("QueryStatuses(%+v): %w", c.q, err)
				}
				var ids []string
				for _, e := range p.Statuses {
					ids = append(ids, e.ID)
				}
				slices.Sort(ids)
				if want := slices.Sorted(slices.Values(c.want)); !slices.Equal(ids, want) {
					return fmt.Errorf("QueryStatuses(%+v): %v, want %v", c.q, ids, want)
				}
			}
			return nil
		}},
		{Name: "distinct", Run: func(ctx context.Context, tr spi.Tracer) error {
			cfg := opts.Config()
			req := spi.TraceWriteRequest{Config: cfg}
			for i, job := range []string{"nightly", "night_x", "nightly", "report", "nightlyX"} {
				e := suiteExec(fmt.Sprint("conf-d", i), job, 0, t0.Add(time.Duration(i)*time.Second))
				e.IP = fmt.Sprintf("10.1.%d.1", i%2)
				req.Executions = append(req.Executions, e)
				req.Statuses = append(req.Statuses, spi.StatusEvent{ID: fmt.Sprint("conf-ds", i), JobName: "s-" + job, TaskID: e.TaskID,
					SlaveID: e.IP, ExecutionType: "READY", ShardingItems: "[0]", State: "TASK_STAGING", CreationTime: e.StartTime})
			}
			if _, err := tr.Write(ctx, req); err != nil {
				return fmt.Errorf("Write: %w", err)
			}
			for _, c := range []struct {
				q    spi.DistinctQuery
				want []string
			}{
				{spi.DistinctQuery{Field: spi.ExecutionJobNames}, []string{"night_x", "nightly", "nightlyX", "report"}},
				{spi.DistinctQuery{Field: spi.ExecutionJobNames, Prefix: "nightly"}, []string{"nightly", "nightlyX"}},
				{spi.DistinctQuery{Field: spi.ExecutionJobNames, Prefix: "night_"}, []string{"night_x"}},
				{spi.DistinctQuery{Field: spi.ExecutionJobNames, Prefix: "%"}, nil},
				{spi.DistinctQuery{Field: spi.ExecutionIPs, Prefix: "10.1."}, []string{"10.1.0.1", "10.1.1.1"}},
				{spi.DistinctQuery{Field: spi.StatusJobNames, Prefix: "s-r"}, []string{"s-report"}},
			} {
				c.q.Config = cfg
				v, err := tr.Distinct(ctx, c.q)
				if err != nil {
					return fmt.Errorf("Distinct(%+v): %w", c.q, err)
				}
				// In the store's order, which is its own (a collation).
				if got := slices.Sorted(slices.Values(v.Values)); !slices.Equal(got, c.want) || v.More {
					return fmt.Errorf("Distinct(%+v): %q more=%v, want %q", c.q, v.Values, v.More, c.want)
				}
			}
			v, err := tr.Distinct(ctx, spi.DistinctQuery{Config: cfg, Field: spi.ExecutionJobNames, Prefix: "night", Limit: 2})
			if err != nil || len(v.Values) != 2 || !v.More {
				return fmt.Errorf("Distinct(night, Limit 2): %q more=%v (%v), want 2 values and More", v.Values, v.More, err)
			}
			if _, err := tr.Distinct(ctx, spi.DistinctQuery{Config: cfg, Field: "execution.nosuch"}); !errors.Is(err, spi.ErrUnsupported) {
				return fmt.Errorf("Distinct(execution.nosuch) = %v, want an error wrapping spi.ErrUnsupported", err)
			}
			return nil
		}},
		{Name: "output", Run: func(ctx context.Context, tr spi.Tracer) error {
			cfg := opts.Config()
			long := spi.Output{Text: strings.Repeat("out| ok ünïcode\n", 300) + "err| cannot reach db\n", Cut: 7}
			e, quiet := suiteExec("conf-out", "job", 0, t0), suiteExec("conf-quiet", "job", 1, t0)
			done := suiteDone(e, "boom")
			done.Output = long
			req := spi.TraceWriteRequest{Config: cfg, Executions: []spi.ExecutionEvent{e, quiet, done, suiteDone(quiet, "")}}
			for range 2 {
				if _, err := tr.Write(ctx, req); err != nil {
					return fmt.Errorf("Write: %w", err)
				}
			}
			r, err := tr.QueryOutput(ctx, spi.OutputQuery{Config: cfg, ID: "conf-out"})
			if err != nil {
				return fmt.Errorf("QueryOutput: %w", err)
			}
			if !r.Found || r.Output != long {
				return fmt.Errorf("QueryOutput = found %v, %d bytes cut %d; want the %d bytes cut %d written", r.Found, len(r.Output.Text), r.Output.Cut, len(long.Text), long.Cut)
			}
			for _, id := range []string{"conf-quiet", "conf-none"} {
				if r, err := tr.QueryOutput(ctx, spi.OutputQuery{Config: cfg, ID: id}); err != nil || r.Found {
					return fmt.Errorf("QueryOutput(%s) = %+v, %v; want not found", id, r, err)
				}
			}
			p, err := tr.QueryExecutions(ctx, spi.ExecutionQuery{Config: cfg, ID: "conf-out"})
			if err != nil {
				return fmt.Errorf("QueryExecutions: %w", err)
			}
			if len(p.Executions) != 1 {
				return fmt.Errorf("QueryExecutions by ID: %d rows, want 1", len(p.Executions))
			}
			x := p.Executions[0].Output
			runes := []rune(long.Text)
			want := string(runes[len(runes)-spi.OutputExcerptChars:])
			if x.Text != want || x.Cut != long.Cut+int64(len(long.Text)-len(want)) {
				return fmt.Errorf("excerpt %q cut %d, want %q cut %d", x.Text, x.Cut, want, long.Cut+int64(len(long.Text)-len(want)))
			}
			p, err = tr.QueryExecutions(ctx, spi.ExecutionQuery{Config: cfg, ID: "conf-quiet"})
			if err != nil || len(p.Executions) != 1 || !p.Executions[0].Output.IsZero() {
				return fmt.Errorf("QueryExecutions(conf-quiet) = %+v, %v; want one row without output", p.Executions, err)
			}
			return nil
		}},
		{Name: "fencing_token", Run: func(ctx context.Context, tr spi.Tracer) error {
			cfg := opts.Config()
			fenced, late, none := suiteExec("conf-f1", "fjob", 0, t0), suiteExec("conf-f2", "fjob", 1, t0), suiteExec("conf-f3", "fjob", 2, t0)
			fenced.FencingToken, late.FencingToken = 1<<40+7, 9
			req := spi.TraceWriteRequest{Config: cfg, Executions: []spi.ExecutionEvent{fenced, suiteDone(late, ""), none, suiteDone(fenced, ""), late}}
			for range 2 {
				if _, err := tr.Write(ctx, req); err != nil {
					return fmt.Errorf("Write: %w", err)
				}
			}
			p, err := tr.QueryExecutions(ctx, spi.ExecutionQuery{Config: cfg, JobName: "fjob"})
			if err != nil {
				return fmt.Errorf("QueryExecutions: %w", err)
			}
			want := map[string]int64{"conf-f1": 1<<40 + 7, "conf-f2": 9, "conf-f3": 0}
			if len(p.Executions) != len(want) {
				return fmt.Errorf("QueryExecutions: %d rows, want %d: %+v", len(p.Executions), len(want), p.Executions)
			}
			for _, e := range p.Executions {
				if e.FencingToken != want[e.ID] {
					return fmt.Errorf("execution %s: fencing token %d, want %d", e.ID, e.FencingToken, want[e.ID])
				}
			}
			return nil
		}},
		{Name: "purge", Run: func(ctx context.Context, tr spi.Tracer) error {
			cfg := opts.Config()
			b := batch(cfg)
			b.Executions[2].Output = spi.Output{Text: "out| done\n"}
			if _, err := tr.Write(ctx, b); err != nil {
				return fmt.Errorf("Write: %w", err)
			}
			resp, err := tr.Purge(ctx, spi.TracePurgeRequest{Config: cfg, Before: t0.Add(time.Second)})
			if err != nil {
				return fmt.Errorf("Purge: %w", err)
			}
			if resp.Executions != 2 || resp.Statuses != 1 || resp.Outputs != 1 {
				return fmt.Errorf("Purge = %+v, want 2 executions, 1 status and 1 output", resp)
			}
			if r, err := tr.QueryOutput(ctx, spi.OutputQuery{Config: cfg, ID: b.Executions[2].ID}); err != nil || r.Found {
				return fmt.Errorf("QueryOutput after Purge = %+v, %v; want not found", r, err)
			}
			sp, err := tr.QueryStatuses(ctx, spi.StatusQuery{Config: cfg})
			if err != nil || len(sp.Statuses) != 1 || sp.Statuses[0].ID != "conf-s2" {
				return fmt.Errorf("after Purge: %+v, %v", sp.Statuses, err)
			}
			return nil
		}},
		{Name: "invalid_config", Run: func(ctx context.Context, tr spi.Tracer) error {
			if len(opts.InvalidConfig) == 0 {
				return Skip("no InvalidConfig given")
			}
			for name, cfg := range opts.InvalidConfig {
				if err := tr.Validate(ctx, spi.TraceValidateRequest{Config: cfg}); !errors.Is(err, spi.ErrInvalidConfig) {
					return fmt.Errorf("Validate(%s) = %v, want an error wrapping spi.ErrInvalidConfig", name, err)
				}
			}
			return nil
		}},
	}
}
