package rdb

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"
	"modernc.org/sqlite"

	"github.com/ejob-io/ejob/spi"
)

// dialect is what differs between databases: upstream's 3.0.5+ DDL
// (META-INF/sql/<type>.properties), the placeholders, how a duplicate key
// and an error of one event (rather than of the connection) look, and the
// catalogue queries.
type dialect struct {
	name string
	// ddl creates JOB_EXECUTION_LOG, JOB_STATUS_TRACE_LOG and
	// TASK_ID_STATE_INDEX, in that order (ejob's indexes: ejobIndexes).
	ddl [3]string
	// dollar: placeholders are $1, $2 (PostgreSQL) rather than ?.
	dollar bool
	// savepoints: a failed statement aborts the transaction unless it ran
	// under a savepoint (PostgreSQL).
	savepoints bool
	// tableExists and indexExists count the tables (indexes) of the
	// current schema named like their one argument, ignoring case.
	tableExists, indexExists string
	// statusIDUnique: JOB_STATUS_TRACE_LOG's id is a key, so a status
	// stored twice is a duplicate-key error (not MySQL's, keyed by
	// auto_id: there the writer looks first, through the task index).
	statusIDUnique bool
	// autoID is MySQL's auto_id column, which orders rows of equal time
	// where a table has it (tables of 3.0.5+'s DDL), or "".
	autoID    string
	duplicate func(error) bool
	// eventLevel reports an error caused by one event's values (the
	// event is dropped) rather than by the connection (the batch is
	// retried).
	eventLevel func(error) bool
	// timeArg is how a timestamp is bound.
	timeArg func(time.Time) any
	// outputDDL creates outputTable and outputIndex, in that order.
	outputDDL [2]string
	// fenceDDL creates fenceTable and fenceIndex, in that order.
	fenceDDL [2]string
	// outputTail and outputBytes are SQL expressions of the last
	// spi.OutputExcerptChars characters of o.output and of its length in
	// bytes.
	outputTail, outputBytes string
}

// column is one column of the upstream tables; size 0 means not a string.
type column struct {
	name     string
	size     int
	nullable bool
	// kind is "int", "bool" or "time" for non-strings.
	kind string
}

func executionColumns() []column {
	return []column{
		{name: "id", size: 40}, {name: "job_name", size: 100}, {name: "task_id", size: 255},
		{name: "hostname", size: 255}, {name: "ip", size: 50}, {name: "sharding_item", kind: "int"},
		{name: "execution_source", size: 20}, {name: "failure_cause", size: 4000, nullable: true},
		{name: "is_success", kind: "bool"}, {name: "start_time", kind: "time", nullable: true},
		{name: "complete_time", kind: "time", nullable: true},
	}
}

func statusColumns() []column {
	return []column{
		{name: "id", size: 40}, {name: "job_name", size: 100}, {name: "original_task_id", size: 255},
		{name: "task_id", size: 255}, {name: "slave_id", size: 50}, {name: "execution_type", size: 20},
		{name: "sharding_item", size: 100}, {name: "state", size: 20},
		{name: "message", size: 4000, nullable: true}, {name: "creation_time", kind: "time", nullable: true},
	}
}

// createTable renders one CREATE TABLE of a non-MySQL dialect with
// typeOf giving each column's type (as the .properties file of that
// dialect has it).
func createTable(prefix, table string, cols []column, typeOf func(column) string) string {
	parts := make([]string, 0, len(cols)+1)
	for _, c := range cols {
		null := "NOT NULL"
		if c.nullable {
			null = "NULL"
		}
		parts = append(parts, c.name+" "+typeOf(c)+" "+null)
	}
	parts = append(parts, "PRIMARY KEY (id)")
	return prefix + " " + table + " (" + strings.Join(parts, ", ") + ")"
}

