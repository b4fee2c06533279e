package tracing

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/ejob-io/ejob/spi"
)

// Defaults of MemoryOptions.
const (
	// DefaultMemoryRuns is how many runs of each item a Memory keeps.
	DefaultMemoryRuns = 20
	// DefaultMemoryOutputBytes bounds the output a Memory keeps in all.
	DefaultMemoryOutputBytes = 16 << 20
	// DefaultMemoryStatuses is how many status events of each job a
	// Memory keeps.
	DefaultMemoryStatuses = 200
)

// MemoryDriver is the "driver" of a Memory's Config, as a host reports
// its history store.
const MemoryDriver = "memory"

// MemoryOptions bound a Memory.
type MemoryOptions struct {
	// Runs is how many executions of each item (job and sharding item)
	// are kept, the oldest dropped first (DefaultMemoryRuns when <= 0).
	Runs int
	// OutputBytes bounds the kept output of all executions together; past
	// it the oldest outputs are dropped, their executions kept
	// (DefaultMemoryOutputBytes when <= 0).
	OutputBytes int
	// Statuses is how many status events of each job are kept
	// (DefaultMemoryStatuses when <= 0).
	Statuses int
}

// Memory is an spi.Tracer that keeps the recent history of one host in
// memory: the last Runs executions of each item with their output, and
// the last Statuses status events of each job. A host without
// elasticjob.tracing records into it, so that its console and CLI still
// show recent runs; nothing survives a restart. Its Config is ignored
// (one store). Safe for concurrent use.
type Memory struct {
	opts MemoryOptions

	mu       sync.Mutex
	seq      int64
	execs    map[string]*memExec // by id
	items    map[memItem][]*memExec
	outputs  []*memExec // with output, oldest first
	bytes    int
	statuses map[string][]memStatus // by job, oldest first
}

type memItem struct {
	job  string
	item int
}

type memExec struct {
	seq int64
	ev  spi.ExecutionEvent
}

type memStatus struct {
	seq int64
	ev  spi.StatusEvent
}

var _ spi.Tracer = (*Memory)(nil)

// NewMemory returns an empty Memory.
func NewMemory(opts MemoryOptions) *Memory {
	if opts.Runs <= 0 {
		opts.Runs = DefaultMemoryRuns
	}
	if opts.OutputBytes <= 0 {
		opts.OutputBytes = DefaultMemoryOutputBytes
	}
	if opts.Statuses <= 0 {
		opts.Statuses = DefaultMemoryStatuses
	}
	return &Memory{opts: opts, execs: map[string]*memExec{}, items: map[memItem][]*memExec{}, statuses: map[string][]memStatus{}}
}

// Validate implements spi.Tracer: any Config will do.
func (m *Memory) Validate(context.Context, spi.TraceValidateRequest) error { return nil }

// Write implements spi.Tracer.
func (m *Memory) Write(_ context.Context, req spi.TraceWriteRequest) (spi.TraceWriteResponse, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, e := range req.Executions {
		m.execution(e)
	}
	for _, e := range req.Statuses {
		m.status(e)
	}
	return spi.TraceWriteResponse{}, nil
}

// execution stores a start or a completion; m.mu is held.
func (m *Memory) execution(e spi.ExecutionEvent) {
	if x, ok := m.execs[e.ID]; ok {
		if e.CompleteTime.IsZero() {
			return // the start of a stored completion, or a retried batch
		}
		if x.ev.CompleteTime.IsZero() {
			out := e.Output
			e.Output = spi.Output{}
			x.ev = e
			m.setOutput(x, out)
		}
		return
	}
	m.seq++
	x := &memExec{seq: m.seq, ev: e}
	x.ev.Output = spi.Output{}
	m.execs[e.ID] = x
	key := memItem{e.JobName, e.ShardingItem}
	runs := append(m.items[key], x)
	if len(runs) > m.opts.Runs {
		old := runs[0]
		runs = slices.Delete(runs, 0, 1)
		m.dropOutput(old)
		delete(m.execs, old.ev.ID)
	}
	m.items[key] = runs
	if !e.CompleteTime.IsZero() {
		m.setOutput(x, e.Output)
	}
}

// setOutput keeps x's output within the bound of all outputs; m.mu is
// held.
func (m *Memory) setOutput(x *memExec, o spi.Output) {
	if o.IsZero() {
		return
	}
	x.ev.Output = o
	m.outputs = append(m.outputs, x)
	m.bytes += len(o.Text)
	for m.bytes > m.opts.OutputBytes && len(m.outputs) > 0 {
		m.dropOutput(m.outputs[0])
	}
}

