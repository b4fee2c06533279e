package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/ejob-io/ejob/core/lifecycle"
	"github.com/ejob-io/ejob/spi"
)

// ConsolePrefix is where the console's own endpoints live (what its pages
// need that upstream's REST API does not give).
const ConsolePrefix = "/console/api/"

// Recent executions (GET /console/api/jobs/{jobName}/executions).
const (
	// DefaultRecent is the rows of a recent-executions answer without
	// limit.
	DefaultRecent = 100
	// MaxRecent bounds limit.
	MaxRecent = 1000
)

// ConsoleRoutes registers on mux the console's endpoints that read the
// namespace and the event trace as the REST API does (host/console serves
// them behind Authenticate):
//
//	GET /console/api/jobs/{jobName}             a job's detail
//	GET /console/api/jobs/{jobName}/executions  its recent executions
func (s *Server) ConsoleRoutes(mux *Mux) {
	mux.HandleFunc("GET "+ConsolePrefix+"jobs/{jobName}", s.jobDetail)
	mux.HandleFunc("GET "+ConsolePrefix+"jobs/{jobName}/executions", s.recentExecutions)
}

// JobDetail is the model of GET /console/api/jobs/{jobName}: the job's
// lifecycle.Detail and each item's last result from the event trace.
type JobDetail struct {
	lifecycle.JobDetail
	// Trace says whether the server has an event trace, and TraceError
	// why it could not be read.
	Trace      bool   `json:"trace"`
	TraceError string `json:"traceError,omitempty"`
	// LastResults is each item's newest finished execution (success or
	// failure, with its times and cause), by item; an item without one
	// in the trace has no entry.
	LastResults map[int]ExecutionRow `json:"lastResults"`
}

// Per-item last results of a job detail.
const (
	// lastResultRows is how many of the job's newest executions are read
	// at once for the items' last results.
	lastResultRows = 500
	// lastResultLookups bounds the per-item queries for the items not in
	// those rows.
	lastResultLookups = 64
)

// jobDetail is GET /console/api/jobs/{jobName}: lifecycle.Detail and the
// items' last results.
func (s *Server) jobDetail(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := s.ctx(r)
	defer cancel()
	d, err := lifecycle.Detail(ctx, s.reader(), r.PathValue("jobName"))
	if err != nil {
		answer(w, nil, err)
		return
	}
	m := JobDetail{JobDetail: d, LastResults: map[int]ExecutionRow{}}
	if t := s.backend().trace; t.tracer != nil {
		m.Trace = true
		if err := lastResults(ctx, t.tracer, t.config, d, m.LastResults); err != nil {
			m.TraceError = err.Error()
		}
	}
	ok(w, m)
}

// lastResults fills out with the newest finished execution of each of d's
// items: one query of the job's newest rows, then one per item not among
// them (at most lastResultLookups).
func lastResults(ctx context.Context, tr spi.Tracer, cfg map[string]string, d lifecycle.JobDetail, out map[int]ExecutionRow) error {
	take := func(xs []spi.ExecutionEvent) {
		for _, x := range xs {
			// A failure may be recorded without a complete time.
			finished := !x.CompleteTime.IsZero() || x.FailureCause != ""
			if _, seen := out[x.ShardingItem]; !seen && finished {
				out[x.ShardingItem] = executionRow(x)
			}
		}
	}
	p, err := tr.QueryExecutions(ctx, spi.ExecutionQuery{Config: cfg, JobName: d.JobName, Limit: lastResultRows})
	if err != nil {
		return fmt.Errorf("event trace: %w", err)
	}
	take(p.Executions)
	if !p.More {
		return nil
	}
	lookups := 0
	for _, it := range d.Items {
		if _, found := out[it.Item]; found || lookups == lastResultLookups {
			continue
		}
		lookups++
		// The newest two: the newest may still be running.
		p, err := tr.QueryExecutions(ctx, spi.ExecutionQuery{Config: cfg, JobName: d.JobName, Item: &it.Item, Limit: 2})
		if err != nil {
			return fmt.Errorf("event trace: %w", err)
		}
		take(p.Executions)
	}
	return nil
}

// Recent is the model of GET /console/api/jobs/{jobName}/executions: a
// job's executions, newest start first, without the total that
// /api/event-trace/execution counts.
type Recent struct {
	Rows []ExecutionRow `json:"rows"`
	// More: older rows match too.
	More bool `json:"more"`
}

// recentExecutions is GET /console/api/jobs/{jobName}/executions
// [?since=T][&until=T][&item=N][&limit=N]: the job's executions that
// started in [since, until), newest first, at most limit (default
// DefaultRecent, at most MaxRecent). T is epoch milliseconds, RFC 3339 or
// "2006-01-02 15:04:05".
func (s *Server) recentExecutions(w http.ResponseWriter, r *http.Request) {
	t := s.backend().trace
	if t.tracer == nil {
		fail(w, http.StatusNotFound, errNoTracing.Error())
		return
	}
	q := spi.ExecutionQuery{Config: t.config, JobName: r.PathValue("jobName"), Limit: DefaultRecent}
	v := r.URL.Query()
	var err error
	if q.From, err = queryTime(v.Get("since")); err != nil {
		fail(w, http.StatusBadRequest, "since: "+err.Error())
		return
	}
	if q.To, err = queryTime(v.Get("until")); err != nil {
		fail(w, http.StatusBadRequest, "until: "+err.Error())
		return
	}
	if l := v.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > MaxRecent {
			fail(w, http.StatusBadRequest, fmt.Sprintf("limit: want 1 to %d, got %q", MaxRecent, l))
			return
		}
		q.Limit = n
	}
	if it := v.Get("item"); it != "" {
		n, err := strconv.Atoi(it)
		if err != nil || n < 0 {
			fail(w, http.StatusBadRequest, fmt.Sprintf("item: want a sharding item (0 or more), got %q", it))
			return
		}
		q.Item = &n
	}
	ctx, cancel := s.ctx(r)
	defer cancel()
	p, err := t.tracer.QueryExecutions(ctx, q)
	if err != nil {
		fail(w, traceStatus(err), "event trace: "+err.Error())
		return
	}
	out := Recent{Rows: make([]ExecutionRow, 0, len(p.Executions)), More: p.More}
	for _, x := range p.Executions {
		out.Rows = append(out.Rows, executionRow(x))
	}
	ok(w, out)
}

// queryTime reads a time in a query parameter: "" is the zero time.
func queryTime(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if ms, err := strconv.ParseInt(s, 10, 64); err == nil {
		return time.UnixMilli(ms), nil
	}
	var t apiTime
	err := t.UnmarshalJSON(strconv.AppendQuote(nil, s))
	return t.Time, err
}
