package rdb_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ejob-io/ejob/internal/dbtest"
	"github.com/ejob-io/ejob/plugins/tracing/rdb"
	"github.com/ejob-io/ejob/sdk"
	"github.com/ejob-io/ejob/sdk/sdktest"
	"github.com/ejob-io/ejob/spi"
	"github.com/ejob-io/ejob/spi/spitest"
)

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func newTracer(t *testing.T) *rdb.Tracer {
	tr := rdb.New()
	t.Cleanup(func() { tr.Close() })
	return tr
}

// base is a whole second, so that MariaDB's TIMESTAMP (seconds) keeps it.
func base() time.Time { return time.Date(2026, 3, 1, 10, 0, 0, 0, time.Local) }

const taskID = "job3@-@0,1,2@-@READY@-@10.0.0.7@-@4242"

func start(id string, item int, src string, at time.Time) spi.ExecutionEvent {
	return spi.ExecutionEvent{ID: id, Hostname: "host-a", IP: "10.0.0.7", TaskID: taskID, JobName: "job3",
		Source: src, ShardingItem: item, StartTime: at}
}

func done(e spi.ExecutionEvent, at time.Time, cause string) spi.ExecutionEvent {
	e.CompleteTime, e.Success, e.FailureCause = at, cause == "", cause
	return e
}

func status(id, state, msg string, at time.Time) spi.StatusEvent {
	return spi.StatusEvent{ID: id, JobName: "job3", TaskID: taskID, SlaveID: "10.0.0.7", ExecutionType: "READY",
		ShardingItems: "[0, 1, 2]", State: state, Message: msg, CreationTime: at}
}

// run3 is the events of one trigger of a 3-item job whose item 1 fails,
// then a misfire re-run that succeeds.
func run3() spi.TraceWriteRequest {
	t0 := base()
	var req spi.TraceWriteRequest
	req.Statuses = append(req.Statuses,
		status("s1", "TASK_STAGING", "Job 'job3' execute begin.", t0),
		status("s2", "TASK_RUNNING", "", t0.Add(time.Second)))
	for i := range 3 {
		req.Executions = append(req.Executions, start(fmt.Sprintf("n%d", i), i, "NORMAL_TRIGGER", t0.Add(time.Second)))
	}
	for i := range 3 {
		cause := ""
		if i == 1 {
			cause = "job \"job3\" item 1: exit status 3"
		}
		req.Executions = append(req.Executions, done(req.Executions[i], t0.Add(2*time.Second), cause))
	}
	req.Statuses = append(req.Statuses, status("s3", "TASK_ERROR", "{1=job \"job3\" item 1: exit status 3}", t0.Add(2*time.Second)),
		status("s4", "TASK_RUNNING", "", t0.Add(3*time.Second)))
	for i := range 3 {
		s := start(fmt.Sprintf("m%d", i), i, "MISFIRE", t0.Add(3*time.Second))
		req.Executions = append(req.Executions, s, done(s, t0.Add(4*time.Second), ""))
	}
	req.Statuses = append(req.Statuses, status("s5", "TASK_FINISHED", "", t0.Add(4*time.Second)))
	return req
}

func write(t *testing.T, tr spi.Tracer, cfg map[string]string, req spi.TraceWriteRequest) spi.TraceWriteResponse {
	t.Helper()
	req.Config = cfg
	resp, err := tr.Write(ctxT(t), req)
	if err != nil {
		t.Fatalf("write: %v", err)
	}
	return resp
}

// row is a JOB_EXECUTION_LOG row read with plain SQL.
type row struct {
	id, source, cause string
	item              int
	success           bool
	completed         bool
}