// dropOutput forgets x's output; m.mu is held.
func (m *Memory) dropOutput(x *memExec) {
	if x.ev.Output.IsZero() {
		return
	}
	if i := slices.Index(m.outputs, x); i >= 0 {
		m.outputs = slices.Delete(m.outputs, i, i+1)
	}
	m.bytes -= len(x.ev.Output.Text)
	x.ev.Output = spi.Output{}
}

// status stores a status event once; m.mu is held.
func (m *Memory) status(e spi.StatusEvent) {
	list := m.statuses[e.JobName]
	if slices.ContainsFunc(list, func(s memStatus) bool { return s.ev.ID == e.ID }) {
		return
	}
	m.seq++
	list = append(list, memStatus{seq: m.seq, ev: e})
	if len(list) > m.opts.Statuses {
		list = slices.Delete(list, 0, len(list)-m.opts.Statuses)
	}
	m.statuses[e.JobName] = list
}

// page cuts the rows sorted newest first to offset and limit (the RDB
// sink's defaults).
func page[T any](rows []T, offset, limit int) ([]T, bool, error) {
	if offset < 0 {
		return nil, false, fmt.Errorf("memory tracing: offset %d: want 0 or more", offset)
	}
	if limit <= 0 {
		limit = 50
	}
	if offset >= len(rows) {
		return nil, false, nil
	}
	rows = rows[offset:]
	if len(rows) > limit {
		return rows[:limit], true, nil
	}
	return rows, false, nil
}

// inRange reports whether t is in [from, to) (zero bounds open).
func inRange(t, from, to time.Time) bool {
	return (from.IsZero() || !t.Before(from)) && (to.IsZero() || t.Before(to))
}

// QueryExecutions implements spi.Tracer, newest start first; a row's
// output is an excerpt (spi.ExecutionEvent.Output).
func (m *Memory) QueryExecutions(_ context.Context, q spi.ExecutionQuery) (spi.ExecutionPage, error) {
	m.mu.Lock()
	var rows []*memExec
	keep := func(x *memExec) {
		e := x.ev
		switch {
		case q.JobName != "" && e.JobName != q.JobName, q.IP != "" && e.IP != q.IP,
			q.TaskID != "" && e.TaskID != q.TaskID, q.Item != nil && e.ShardingItem != *q.Item,
			q.Success != nil && e.Success != *q.Success, !inRange(e.StartTime, q.From, q.To):
			return
		}
		rows = append(rows, x)
	}
	if q.ID != "" {
		if x, ok := m.execs[q.ID]; ok {
			keep(x)
		}
	} else {
		for key, runs := range m.items {
			if q.JobName == "" || key.job == q.JobName {
				for _, x := range runs {
					keep(x)
				}
			}
		}
	}
	m.mu.Unlock()
	slices.SortFunc(rows, func(a, b *memExec) int {
		return cmp.Or(b.ev.StartTime.Compare(a.ev.StartTime), cmp.Compare(b.seq, a.seq))
	})
	rows, more, err := page(rows, q.Offset, q.Limit)
	if err != nil {
		return spi.ExecutionPage{}, err
	}
	p := spi.ExecutionPage{More: more}
	for _, x := range rows {
		e := x.ev
		e.Output = excerpt(e.Output)
		p.Executions = append(p.Executions, e)
	}
	return p, nil
}

// excerpt is o's last spi.OutputExcerptChars characters, Cut counting the
// bytes before them.
func excerpt(o spi.Output) spi.Output {
	if o.IsZero() {
		return o
	}
	n := 0
	for i := len(o.Text); i > 0; {
		_, size := utf8.DecodeLastRuneInString(o.Text[:i])
		i -= size
		n++
		if n == spi.OutputExcerptChars {
			return spi.Output{Text: o.Text[i:], Cut: o.Cut + int64(i)}
		}
	}
	return o
}

// QueryStatuses implements spi.Tracer, newest first.
func (m *Memory) QueryStatuses(_ context.Context, q spi.StatusQuery) (spi.StatusPage, error) {
	m.mu.Lock()
	var rows []memStatus
	for job, list := range m.statuses {
		if q.JobName != "" && job != q.JobName {
			continue
		}
		for _, s := range list {
			if statusMatches(q, s.ev) {
				rows = append(rows, s)
			}
		}
	}
	m.mu.Unlock()
	slices.SortFunc(rows, func(a, b memStatus) int {
		return cmp.Or(b.ev.CreationTime.Compare(a.ev.CreationTime), cmp.Compare(b.seq, a.seq))
	})
	rows, more, err := page(rows, q.Offset, q.Limit)
	if err != nil {
		return spi.StatusPage{}, err
	}
	p := spi.StatusPage{More: more}
	for _, s := range rows {
		p.Statuses = append(p.Statuses, s.ev)
	}
	return p, nil
}