const (
	executionTable = "JOB_EXECUTION_LOG"
	statusTable    = "JOB_STATUS_TRACE_LOG"
	statusIndex    = "TASK_ID_STATE_INDEX"
	// historyIndex is the first of ejob's indexes.
	historyIndex = "JOB_EXECUTION_LOG_JOB_START"
)

// index is one of ejob's additions to upstream's tables.
type index struct{ name, ddl string }

// ejobIndexes are ejob's additions to upstream's tables, created when
// missing (on tables a Java instance created too); Java writers and
// readers ignore an index they did not create, and the tables' columns
// stay upstream's:
//   - JOB_EXECUTION_LOG_JOB_START: history queries filter by job and sort
//     by start time, which upstream's DDL leaves to a scan (0.4 s on a
//     million rows; 1 ms with it); the job names of the executions are
//     listed through it too (Distinct);
//   - JOB_EXECUTION_LOG_IP: the IP addresses of the executions (Distinct);
//   - JOB_STATUS_TRACE_LOG_JOB_CREATION: status queries by job, newest
//     first, and the job names of the status events (Distinct).
func ejobIndexes() []index {
	return []index{
		{historyIndex, "CREATE INDEX " + historyIndex + " ON JOB_EXECUTION_LOG (job_name, start_time)"},
		{"JOB_EXECUTION_LOG_IP", "CREATE INDEX JOB_EXECUTION_LOG_IP ON JOB_EXECUTION_LOG (ip)"},
		{"JOB_STATUS_TRACE_LOG_JOB_CREATION", "CREATE INDEX JOB_STATUS_TRACE_LOG_JOB_CREATION ON JOB_STATUS_TRACE_LOG (job_name, creation_time)"},
	}
}

// The table of ejob's own that holds the items' output, keyed by the
// execution's id (JOB_EXECUTION_LOG.id), with the start time for the
// purge; upstream's tables stay as upstream's DDL makes them.
const (
	outputTable = "EJOB_JOB_EXECUTION_OUTPUT"
	outputIndex = "EJOB_JOB_EXECUTION_OUTPUT_START"
	outputIdx   = "CREATE INDEX " + outputIndex + " ON " + outputTable + " (start_time)"
)

// outputDDL renders the output table with textType for its text column.
func outputDDL(textType, suffix string) [2]string {
	return [2]string{
		"CREATE TABLE " + outputTable + " (id VARCHAR(40) NOT NULL, job_name VARCHAR(100) NOT NULL, " +
			"start_time TIMESTAMP NULL, cut BIGINT NOT NULL, output " + textType + " NOT NULL, PRIMARY KEY (id))" + suffix,
		outputIdx,
	}
}

// The table of ejob's own that holds each execution's fencing token
// (spi.ExecutionEvent.FencingToken), keyed by the execution's id, with the
// start time for the purge. An execution without a token has no row.
const (
	fenceTable = "EJOB_JOB_EXECUTION_FENCE"
	fenceIndex = "EJOB_JOB_EXECUTION_FENCE_START"
)

// fenceDDL renders the fencing-token table with suffix after its
// definition.
func fenceDDL(suffix string) [2]string {
	return [2]string{
		"CREATE TABLE " + fenceTable + " (id VARCHAR(40) NOT NULL, job_name VARCHAR(100) NOT NULL, " +
			"start_time TIMESTAMP NULL, fencing_token BIGINT NOT NULL, PRIMARY KEY (id))" + suffix,
		"CREATE INDEX " + fenceIndex + " ON " + fenceTable + " (start_time)",
	}
}

