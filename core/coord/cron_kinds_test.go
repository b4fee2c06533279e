package coord_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ejob-io/ejob/core/config"
	"github.com/ejob-io/ejob/core/executor"
	"github.com/ejob-io/ejob/internal/testkit"
	"github.com/ejob-io/ejob/spi"
)

// A live config change moves a job between cron kinds: the registry's new
// cron, Quartz, descriptor or crontab, reschedules the job on the trigger
// loop, which fires it at the new kind's times (on a clock the test moves).
func TestLiveCronChangeAcrossKinds(t *testing.T) {
	cl := newEmbeddedCluster(t)
	cfg := config.New(testJob, 1)
	cfg.Cron = "0 0 0 * * ?" // Quartz, daily at midnight: not within the test
	clk := newManualClock(time.Date(2030, 1, 1, 0, 0, 0, 500_000_000, time.UTC))
	var (
		mu   sync.Mutex
		runs []time.Time // the clock at each run
	)
	runner := executor.SimpleFunc(func(context.Context, spi.ShardingContext) error {
		mu.Lock()
		defer mu.Unlock()
		runs = append(runs, clk.Now())
		return nil
	})
	snapshot := func() []time.Time {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(runs)
	}
	startOnClock(t, cl, cfg, clk, executor.NopEvents{}, runner)
	change := func(cron string) {
		t.Helper()
		c := cfg.Clone()
		c.Cron = cron
		cl.persist(jp("config"), mustMarshal(t, c))
	}

	change("@every 1s") // counts from the clock's 00:00:00.5
	clk.awaitArmed(t, at(0, 1))
	clk.advance(t, at(0, 1))
	testkit.Eventually(t, waitFor, "the descriptor's first run", func() bool { return len(snapshot()) == 1 })

	change("* * * * *") // the loop sleeps at most a minute: its timer shows the next fire
	clk.awaitArmed(t, at(1, 0))
	clk.advance(t, at(1, 0))
	testkit.Eventually(t, waitFor, "the crontab's first run", func() bool { return len(snapshot()) == 2 })
	clk.awaitArmed(t, at(2, 0))
	clk.advance(t, at(2, 0))
	testkit.Eventually(t, waitFor, "the crontab's second run", func() bool { return len(snapshot()) == 3 })
	if got, want := snapshot(), []time.Time{at(0, 1), at(1, 0), at(2, 0)}; !slices.EqualFunc(got, want, time.Time.Equal) {
		t.Errorf("runs at %v, want %v", got, want)
	}
}