// statusMatches reports whether e passes q's filters. Every event of a
// lite host is a LITE_EXECUTOR's.
func statusMatches(q spi.StatusQuery, e spi.StatusEvent) bool {
	return (q.TaskID == "" || e.TaskID == q.TaskID) &&
		(q.State == "" || e.State == q.State) &&
		(q.ExecutionType == "" || e.ExecutionType == q.ExecutionType) &&
		(q.Source == "" || q.Source == liteSource) &&
		inRange(e.CreationTime, q.From, q.To)
}

// liteSource is the source of a lite executor's status events.
const liteSource = "LITE_EXECUTOR"

// Distinct implements spi.Tracer: the values of q.Field held in memory
// that begin with q.Prefix, sorted.
func (m *Memory) Distinct(_ context.Context, q spi.DistinctQuery) (spi.DistinctValues, error) {
	limit := q.Limit
	if limit <= 0 {
		limit = memoryDistinct
	}
	limit = min(limit, spi.MaxDistinct)
	seen := map[string]bool{}
	add := func(v string) {
		if strings.HasPrefix(v, q.Prefix) {
			seen[v] = true
		}
	}
	m.mu.Lock()
	switch q.Field {
	case spi.ExecutionJobNames, spi.ExecutionIPs:
		for _, x := range m.execs {
			if q.Field == spi.ExecutionJobNames {
				add(x.ev.JobName)
			} else {
				add(x.ev.IP)
			}
		}
	case spi.StatusJobNames:
		for job, list := range m.statuses {
			if len(list) > 0 {
				add(job)
			}
		}
	default:
		m.mu.Unlock()
		return spi.DistinctValues{}, fmt.Errorf("memory tracing: distinct values of %q: %w (want %s, %s or %s)",
			q.Field, spi.ErrUnsupported, spi.ExecutionJobNames, spi.ExecutionIPs, spi.StatusJobNames)
	}
	m.mu.Unlock()
	values := slices.Sorted(maps.Keys(seen))
	if len(values) > limit {
		return spi.DistinctValues{Values: values[:limit], More: true}, nil
	}
	return spi.DistinctValues{Values: values}, nil
}

// memoryDistinct is the values Distinct answers when the query sets no
// limit.
const memoryDistinct = 100

// QueryOutput implements spi.Tracer.
func (m *Memory) QueryOutput(_ context.Context, q spi.OutputQuery) (spi.OutputResult, error) {
	if q.ID == "" {
		return spi.OutputResult{}, fmt.Errorf("memory tracing: query output: no execution id given: %w", spi.ErrInvalidConfig)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	x, ok := m.execs[q.ID]
	if !ok || x.ev.Output.IsZero() {
		return spi.OutputResult{}, nil
	}
	return spi.OutputResult{Found: true, Output: x.ev.Output}, nil
}

// Purge implements spi.Tracer.
func (m *Memory) Purge(_ context.Context, req spi.TracePurgeRequest) (spi.TracePurgeResponse, error) {
	if req.Before.IsZero() {
		return spi.TracePurgeResponse{}, fmt.Errorf("memory tracing: purge: no time given: %w", spi.ErrInvalidConfig)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var resp spi.TracePurgeResponse
	for key, runs := range m.items {
		kept := runs[:0]
		for _, x := range runs {
			if x.ev.StartTime.Before(req.Before) {
				if !x.ev.Output.IsZero() {
					resp.Outputs++
				}
				m.dropOutput(x)
				delete(m.execs, x.ev.ID)
				resp.Executions++
				continue
			}
			kept = append(kept, x)
		}
		if len(kept) == 0 {
			delete(m.items, key)
		} else {
			m.items[key] = kept
		}
	}
	for job, list := range m.statuses {
		kept := slices.DeleteFunc(list, func(s memStatus) bool { return s.ev.CreationTime.Before(req.Before) })
		resp.Statuses += int64(len(list) - len(kept))
		if len(kept) == 0 {
			delete(m.statuses, job)
		} else {
			m.statuses[job] = kept
		}
	}
	return resp, nil
}
