package scheduler_test

import (
	"context"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ejob-io/ejob/core/config"
	"github.com/ejob-io/ejob/core/executor"
	"github.com/ejob-io/ejob/core/reg/embedded"
	"github.com/ejob-io/ejob/core/scheduler"
	"github.com/ejob-io/ejob/spi"
)

// The trigger loop advances a busy job's next fire time (the missed fire
// becomes a misfire), so a healthy job, even one held by a long execution,
// is never reported late; LateJobs answers without error.
func TestLateJobsHealthyJobNotLate(t *testing.T) {
	srv := embedded.NewServer()
	client, err := srv.Connect("watchdog")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	s, err := scheduler.New(scheduler.Options{
		Client: client, InstanceID: "127.0.0.1@-@1", ServerIP: "127.0.0.1", Plugins: plugins(),
		Logger: hclog.NewNullLogger(), DrainTimeout: time.Second,
		LateThreshold: 300 * time.Millisecond, WatchdogInterval: 100 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	cfg := config.New("late_job", 1)
	cfg.Cron = "* * * * * ?"
	started := make(chan struct{}, 1)
	release := make(chan struct{})
	runner := func(ctx context.Context, sc spi.ShardingContext) error {
		select {
		case started <- struct{}{}:
		default:
		}
		select {
		case <-release:
		case <-ctx.Done():
		}
		return nil
	}
	if err := s.Add(context.Background(), scheduler.Job{Config: cfg, Runner: executor.SimpleFunc(runner)}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	defer func() {
		close(release)
		cancel()
		<-done
	}()
	<-started
	qctx, qcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer qcancel()
	for range 3 {
		late, err := s.LateJobs(qctx, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(late) != 0 {
			t.Fatalf("healthy job reported late: %+v", late)
		}
	}
}
