package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strconv"
	"time"

	"github.com/ejob-io/ejob/core/tracing"
	"github.com/ejob-io/ejob/spi"
)

// Paging of the event-trace queries.
const (
	// DefaultPageSize is upstream's BasePageRequest default.
	DefaultPageSize = 10
	// MaxPageSize bounds pageSize.
	MaxPageSize = 1000
	// countAhead bounds the rows counted past a page to give its total;
	// past it, total is a lower bound (offset + rows + 1), so a console
	// still offers the next page.
	countAhead = 10_000
	// countBatch is the rows one counting query reads.
	countBatch = 1000
)

// errNoTracing answers the event-trace endpoints of a host without
// elasticjob.tracing.
var errNoTracing = errors.New("event trace is not configured: add elasticjob.tracing to this host's configuration file")

// traceRoutes are the event-trace endpoints: both are POST but only read,
// so a guest may call them.
var traceRoutes = map[string]bool{"/api/event-trace/execution": true, "/api/event-trace/status": true}

// pageRequest is upstream's BasePageRequest. sort/order (sortBy/orderType
// in older consoles) are accepted and ignored: rows are always newest
// first, the order the tracing sink serves.
type pageRequest struct {
	PageSize   apiInt `json:"pageSize"`
	PageNumber apiInt `json:"pageNumber"`
	Sort       string `json:"sort"`
	Order      string `json:"order"`
}

// apiInt is a number in a request: a JSON number, or a string of digits
// (a form's value); "" and null are 0, the default.
type apiInt int

func (n *apiInt) UnmarshalJSON(b []byte) error {
	if bytes.Equal(b, []byte("null")) {
		return nil
	}
	var s string
	if json.Unmarshal(b, &s) != nil {
		s = string(b)
	}
	if s == "" {
		return nil
	}
	v, err := strconv.Atoi(s)
	if err != nil {
		// The decoder names the field of an UnmarshalTypeError.
		return &json.UnmarshalTypeError{Value: "value " + string(b), Type: reflect.TypeFor[int]()}
	}
	*n = apiInt(v)
	return nil
}

// apiBool is an optional outcome in a request: true or false, as JSON
// booleans or strings; null and "" (the console's cleared select) are no
// filter, as upstream reads them.
type apiBool struct{ v *bool }

func (o *apiBool) UnmarshalJSON(b []byte) error {
	switch string(b) {
	case "null", `""`:
		return nil
	case "true", `"true"`:
		o.v = new(true)
	case "false", `"false"`:
		o.v = new(false)
	default:
		return &json.UnmarshalTypeError{Value: "value " + string(b) + ` (want true, false or "" for no filter)`, Type: reflect.TypeFor[bool]()}
	}
	return nil
}

func (p pageRequest) bounds() (offset, limit int, err error) {
	size, number := int(p.PageSize), int(p.PageNumber)
	if size == 0 {
		size = DefaultPageSize
	}
	if number == 0 {
		number = 1
	}
	if size < 1 || size > MaxPageSize {
		return 0, 0, fmt.Errorf("pageSize: want 1 to %d, got %d", MaxPageSize, size)
	}
	if number < 1 {
		return 0, 0, fmt.Errorf("pageNumber: want 1 or more, got %d", number)
	}
	if offset, err = tracing.PageOffset(number, size); err != nil {
		return 0, 0, fmt.Errorf("pageNumber: want 1 to %d with pageSize %d, got %d", tracing.MaxOffset/size+1, size, number)
	}
	return offset, size, nil
}

// apiTime is a time in a request: epoch milliseconds (Jackson's default),
// RFC 3339, or "2006-01-02 15:04:05" / "2006-01-02" in the server's zone.
type apiTime struct{ time.Time }

func (t *apiTime) UnmarshalJSON(b []byte) error {
	if bytes.Equal(b, []byte("null")) {
		return nil
	}
	if ms, err := strconv.ParseInt(string(b), 10, 64); err == nil {
		t.Time = time.UnixMilli(ms)
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("want epoch milliseconds or a time string, got %s", b)
	}
	if s == "" {
		return nil
	}
	if v, err := time.Parse(time.RFC3339, s); err == nil {
		t.Time = v
		return nil
	}
	for _, layout := range []string{"2006-01-02 15:04:05", "2006-01-02T15:04:05", "2006-01-02 15:04", "2006-01-02"} {
		if v, err := time.ParseInLocation(layout, s, time.Local); err == nil {
			t.Time = v
			return nil
		}
	}
	return fmt.Errorf("want epoch milliseconds, RFC 3339 or \"2006-01-02 15:04:05\", got %q", s)
}

// first returns the first non-zero time.
func first(ts ...apiTime) time.Time {
	for _, t := range ts {
		if !t.IsZero() {
			return t.Time
		}
	}
	return time.Time{}
}

