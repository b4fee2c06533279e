package kernel_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ejob-io/ejob/core/config"
	"github.com/ejob-io/ejob/core/executor"
	"github.com/ejob-io/ejob/core/kernel"
	"github.com/ejob-io/ejob/core/reg/embedded"
	"github.com/ejob-io/ejob/core/trigger"
	"github.com/ejob-io/ejob/internal/proctest"
	"github.com/ejob-io/ejob/spi"
)

// runWatchdogJob runs a scheduler on an embedded registry, its options
// adjusted by mod, with one job (cfg, runner) until the test ends.
func runWatchdogJob(t *testing.T, mod func(*kernel.Options), cfg *config.JobConfiguration,
	runner func(context.Context, spi.ShardingContext) error) *kernel.Kernel {
	t.Helper()
	client, err := embedded.NewServer().Connect("watchdog")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	opts := kernel.Options{
		Client: client, InstanceID: "127.0.0.1@-@1", ServerIP: "127.0.0.1", Plugins: plugins(),
		Logger: hclog.NewNullLogger(), DrainTimeout: time.Second,
	}
	mod(&opts)
	s, err := kernel.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Add(context.Background(), kernel.Job{Config: cfg, Runner: executor.SimpleFunc(runner)}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return s
}

// The trigger loop advances a busy job's next fire time (the missed fire
// becomes a misfire), so a healthy job, even one held by a long execution,
// is never reported late; LateJobs answers without error.
func TestLateJobsHealthyJobNotLate(t *testing.T) {
	cfg := config.New("late_job", 1)
	cfg.Cron = "* * * * * ?"
	started := make(chan struct{}, 1)
	release := make(chan struct{})
	defer close(release) // before the scheduler stops (t.Cleanup)
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
	s := runWatchdogJob(t, func(o *kernel.Options) {
		o.LateThreshold, o.WatchdogInterval = 300*time.Millisecond, 100*time.Millisecond
	}, cfg, runner)
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

// stalledClock is the wall clock, but its timers never fire: the trigger
// loop does not wake up for a job's next fire time, as a loop that stopped
// firing (the case the watchdog exists for).
type stalledClock struct{}

func (stalledClock) Now() time.Time { return time.Now() }
func (stalledClock) NewTimer(time.Duration) trigger.Timer {
	return &stalledTimer{c: make(chan time.Time)}
}

type stalledTimer struct{ c chan time.Time }

func (t *stalledTimer) C() <-chan time.Time      { return t.c }
func (t *stalledTimer) Stop() bool               { return true }
func (t *stalledTimer) Reset(time.Duration) bool { return true }

// A job whose next fire time passes without the trigger loop firing it is
// logged at WARN by the watchdog, with the job's name and how late it is.
// (The watchdog's own query wakes the loop, which then fires the job: the
// report comes once per stall.)
func TestWatchdogReportsJobThatDoesNotFire(t *testing.T) {
	var logs proctest.Buffer
	cfg := config.New("stuck_job", 1)
	cfg.Cron = "* * * * * ?"
	runWatchdogJob(t, func(o *kernel.Options) {
		o.Logger = hclog.New(&hclog.LoggerOptions{Output: &logs, Level: hclog.Warn})
		o.LateThreshold, o.WatchdogInterval = 300*time.Millisecond, 1500*time.Millisecond
		o.Clock = stalledClock{}
	}, cfg, func(context.Context, spi.ShardingContext) error { return nil })
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(logs.String(), "job is late") && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if out := logs.String(); !strings.Contains(out, "job is late") || !strings.Contains(out, "job=stuck_job") {
		t.Fatalf("watchdog log has no WARN naming the late job:\n%s", out)
	}
}