func rows(t *testing.T, db *sql.DB) []row {
	t.Helper()
	r, err := db.QueryContext(ctxT(t), "SELECT id, execution_source, failure_cause, sharding_item, is_success, complete_time FROM JOB_EXECUTION_LOG ORDER BY id")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var out []row
	for r.Next() {
		var (
			x        row
			cause    sql.NullString
			complete any
		)
		if err := r.Scan(&x.id, &x.source, &cause, &x.item, &x.success, &complete); err != nil {
			t.Fatal(err)
		}
		x.id, x.source = strings.TrimSpace(x.id), strings.TrimSpace(x.source)
		x.cause, x.completed = cause.String, complete != nil
		out = append(out, x)
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func statusRows(t *testing.T, db *sql.DB) []string {
	t.Helper()
	r, err := db.QueryContext(ctxT(t), "SELECT id, original_task_id, state, message FROM JOB_STATUS_TRACE_LOG ORDER BY id")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var out []string
	for r.Next() {
		var id, orig, state string
		var msg sql.NullString
		if err := r.Scan(&id, &orig, &state, &msg); err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%s|%s|%s|%s", strings.TrimSpace(id), strings.TrimSpace(orig), strings.TrimSpace(state), msg.String))
	}
	return out
}

func TestRunOfThreeItemJob(t *testing.T) {
	forEach(t, func(t *testing.T, b backend) {
		cfg, db := b.fresh(t)
		tr := newTracer(t)
		if resp := write(t, tr, cfg, run3()); resp.Rejected != 0 {
			t.Fatalf("rejected: %+v", resp)
		}
		want := []row{
			{id: "m0", source: "MISFIRE", item: 0, success: true, completed: true},
			{id: "m1", source: "MISFIRE", item: 1, success: true, completed: true},
			{id: "m2", source: "MISFIRE", item: 2, success: true, completed: true},
			{id: "n0", source: "NORMAL_TRIGGER", item: 0, success: true, completed: true},
			{id: "n1", source: "NORMAL_TRIGGER", item: 1, cause: "job \"job3\" item 1: exit status 3", completed: true},
			{id: "n2", source: "NORMAL_TRIGGER", item: 2, success: true, completed: true},
		}
		if got := rows(t, db); !slices.Equal(got, want) {
			t.Errorf("JOB_EXECUTION_LOG:\n got  %+v\n want %+v", got, want)
		}
		wantStatus := []string{
			"s1||TASK_STAGING|Job 'job3' execute begin.",
			"s2||TASK_RUNNING|",
			"s3||TASK_ERROR|{1=job \"job3\" item 1: exit status 3}",
			"s4||TASK_RUNNING|",
			"s5||TASK_FINISHED|",
		}
		if got := statusRows(t, db); !slices.Equal(got, wantStatus) {
			t.Errorf("JOB_STATUS_TRACE_LOG:\n got  %q\n want %q", got, wantStatus)
		}
		// The same batch again (a retry after a lost reply) stores nothing
		// twice.
		write(t, tr, cfg, run3())
		if got := rows(t, db); len(got) != 6 {
			t.Errorf("after a retried batch: %d execution rows, want 6", len(got))
		}
		if got := statusRows(t, db); len(got) != 5 {
			t.Errorf("after a retried batch: %d status rows, want 5", len(got))
		}
		// Through the query side: times survive (local wall clock).
		page, err := tr.QueryExecutions(ctxT(t), spi.ExecutionQuery{Config: cfg, JobName: "job3", Item: new(1), Success: new(false)})
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Executions) != 1 {
			t.Fatalf("failed item 1: %+v", page)
		}
		e := page.Executions[0]
		if e.ID != "n1" || e.Hostname != "host-a" || e.IP != "10.0.0.7" || e.TaskID != taskID ||
			!e.StartTime.Equal(base().Add(time.Second)) || !e.CompleteTime.Equal(base().Add(2*time.Second)) {
			t.Errorf("queried execution = %+v", e)
		}
	})
}

func TestCompletionBeforeStart(t *testing.T) {
	forEach(t, func(t *testing.T, b backend) {
		cfg, db := b.fresh(t)
		tr := newTracer(t)
		t0 := base()
		ok, bad := start("ok", 0, "NORMAL_TRIGGER", t0), start("bad", 1, "NORMAL_TRIGGER", t0)
		// Completions first (as a concurrent Java writer may store them),
		// then the starts.
		write(t, tr, cfg, spi.TraceWriteRequest{Executions: []spi.ExecutionEvent{done(ok, t0.Add(time.Second), ""), done(bad, t0.Add(time.Second), "boom")}})
		write(t, tr, cfg, spi.TraceWriteRequest{Executions: []spi.ExecutionEvent{ok, bad}})
		want := []row{
			// INSERT_FAILURE has no complete_time, as upstream's.
			{id: "bad", source: "NORMAL_TRIGGER", item: 1, cause: "boom"},
			{id: "ok", source: "NORMAL_TRIGGER", item: 0, success: true, completed: true},
		}
		if got := rows(t, db); !slices.Equal(got, want) {
			t.Errorf("rows:\n got  %+v\n want %+v", got, want)
		}
	})
}

// legacyStatusDDL is upstream ≤3.0.4's JOB_STATUS_TRACE_LOG, with its
// source column.
func legacyStatusDDL(name string) string {
	cols := "id %[1]s(40) NOT NULL, job_name %[1]s(100) NOT NULL, original_task_id %[1]s(255) NOT NULL, task_id %[1]s(255) NOT NULL, " +
		"slave_id %[1]s(50) NOT NULL, source %[1]s(50) NOT NULL, execution_type %[1]s(20) NOT NULL, sharding_item %[1]s(100) NOT NULL, " +
		"state %[1]s(20) NOT NULL, message %[2]s(4000) NULL, creation_time TIMESTAMP NULL, PRIMARY KEY (id))"
	if name == "SQLite" {
		return "CREATE TABLE JOB_STATUS_TRACE_LOG (" + fmt.Sprintf(cols, "CHARACTER", "CHARACTER VARYING")
	}
	return "CREATE TABLE JOB_STATUS_TRACE_LOG (" + fmt.Sprintf(cols, "VARCHAR", "VARCHAR")
}

// TestLegacySourceColumn: on a ≤3.0.4 JOB_STATUS_TRACE_LOG the writer
// fills the source column, the source filter reads it, and a status query
// on MySQL/MariaDB orders without an auto_id the table does not have
// (it once ordered by auto_id and failed with "Unknown column").
func TestLegacySourceColumn(t *testing.T) {
	forEach(t, func(t *testing.T, b backend) {
		cfg, db := b.fresh(t)
		if _, err := db.ExecContext(ctxT(t), legacyStatusDDL(b.name)); err != nil {
			t.Fatal(err)
		}
		tr := newTracer(t)
		write(t, tr, cfg, spi.TraceWriteRequest{Statuses: []spi.StatusEvent{status("s1", "TASK_STAGING", "Job 'job3' execute begin.", base())}})
		var src string
		if err := db.QueryRowContext(ctxT(t), "SELECT source FROM JOB_STATUS_TRACE_LOG WHERE id = 's1'").Scan(&src); err != nil {
			t.Fatal(err)
		}
		if strings.TrimSpace(src) != "LITE_EXECUTOR" {
			t.Errorf("source = %q, want LITE_EXECUTOR", src)
		}
		// The table has no auto_id (on MariaDB too): the query orders
		// without it, and the source filter reads the column.
		for src, want := range map[string]int{"": 1, "LITE_EXECUTOR": 1, "CLOUD_EXECUTOR": 0} {
			sp, err := tr.QueryStatuses(ctxT(t), spi.StatusQuery{Config: cfg, Source: src, State: "TASK_STAGING"})
			if err != nil || len(sp.Statuses) != want {
				t.Errorf("statuses of source %q on a ≤3.0.4 table: %+v, %v; want %d", src, sp.Statuses, err, want)
			}
		}
	})
}

// TestDistinctByPrefix: the prefix lists of the console's filters, with
// LIKE's wildcards in a prefix taken literally, bounded by Limit.
func TestDistinctByPrefix(t *testing.T) {
	forEach(t, func(t *testing.T, b backend) {
		cfg, _ := b.fresh(t)
		tr := newTracer(t)
		var req spi.TraceWriteRequest
		for i, job := range []string{"beta", "alpha", "al_x", "alpha", "alxy", "gamma"} {
			e := start(fmt.Sprint("d", i), 0, "NORMAL_TRIGGER", base().Add(time.Duration(i)*time.Second))
			e.JobName, e.IP = job, fmt.Sprintf("10.0.%d.1", i%3)
			req.Executions = append(req.Executions, e)
			st := status(fmt.Sprint("s", i), "TASK_STAGING", "", base())
			st.JobName = "st-" + job
			req.Statuses = append(req.Statuses, st)
		}
		write(t, tr, cfg, req)
		for name, c := range map[string]struct {
			q    spi.DistinctQuery
			want []string
			more bool
		}{
			"every job":        {spi.DistinctQuery{Field: spi.ExecutionJobNames}, []string{"al_x", "alpha", "alxy", "beta", "gamma"}, false},
			"prefix":           {spi.DistinctQuery{Field: spi.ExecutionJobNames, Prefix: "al"}, []string{"al_x", "alpha", "alxy"}, false},
			"underscore":       {spi.DistinctQuery{Field: spi.ExecutionJobNames, Prefix: "al_"}, []string{"al_x"}, false},
			"percent":          {spi.DistinctQuery{Field: spi.ExecutionJobNames, Prefix: "%"}, nil, false},
			"limit":            {spi.DistinctQuery{Field: spi.ExecutionJobNames, Prefix: "al", Limit: 2}, nil, true},
			"ips":              {spi.DistinctQuery{Field: spi.ExecutionIPs, Prefix: "10.0."}, []string{"10.0.0.1", "10.0.1.1", "10.0.2.1"}, false},
			"status jobs":      {spi.DistinctQuery{Field: spi.StatusJobNames, Prefix: "st-g"}, []string{"st-gamma"}, false},
			"nothing after it": {spi.DistinctQuery{Field: spi.StatusJobNames, Prefix: "zz"}, nil, false},
		} {
			c.q.Config = cfg
			got, err := tr.Distinct(ctxT(t), c.q)
			// In the database's collation's order (MariaDB sorts '_'
			// after letters); a limited answer has Limit of them.
			values := slices.Sorted(slices.Values(got.Values))
			if c.q.Limit > 0 {
				ok := len(values) == c.q.Limit && !slices.ContainsFunc(values, func(v string) bool { return !strings.HasPrefix(v, "al") })
				if err != nil || !ok || !got.More {
					t.Errorf("%s: %q more=%v (%v), want %d names of al... and more", name, got.Values, got.More, err, c.q.Limit)
				}
				continue
			}
			if err != nil || !slices.Equal(values, c.want) || got.More != c.more {
				t.Errorf("%s: %q more=%v (%v), want %q more=%v", name, got.Values, got.More, err, c.want, c.more)
			}
		}
		if _, err := tr.Distinct(ctxT(t), spi.DistinctQuery{Config: cfg, Field: "execution.hostname"}); !errors.Is(err, spi.ErrUnsupported) {
			t.Errorf("unknown field: %v, want spi.ErrUnsupported", err)
		}
	})
}

func TestQueryFiltersAndPaging(t *testing.T) {
	forEach(t, func(t *testing.T, b backend) {
		cfg, _ := b.fresh(t)
		tr := newTracer(t)
		t0 := base()
		var req spi.TraceWriteRequest
		for i := range 30 {
			e := start(fmt.Sprintf("e%02d", i), i%3, "NORMAL_TRIGGER", t0.Add(time.Duration(i)*time.Minute))
			if i%2 == 1 {
				e.JobName, e.IP = "other", "10.0.0.8"
			}
			cause := ""
			if i%5 == 0 {
				cause = "failed"
			}
			req.Executions = append(req.Executions, e, done(e, e.StartTime.Add(time.Second), cause))
		}
		write(t, tr, cfg, req)
		ids := func(q spi.ExecutionQuery) ([]string, bool) {
			t.Helper()
			q.Config = cfg
			p, err := tr.QueryExecutions(ctxT(t), q)
			if err != nil {
				t.Fatal(err)
			}
			var out []string
			for _, e := range p.Executions {
				out = append(out, e.ID)
			}
			return out, p.More
		}
		got, more := ids(spi.ExecutionQuery{JobName: "job3", Limit: 4})
		if want := []string{"e28", "e26", "e24", "e22"}; !slices.Equal(got, want) || !more {
			t.Errorf("page 1 = %v more=%v, want %v more", got, more, want)
		}
		got, more = ids(spi.ExecutionQuery{JobName: "job3", Limit: 4, Offset: 12})
		if want := []string{"e04", "e02", "e00"}; !slices.Equal(got, want) || more {
			t.Errorf("last page = %v more=%v, want %v", got, more, want)
		}
		got, _ = ids(spi.ExecutionQuery{IP: "10.0.0.8", Item: new(0), Limit: 100})
		if want := []string{"e27", "e21", "e15", "e09", "e03"}; !slices.Equal(got, want) {
			t.Errorf("ip+item = %v, want %v", got, want)
		}
		got, _ = ids(spi.ExecutionQuery{Success: new(false), From: t0.Add(10 * time.Minute), To: t0.Add(25 * time.Minute)})
		if want := []string{"e20", "e15", "e10"}; !slices.Equal(got, want) {
			t.Errorf("failed in [10m, 25m) = %v, want %v", got, want)
		}
		write(t, tr, cfg, run3())
		sp, err := tr.QueryStatuses(ctxT(t), spi.StatusQuery{Config: cfg, JobName: "job3", TaskID: taskID, Limit: 2})
		if err != nil {
			t.Fatal(err)
		}
		if len(sp.Statuses) != 2 || sp.Statuses[0].State != "TASK_FINISHED" || sp.Statuses[1].State != "TASK_RUNNING" || !sp.More {
			t.Errorf("statuses = %+v", sp)
		}
		// A negative offset (a caller's page arithmetic that wrapped) is
		// refused, not served as the first page.
		if p, err := tr.QueryExecutions(ctxT(t), spi.ExecutionQuery{Config: cfg, Offset: -1904, Limit: 4}); err == nil {
			t.Errorf("offset -1904: %d rows, want an error", len(p.Executions))
		}
		if p, err := tr.QueryStatuses(ctxT(t), spi.StatusQuery{Config: cfg, Offset: -1}); err == nil {
			t.Errorf("status offset -1: %d rows, want an error", len(p.Statuses))
		}
	})
}

func TestPurge(t *testing.T) {
	forEach(t, func(t *testing.T, b backend) {
		cfg, db := b.fresh(t)
		tr := newTracer(t)
		write(t, tr, cfg, run3())
		resp, err := tr.Purge(ctxT(t), spi.TracePurgeRequest{Config: cfg, Before: base().Add(2 * time.Second)})
		if err != nil {
			t.Fatal(err)
		}
		// The normal run's items started at +1s; the misfire run's at +3s.
		// Status events s1 (+0s) and s2 (+1s) are older than +2s.
		if resp.Executions != 3 || resp.Statuses != 2 {
			t.Errorf("purged %+v, want 3 executions and 2 statuses", resp)
		}
		if got := rows(t, db); len(got) != 3 || got[0].id != "m0" {
			t.Errorf("left %+v", got)
		}
	})
}

func TestRejectedEventDoesNotFailBatch(t *testing.T) {
	forEach(t, func(t *testing.T, b backend) {
		if !b.enforcesLength {
			t.Skip("SQLite does not enforce column lengths")
		}
		cfg, db := b.fresh(t)
		tr := newTracer(t)
		long := start("long", 0, "NORMAL_TRIGGER", base())
		long.JobName = strings.Repeat("j", 101)
		resp := write(t, tr, cfg, spi.TraceWriteRequest{Executions: []spi.ExecutionEvent{long, start("fine", 1, "NORMAL_TRIGGER", base())}})
		if resp.Rejected != 1 || len(resp.Problems) != 1 || !strings.Contains(resp.Problems[0], "execution long") {
			t.Errorf("response = %+v, want one rejected event", resp)
		}
		if got := rows(t, db); len(got) != 1 || got[0].id != "fine" {
			t.Errorf("rows = %+v", got)
		}
	})
}

func TestTwoWritersConcurrently(t *testing.T) {
	forEach(t, func(t *testing.T, b backend) {
		cfg, db := b.fresh(t)
		// Two tracers are two hosts (two plugin processes): each creates
		// the tables if missing, at the same time.
		var wg sync.WaitGroup
		errs := make(chan error, 2)
		for h := range 2 {
			tr := newTracer(t)
			wg.Go(func() {
				for n := range 20 {
					var req spi.TraceWriteRequest
					req.Config = cfg
					for i := range 5 {
						e := start(fmt.Sprintf("h%d-%02d-%d", h, n, i), i, "NORMAL_TRIGGER", base())
						req.Executions = append(req.Executions, e, done(e, base().Add(time.Second), ""))
						req.Statuses = append(req.Statuses, status(fmt.Sprintf("h%d-%02d-%d", h, n, i), "TASK_RUNNING", "", base()))
					}
					if _, err := tr.Write(ctxT(t), req); err != nil {
						errs <- err
						return
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		if got := rows(t, db); len(got) != 200 {
			t.Errorf("%d execution rows, want 200", len(got))
		}
		if got := statusRows(t, db); len(got) != 200 {
			t.Errorf("%d status rows, want 200", len(got))
		}
	})
}

func TestBadConfigRejected(t *testing.T) {
	tr := newTracer(t)
	for name, tc := range map[string]struct {
		cfg  map[string]string
		want string
	}{
		"unknown driver":    {map[string]string{"driver": "oracle", "url": "x"}, `unknown driver "oracle"`},
		"bad postgres DSN":  {map[string]string{"driver": "postgres", "url": "postgres://u:s3cret@host:notaport/db"}, "not a PostgreSQL URL"},
		"bad mysql DSN":     {map[string]string{"driver": "mysql", "url": "u:s3cret@tcp(host:3306"}, "not a MySQL DSN"},
		"no url":            {map[string]string{"driver": "mysql", "password": "s3cret"}, "url is required"},
		"unknown key":       {map[string]string{"url": "jdbc:mysql://h/db", "passwrd": "s3cret"}, "unknown dataSource setting(s) passwrd"},
		"no driver":         {map[string]string{"url": "h:5432/db"}, "driver is required"},
		"JDBC parameters":   {map[string]string{"url": "jdbc:mysql://h:3306/db?useSSL=false"}, "JDBC URL parameters"},
		"bad pool size":     {map[string]string{"url": "jdbc:mysql://h/db", "maximum-pool-size": "0"}, "maximumPoolSize"},
		"in-memory sqlite":  {map[string]string{"driver": "sqlite", "url": ":memory:"}, "SQLite file path"},
		"both url and jdbc": {map[string]string{"driver": "sqlite", "url": "a.db", "jdbcUrl": "b.db"}, "both url and jdbcUrl"},
	} {
		t.Run(name, func(t *testing.T) {
			err := tr.Validate(ctxT(t), spi.TraceValidateRequest{Config: tc.cfg})
			if !errors.Is(err, spi.ErrInvalidConfig) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Validate = %v, want ErrInvalidConfig with %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "s3cret") {
				t.Errorf("the error shows the password: %v", err)
			}
			_, werr := tr.Write(ctxT(t), spi.TraceWriteRequest{Config: tc.cfg})
			if !errors.Is(werr, spi.ErrInvalidConfig) {
				t.Errorf("Write = %v, want ErrInvalidConfig", werr)
			}
		})
	}
	for _, ok := range []map[string]string{
		{"url": "jdbc:postgresql://db:5432/trace", "username": "u", "password": "p"},
		{"jdbc-url": "jdbc:mysql://db/trace", "maximum_pool_size": "4"},
		{"driverClassName": "org.mariadb.jdbc.Driver", "url": "u:p@tcp(db:3306)/trace?timeout=5s"},
		{"url": "jdbc:sqlite:/var/lib/ejob/trace.db"},
	} {
		if err := tr.Validate(ctxT(t), spi.TraceValidateRequest{Config: ok}); err != nil {
			t.Errorf("Validate(%v) = %v", ok, err)
		}
	}
}

func TestBadPasswordIsAnError(t *testing.T) {
	s := shared.maria
	dsn := s.NewDatabase(t)
	db, err := s.Open(dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range []string{"CREATE USER IF NOT EXISTS 'tracer'@'127.0.0.1' IDENTIFIED BY 'right-pw'", "GRANT ALL ON *.* TO 'tracer'@'127.0.0.1'"} {
		if _, err := db.ExecContext(ctxT(t), q); err != nil {
			t.Fatal(err)
		}
	}
	cfg := map[string]string{"driver": "mysql", "url": dsn, "username": "tracer", "password": "wrong-pw"}
	tr := newTracer(t)
	_, err = tr.Write(ctxT(t), spi.TraceWriteRequest{Config: cfg, Executions: []spi.ExecutionEvent{start("x", 0, "NORMAL_TRIGGER", base())}})
	if err == nil || errors.Is(err, spi.ErrInvalidConfig) {
		t.Fatalf("Write with a bad password = %v, want a store error", err)
	}
	if strings.Contains(err.Error(), "wrong-pw") {
		t.Errorf("the error shows the password: %v", err)
	}
	cfg["password"] = "right-pw"
	write(t, tr, cfg, spi.TraceWriteRequest{Executions: []spi.ExecutionEvent{start("x", 0, "NORMAL_TRIGGER", base())}})
}

func TestDatabaseDownAndBack(t *testing.T) {
	for _, kind := range []string{"PostgreSQL", "MariaDB"} {
		t.Run(kind, func(t *testing.T) {
			// A server of its own, stopped and started by the test.
			k := dbtest.Postgres
			if kind == "MariaDB" {
				k = dbtest.MariaDB
			}
			own := dbtest.Start(t, k)
			cfg := map[string]string{"driver": own.Driver(), "url": own.DSN()}
			tr := newTracer(t)
			write(t, tr, cfg, spi.TraceWriteRequest{Executions: []spi.ExecutionEvent{start("a", 0, "NORMAL_TRIGGER", base())}})
			if err := own.Stop(); err != nil {
				t.Fatal(err)
			}
			_, err := tr.Write(ctxT(t), spi.TraceWriteRequest{Config: cfg, Executions: []spi.ExecutionEvent{start("b", 0, "NORMAL_TRIGGER", base())}})
			if err == nil || errors.Is(err, spi.ErrInvalidConfig) {
				t.Fatalf("Write with the database down = %v, want a store error", err)
			}
			if err := own.StartAgain(); err != nil {
				t.Fatal(err)
			}
			// The pool reconnects by itself: the retried batch is stored.
			write(t, tr, cfg, spi.TraceWriteRequest{Executions: []spi.ExecutionEvent{start("b", 0, "NORMAL_TRIGGER", base())}})
			p, err := tr.QueryExecutions(ctxT(t), spi.ExecutionQuery{Config: cfg})
			if err != nil || len(p.Executions) != 2 {
				t.Fatalf("after the restart: %+v, %v", p, err)
			}
		})
	}
}

func TestThroughTheTransport(t *testing.T) {
	cfg, db := backends()[0].fresh(t)
	tr := newTracer(t)
	p := sdktest.Connect(t, sdk.Plugins{Version: "test", Tracing: map[string]spi.Tracer{rdb.TypeName: tr}})
	remote := p.Tracer("rdb")
	write(t, remote, cfg, run3())
	if got := rows(t, db); len(got) != 6 {
		t.Fatalf("%d rows through gRPC, want 6", len(got))
	}
	page, err := remote.QueryExecutions(ctxT(t), spi.ExecutionQuery{Config: cfg, Success: new(false)})
	if err != nil || len(page.Executions) != 1 || page.Executions[0].FailureCause == "" {
		t.Fatalf("query through gRPC: %+v, %v", page, err)
	}
	err = remote.Validate(ctxT(t), spi.TraceValidateRequest{Config: map[string]string{"driver": "db2", "url": "x"}})
	if !errors.Is(err, spi.ErrInvalidConfig) {
		t.Errorf("Validate through gRPC = %v, want ErrInvalidConfig", err)
	}
}

// TestConformance runs spitest's tracing suite on every backend, in
// process and (SQLite) through the gRPC transport.
func TestConformance(t *testing.T) {
	invalid := map[string]map[string]string{
		"unknown driver": {"driver": "oracle", "url": "x"},
		"no url":         {"driver": "postgres"},
	}
	forEach(t, func(t *testing.T, b backend) {
		tr := newTracer(t)
		spitest.TestTracer(t, tr, spitest.TracerOptions{
			Config:        func() map[string]string { cfg, _ := b.fresh(t); return cfg },
			InvalidConfig: invalid,
		})
		if b.name == "SQLite" {
			p := sdktest.Connect(t, sdk.Plugins{Version: "test", Tracing: map[string]spi.Tracer{rdb.TypeName: tr}})
			t.Run("gRPC", func(t *testing.T) {
				spitest.TestTracer(t, p.Tracer(rdb.TypeName), spitest.TracerOptions{
					Config:        func() map[string]string { cfg, _ := b.fresh(t); return cfg },
					InvalidConfig: invalid,
				})
			})
		}
	})
}
