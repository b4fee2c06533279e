// Package dbtest starts real PostgreSQL and MariaDB servers for tests
// through the project's scripts/db.sh (which installs the Debian packages
// when they are missing): Start for one server per test, Launch for one
// server shared by a test binary (from TestMain), NewDatabase for a fresh
// database per test on a shared server. Servers can be stopped, killed and
// started again on the same port and data. Nothing is skipped: if a server
// cannot be installed or started the test fails with the script's reason.
package dbtest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/ejob-io/ejob/internal/testkit"
)

// Kind is a database server.
type Kind string

// The servers db.sh starts.
const (
	Postgres Kind = "pg"
	MariaDB  Kind = "mariadb"
)

// Server is a running database server.
type Server struct {
	kind   Kind
	script string
	dir    string

	mu  sync.Mutex
	dsn string
}

// Start starts a server of kind for t and stops it (removing its data)
// when t ends.
func Start(t testing.TB, kind Kind) *Server {
	t.Helper()
	s, err := Launch(kind)
	if err != nil {
		t.Fatalf("dbtest: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// Launch starts a server of kind in a fresh directory; Close stops it and
// removes the directory.
func Launch(kind Kind) (*Server, error) {
	script, err := findScript()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "ejob-"+string(kind)+"-")
	if err != nil {
		return nil, fmt.Errorf("temp dir: %w", err)
	}
	// PostgreSQL runs as the postgres user, which must reach the directory.
	if err := os.Chmod(dir, 0o755); err != nil {
		return nil, err
	}
	s := &Server{kind: kind, script: script, dir: dir}
	if err := s.StartAgain(); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	return s, nil
}

func findScript() (string, error) { return testkit.Script("db.sh", "EJOB_DB_SCRIPT") }

func (s *Server) run(args ...string) (string, error) { return testkit.RunScript(s.script, args...) }

// Kind returns the server's kind.
func (s *Server) Kind() Kind { return s.kind }

// DSN returns the Go DSN of the server's database "ejob".
func (s *Server) DSN() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dsn
}

// Driver returns the RDB tracer's driver name for the server.
func (s *Server) Driver() string {
	if s.kind == Postgres {
		return "postgres"
	}
	return "mysql"
}

// Stop stops the server (fast shutdown: clients are disconnected).
func (s *Server) Stop() error {
	_, err := s.run("stop", s.dir)
	return err
}

// Kill stops the server with SIGKILL.
func (s *Server) Kill() error {
	_, err := s.run("kill", s.dir)
	return err
}

// StartAgain starts a stopped server on the same port and data.
func (s *Server) StartAgain() error {
	out, err := s.run("start", string(s.kind), s.dir)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.dsn = out
	s.mu.Unlock()
	return nil
}

// Close stops the server and removes its directory.
func (s *Server) Close() error {
	err := s.Stop()
	return errors.Join(err, os.RemoveAll(s.dir))
}

// Open opens dsn (one of the server's) with database/sql.
func (s *Server) Open(dsn string) (*sql.DB, error) {
	if s.kind == Postgres {
		cfg, err := pgx.ParseConfig(dsn)
		if err != nil {
			return nil, err
		}
		return stdlib.OpenDB(*cfg), nil
	}
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return nil, err
	}
	c, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, err
	}
	return sql.OpenDB(c), nil
}

// NewDatabase creates an empty database on the server for t and returns
// its DSN; the database is dropped when t ends.
func (s *Server) NewDatabase(t testing.TB) string {
	t.Helper()
	name := "t_" + strings.ToLower(rand.Text()[:12])
	db, err := s.Open(s.DSN())
	if err != nil {
		t.Fatalf("dbtest: open %s: %v", s.kind, err)
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := db.ExecContext(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("dbtest: create database: %v", err)
	}
	dsn := s.DSN()
	if s.kind == Postgres {
		dsn = strings.Replace(dsn, "/ejob?", "/"+name+"?", 1)
	} else {
		dsn = strings.TrimSuffix(dsn, "/ejob") + "/" + name
	}
	t.Cleanup(func() {
		db, err := s.Open(s.DSN())
		if err != nil {
			return
		}
		defer db.Close()
		drop := "DROP DATABASE IF EXISTS " + name
		if s.kind == Postgres {
			drop += " WITH (FORCE)"
		}
		_, _ = db.Exec(drop)
	})
	return dsn
}
