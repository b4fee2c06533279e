package fence

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"time"

	_ "modernc.org/sqlite" // registers database/sql driver "sqlite"
)

// busyTimeout is how long a writer waits for another process's
// transaction (every running item writes to one file).
const busyTimeout = 30 * time.Second

const schema = `
CREATE TABLE IF NOT EXISTS fence (
	job   TEXT    NOT NULL,
	item  INTEGER NOT NULL,
	token INTEGER NOT NULL,
	PRIMARY KEY (job, item)
);
CREATE TABLE IF NOT EXISTS writes (
	seq       INTEGER PRIMARY KEY AUTOINCREMENT,
	job       TEXT    NOT NULL,
	item      INTEGER NOT NULL,
	token     INTEGER,
	run       TEXT    NOT NULL,
	run_start INTEGER NOT NULL,
	at        INTEGER NOT NULL,
	accepted  INTEGER NOT NULL
);`

// Store is a fenced store in one SQLite file, safe for concurrent use by
// several goroutines and processes.
type Store struct {
	db *sql.DB
}

// Open opens (creating if needed) the store in the file path.
func Open(ctx context.Context, path string) (*Store, error) {
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", busyTimeout.Milliseconds()))
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(FULL)")
	q.Add("_txlock", "immediate")
	db, err := sql.Open("sqlite", "file:"+path+"?"+q.Encode())
	if err != nil {
		return nil, fmt.Errorf("fence: open %s: %w", path, err)
	}
	db.SetMaxOpenConns(1)
	if _, err := db.ExecContext(ctx, schema); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("fence: create the tables in %s: %w", path, err)
	}
	return &Store{db: db}, nil
}

// Close closes the store.
func (s *Store) Close() error { return s.db.Close() }

// Write is one side effect of one run of one item.
type Write struct {
	Job   string
	Item  int
	Token int64 // the run's fencing token; meaningful only when Fenced
	// Fenced says the run has a token. An unfenced write is always
	// accepted and logged with no token.
	Fenced bool
	// Run names the run (the recorder's pid); RunStart is when it started
	// (the recorder process's creation), which orders the runs of an item
	// independently of their tokens.
	Run      string
	RunStart time.Time
	At       time.Time
}

// Put applies w: a fenced write is accepted when its token is at least
// the highest accepted so far for its job and item (an equal token is the
// same run writing again), else rejected; either way it is logged.
// accepted reports which.
func (s *Store) Put(ctx context.Context, w Write) (accepted bool, err error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return false, fmt.Errorf("fence: begin: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	accepted = true
	var token any // NULL for an unfenced write
	if w.Fenced {
		token = w.Token
		res, err := tx.ExecContext(ctx, `INSERT INTO fence (job, item, token) VALUES (?, ?, ?)
			ON CONFLICT (job, item) DO UPDATE SET token = excluded.token WHERE excluded.token >= fence.token`,
			w.Job, w.Item, w.Token)
		if err != nil {
			return false, fmt.Errorf("fence: %s/%d token %d: %w", w.Job, w.Item, w.Token, err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return false, fmt.Errorf("fence: %s/%d token %d: %w", w.Job, w.Item, w.Token, err)
		}
		accepted = n == 1
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO writes (job, item, token, run, run_start, at, accepted) VALUES (?, ?, ?, ?, ?, ?, ?)`,
		w.Job, w.Item, token, w.Run, w.RunStart.UnixNano(), w.At.UnixNano(), accepted); err != nil {
		return false, fmt.Errorf("fence: log the write of %s/%d: %w", w.Job, w.Item, err)
	}
	if err := tx.Commit(); err != nil {
		return false, fmt.Errorf("fence: commit %s/%d: %w", w.Job, w.Item, err)
	}
	return accepted, nil
}

// Token is the highest token accepted for job's item (ok false: none).
func (s *Store) Token(ctx context.Context, job string, item int) (token int64, ok bool, err error) {
	err = s.db.QueryRowContext(ctx, `SELECT token FROM fence WHERE job = ? AND item = ?`, job, item).Scan(&token)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("fence: read the token of %s/%d: %w", job, item, err)
	}
	return token, true, nil
}

// Logged is one logged write, in commit order.
type Logged struct {
	Write
	Seq      int64
	Accepted bool
}

// Log returns every write attempt, in the order they committed.
func (s *Store) Log(ctx context.Context) ([]Logged, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT seq, job, item, token, run, run_start, at, accepted FROM writes ORDER BY seq`)
	if err != nil {
		return nil, fmt.Errorf("fence: read the log: %w", err)
	}
	defer rows.Close()
	var out []Logged
	for rows.Next() {
		var l Logged
		var token sql.NullInt64
		var start, at int64
		if err := rows.Scan(&l.Seq, &l.Job, &l.Item, &token, &l.Run, &start, &at, &l.Accepted); err != nil {
			return nil, fmt.Errorf("fence: read the log: %w", err)
		}
		l.Token, l.Fenced = token.Int64, token.Valid
		l.RunStart, l.At = time.Unix(0, start), time.Unix(0, at)
		out = append(out, l)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("fence: read the log: %w", err)
	}
	return out, nil
}

// Tally counts a log's writes. A write is stale when an earlier-committed
// write of the same job and item came from a run that started later: the
// item had moved on to a newer run before it landed.
type Tally struct {
	Writes, Unfenced int
	// StaleRejected must occur under pause faults once jobs have tokens;
	// StaleAccepted must be 0: a fence that accepts one is broken.
	StaleRejected, StaleAccepted int
	// FreshRejected counts writes rejected although no later run had
	// written: tokens out of the runs' order.
	FreshRejected int
}

// Count tallies log (in commit order). Unfenced writes are counted
// only as such: without a token nothing is fenced.
func Count(log []Logged) Tally {
	type key struct {
		job  string
		item int
	}
	latest := map[key]time.Time{} // the latest run start among the committed writes
	var t Tally
	for _, l := range log {
		t.Writes++
		k := key{l.Job, l.Item}
		newest, seen := latest[k]
		stale := seen && newest.After(l.RunStart)
		if !seen || l.RunStart.After(newest) {
			latest[k] = l.RunStart
		}
		switch {
		case !l.Fenced:
			t.Unfenced++
		case stale && l.Accepted:
			t.StaleAccepted++
		case stale:
			t.StaleRejected++
		case !l.Accepted:
			t.FreshRejected++
		}
	}
	return t
}
