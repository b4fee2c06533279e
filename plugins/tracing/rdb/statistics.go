package rdb

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/ejob-io/ejob/spi"
)

var _ spi.StatisticsStore = (*Tracer)(nil)

// countColumns are the count columns of a statistics table.
func countColumns(t spi.StatisticsTable) []string {
	switch {
	case t.TaskResult():
		return []string{"success_count", "failed_count"}
	case t == spi.JobRegisterStatistics:
		return []string{"registered_count"}
	}
	return []string{"running_count"}
}

// statisticsDDL is upstream's StatisticRdbRepository DDL of table (MySQL
// style) in the dialect: an auto-increment id, the count columns, then
// statistics_time and creation_time.
func (d dialect) statisticsDDL(t spi.StatisticsTable) string {
	id := map[string]string{"MySQL": "id BIGINT NOT NULL AUTO_INCREMENT", "PostgreSQL": "id BIGSERIAL NOT NULL",
		"SQLite": "id INTEGER PRIMARY KEY AUTOINCREMENT"}[d.name]
	count := map[string]string{"MySQL": "INT(11)", "PostgreSQL": "INT", "SQLite": "INTEGER"}[d.name]
	q := "CREATE TABLE " + string(t) + " (" + id
	for _, c := range countColumns(t) {
		q += ", " + c + " " + count
	}
	q += ", statistics_time TIMESTAMP NOT NULL, creation_time TIMESTAMP NOT NULL"
	if d.name != "SQLite" {
		q += ", PRIMARY KEY (id)"
	}
	return q + ")"
}

// statisticsTable checks t and creates the statistics tables when
// missing (once per store; a failure is retried at the next call).
func (s *store) statisticsTable(ctx context.Context, t spi.StatisticsTable) error {
	if !t.Known() {
		return invalid("statistics table %q: want one of %v", t, spi.StatisticsTables())
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.statsReady {
		return nil
	}
	for _, table := range spi.StatisticsTables() {
		var n int
		if err := s.db.QueryRowContext(ctx, s.d.tableExists, string(table)).Scan(&n); err != nil {
			return fmt.Errorf("%s: look for %s: %w", s.desc, table, err)
		}
		if n > 0 {
			continue
		}
		if _, err := s.db.ExecContext(ctx, s.d.statisticsDDL(table)); err != nil {
			// Another writer may have created it meanwhile.
			if err2 := s.db.QueryRowContext(ctx, s.d.tableExists, string(table)).Scan(&n); err2 != nil || n == 0 {
				return fmt.Errorf("%s: create %s: %w", s.desc, table, err)
			}
		}
	}
	s.statsReady = true
	return nil
}

// AddStatistics implements spi.StatisticsStore: the rows in one
// transaction.
func (t *Tracer) AddStatistics(ctx context.Context, req spi.StatisticsAddRequest) (spi.StatisticsAddResponse, error) {
	s, err := t.open(ctx, req.Config)
	if err != nil {
		return spi.StatisticsAddResponse{}, err
	}
	if err := s.statisticsTable(ctx, req.Table); err != nil {
		return spi.StatisticsAddResponse{}, err
	}
	if len(req.Rows) > spi.MaxStatisticsRows {
		return spi.StatisticsAddResponse{}, invalid("%d statistics rows in one add: at most %d", len(req.Rows), spi.MaxStatisticsRows)
	}
	if len(req.Rows) == 0 {
		return spi.StatisticsAddResponse{}, nil
	}
	cols := countColumns(req.Table)
	q := "INSERT INTO " + string(req.Table) + " ("
	for _, c := range cols {
		q += c + ", "
	}
	q += "statistics_time, creation_time) VALUES (?, ?, ?"
	if len(cols) == 2 {
		q += ", ?"
	}
	q = s.d.bind(q + ")")
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return spi.StatisticsAddResponse{}, fmt.Errorf("%s: begin: %w", s.desc, err)
	}
	defer func() { _ = tx.Rollback() }()
	for _, r := range req.Rows {
		created := r.CreationTime
		if created.IsZero() {
			created = time.Now()
		}
		args := []any{r.Count}
		if len(cols) == 2 {
			args = []any{r.SuccessCount, r.FailedCount}
		}
		args = append(args, s.d.timeArg(r.StatisticsTime), s.d.timeArg(created))
		if _, err := tx.ExecContext(ctx, q, args...); err != nil {
			return spi.StatisticsAddResponse{}, fmt.Errorf("%s: insert into %s: %w", s.desc, req.Table, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return spi.StatisticsAddResponse{}, fmt.Errorf("%s: commit: %w", s.desc, err)
	}
	return spi.StatisticsAddResponse{}, nil
}

// QueryStatistics implements spi.StatisticsStore.
func (t *Tracer) QueryStatistics(ctx context.Context, q spi.StatisticsQuery) (spi.StatisticsPage, error) {
	s, err := t.open(ctx, q.Config)
	if err != nil {
		return spi.StatisticsPage{}, err
	}
	if err := s.statisticsTable(ctx, q.Table); err != nil {
		return spi.StatisticsPage{}, err
	}
	limit := q.Limit
	if limit <= 0 || limit > spi.MaxStatisticsRows {
		limit = spi.MaxStatisticsRows
	}
	if q.Latest {
		limit = 1
	}
	cols := countColumns(q.Table)
	sel := "SELECT id"
	for _, c := range cols {
		sel += ", " + c
	}
	sel += ", statistics_time, creation_time FROM " + string(q.Table)
	var args []any
	if !q.From.IsZero() {
		sel += " WHERE statistics_time >= ?"
		args = append(args, s.d.timeArg(q.From))
	}
	if q.Latest {
		sel += " ORDER BY statistics_time DESC, id DESC"
	} else {
		sel += " ORDER BY statistics_time, id"
	}
	sel += fmt.Sprintf(" LIMIT %d", limit+1)
	rows, err := s.db.QueryContext(ctx, s.d.bind(sel), args...)
	if err != nil {
		return spi.StatisticsPage{}, fmt.Errorf("%s: query %s: %w", s.desc, q.Table, err)
	}
	defer rows.Close()
	page := spi.StatisticsPage{Rows: []spi.StatisticsRow{}}
	for rows.Next() {
		var (
			r                 spi.StatisticsRow
			a, b              sql.NullInt64
			statTime, created sql.NullTime
		)
		dst := []any{&r.ID, &a}
		if len(cols) == 2 {
			dst = append(dst, &b)
		}
		if err := rows.Scan(append(dst, &statTime, &created)...); err != nil {
			return spi.StatisticsPage{}, fmt.Errorf("%s: read %s: %w", s.desc, q.Table, err)
		}
		if len(cols) == 2 {
			r.SuccessCount, r.FailedCount = int(a.Int64), int(b.Int64)
		} else {
			r.Count = int(a.Int64)
		}
		r.StatisticsTime, r.CreationTime = unwall(statTime.Time), unwall(created.Time)
		if len(page.Rows) == limit {
			page.More = true
			break
		}
		page.Rows = append(page.Rows, r)
	}
	if err := rows.Err(); err != nil {
		return spi.StatisticsPage{}, fmt.Errorf("%s: read %s: %w", s.desc, q.Table, err)
	}
	return page, nil
}
