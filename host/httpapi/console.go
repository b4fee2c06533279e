package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/ejob-io/ejob/core/lifecycle"
	"github.com/ejob-io/ejob/core/tracing"
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
//	GET /console/api/executions/{executionId}/output  one execution and its output
//	GET /console/api/jobs/{jobName}/items/{item}/output  a running item's output so far
func (s *Server) ConsoleRoutes(mux *Mux) {
	mux.HandleFunc("GET "+ConsolePrefix+"jobs/{jobName}/items/{item}/output", s.liveOutput)
	mux.HandleFunc("GET "+ConsolePrefix+"jobs/{jobName}", s.jobDetail)
	mux.HandleFunc("GET "+ConsolePrefix+"jobs/{jobName}/executions", s.recentExecutions)
	mux.HandleFunc("GET "+ConsolePrefix+"executions/{executionId}/output", s.executionOutput)
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
	Rows []RecentRow `json:"rows"`
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
	out := Recent{Rows: make([]RecentRow, 0, len(p.Executions)), More: p.More}
	for _, x := range p.Executions {
		row := RecentRow{ExecutionRow: executionRow(x)}
		if !x.Output.IsZero() {
			row.Output = &OutputExcerpt{Tail: x.Output.Text, Cut: x.Output.Cut}
		}
		out.Rows = append(out.Rows, row)
	}
	ok(w, out)
}

// RecentRow is one row of Recent: upstream's fields and, when the
// execution has output, an excerpt of it.
type RecentRow struct {
	ExecutionRow
	Output *OutputExcerpt `json:"output,omitempty"`
}

// OutputExcerpt is the end of an execution's output: its last
// spi.OutputExcerptChars characters; Cut counts the bytes before them
// (0: Tail is the whole output).
type OutputExcerpt struct {
	Tail string `json:"tail"`
	Cut  int64  `json:"cut"`
}

// ExecutionOutput is the model of GET
// /console/api/executions/{executionId}/output:
// the execution (its failure cause whole) and its whole stored output.
type ExecutionOutput struct {
	Execution ExecutionRow `json:"execution"`
	// HasOutput is false when the execution printed nothing, is still
	// running, or its output was dropped (a host's memory bound).
	HasOutput bool `json:"hasOutput"`
	// Output is the output's text (masked: secrets read ***); a SCRIPT's
	// lines start with "out| " or "err| ".
	Output string `json:"output"`
	// Cut counts the bytes cut from the output's start to keep the cap.
	Cut int64 `json:"cut"`
}

// LiveOutputFunc reads the output so far of job's item while this process
// runs it; false when it does not run it now.
type LiveOutputFunc func(ctx context.Context, job string, item int) (spi.Output, bool, error)

// LiveOutput is the model of GET
// /console/api/jobs/{jobName}/items/{item}/output.
type LiveOutput struct {
	// Running is false when this host does not run the item now.
	Running bool `json:"running"`
	// Output is the output so far (masked); Cut counts the bytes cut from
	// its start to keep the cap.
	Output string `json:"output"`
	Cut    int64  `json:"cut"`
}

// liveOutput is GET /console/api/jobs/{jobName}/items/{item}/output: the
// output so far of an item this host runs; 404 where no job runs here
// (`ejob serve`).
func (s *Server) liveOutput(w http.ResponseWriter, r *http.Request) {
	if s.opts.LiveOutput == nil {
		fail(w, http.StatusNotFound, "a running item's output is served by the host that runs it (its ejob.http), not by ejob serve")
		return
	}
	item, _ := strconv.Atoi(r.PathValue("item")) // checked by the route
	ctx, cancel := s.ctx(r)
	defer cancel()
	o, running, err := s.opts.LiveOutput(ctx, r.PathValue("jobName"), item)
	if err != nil {
		fail(w, status(err), "live output: "+err.Error())
		return
	}
	m := tracing.MaskOutput(o)
	ok(w, LiveOutput{Running: running, Output: m.Text, Cut: m.Cut})
}

// executionOutput is GET /console/api/executions/{executionId}/output: 404
// for an id the event trace does not hold.
func (s *Server) executionOutput(w http.ResponseWriter, r *http.Request) {
	t := s.backend().trace
	if t.tracer == nil {
		fail(w, http.StatusNotFound, errNoTracing.Error())
		return
	}
	id := r.PathValue("executionId")
	ctx, cancel := s.ctx(r)
	defer cancel()
	p, err := t.tracer.QueryExecutions(ctx, spi.ExecutionQuery{Config: t.config, ID: id, Limit: 1})
	if err != nil {
		fail(w, traceStatus(err), "event trace: "+err.Error())
		return
	}
	// A tracing plugin built before the id filter ignores it: match here.
	if len(p.Executions) == 0 || p.Executions[0].ID != id {
		fail(w, http.StatusNotFound, fmt.Sprintf("no execution with id %q in the event trace", id))
		return
	}
	out := ExecutionOutput{Execution: executionRow(p.Executions[0])}
	if !p.Executions[0].Output.IsZero() {
		o, err := t.tracer.QueryOutput(ctx, spi.OutputQuery{Config: t.config, ID: id})
		if err != nil {
			fail(w, traceStatus(err), "event trace: "+err.Error())
			return
		}
		out.HasOutput, out.Output, out.Cut = o.Found, o.Output.Text, o.Output.Cut
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
