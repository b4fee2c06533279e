// Package rdb is the built-in RDB tracing sink (kind tracing, type RDB):
// upstream ElasticJob's RDBJobEventRepository in Go. It stores execution
// and status events in JOB_EXECUTION_LOG and JOB_STATUS_TRACE_LOG, with
// upstream's DDL and DML (META-INF/sql/<type>.properties), on SQLite
// (modernc.org/sqlite, no cgo; SQL92 DDL, what upstream uses on a database
// it has no dialect for), PostgreSQL (pgx) and MySQL or MariaDB
// (go-sql-driver/mysql), and answers the history queries over the same
// tables. A table created by ElasticJob 3.0.0–3.0.4 (with the source
// column) is detected and written with source LITE_EXECUTOR.
package rdb