// executionRequest is upstream's FindJobExecutionEventsRequest (the time
// range as startTime/endTime, or startTimeFrom/startTimeTo). An empty
// field ("", null, absent) is no filter, as upstream reads it.
type executionRequest struct {
	pageRequest
	JobName       string  `json:"jobName"`
	IP            string  `json:"ip"`
	IsSuccess     apiBool `json:"isSuccess"`
	StartTime     apiTime `json:"startTime"`
	EndTime       apiTime `json:"endTime"`
	StartTimeFrom apiTime `json:"startTimeFrom"`
	StartTimeTo   apiTime `json:"startTimeTo"`
}

// statusRequest is upstream's FindJobStatusTraceEventsRequest; an empty
// field is no filter.
type statusRequest struct {
	pageRequest
	JobName          string  `json:"jobName"`
	Source           string  `json:"source"`
	ExecutionType    string  `json:"executionType"`
	State            string  `json:"state"`
	StartTime        apiTime `json:"startTime"`
	EndTime          apiTime `json:"endTime"`
	CreationTimeFrom apiTime `json:"creationTimeFrom"`
	CreationTimeTo   apiTime `json:"creationTimeTo"`
}

// Page is upstream's BasePageResponse.
type Page[T any] struct {
	Total int `json:"total"`
	Rows  []T `json:"rows"`
}

// ExecutionRow is upstream's JobExecutionEvent as the console reads it.
type ExecutionRow struct {
	ID           string     `json:"id"`
	Hostname     string     `json:"hostname"`
	IP           string     `json:"ip"`
	TaskID       string     `json:"taskId"`
	JobName      string     `json:"jobName"`
	Source       string     `json:"source"`
	ShardingItem int        `json:"shardingItem"`
	StartTime    *time.Time `json:"startTime"`
	CompleteTime *time.Time `json:"completeTime"`
	Success      bool       `json:"success"`
	FailureCause string     `json:"failureCause"`
}

// StatusRow is upstream's JobStatusTraceEvent as the console reads it.
type StatusRow struct {
	ID             string     `json:"id"`
	JobName        string     `json:"jobName"`
	OriginalTaskID string     `json:"originalTaskId"`
	TaskID         string     `json:"taskId"`
	SlaveID        string     `json:"slaveId"`
	ExecutionType  string     `json:"executionType"`
	ShardingItems  string     `json:"shardingItems"`
	State          string     `json:"state"`
	Message        string     `json:"message"`
	CreationTime   *time.Time `json:"creationTime"`
}

func executionRow(x spi.ExecutionEvent) ExecutionRow {
	return ExecutionRow{ID: x.ID, Hostname: x.Hostname, IP: x.IP, TaskID: x.TaskID, JobName: x.JobName,
		Source: x.Source, ShardingItem: x.ShardingItem, StartTime: timeOrNil(x.StartTime),
		CompleteTime: timeOrNil(x.CompleteTime), Success: x.Success, FailureCause: x.FailureCause}
}

