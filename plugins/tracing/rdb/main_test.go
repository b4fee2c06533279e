package rdb_test

import (
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/ejob-io/ejob/internal/dbtest"
)

// servers are the PostgreSQL and MariaDB servers the test binary shares;
// each test gets its own database on them.
type servers struct {
	pg, maria *dbtest.Server
}

// shared is set once by TestMain before any test runs and only read after.
var shared servers

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	pg, err := dbtest.Launch(dbtest.Postgres)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer pg.Close()
	maria, err := dbtest.Launch(dbtest.MariaDB)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer maria.Close()
	shared = servers{pg: pg, maria: maria}
	return m.Run()
}

// backend is one database kind the same tests run on.
type backend struct {
	name string
	// fresh returns the tracer config of an empty database and a raw
	// connection to it.
	fresh func(t *testing.T) (map[string]string, *sql.DB)
	// enforcesLength: the database refuses a value longer than its
	// column (SQLite does not).
	enforcesLength bool
}

func backends() []backend {
	server := func(s *dbtest.Server) func(t *testing.T) (map[string]string, *sql.DB) {
		return func(t *testing.T) (map[string]string, *sql.DB) {
			dsn := s.NewDatabase(t)
			db, err := s.Open(dsn)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Close() })
			return map[string]string{"driver": s.Driver(), "url": dsn}, db
		}
	}
	return []backend{
		{name: "SQLite", fresh: func(t *testing.T) (map[string]string, *sql.DB) {
			path := filepath.Join(t.TempDir(), "trace.db")
			db, err := sql.Open("sqlite", path)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Close() })
			return map[string]string{"driver": "sqlite", "url": path}, db
		}},
		{name: "PostgreSQL", fresh: server(shared.pg), enforcesLength: true},
		{name: "MariaDB", fresh: server(shared.maria), enforcesLength: true},
	}
}

// forEach runs f as a parallel-free subtest per backend.
func forEach(t *testing.T, f func(t *testing.T, b backend)) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) { f(t, b) })
	}
}
