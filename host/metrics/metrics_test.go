package metrics_test

import (
	"context"
	"errors"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ejob-io/ejob/core/config"
	"github.com/ejob-io/ejob/core/executor"
	"github.com/ejob-io/ejob/core/kernel"
	"github.com/ejob-io/ejob/core/reg/embedded"
	"github.com/ejob-io/ejob/host/metrics"
	"github.com/ejob-io/ejob/internal/testkit"
	"github.com/ejob-io/ejob/plugins/builtin"
	"github.com/ejob-io/ejob/spi"
)

func TestMain(m *testing.M) { testkit.Main(m) }

// instance is one scheduler with its own metrics.
type instance struct {
	mx     *metrics.Metrics
	cancel context.CancelFunc
	done   chan error
}

func start(t *testing.T, srv *embedded.Server, id string, cfg *config.JobConfiguration, run executor.SimpleFunc) (*instance, func() error) {
	t.Helper()
	c, err := srv.Connect("metrics")
	if err != nil {
		t.Fatal(err)
	}
	mx := metrics.New()
	s, err := kernel.New(kernel.Options{Client: c, InstanceID: id, ServerIP: strings.Split(id, "@")[0],
		Plugins: builtin.New(builtin.Options{Logger: hclog.NewNullLogger()}), Logger: hclog.NewNullLogger(),
		DrainTimeout: time.Second, Events: mx.Jobs(), Observer: mx.Jobs()})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Add(context.Background(), kernel.Job{Config: cfg.Clone(), Runner: run}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	in := &instance{mx: mx, cancel: cancel, done: make(chan error, 1)}
	go func() { in.done <- s.Run(ctx) }()
	rctx, rcancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer rcancel()
	if err := s.Ready(rctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); <-in.done; _ = c.Close() })
	return in, c.Close
}

func scrape(t *testing.T, mx *metrics.Metrics) string {
	t.Helper()
	rec := httptest.NewRecorder()
	mx.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	b, _ := io.ReadAll(rec.Body)
	return string(b)
}

// TestScrapeAfterFailureAndFailover: instance A runs both items of a
// job: item 1 fails, item 0 hangs; A dies; B takes item 0 over. A's
// scrape shows the fire, the failed item and its duration; B's the
// failover, with the documented names and labels.
func TestScrapeAfterFailureAndFailover(t *testing.T) {
	srv := embedded.NewServer()
	cfg := config.New("m", 2)
	cfg.Cron = "* * * * * ?"
	cfg.Failover = true
	cfg.MonitorExecution = true
	hang := make(chan struct{})
	defer close(hang)
	a, killA := start(t, srv, "10.0.0.1@-@1", cfg, func(ctx context.Context, sc spi.ShardingContext) error {
		if sc.ShardingItem == 1 {
			return errors.New("item 1 fails")
		}
		select {
		case <-hang:
		case <-ctx.Done():
		}
		return nil
	})
	testkit.Eventually(t, 20*time.Second, "A's failed item in its scrape", func() bool {
		return strings.Contains(scrape(t, a.mx), `ejob_job_items_total{job="m",result="failure"}`)
	})
	b, _ := start(t, srv, "10.0.0.2@-@2", cfg, func(context.Context, spi.ShardingContext) error { return nil })
	if err := killA(); err != nil {
		t.Fatal(err)
	}
	// The failover counts when B claims the item, its run when it ends
	// (after A's running node is gone): wait for both.
	testkit.Eventually(t, 30*time.Second, "B's failover and its run in its scrape", func() bool {
		bm := scrape(t, b.mx)
		return strings.Contains(bm, `ejob_job_failovers_total{job="m"} `) &&
			strings.Contains(bm, `ejob_job_items_total{job="m",result="success"} `)
	})
	am, bm := scrape(t, a.mx), scrape(t, b.mx)
	for _, want := range []string{
		`ejob_job_fires_total{job="m"} `,
		`ejob_job_fire_delay_seconds_count{job="m"} `,
		`ejob_job_item_duration_seconds_count{job="m"} `,
		`ejob_job_items_total{job="m",result="failure"} `,
	} {
		if !strings.Contains(am, want) {
			t.Errorf("A's scrape has no %s", want)
		}
	}
	for _, want := range []string{`ejob_job_items_total{job="m",result="success"} `, `ejob_job_fires_total{job="m"} `} {
		if !strings.Contains(bm, want) {
			t.Errorf("B's scrape has no %s", want)
		}
	}
}
