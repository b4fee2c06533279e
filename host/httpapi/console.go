package httpapi

import (
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

// jobDetail is GET /console/api/jobs/{jobName}: lifecycle.Detail.
func (s *Server) jobDetail(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := s.ctx(r)
	defer cancel()
	d, err := lifecycle.Detail(ctx, s.reader(), r.PathValue("jobName"))
	answer(w, d, err)
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
