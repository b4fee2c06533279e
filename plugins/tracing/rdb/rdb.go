package rdb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/ejob-io/ejob/spi"
)

// TypeName is the type's name in elasticjob.tracing.type.
const TypeName = "RDB"

// The query page size when the query sets none, and the largest.
const (
	DefaultLimit = 50
	MaxLimit     = 10_000
)

// maxText is the length failure_cause and message are truncated to
// (upstream's 4000 characters).
const maxText = 4000

// maxProblems bounds TraceWriteResponse.Problems.
const maxProblems = 5

// legacySource is the value upstream ≤3.0.4 writes to the source column
// of JOB_STATUS_TRACE_LOG.
const legacySource = "LITE_EXECUTOR"

// Tracer is the RDB tracing sink: upstream's RDBJobEventRepository on
// SQLite, PostgreSQL, MySQL and MariaDB. It keeps one pool per distinct
// data-source config (as upstream caches one repository per DataSource)
// and creates the tables when missing. Safe for concurrent use.
type Tracer struct {
	mu     sync.Mutex
	stores map[string]*store
}

// New returns an RDB tracer. Close releases its pools.
func New() *Tracer { return &Tracer{stores: map[string]*store{}} }

var _ spi.Tracer = (*Tracer)(nil)

// Close closes every pool.
func (t *Tracer) Close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	var errs []error
	for k, s := range t.stores {
		errs = append(errs, s.db.Close())
		delete(t.stores, k)
	}
	return errors.Join(errs...)
}

// store is one database.
type store struct {
	db   *sql.DB
	d    dialect
	desc string

	mu sync.Mutex // guards the fields below; held while initialising
	// ready: the tables exist (checked or created).
	ready bool
	// legacy: JOB_STATUS_TRACE_LOG has the ≤3.0.4 source column.
	legacy bool
	// execOrder and statusOrder break ties of equal time in each table
	// (by MySQL's auto_id where the table has it), or are "".
	execOrder, statusOrder string
	// statsReady: the statistics tables exist (made on first use, so a
	// store only the Lite hosts write to has none).
	statsReady bool
}

func configKey(cfg map[string]string) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(cfg)) {
		fmt.Fprintf(&b, "%q=%q;", k, cfg[k])
	}
	return b.String()
}