func timeOrNil(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// traceStatus maps a sink's error to an HTTP status: a sink that does
// not serve the call (a plugin built before its method) is 501.
func traceStatus(err error) int {
	switch {
	case errors.Is(err, spi.ErrUnsupported):
		return http.StatusNotImplemented
	case errors.Is(err, spi.ErrInvalidConfig) || errors.Is(err, spi.ErrUnknownType):
		return http.StatusInternalServerError
	}
	return status(err)
}

// pageTotal is the total of a page at offset with n rows: exact when no
// row follows or when the rows that follow are at most countAhead, else a
// lower bound. An empty page past the end counts from the first row.
// more counts the rows from an offset, one query of at most countBatch
// rows at a time.
func pageTotal(ctx context.Context, offset, n int, hasMore bool, more func(ctx context.Context, offset, limit int) (int, bool, error)) (int, error) {
	if n == 0 && offset > 0 {
		// A page past the end: its offset is no count of rows; count
		// the rows before it.
		return pageTotal(ctx, 0, 0, true, more)
	}
	total := offset + n
	for counted := 0; hasMore; {
		if counted >= countAhead {
			return total + 1, nil
		}
		k, m, err := more(ctx, total, countBatch)
		if err != nil {
			return 0, err
		}
		total, counted, hasMore = total+k, counted+k, m && k > 0
	}
	return total, nil
}

// traceCall runs a query handler with the request decoded, the page
// bounds checked and the sink configured; query answers the page.
func traceCall[R any](s *Server, w http.ResponseWriter, r *http.Request, page func(R) pageRequest,
	query func(ctx context.Context, t traceSink, req R, offset, limit int) (any, error)) {
	t := s.backend().trace
	if t.tracer == nil {
		fail(w, http.StatusNotFound, errNoTracing.Error())
		return
	}
	var req R
	if !s.decode(w, r, &req) {
		return
	}
	offset, limit, err := page(req).bounds()
	if err != nil {
		fail(w, http.StatusBadRequest, err.Error())
		return
	}
	ctx, cancel := s.ctx(r)
	defer cancel()
	model, err := query(ctx, t, req, offset, limit)
	if err != nil {
		fail(w, traceStatus(err), "event trace: "+err.Error())
		return
	}
	ok(w, model)
}

// executions is POST /api/event-trace/execution: a page of
// JOB_EXECUTION_LOG, newest start first.
func (s *Server) executions(w http.ResponseWriter, r *http.Request) {
	traceCall(s, w, r, func(q executionRequest) pageRequest { return q.pageRequest },
		func(ctx context.Context, t traceSink, req executionRequest, offset, limit int) (any, error) {
			q := spi.ExecutionQuery{Config: t.config, JobName: req.JobName, IP: req.IP, Success: req.IsSuccess.v,
				From: first(req.StartTime, req.StartTimeFrom), To: first(req.EndTime, req.StartTimeTo)}
			run := func(ctx context.Context, offset, limit int) (spi.ExecutionPage, error) {
				q.Offset, q.Limit = offset, limit
				return t.tracer.QueryExecutions(ctx, q)
			}
			p, err := run(ctx, offset, limit)
			if err != nil {
				return nil, err
			}
			total, err := pageTotal(ctx, offset, len(p.Executions), p.More, func(ctx context.Context, offset, limit int) (int, bool, error) {
				p, err := run(ctx, offset, limit)
				return len(p.Executions), p.More, err
			})
			if err != nil {
				return nil, err
			}
			out := Page[ExecutionRow]{Total: total, Rows: make([]ExecutionRow, 0, len(p.Executions))}
			for _, x := range p.Executions {
				out.Rows = append(out.Rows, executionRow(x))
			}
			return out, nil
		})
}

// statuses is POST /api/event-trace/status: a page of
// JOB_STATUS_TRACE_LOG, newest first.
func (s *Server) statuses(w http.ResponseWriter, r *http.Request) {
	traceCall(s, w, r, func(q statusRequest) pageRequest { return q.pageRequest },
		func(ctx context.Context, t traceSink, req statusRequest, offset, limit int) (any, error) {
			q := spi.StatusQuery{Config: t.config, JobName: req.JobName, State: req.State, ExecutionType: req.ExecutionType, Source: req.Source,
				From: first(req.StartTime, req.CreationTimeFrom), To: first(req.EndTime, req.CreationTimeTo)}
			run := func(ctx context.Context, offset, limit int) (spi.StatusPage, error) {
				q.Offset, q.Limit = offset, limit
				return t.tracer.QueryStatuses(ctx, q)
			}
			p, err := run(ctx, offset, limit)
			if err != nil {
				return nil, err
			}
			total, err := pageTotal(ctx, offset, len(p.Statuses), p.More, func(ctx context.Context, offset, limit int) (int, bool, error) {
				p, err := run(ctx, offset, limit)
				return len(p.Statuses), p.More, err
			})
			if err != nil {
				return nil, err
			}
			out := Page[StatusRow]{Total: total, Rows: make([]StatusRow, 0, len(p.Statuses))}
			for _, x := range p.Statuses {
				out.Rows = append(out.Rows, StatusRow{ID: x.ID, JobName: x.JobName, OriginalTaskID: x.OriginalTaskID, TaskID: x.TaskID,
					SlaveID: x.SlaveID, ExecutionType: x.ExecutionType, ShardingItems: x.ShardingItems, State: x.State,
					Message: x.Message, CreationTime: timeOrNil(x.CreationTime)})
			}
			return out, nil
		})
}

// DistinctLimit bounds the values of one prefix list.
const DistinctLimit = 100

// distinct is GET /api/event-trace/{execution/jobNames, execution/ip,
// status/jobNames}[/{prefix}]: the distinct job names or IP addresses of
// the stored events that begin with prefix (all of them without one), at
// most DistinctLimit (upstream's console completes its filters with them).
func (s *Server) distinct(field spi.DistinctField) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		t := s.backend().trace
		if t.tracer == nil {
			fail(w, http.StatusNotFound, errNoTracing.Error())
			return
		}
		ctx, cancel := s.ctx(r)
		defer cancel()
		v, err := t.tracer.Distinct(ctx, spi.DistinctQuery{Config: t.config, Field: field, Prefix: r.PathValue("prefix"), Limit: DistinctLimit})
		if err != nil {
			fail(w, traceStatus(err), "event trace: "+err.Error())
			return
		}
		ok(w, append([]string{}, v.Values...))
	}
}
