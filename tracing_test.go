package ejob_test

import (
	"context"
	"errors"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ejob-io/ejob"
	"github.com/ejob-io/ejob/internal/testkit"
	"github.com/ejob-io/ejob/plugins/tracing/rdb"
	"github.com/ejob-io/ejob/spi"
)

// TestLibraryTracing: WithTracing records a Go job's items into SQLite and
// Shutdown flushes them; a bad tracing setup fails NewScheduler.
func TestLibraryTracing(t *testing.T) {
	reg, err := ejob.EmbeddedRegistry("lib-tracing")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { reg.Close() })
	dbCfg := map[string]string{"driver": "sqlite", "url": filepath.Join(t.TempDir(), "history.db")}
	for name, bad := range map[string]ejob.Tracing{
		"both lists":     {Type: "RDB", Config: dbCfg, Include: []string{"a"}, Exclude: []string{"b"}},
		"unknown driver": {Type: "RDB", Config: map[string]string{"driver": "db2", "url": "x"}},
		"unknown type":   {Type: "MONGO", Config: dbCfg},
	} {
		if _, err := ejob.NewScheduler(reg, ejob.WithTracing(bad)); err == nil {
			t.Errorf("%s: NewScheduler accepted the tracing setup", name)
		}
	}
	s, err := ejob.NewScheduler(reg, ejob.WithDrainTimeout(5*time.Second), ejob.WithTracing(ejob.Tracing{Type: "rdb", Config: dbCfg}))
	if err != nil {
		t.Fatal(err)
	}
	var runs atomic.Int32
	cfg := ejob.NewJobConfig("traced", 2)
	if err := s.Simple(ctxOf(t), cfg, func(_ context.Context, sc ejob.ShardingContext) error {
		runs.Add(1)
		if sc.ShardingItem == 1 {
			return errors.New("item one failed")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := s.Execute(context.Background(), "traced"); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 20*time.Second, "both items run", func() bool { return runs.Load() == 2 })
	if err := s.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	tr := rdb.New()
	defer tr.Close()
	p, err := tr.QueryExecutions(context.Background(), spi.ExecutionQuery{Config: dbCfg, JobName: "traced"})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Executions) != 2 {
		t.Fatalf("rows %+v", p.Executions)
	}
	for _, e := range p.Executions {
		if e.CompleteTime.IsZero() || e.Success != (e.ShardingItem == 0) {
			t.Errorf("row %+v", e)
		}
	}
}
