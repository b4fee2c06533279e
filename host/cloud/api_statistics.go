package cloud

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/ejob-io/ejob/spi"
)

// TaskResultStatistics is upstream's TaskResultStatistics: one row of a
// task result table, or a sum of rows (ID 0, StatisticsTime nil).
type TaskResultStatistics struct {
	ID                int64      `json:"id"`
	SuccessCount      int        `json:"successCount"`
	FailedCount       int        `json:"failedCount"`
	StatisticInterval string     `json:"statisticInterval"`
	StatisticsTime    *time.Time `json:"statisticsTime"`
	CreationTime      *time.Time `json:"creationTime"`
}

// RunningStatistics is upstream's TaskRunningStatistics and
// JobRunningStatistics.
type RunningStatistics struct {
	ID             int64      `json:"id"`
	RunningCount   int        `json:"runningCount"`
	StatisticsTime *time.Time `json:"statisticsTime"`
	CreationTime   *time.Time `json:"creationTime"`
}

// RegisterStatistics is upstream's JobRegisterStatistics.
type RegisterStatistics struct {
	ID              int64      `json:"id"`
	RegisteredCount int        `json:"registeredCount"`
	StatisticsTime  *time.Time `json:"statisticsTime"`
	CreationTime    *time.Time `json:"creationTime"`
}

// intervalOf is a task result table's statisticInterval.
func intervalOf(t spi.StatisticsTable) string {
	switch t {
	case spi.TaskResultMinute:
		return "MINUTE"
	case spi.TaskResultHour:
		return "HOUR"
	}
	return "DAY"
}

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// tables is the statistics store, or ErrNoStatistics naming path.
func (a api) tables(path string) (spi.StatisticsStore, error) {
	if st := a.s.statisticsStore(); st != nil {
		return st, nil
	}
	return nil, fmt.Errorf("%w: %s: the statistics tables live in the event-trace database: configure elasticjob.tracing (type RDB)", ErrNoStatistics, path)
}

// rows reads the rows q selects (its Config is the tracer's).
func (a api) rows(ctx context.Context, st spi.StatisticsStore, q spi.StatisticsQuery) ([]spi.StatisticsRow, error) {
	q.Config = a.s.tcfg
	table := q.Table
	p, err := st.QueryStatistics(ctx, q)
	if errors.Is(err, spi.ErrUnsupported) {
		err = fmt.Errorf("%w: the tracer keeps no statistics tables: %w", ErrNoStatistics, err)
	}
	if err != nil {
		return nil, fmt.Errorf("statistics %s: %w", table, err)
	}
	return p.Rows, nil
}

// since reads the since query parameter: want is the one value a path
// takes.
func since(r *http.Request, want string) error {
	if v := r.URL.Query().Get("since"); v != want {
		return fmt.Errorf("%w: query parameter since: %q: want %s", ErrInvalid, v, want)
	}
	return nil
}

// listStatistics answers the rows q selects, each made an answer row by
// conv, when the since query parameter is want ("": none is read).
func listStatistics[T any](a api, w http.ResponseWriter, r *http.Request, want string, q spi.StatisticsQuery, conv func(spi.StatisticsRow) T) {
	ctx, cancel := a.ctx(r)
	defer cancel()
	out := []T{}
	var err error
	if want != "" {
		err = since(r, want)
	}
	var st spi.StatisticsStore
	if err == nil {
		st, err = a.tables(r.URL.Path)
	}
	if err == nil {
		var rows []spi.StatisticsRow
		rows, err = a.rows(ctx, st, q)
		for _, x := range rows {
			out = append(out, conv(x))
		}
	}
	a.answer(w, r, "", "", out, err)
}

// taskResultsSince is GET /api/job/statistics/tasks/results?since=last24hours:
// the minute rows from the hour 24 hours ago.
func (a api) taskResultsSince(w http.ResponseWriter, r *http.Request) {
	q := spi.StatisticsQuery{Table: spi.TaskResultMinute, From: slot(spi.TaskResultHour, time.Now().Add(-24*time.Hour))}
	listStatistics(a, w, r, "last24hours", q, func(x spi.StatisticsRow) TaskResultStatistics { return taskResultRow(spi.TaskResultMinute, x) })
}

