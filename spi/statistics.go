package spi

import (
	"context"
	"time"
)

// StatisticsTable names one of ElasticJob-Cloud's statistics tables.
type StatisticsTable string

// The statistics tables, with upstream's names and columns: the task
// result tables count the items that succeeded and failed in each
// interval (success_count, failed_count); the others hold one count per
// slot (running_count, or registered_count for JobRegisterStatistics).
const (
	TaskResultMinute      StatisticsTable = "TASK_RESULT_STATISTICS_MINUTE"
	TaskResultHour        StatisticsTable = "TASK_RESULT_STATISTICS_HOUR"
	TaskResultDay         StatisticsTable = "TASK_RESULT_STATISTICS_DAY"
	TaskRunningStatistics StatisticsTable = "TASK_RUNNING_STATISTICS"
	JobRunningStatistics  StatisticsTable = "JOB_RUNNING_STATISTICS"
	JobRegisterStatistics StatisticsTable = "JOB_REGISTER_STATISTICS"
)

// StatisticsTables lists every statistics table.
func StatisticsTables() []StatisticsTable {
	return []StatisticsTable{TaskResultMinute, TaskResultHour, TaskResultDay, TaskRunningStatistics, JobRunningStatistics, JobRegisterStatistics}
}

// TaskResult reports whether t is one of the task result tables.
func (t StatisticsTable) TaskResult() bool {
	return t == TaskResultMinute || t == TaskResultHour || t == TaskResultDay
}

// Known reports whether t is a statistics table.
func (t StatisticsTable) Known() bool {
	for _, k := range StatisticsTables() {
		if t == k {
			return true
		}
	}
	return false
}

// StatisticsRow is one row of a statistics table.
type StatisticsRow struct {
	// ID is the row's id, set by the store (ignored when adding).
	ID int64
	// SuccessCount and FailedCount are the task result tables' counts.
	SuccessCount, FailedCount int
	// Count is running_count or registered_count of the other tables.
	Count int
	// StatisticsTime is the slot the row is for; CreationTime when it was
	// written.
	StatisticsTime, CreationTime time.Time
}

// StatisticsAddRequest adds rows to one table.
type StatisticsAddRequest struct {
	Config map[string]string
	Table  StatisticsTable
	Rows   []StatisticsRow
}

// StatisticsAddResponse acknowledges an add.
type StatisticsAddResponse struct{}

// MaxStatisticsRows bounds the rows of one add and of one query (a week
// of minute rows fits).
const MaxStatisticsRows = 20_000

// StatisticsQuery selects rows of one table by statistics time, oldest
// first.
type StatisticsQuery struct {
	Config map[string]string
	Table  StatisticsTable
	// From bounds statistics_time (inclusive) when not zero.
	From time.Time
	// Latest selects the newest row only (by statistics time).
	Latest bool
	// Limit rows at most are returned (<= 0 or above MaxStatisticsRows:
	// MaxStatisticsRows).
	Limit int
}

// StatisticsPage is the answer of QueryStatistics.
type StatisticsPage struct {
	Rows []StatisticsRow
	// More reports whether rows beyond Limit match.
	More bool
}

// StatisticsStore is what a Tracer may also be: the keeper of
// ElasticJob-Cloud's statistics tables, in the same store as the event
// trace (upstream keeps them in its event-trace database).
//
// Caller: the leading `ejob cloud` scheduler, once a minute (a few rows
// per table, more after a gap it fills); the REST API when a statistics
// path is read. Contract: AddStatistics stores every row or none (an
// error); the tables are created when missing. An unknown Table is an
// error wrapping ErrInvalidConfig. A Tracer that keeps no statistics
// answers errors wrapping ErrUnsupported (as a plugin's tracer does when
// its process serves an older ejob).
type StatisticsStore interface {
	AddStatistics(ctx context.Context, req StatisticsAddRequest) (StatisticsAddResponse, error)
	QueryStatistics(ctx context.Context, q StatisticsQuery) (StatisticsPage, error)
}