// mysqlDDL is MySQL.properties' DDL, its line continuations joined with
// single spaces.
func mysqlDDL() [3]string {
	return [3]string{
		"CREATE TABLE IF NOT EXISTS JOB_EXECUTION_LOG (auto_id int NOT NULL AUTO_INCREMENT, id VARCHAR (40) NOT NULL, " +
			"job_name VARCHAR (100) NOT NULL, task_id VARCHAR (255) NOT NULL, hostname VARCHAR (255) NOT NULL, " +
			"ip VARCHAR (50) NOT NULL, sharding_item INT NOT NULL, execution_source VARCHAR (20) NOT NULL, " +
			"failure_cause VARCHAR (4000) NULL, is_success INT NOT NULL, start_time TIMESTAMP NULL, " +
			"complete_time TIMESTAMP NULL, PRIMARY KEY (auto_id), UNIQUE KEY `id` (`id`)) ENGINE=InnoDB",
		"CREATE TABLE IF NOT EXISTS JOB_STATUS_TRACE_LOG (auto_id int NOT NULL AUTO_INCREMENT, id VARCHAR (40) NOT NULL, " +
			"job_name VARCHAR (100) NOT NULL, original_task_id VARCHAR (255) NOT NULL, task_id VARCHAR (255) NOT NULL, " +
			"slave_id VARCHAR (50) NOT NULL, execution_type VARCHAR (20) NOT NULL, sharding_item VARCHAR (100) NOT NULL, " +
			"state VARCHAR (20) NOT NULL, message VARCHAR (4000) NULL, creation_time TIMESTAMP NULL, " +
			"PRIMARY KEY (auto_id)) ENGINE=InnoDB",
		"CREATE INDEX TASK_ID_STATE_INDEX ON JOB_STATUS_TRACE_LOG (task_id(128), state)",
	}
}

// postgresDDL is PostgreSQL.properties' DDL.
func postgresDDL() [3]string {
	typeOf := func(c column) string {
		switch c.kind {
		case "int":
			return "INT"
		case "bool":
			return "BOOLEAN"
		case "time":
			return "TIMESTAMP"
		}
		return fmt.Sprintf("VARCHAR(%d)", c.size)
	}
	return [3]string{
		createTable("CREATE TABLE", executionTable, executionColumns(), typeOf),
		createTable("CREATE TABLE", statusTable, statusColumns(), typeOf),
		"CREATE INDEX TASK_ID_STATE_INDEX ON JOB_STATUS_TRACE_LOG (task_id, state)",
	}
}

// sqliteDDL is SQL92.properties' DDL, what upstream runs on a database it
// has no dialect for (SQLite among them): CHARACTER(n), CHARACTER
// VARYING(4000) for failure_cause and message, INTEGER, TIMESTAMP.
func sqliteDDL() [3]string {
	typeOf := func(c column) string {
		switch {
		case c.kind == "int", c.kind == "bool":
			return "INTEGER"
		case c.kind == "time":
			return "TIMESTAMP"
		case c.size == 4000:
			return "CHARACTER VARYING(4000)"
		}
		return fmt.Sprintf("CHARACTER(%d)", c.size)
	}
	return [3]string{
		createTable("CREATE TABLE", executionTable, executionColumns(), typeOf),
		createTable("CREATE TABLE", statusTable, statusColumns(), typeOf),
		"CREATE INDEX TASK_ID_STATE_INDEX ON JOB_STATUS_TRACE_LOG (task_id, state)",
	}
}

// sqliteTimeLayout is how timestamps are stored in SQLite: fixed width,
// so that text order is time order; the driver reads it back.
const sqliteTimeLayout = "2006-01-02 15:04:05.000000"

