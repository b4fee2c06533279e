package ejob_test

import (
	"context"
	"database/sql"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver

	"github.com/ejob-io/ejob"
	"github.com/ejob-io/ejob/internal/dbtest"
	"github.com/ejob-io/ejob/internal/testkit"
)

// fencedWriteSQL returns the statements of the PostgreSQL example in
// docs/jobtypes.md ("Fencing a store's writes"): the table, then the
// conditional write.
func fencedWriteSQL(t *testing.T) (create, write string) {
	t.Helper()
	doc, err := os.ReadFile("docs/jobtypes.md")
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(doc), "\n## Fencing a store's writes\n")
	if !ok {
		t.Fatal("docs/jobtypes.md has no section \"Fencing a store's writes\"")
	}
	_, block, ok := strings.Cut(sec, "```sql\n")
	block, _, ok2 := strings.Cut(block, "```")
	if !ok || !ok2 {
		t.Fatal("the section has no sql block")
	}
	stmts := strings.Split(strings.TrimSpace(block), ";\n")
	if len(stmts) != 2 {
		t.Fatalf("the sql block has %d statements, want the table and the write:\n%s", len(stmts), block)
	}
	return stmts[0], strings.TrimSuffix(stmts[1], ";")
}

// TestFencedWriteRejectsAStaleRun runs the example of docs/jobtypes.md
// against a real PostgreSQL with the fencing tokens of two real runs of
// an item: the older run's write, landing after the newer run's (as a
// paused host's would), is rejected; the newer run may write again.
func TestFencedWriteRejectsAStaleRun(t *testing.T) {
	create, write := fencedWriteSQL(t)
	pg := dbtest.Start(t, dbtest.Postgres)
	db, err := sql.Open("pgx", pg.DSN())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := db.ExecContext(ctx, create); err != nil {
		t.Fatalf("the example's table: %v", err)
	}
	apply := func(item int, balance, token int64) int64 {
		t.Helper()
		res, err := db.ExecContext(ctx, write, "billing", item, balance, token)
		if err != nil {
			t.Fatalf("the example's write: %v", err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			t.Fatal(err)
		}
		return n
	}

	s := newScheduler(t)
	var mu sync.Mutex
	var stale func() int64 // the first run's write, held back
	var tokens []int64
	written := make(chan int64, 4)
	err = s.Simple(ctxOf(t), ejob.NewJobConfig("billing", 1), func(_ context.Context, sc ejob.ShardingContext) error {
		mu.Lock()
		defer mu.Unlock()
		tokens = append(tokens, sc.FencingToken)
		balance := int64(100 * len(tokens))
		if len(tokens) == 1 {
			stale = func() int64 { return apply(sc.ShardingItem, balance, sc.FencingToken) }
			return nil
		}
		written <- apply(sc.ShardingItem, balance, sc.FencingToken)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	for _, run := range []string{"first", "second"} {
		before := len(written)
		if err := s.Execute(ctx, "billing"); err != nil {
			t.Fatal(err)
		}
		testkit.Eventually(t, 20*time.Second, "the "+run+" run", func() bool {
			mu.Lock()
			defer mu.Unlock()
			return (run == "first" && stale != nil) || (run == "second" && len(written) > before)
		})
	}
	if n := <-written; n != 1 {
		t.Fatalf("the newer run's write affected %d rows, want 1", n)
	}
	mu.Lock()
	old, newer := tokens[0], tokens[1]
	mu.Unlock()
	if old <= 0 || newer <= old {
		t.Fatalf("tokens of the two runs %d, %d: want increasing", old, newer)
	}
	if n := stale(); n != 0 {
		t.Errorf("the stale run's write (token %d after %d) affected %d rows, want 0 (rejected)", old, newer, n)
	}
	var balance, token int64
	if err := db.QueryRowContext(ctx, "SELECT balance, fencing_token FROM item_balance WHERE job_name = 'billing' AND item = 0").Scan(&balance, &token); err != nil {
		t.Fatal(err)
	}
	if balance != 200 || token != newer {
		t.Errorf("row = balance %d, token %d; want the newer run's 200, %d", balance, token, newer)
	}
	if n := apply(0, 250, newer); n != 1 {
		t.Errorf("the newer run's second write affected %d rows, want 1", n)
	}
	if err := s.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
}
