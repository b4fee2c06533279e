package cloud

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/ejob-io/ejob/spi"
)

// results are success and failure counts.
type results struct{ success, failed int }

// statistics are the leader's in-memory counts of finished items
// (upstream's TaskResultMetaData), one pair per task result table, each
// reset when its row is written, plus the pair since this instance leads.
type statistics struct {
	mu      sync.Mutex
	pending map[spi.StatisticsTable]results
	since   results
	// written is the slot each table was last written for.
	written map[spi.StatisticsTable]time.Time
}

func newStatistics() *statistics {
	return &statistics{pending: map[spi.StatisticsTable]results{}, written: map[spi.StatisticsTable]time.Time{}}
}

// count adds one finished item.
func (st *statistics) count(success bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	for _, t := range []spi.StatisticsTable{spi.TaskResultMinute, spi.TaskResultHour, spi.TaskResultDay} {
		r := st.pending[t]
		if success {
			r.success++
		} else {
			r.failed++
		}
		st.pending[t] = r
	}
	if success {
		st.since.success++
	} else {
		st.since.failed++
	}
}

// reset forgets the counts (a new leadership starts from zero, as
// upstream's).
func (st *statistics) reset() {
	st.mu.Lock()
	defer st.mu.Unlock()
	clear(st.pending)
	clear(st.written)
	st.since = results{}
}

func (st *statistics) snapshot(t spi.StatisticsTable) results {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.pending[t]
}

// taken subtracts what a written row counted.
func (st *statistics) taken(t spi.StatisticsTable, r results) {
	st.mu.Lock()
	defer st.mu.Unlock()
	p := st.pending[t]
	st.pending[t] = results{p.success - r.success, p.failed - r.failed}
}

// slot is t truncated to table's interval, in the local zone (upstream
// truncates in the JVM's zone): a minute for the minute and running
// tables, an hour, a day for the day and register tables.
func slot(table spi.StatisticsTable, t time.Time) time.Time {
	t = t.Local()
	switch table {
	case spi.TaskResultHour:
		return time.Date(t.Year(), t.Month(), t.Day(), t.Hour(), 0, 0, 0, time.Local)
	case spi.TaskResultDay, spi.JobRegisterStatistics:
		return time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.Local)
	}
	return time.Date(t.Year(), t.Month(), t.Day(), t.Hour(), t.Minute(), 0, 0, time.Local)
}

// nextSlot is the slot after s.
func nextSlot(table spi.StatisticsTable, s time.Time) time.Time {
	switch table {
	case spi.TaskResultHour:
		return slot(table, s.Add(time.Hour))
	case spi.TaskResultDay, spi.JobRegisterStatistics:
		return slot(table, s.AddDate(0, 0, 1).Add(time.Hour))
	}
	return slot(table, s.Add(time.Minute))
}

// fillWindow is how far back empty slots are filled: the longest window
// a statistics path reads.
const fillWindow = 7 * 24 * time.Hour

// gauges are the counts of a running-statistics pass.
type gauges struct{ tasks, jobs, registered int }

func (s *Scheduler) gauges(ctx context.Context) (gauges, error) {
	running, err := s.st.Running(ctx)
	if err != nil {
		return gauges{}, err
	}
	jobs, err := s.st.Jobs(ctx)
	if err != nil {
		return gauges{}, err
	}
	g := gauges{jobs: len(running), registered: len(jobs)}
	for _, items := range running {
		g.tasks += len(items)
	}
	return g, nil
}

// statisticsStore is the tracer's statistics tables (nil when there is
// no tracer or it keeps none).
func (s *Scheduler) statisticsStore() spi.StatisticsStore {
	st, _ := s.tracer.(spi.StatisticsStore)
	return st
}

// writeStatistics writes the rows due at now: each table whose slot of
// now has no row gets one, after rows for the empty slots since its
// latest row (upstream's fillBlankIfNeeded) within fillWindow. The task
// result tables get the counts of the items that ended since their last
// row; their empty slots get zeros (upstream copies the latest row's
// counts, counting those items again). The running and register tables
// get the counts of now; their empty slots repeat the latest row's count,
// as upstream's do. A table that already has a row for the slot (written
// by another leader) is left alone.
func (s *Scheduler) writeStatistics(ctx context.Context, now time.Time) error {
	st := s.statisticsStore()
	if st == nil {
		return nil
	}
	var g *gauges
	var errs []error
	for _, table := range spi.StatisticsTables() {
		cur := slot(table, now)
		s.stats.mu.Lock()
		done := !s.stats.written[table].Before(cur)
		s.stats.mu.Unlock()
		if done {
			continue
		}
		latest, err := st.QueryStatistics(ctx, spi.StatisticsQuery{Config: s.tcfg, Table: table, Latest: true})
		if err != nil {
			errs = append(errs, fmt.Errorf("statistics %s: latest row: %w", table, err))
			continue
		}
		var rows []spi.StatisticsRow
		if len(latest.Rows) > 0 {
			last := latest.Rows[0]
			if !last.StatisticsTime.Before(cur) {
				s.markWritten(table, cur)
				continue
			}
			from := nextSlot(table, last.StatisticsTime)
			if oldest := slot(table, now.Add(-fillWindow)); from.Before(oldest) {
				from = oldest
			}
			for t := from; t.Before(cur) && len(rows) < spi.MaxStatisticsRows-1; t = nextSlot(table, t) {
				fill := spi.StatisticsRow{StatisticsTime: t, CreationTime: now}
				if !table.TaskResult() {
					fill.Count = last.Count
				}
				rows = append(rows, fill)
			}
		}
		row := spi.StatisticsRow{StatisticsTime: cur, CreationTime: now}
		var counted results
		if table.TaskResult() {
			counted = s.stats.snapshot(table)
			row.SuccessCount, row.FailedCount = counted.success, counted.failed
		} else {
			if g == nil {
				v, err := s.gauges(ctx)
				if err != nil {
					return fmt.Errorf("statistics: %w", err)
				}
				g = &v
			}
			row.Count = map[spi.StatisticsTable]int{spi.TaskRunningStatistics: g.tasks, spi.JobRunningStatistics: g.jobs, spi.JobRegisterStatistics: g.registered}[table]
		}
		if _, err := st.AddStatistics(ctx, spi.StatisticsAddRequest{Config: s.tcfg, Table: table, Rows: append(rows, row)}); err != nil {
			errs = append(errs, fmt.Errorf("statistics %s: add: %w", table, err))
			continue
		}
		if table.TaskResult() {
			s.stats.taken(table, counted)
		}
		s.markWritten(table, cur)
	}
	return errors.Join(errs...)
}

func (s *Scheduler) markWritten(table spi.StatisticsTable, at time.Time) {
	s.stats.mu.Lock()
	defer s.stats.mu.Unlock()
	s.stats.written[table] = at
}

// statisticsLoop writes the statistics rows at the start of every minute
// while ctx lasts (the leader's; upstream's statistics jobs).
func (s *Scheduler) statisticsLoop(ctx context.Context) {
	if s.statisticsStore() == nil {
		return
	}
	// The slots of now are written when the first minute ends: a leader
	// writes rows for what it counted, from the minute after it started.
	now := time.Now()
	for _, table := range spi.StatisticsTables() {
		s.markWritten(table, slot(table, now))
	}
	for {
		now := time.Now()
		wait := slot(spi.TaskResultMinute, now).Add(time.Minute).Sub(now)
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		if err := s.writeStatistics(ctx, time.Now()); err != nil && ctx.Err() == nil {
			s.log.Warn("statistics not written; retrying next minute", "error", err)
		}
	}
}