// open returns the store of cfg, its tables created if missing.
func (t *Tracer) open(ctx context.Context, cfg map[string]string) (*store, error) {
	key := configKey(cfg)
	t.mu.Lock()
	s, ok := t.stores[key]
	if !ok {
		set, err := parseConfig(cfg)
		if err != nil {
			t.mu.Unlock()
			return nil, err
		}
		db, err := set.open()
		if err != nil {
			t.mu.Unlock()
			return nil, invalid("%s: %v", set.desc, err)
		}
		db.SetMaxOpenConns(set.poolSize)
		db.SetMaxIdleConns(set.poolSize)
		db.SetConnMaxIdleTime(5 * time.Minute)
		s = &store{db: db, d: dialectOf(set.driver), desc: set.desc}
		t.stores[key] = s
	}
	t.mu.Unlock()
	if err := s.init(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// init creates the tables and index when missing (as upstream's
// RDBJobEventRepository does at its creation) and detects the ≤3.0.4
// source column, once; a failure is retried at the next call.
func (s *store) init(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ready {
		return nil
	}
	// SQLite answers SQLITE_BUSY at once, without calling its busy handler,
	// while another connection turns a new database file to WAL mode (two
	// hosts starting on one file at the same time): wait and try again,
	// within the busy timeout the connections are given.
	delay, deadline := 10*time.Millisecond, time.Now().Add(sqliteBusyTimeout)
	for {
		err := s.initOnce(ctx)
		if err == nil || !isBusy(err) || time.Now().After(deadline) {
			return err
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		delay = min(2*delay, 200*time.Millisecond)
	}
}

// isBusy reports whether err is SQLite's SQLITE_BUSY (primary code 5).
// Only the SQLite driver's errors have a Code() int.
func isBusy(err error) bool {
	var c interface{ Code() int }
	return errors.As(err, &c) && c.Code()&0xff == 5
}

// initOnce is one attempt of init; s.mu is held.
func (s *store) initOnce(ctx context.Context) error {
	exists := func(q, name string) (bool, error) {
		var n int
		if err := s.db.QueryRowContext(ctx, q, name).Scan(&n); err != nil {
			return false, fmt.Errorf("%s: look for %s: %w", s.desc, name, err)
		}
		return n > 0, nil
	}
	// create runs ddl unless check finds name; another writer creating it
	// at the same time is not an error.
	create := func(check, name, ddl string) (bool, error) {
		ok, err := exists(check, name)
		if err != nil || ok {
			return false, err
		}
		if _, err := s.db.ExecContext(ctx, ddl); err != nil {
			if ok, err2 := exists(check, name); err2 == nil && ok {
				return false, nil
			}
			return false, fmt.Errorf("%s: create %s: %w", s.desc, name, err)
		}
		return true, nil
	}
	if _, err := create(s.d.tableExists, executionTable, s.d.ddl[0]); err != nil {
		return err
	}
	created, err := create(s.d.tableExists, statusTable, s.d.ddl[1])
	if err != nil {
		return err
	}
	if created {
		if _, err := create(s.d.indexExists, statusIndex, s.d.ddl[2]); err != nil {
			return err
		}
	}
	// Also on tables a Java instance created: the queries need them.
	for _, ix := range ejobIndexes() {
		if _, err := create(s.d.indexExists, ix.name, ix.ddl); err != nil {
			return err
		}
	}
	execCols, err := s.columns(ctx, executionTable)
	if err != nil {
		return err
	}
	if _, err := create(s.d.tableExists, outputTable, s.d.outputDDL[0]); err != nil {
		return err
	}
	if _, err := create(s.d.indexExists, outputIndex, s.d.outputDDL[1]); err != nil {
		return err
	}
	if _, err := create(s.d.tableExists, fenceTable, s.d.fenceDDL[0]); err != nil {
		return err
	}
	if _, err := create(s.d.indexExists, fenceIndex, s.d.fenceDDL[1]); err != nil {
		return err
	}
	statusCols, err := s.columns(ctx, statusTable)
	if err != nil {
		return err
	}
	has := func(cols []string, name string) bool {
		return slices.ContainsFunc(cols, func(c string) bool { return strings.EqualFold(c, name) })
	}
	s.legacy = has(statusCols, "source")
	// A table of another DDL (≤3.0.4's, one made by hand) may lack
	// auto_id even on MySQL.
	if s.d.autoID != "" && has(execCols, s.d.autoID) {
		s.execOrder = s.d.autoID + " DESC"
	}
	if s.d.autoID != "" && has(statusCols, s.d.autoID) {
		s.statusOrder = s.d.autoID + " DESC"
	}
	s.ready = true
	return nil
}

// columns reads the column names of table.
func (s *store) columns(ctx context.Context, table string) ([]string, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT * FROM "+table+" WHERE 1 = 0")
	if err != nil {
		return nil, fmt.Errorf("%s: read the columns of %s: %w", s.desc, table, err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, fmt.Errorf("%s: read the columns of %s: %w", s.desc, table, err)
	}
	return cols, nil
}

// Validate implements spi.Tracer: it parses the config without connecting.
func (t *Tracer) Validate(_ context.Context, req spi.TraceValidateRequest) error {
	_, err := parseConfig(req.Config)
	return err
}

// truncate cuts s to maxText characters.
func truncate(s string) string {
	if utf8.RuneCountInString(s) <= maxText {
		return s
	}
	r := []rune(s)
	return string(r[:maxText])
}

// nullable is NULL for "".
func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// batch is one Write's transaction.
type batch struct {
	s         *store
	tx        *sql.Tx
	resp      spi.TraceWriteResponse
	savepoint int
}

// exec runs one statement of the batch. On a dialect whose failed
// statement aborts the transaction, it runs under a savepoint, rolled
// back on error. It returns the rows affected.
func (b *batch) exec(ctx context.Context, q string, args ...any) (int64, error) {
	q = b.s.d.bind(q)
	if !b.s.d.savepoints {
		res, err := b.tx.ExecContext(ctx, q, args...)
		if err != nil {
			return 0, err
		}
		return res.RowsAffected()
	}
	b.savepoint++
	sp := fmt.Sprintf("ejob_sp%d", b.savepoint)
	if _, err := b.tx.ExecContext(ctx, "SAVEPOINT "+sp); err != nil {
		return 0, fmt.Errorf("savepoint: %w", err)
	}
	res, err := b.tx.ExecContext(ctx, q, args...)
	if err != nil {
		if _, rerr := b.tx.ExecContext(ctx, "ROLLBACK TO SAVEPOINT "+sp); rerr != nil {
			return 0, errors.Join(err, fmt.Errorf("rollback to savepoint: %w", rerr))
		}
		return 0, err
	}
	if _, err := b.tx.ExecContext(ctx, "RELEASE SAVEPOINT "+sp); err != nil {
		return 0, fmt.Errorf("release savepoint: %w", err)
	}
	return res.RowsAffected()
}

// reject drops one event after an error caused by its values; any other
// error ends the batch.
func (b *batch) reject(what string, err error) error {
	if !b.s.d.eventLevel(err) {
		return err
	}
	b.resp.Rejected++
	if len(b.resp.Problems) < maxProblems {
		b.resp.Problems = append(b.resp.Problems, fmt.Sprintf("%s: %v", what, err))
	}
	return nil
}

// Write implements spi.Tracer: the batch in one transaction, with
// upstream's statements and its handling of duplicates and of a completion
// stored before its start (RDBJobEventRepository.addJobExecutionEvent).
func (t *Tracer) Write(ctx context.Context, req spi.TraceWriteRequest) (spi.TraceWriteResponse, error) {
	s, err := t.open(ctx, req.Config)
	if err != nil {
		return spi.TraceWriteResponse{}, err
	}
	if len(req.Executions) == 0 && len(req.Statuses) == 0 {
		return spi.TraceWriteResponse{}, nil
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return spi.TraceWriteResponse{}, fmt.Errorf("%s: begin: %w", s.desc, err)
	}
	b := &batch{s: s, tx: tx}
	if err := b.write(ctx, req); err != nil {
		_ = tx.Rollback()
		return spi.TraceWriteResponse{}, fmt.Errorf("%s: write: %w", s.desc, err)
	}
	if err := tx.Commit(); err != nil {
		return spi.TraceWriteResponse{}, fmt.Errorf("%s: commit: %w", s.desc, err)
	}
	return b.resp, nil
}

func (b *batch) write(ctx context.Context, req spi.TraceWriteRequest) error {
	for _, e := range req.Executions {
		if err := b.execution(ctx, e); err != nil {
			if err := b.reject("execution "+e.ID, err); err != nil {
				return err
			}
			continue
		}
		if err := b.output(ctx, e); err != nil {
			if err := b.reject("output of execution "+e.ID, err); err != nil {
				return err
			}
		}
		if err := b.fence(ctx, e); err != nil {
			if err := b.reject("fencing token of execution "+e.ID, err); err != nil {
				return err
			}
		}
	}
	for _, e := range req.Statuses {
		if err := b.status(ctx, e); err != nil {
			if err := b.reject("status "+e.ID, err); err != nil {
				return err
			}
		}
	}
	return nil
}

// Upstream's DML, the same in every dialect.
const (
	insertExecution = "INSERT INTO JOB_EXECUTION_LOG (id, job_name, task_id, hostname, ip, sharding_item, execution_source, is_success, start_time) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
	insertComplete  = "INSERT INTO JOB_EXECUTION_LOG (id, job_name, task_id, hostname, ip, sharding_item, execution_source, is_success, start_time, complete_time) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
	insertFailure   = "INSERT INTO JOB_EXECUTION_LOG (id, job_name, task_id, hostname, ip, sharding_item, execution_source, failure_cause, is_success, start_time) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
	updateExecution = "UPDATE JOB_EXECUTION_LOG SET is_success = ?, complete_time = ? WHERE id = ?"
	updateFailure   = "UPDATE JOB_EXECUTION_LOG SET is_success = ?, complete_time = ?, failure_cause = ? WHERE id = ?"
	selectOriginal  = "SELECT original_task_id FROM JOB_STATUS_TRACE_LOG WHERE task_id = ? AND state = 'TASK_STAGING' LIMIT 1"
	// countStatus finds a status stored by an earlier try of the batch,
	// through TASK_ID_STATE_INDEX.
	countStatus     = "SELECT count(*) FROM JOB_STATUS_TRACE_LOG WHERE task_id = ? AND state = ? AND id = ?"
	insertStatus    = "INSERT INTO JOB_STATUS_TRACE_LOG (id, job_name, original_task_id, task_id, slave_id, execution_type, sharding_item, state, message, creation_time) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
	insertStatus304 = "INSERT INTO JOB_STATUS_TRACE_LOG (id, job_name, original_task_id, task_id, slave_id, source, execution_type, sharding_item, state, message, creation_time) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)

// execution is upstream's addJobExecutionEvent.
func (b *batch) execution(ctx context.Context, e spi.ExecutionEvent) error {
	ta := b.s.d.timeArg
	head := []any{e.ID, e.JobName, e.TaskID, e.Hostname, e.IP, e.ShardingItem, e.Source}
	if e.CompleteTime.IsZero() {
		_, err := b.exec(ctx, insertExecution, append(head, false, ta(e.StartTime))...)
		if err != nil && b.s.d.duplicate(err) {
			// The completion was stored first (or this batch is a retry).
			return nil
		}
		return err
	}
	update, updArgs := updateExecution, []any{true, ta(e.CompleteTime), e.ID}
	insert, insArgs := insertComplete, append(head, true, ta(e.StartTime), ta(e.CompleteTime))
	if !e.Success {
		cause := truncate(e.FailureCause)
		update, updArgs = updateFailure, []any{false, ta(e.CompleteTime), nullable(cause), e.ID}
		insert, insArgs = insertFailure, append(head, nullable(cause), false, ta(e.StartTime))
	}
	n, err := b.exec(ctx, update, updArgs...)
	if err != nil || n > 0 {
		return err
	}
	// The completion before its start: insert it whole; if the start
	// came in between, update it after all.
	if _, err = b.exec(ctx, insert, insArgs...); err != nil && b.s.d.duplicate(err) {
		_, err = b.exec(ctx, update, updArgs...)
	}
	return err
}

const insertOutput = "INSERT INTO " + outputTable + " (id, job_name, start_time, cut, output) VALUES (?, ?, ?, ?, ?)"

// output stores a completion's output, once (a retried batch's duplicate
// is not an error).
func (b *batch) output(ctx context.Context, e spi.ExecutionEvent) error {
	if e.CompleteTime.IsZero() || e.Output.IsZero() {
		return nil
	}
	o := spi.TailOutput(e.Output.Text, spi.MaxOutputBytes)
	o.Cut += e.Output.Cut
	_, err := b.exec(ctx, insertOutput, e.ID, e.JobName, b.s.d.timeArg(e.StartTime), o.Cut, o.Text)
	if err != nil && b.s.d.duplicate(err) {
		return nil
	}
	return err
}

const insertFence = "INSERT INTO " + fenceTable + " (id, job_name, start_time, fencing_token) VALUES (?, ?, ?, ?)"

// fence stores a start's fencing token, once (a retried batch's duplicate
// is not an error). Only the start writes it: its completion carries the
// same token.
func (b *batch) fence(ctx context.Context, e spi.ExecutionEvent) error {
	if !e.CompleteTime.IsZero() || e.FencingToken == 0 {
		return nil
	}
	_, err := b.exec(ctx, insertFence, e.ID, e.JobName, b.s.d.timeArg(e.StartTime), e.FencingToken)
	if err != nil && b.s.d.duplicate(err) {
		return nil
	}
	return err
}

// status is upstream's addJobStatusTraceEvent; the row id is the event's
// id, so that a retried batch stores it once.
func (b *batch) status(ctx context.Context, e spi.StatusEvent) error {
	orig := e.OriginalTaskID
	if e.State != "TASK_STAGING" {
		orig = ""
		err := b.tx.QueryRowContext(ctx, b.s.d.bind(selectOriginal), e.TaskID).Scan(&orig)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
	}
	if !b.s.d.statusIDUnique {
		var n int
		if err := b.tx.QueryRowContext(ctx, b.s.d.bind(countStatus), e.TaskID, e.State, e.ID).Scan(&n); err != nil {
			return err
		}
		if n > 0 {
			return nil
		}
	}
	msg := nullable(truncate(e.Message))
	var err error
	if b.s.legacy {
		_, err = b.exec(ctx, insertStatus304, e.ID, e.JobName, orig, e.TaskID, e.SlaveID, legacySource,
			e.ExecutionType, e.ShardingItems, e.State, msg, b.s.d.timeArg(e.CreationTime))
	} else {
		_, err = b.exec(ctx, insertStatus, e.ID, e.JobName, orig, e.TaskID, e.SlaveID,
			e.ExecutionType, e.ShardingItems, e.State, msg, b.s.d.timeArg(e.CreationTime))
	}
	if err != nil && b.s.d.duplicate(err) {
		return nil
	}
	return err
}

// where collects a query's conditions and arguments.
type where struct {
	conds []string
	args  []any
}

func (w *where) add(cond string, arg any) {
	w.conds = append(w.conds, cond)
	w.args = append(w.args, arg)
}

func (w *where) String() string {
	if len(w.conds) == 0 {
		return ""
	}
	return " WHERE " + strings.Join(w.conds, " AND ")
}

// limits is a query's offset and limit (DefaultLimit for none, at most
// MaxLimit). A negative offset is refused: it is a caller's page
// arithmetic gone wrong, and serving the first page for it would show
// rows the caller did not ask for.
func limits(offset, limit int) (int, int, error) {
	if offset < 0 {
		return 0, 0, fmt.Errorf("rdb tracing: offset %d: want 0 or more", offset)
	}
	if limit <= 0 {
		limit = DefaultLimit
	}
	return offset, min(limit, MaxLimit), nil
}

// order sorts by col, newest first, ties broken by tieBreak ("": none).
func order(col, tieBreak string) string {
	o := " ORDER BY " + col + " DESC"
	if tieBreak != "" {
		o += ", " + tieBreak
	}
	return o
}

// qualified is a tie break of order's with its column qualified by the
// table alias a ("" stays "").
func qualified(a, tieBreak string) string {
	if tieBreak == "" {
		return ""
	}
	return a + "." + tieBreak
}

// timeRange adds [from, to) on col.
func (s *store) timeRange(w *where, col string, from, to time.Time) {
	if !from.IsZero() {
		w.add(col+" >= ?", s.d.timeArg(from))
	}
	if !to.IsZero() {
		w.add(col+" < ?", s.d.timeArg(to))
	}
}

// QueryExecutions implements spi.Tracer, newest start first.
func (t *Tracer) QueryExecutions(ctx context.Context, q spi.ExecutionQuery) (spi.ExecutionPage, error) {
	s, err := t.open(ctx, q.Config)
	if err != nil {
		return spi.ExecutionPage{}, err
	}
	var w where
	for _, f := range []struct{ col, val string }{{"e.id", q.ID}, {"e.job_name", q.JobName}, {"e.ip", q.IP}, {"e.task_id", q.TaskID}} {
		if f.val != "" {
			w.add(f.col+" = ?", f.val)
		}
	}
	if q.Item != nil {
		w.add("e.sharding_item = ?", *q.Item)
	}
	if q.Success != nil {
		w.add("e.is_success = ?", *q.Success)
	}
	s.timeRange(&w, "e.start_time", q.From, q.To)
	offset, limit, err := limits(q.Offset, q.Limit)
	if err != nil {
		return spi.ExecutionPage{}, err
	}
	sqlText := "SELECT e.id, e.job_name, e.task_id, e.hostname, e.ip, e.sharding_item, e.execution_source, e.failure_cause, e.is_success, e.start_time, e.complete_time, " +
		"o.cut, " + s.d.outputTail + ", " + s.d.outputBytes + ", f.fencing_token FROM " + executionTable + " e LEFT JOIN " + outputTable + " o ON o.id = e.id" +
		" LEFT JOIN " + fenceTable + " f ON f.id = e.id" +
		w.String() + order("e.start_time", qualified("e", s.execOrder)) + fmt.Sprintf(" LIMIT %d OFFSET %d", limit+1, offset)
	rows, err := s.db.QueryContext(ctx, s.d.bind(sqlText), w.args...)
	if err != nil {
		return spi.ExecutionPage{}, fmt.Errorf("%s: query executions: %w", s.desc, err)
	}
	defer rows.Close()
	var page spi.ExecutionPage
	for rows.Next() {
		var (
			e               spi.ExecutionEvent
			cause, tail     sql.NullString
			start, complete sql.NullTime
			cut, size       sql.NullInt64
			token           sql.NullInt64
		)
		if err := rows.Scan(&e.ID, &e.JobName, &e.TaskID, &e.Hostname, &e.IP, &e.ShardingItem, &e.Source, &cause, &e.Success, &start, &complete,
			&cut, &tail, &size, &token); err != nil {
			return spi.ExecutionPage{}, fmt.Errorf("%s: read executions: %w", s.desc, err)
		}
		e.ID, e.JobName, e.TaskID = trimPad(e.ID), trimPad(e.JobName), trimPad(e.TaskID)
		e.Hostname, e.IP, e.Source = trimPad(e.Hostname), trimPad(e.IP), trimPad(e.Source)
		e.FailureCause = cause.String
		e.StartTime, e.CompleteTime = unwall(start.Time), unwall(complete.Time)
		e.FencingToken = token.Int64
		if cut.Valid {
			e.Output = spi.Output{Text: tail.String, Cut: cut.Int64 + max(0, size.Int64-int64(len(tail.String)))}
		}
		page.Executions = append(page.Executions, e)
	}
	if err := rows.Err(); err != nil {
		return spi.ExecutionPage{}, fmt.Errorf("%s: read executions: %w", s.desc, err)
	}
	if len(page.Executions) > limit {
		page.Executions, page.More = page.Executions[:limit], true
	}
	return page, nil
}

// trimPad drops the padding a CHARACTER(n) column may add.
func trimPad(s string) string { return strings.TrimRight(s, " ") }

// QueryStatuses implements spi.Tracer, newest first.
func (t *Tracer) QueryStatuses(ctx context.Context, q spi.StatusQuery) (spi.StatusPage, error) {
	s, err := t.open(ctx, q.Config)
	if err != nil {
		return spi.StatusPage{}, err
	}
	var w where
	if q.JobName != "" {
		w.add("job_name = ?", q.JobName)
	}
	for _, f := range []struct{ col, val string }{{"task_id", q.TaskID}, {"state", q.State}, {"execution_type", q.ExecutionType}} {
		if f.val != "" {
			w.add(f.col+" = ?", f.val)
		}
	}
	s.timeRange(&w, "creation_time", q.From, q.To)
	offset, limit, err := limits(q.Offset, q.Limit)
	if err != nil {
		return spi.StatusPage{}, err
	}
	switch {
	case q.Source == "":
	case s.legacy:
		w.add("source = ?", q.Source)
	case q.Source != legacySource:
		// Without the ≤3.0.4 column every event is a lite executor's.
		return spi.StatusPage{}, nil
	}
	sqlText := "SELECT id, job_name, original_task_id, task_id, slave_id, execution_type, sharding_item, state, message, creation_time FROM " +
		statusTable + w.String() + order("creation_time", s.statusOrder) + fmt.Sprintf(" LIMIT %d OFFSET %d", limit+1, offset)
	rows, err := s.db.QueryContext(ctx, s.d.bind(sqlText), w.args...)
	if err != nil {
		return spi.StatusPage{}, fmt.Errorf("%s: query statuses: %w", s.desc, err)
	}
	defer rows.Close()
	var page spi.StatusPage
	for rows.Next() {
		var (
			e       spi.StatusEvent
			msg     sql.NullString
			created sql.NullTime
		)
		if err := rows.Scan(&e.ID, &e.JobName, &e.OriginalTaskID, &e.TaskID, &e.SlaveID, &e.ExecutionType, &e.ShardingItems, &e.State, &msg, &created); err != nil {
			return spi.StatusPage{}, fmt.Errorf("%s: read statuses: %w", s.desc, err)
		}
		e.ID, e.JobName, e.OriginalTaskID, e.TaskID = trimPad(e.ID), trimPad(e.JobName), trimPad(e.OriginalTaskID), trimPad(e.TaskID)
		e.SlaveID, e.ExecutionType, e.ShardingItems, e.State = trimPad(e.SlaveID), trimPad(e.ExecutionType), trimPad(e.ShardingItems), trimPad(e.State)
		e.Message, e.CreationTime = msg.String, unwall(created.Time)
		page.Statuses = append(page.Statuses, e)
	}
	if err := rows.Err(); err != nil {
		return spi.StatusPage{}, fmt.Errorf("%s: read statuses: %w", s.desc, err)
	}
	if len(page.Statuses) > limit {
		page.Statuses, page.More = page.Statuses[:limit], true
	}
	return page, nil
}

// QueryOutput implements spi.Tracer: one execution's output, by its id.
func (t *Tracer) QueryOutput(ctx context.Context, q spi.OutputQuery) (spi.OutputResult, error) {
	if q.ID == "" {
		return spi.OutputResult{}, invalid("query output: no execution id given")
	}
	s, err := t.open(ctx, q.Config)
	if err != nil {
		return spi.OutputResult{}, err
	}
	var r spi.OutputResult
	err = s.db.QueryRowContext(ctx, s.d.bind("SELECT cut, output FROM "+outputTable+" WHERE id = ?"), q.ID).Scan(&r.Output.Cut, &r.Output.Text)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return spi.OutputResult{}, nil
	case err != nil:
		return spi.OutputResult{}, fmt.Errorf("%s: query output of %s: %w", s.desc, q.ID, err)
	}
	r.Found = true
	return r, nil
}

// Purge implements spi.Tracer: the executions' outputs go with them.
func (t *Tracer) Purge(ctx context.Context, req spi.TracePurgeRequest) (spi.TracePurgeResponse, error) {
	if req.Before.IsZero() {
		return spi.TracePurgeResponse{}, invalid("purge: no time given")
	}
	s, err := t.open(ctx, req.Config)
	if err != nil {
		return spi.TracePurgeResponse{}, err
	}
	var resp spi.TracePurgeResponse
	for _, p := range []struct {
		table, col string
		n          *int64
	}{{outputTable, "start_time", &resp.Outputs}, {fenceTable, "start_time", nil}, {executionTable, "start_time", &resp.Executions}, {statusTable, "creation_time", &resp.Statuses}} {
		res, err := s.db.ExecContext(ctx, s.d.bind("DELETE FROM "+p.table+" WHERE "+p.col+" < ?"), s.d.timeArg(req.Before))
		if err != nil {
			return resp, fmt.Errorf("%s: purge %s: %w", s.desc, p.table, err)
		}
		if p.n == nil {
			continue
		}
		if *p.n, err = res.RowsAffected(); err != nil {
			return resp, fmt.Errorf("%s: purge %s: %w", s.desc, p.table, err)
		}
	}
	return resp, nil
}

// DefaultDistinct is the values Distinct answers when the query sets no
// limit.
const DefaultDistinct = 100

// Distinct implements spi.Tracer with a loose index scan on ejob's
// indexes (ejobIndexes): each value is one seek for the next greater one,
// so the cost grows with the values answered, not with the rows stored.
// Values are compared and matched (LIKE) as the database's collation
// does.
func (t *Tracer) Distinct(ctx context.Context, q spi.DistinctQuery) (spi.DistinctValues, error) {
	table, col, ok := distinctColumn(q.Field)
	if !ok {
		return spi.DistinctValues{}, fmt.Errorf("rdb tracing: distinct values of %q: %w (want %s, %s or %s)",
			q.Field, spi.ErrUnsupported, spi.ExecutionJobNames, spi.ExecutionIPs, spi.StatusJobNames)
	}
	s, err := t.open(ctx, q.Config)
	if err != nil {
		return spi.DistinctValues{}, err
	}
	limit := q.Limit
	if limit <= 0 {
		limit = DefaultDistinct
	}
	limit = min(limit, spi.MaxDistinct)
	first, next := s.d.bind(distinctSeek(table, col, ">=")), s.d.bind(distinctSeek(table, col, ">"))
	pattern := escapeLike(q.Prefix) + "%"
	var out spi.DistinctValues
	for after, query := q.Prefix, first; ; query = next {
		var v string
		err := s.db.QueryRowContext(ctx, query, after, pattern).Scan(&v)
		if errors.Is(err, sql.ErrNoRows) {
			return out, nil
		}
		if err != nil {
			return spi.DistinctValues{}, fmt.Errorf("%s: distinct values of %s: %w", s.desc, q.Field, err)
		}
		if len(out.Values) == limit {
			out.More = true
			return out, nil
		}
		out.Values = append(out.Values, trimPad(v))
		after = v
	}
}

// distinctColumn is the table and column of field.
func distinctColumn(field spi.DistinctField) (table, col string, ok bool) {
	switch field {
	case spi.ExecutionJobNames:
		return executionTable, "job_name", true
	case spi.ExecutionIPs:
		return executionTable, "ip", true
	case spi.StatusJobNames:
		return statusTable, "job_name", true
	}
	return "", "", false
}

// distinctSeek is one step of Distinct's scan: the least value of col op
// the first argument (one seek in col's index), if it matches the LIKE
// pattern of the second.
func distinctSeek(table, col, op string) string {
	return "SELECT v FROM (SELECT " + col + " AS v FROM " + table + " WHERE " + col + " " + op + " ? ORDER BY " + col +
		" LIMIT 1) x WHERE v LIKE ? ESCAPE '!'"
}

// escapeLike escapes the LIKE wildcards of s with '!'.
func escapeLike(s string) string {
	return strings.NewReplacer("!", "!!", "%", "!%", "_", "!_").Replace(s)
}