func dialectOf(drv string) dialect {
	switch drv {
	case DriverPostgres:
		return dialect{
			name: "PostgreSQL", ddl: postgresDDL(), dollar: true, savepoints: true, statusIDUnique: true,
			tableExists: "SELECT count(*) FROM information_schema.tables WHERE table_schema = current_schema() AND lower(table_name) = lower($1)",
			indexExists: "SELECT count(*) FROM pg_indexes WHERE schemaname = current_schema() AND lower(indexname) = lower($1)",
			duplicate: func(err error) bool {
				var pe *pgconn.PgError
				return errors.As(err, &pe) && pe.Code == "23505"
			},
			eventLevel: func(err error) bool {
				var pe *pgconn.PgError
				return errors.As(err, &pe) && (strings.HasPrefix(pe.Code, "22") || strings.HasPrefix(pe.Code, "23"))
			},
			timeArg:    func(t time.Time) any { return wall(t) },
			outputDDL:  outputDDL("TEXT", ""),
			fenceDDL:   fenceDDL(""),
			outputTail: fmt.Sprintf("right(o.output, %d)", spi.OutputExcerptChars), outputBytes: "octet_length(o.output)",
		}
	case DriverMySQL:
		return dialect{
			name: "MySQL", ddl: mysqlDDL(),
			tableExists: "SELECT count(*) FROM information_schema.tables WHERE table_schema = DATABASE() AND lower(table_name) = lower(?)",
			indexExists: "SELECT count(*) FROM information_schema.statistics WHERE table_schema = DATABASE() AND lower(index_name) = lower(?)",
			autoID:      "auto_id",
			duplicate: func(err error) bool {
				var me *mysql.MySQLError
				return errors.As(err, &me) && me.Number == 1062
			},
			eventLevel: func(err error) bool {
				var me *mysql.MySQLError
				if !errors.As(err, &me) {
					return false
				}
				state := string(me.SQLState[:])
				return strings.HasPrefix(state, "22") || strings.HasPrefix(state, "23")
			},
			timeArg: func(t time.Time) any { return wall(t) },
			// MEDIUMTEXT: TEXT holds 65535 bytes, one less than the cap.
			outputDDL:  outputDDL("MEDIUMTEXT", " ENGINE=InnoDB DEFAULT CHARSET=utf8mb4"),
			fenceDDL:   fenceDDL(" ENGINE=InnoDB"),
			outputTail: fmt.Sprintf("RIGHT(o.output, %d)", spi.OutputExcerptChars), outputBytes: "LENGTH(o.output)",
		}
	}
	return dialect{
		name: "SQLite", ddl: sqliteDDL(), statusIDUnique: true,
		tableExists: "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND lower(name) = lower(?)",
		indexExists: "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND lower(name) = lower(?)",
		duplicate: func(err error) bool {
			var se *sqlite.Error
			// SQLITE_CONSTRAINT_PRIMARYKEY, SQLITE_CONSTRAINT_UNIQUE.
			return errors.As(err, &se) && (se.Code() == 1555 || se.Code() == 2067)
		},
		eventLevel: func(err error) bool {
			var se *sqlite.Error
			if !errors.As(err, &se) {
				return false
			}
			switch se.Code() & 0xff {
			case 18, 19, 20, 25: // TOOBIG, CONSTRAINT, MISMATCH, RANGE
				return true
			}
			return false
		},
		timeArg:    func(t time.Time) any { return wall(t).Format(sqliteTimeLayout) },
		outputDDL:  outputDDL("TEXT", ""),
		fenceDDL:   fenceDDL(""),
		outputTail: fmt.Sprintf("substr(o.output, -%d)", spi.OutputExcerptChars), outputBytes: "length(CAST(o.output AS BLOB))",
	}
}

// bind rewrites ? placeholders for the dialect.
func (d dialect) bind(q string) string {
	if !d.dollar {
		return q
	}
	var b strings.Builder
	n := 0
	for _, r := range q {
		if r == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// wall is t's local wall clock as a UTC time: upstream binds timestamps
// with JDBC's setTimestamp, which stores the JVM's local wall clock, so
// ejob stores the host's local wall clock too and rows from Java and ejob
// hosts in one zone compare. The drivers store a UTC time's fields as
// they are.
func wall(t time.Time) time.Time {
	l := t.Local()
	return time.Date(l.Year(), l.Month(), l.Day(), l.Hour(), l.Minute(), l.Second(), l.Nanosecond(), time.UTC)
}

// unwall is the inverse of wall: stored fields read as local time.
func unwall(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	u := t.UTC()
	return time.Date(u.Year(), u.Month(), u.Day(), u.Hour(), u.Minute(), u.Second(), u.Nanosecond(), time.Local)
}