func taskResultRow(table spi.StatisticsTable, x spi.StatisticsRow) TaskResultStatistics {
	return TaskResultStatistics{ID: x.ID, SuccessCount: x.SuccessCount, FailedCount: x.FailedCount, StatisticInterval: intervalOf(table),
		StatisticsTime: timePtr(x.StatisticsTime), CreationTime: timePtr(x.CreationTime)}
}

// taskResults is GET /api/job/statistics/tasks/results/{period}:
// online (every day row plus what the leader counted since its last day
// row), lastWeek (the day rows of the last seven days plus the same),
// lastHour and lastMinute (the latest hour or minute row). Without
// statistics tables, online is what the leader counted since it leads,
// and the other periods are refused.
func (a api) taskResults(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := a.ctx(r)
	defer cancel()
	period := r.PathValue("period")
	res, err := a.taskResultsOf(ctx, r.URL.Path, period)
	a.answer(w, r, "", "", res, err)
}

func (a api) taskResultsOf(ctx context.Context, path, period string) (TaskResultStatistics, error) {
	now := time.Now()
	switch period {
	case "online", "lastWeek", "lastHour", "lastMinute":
	default:
		return TaskResultStatistics{}, fmt.Errorf("%w: period %q: want online, lastWeek, lastHour or lastMinute", ErrInvalid, period)
	}
	st, err := a.tables(path)
	if err != nil && period != "online" {
		return TaskResultStatistics{}, err
	}
	if err != nil {
		if !a.s.Leading() {
			return TaskResultStatistics{}, fmt.Errorf("%w: %s: without statistics tables the counts are kept by the leader only; ask %s", ErrStandby, path, a.s.leaderName(ctx))
		}
		a.s.stats.mu.Lock()
		c := a.s.stats.since
		a.s.stats.mu.Unlock()
		return TaskResultStatistics{SuccessCount: c.success, FailedCount: c.failed, StatisticInterval: "online", CreationTime: &now}, nil
	}
	switch period {
	case "lastHour", "lastMinute":
		table := map[string]spi.StatisticsTable{"lastHour": spi.TaskResultHour, "lastMinute": spi.TaskResultMinute}[period]
		rows, err := a.rows(ctx, st, spi.StatisticsQuery{Table: table, Latest: true})
		if err != nil || len(rows) == 0 {
			return TaskResultStatistics{StatisticInterval: intervalOf(table), CreationTime: &now}, err
		}
		return taskResultRow(table, rows[0]), nil
	}
	var from time.Time
	if period == "lastWeek" {
		from = slot(spi.TaskResultDay, now).AddDate(0, 0, -6)
	}
	rows, err := a.rows(ctx, st, spi.StatisticsQuery{Table: spi.TaskResultDay, From: from})
	if err != nil {
		return TaskResultStatistics{}, err
	}
	sum := TaskResultStatistics{StatisticInterval: "DAY", CreationTime: &now}
	for _, x := range rows {
		sum.SuccessCount += x.SuccessCount
		sum.FailedCount += x.FailedCount
	}
	if a.s.Leading() {
		c := a.s.stats.snapshot(spi.TaskResultDay)
		sum.SuccessCount += c.success
		sum.FailedCount += c.failed
	}
	return sum, nil
}

// runningStatistics is GET /api/job/statistics/tasks/running and
// /jobs/running ?since=lastWeek: the rows from midnight seven days ago.
func (a api) runningStatistics(w http.ResponseWriter, r *http.Request, table spi.StatisticsTable) {
	q := spi.StatisticsQuery{Table: table, From: slot(spi.TaskResultDay, time.Now()).AddDate(0, 0, -7)}
	listStatistics(a, w, r, "lastWeek", q, func(x spi.StatisticsRow) RunningStatistics {
		return RunningStatistics{ID: x.ID, RunningCount: x.Count, StatisticsTime: timePtr(x.StatisticsTime), CreationTime: timePtr(x.CreationTime)}
	})
}

// registerStatistics is GET /api/job/statistics/jobs/register: every
// row.
func (a api) registerStatistics(w http.ResponseWriter, r *http.Request) {
	listStatistics(a, w, r, "", spi.StatisticsQuery{Table: spi.JobRegisterStatistics}, func(x spi.StatisticsRow) RegisterStatistics {
		return RegisterStatistics{ID: x.ID, RegisteredCount: x.Count, StatisticsTime: timePtr(x.StatisticsTime), CreationTime: timePtr(x.CreationTime)}
	})
}
