package rdb

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ejob-io/ejob/spi"
)

// TestDistinctSeeksAnIndex: each step of Distinct is a search in one of
// ejob's indexes, never a scan of the table (SQLite's plan of the query
// on the tables the sink creates).
func TestDistinctSeeksAnIndex(t *testing.T) {
	path := filepath.Join(t.TempDir(), "trace.db")
	tr := New()
	t.Cleanup(func() { _ = tr.Close() })
	if _, err := tr.Write(context.Background(), spi.TraceWriteRequest{Config: map[string]string{"driver": "sqlite", "url": path}}); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	for field, index := range map[spi.DistinctField]string{
		spi.ExecutionJobNames: "JOB_EXECUTION_LOG_JOB_START", spi.ExecutionIPs: "JOB_EXECUTION_LOG_IP",
		spi.StatusJobNames: "JOB_STATUS_TRACE_LOG_JOB_CREATION",
	} {
		table, col, ok := distinctColumn(field)
		if !ok {
			t.Fatalf("%s: no column", field)
		}
		for _, op := range []string{">=", ">"} {
			rows, err := db.Query("EXPLAIN QUERY PLAN "+distinctSeek(table, col, op), "a", "a%")
			if err != nil {
				t.Fatal(err)
			}
			var plan []string
			for rows.Next() {
				var id, parent, unused int
				var detail string
				if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
					t.Fatal(err)
				}
				plan = append(plan, detail)
			}
			rows.Close()
			text := strings.Join(plan, "; ")
			if !strings.Contains(text, "SEARCH "+table+" USING COVERING INDEX "+index) || strings.Contains(text, "SCAN "+table) {
				t.Errorf("%s (%s): plan %q, want a search in %s", field, op, text, index)
			}
		}
	}
}
