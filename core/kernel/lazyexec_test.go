package kernel_test

import (
	"context"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ejob-io/ejob/core/config"
	"github.com/ejob-io/ejob/core/executor"
	"github.com/ejob-io/ejob/core/kernel"
	"github.com/ejob-io/ejob/core/reg/embedded"
	"github.com/ejob-io/ejob/spi"
)

// TestIdleJobHasNoExecutor: an idle job holds no execution pipeline: Add
// and its start make none, LiveOutput answers "not running" without one,
// and the job's first fire makes it and runs the items.
func TestIdleJobHasNoExecutor(t *testing.T) {
	c, err := embedded.NewServer().Connect("lazy-exec")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	s, err := kernel.New(kernel.Options{Client: c, InstanceID: "10.0.9.1@-@1", ServerIP: "10.0.9.1",
		Plugins: plugins(), Logger: hclog.NewNullLogger()})
	if err != nil {
		t.Fatal(err)
	}
	ran := make(chan struct{}, 1)
	cfg := config.New("lazy", 1)
	cfg.Cron = "0 0 0 1 1 ? 2099"
	job := kernel.Job{Config: cfg, Runner: executor.SimpleFunc(func(context.Context, spi.ShardingContext) error {
		select {
		case ran <- struct{}{}:
		default:
		}
		return nil
	})}
	if err := s.Add(context.Background(), job); err != nil {
		t.Fatal(err)
	}
	ctx := runKernel(t, s)
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := s.Ready(rctx); err != nil {
		t.Fatal(err)
	}
	if s.HasExecutor("lazy") {
		t.Fatal("a started job that has not fired holds an executor")
	}
	if _, running, err := s.LiveOutput(ctx, "lazy", 0); err != nil || running {
		t.Fatalf("LiveOutput of an idle job: running %v, %v", running, err)
	}
	if s.HasExecutor("lazy") {
		t.Fatal("LiveOutput made the executor")
	}
	if err := s.Trigger("lazy"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ran:
	case <-time.After(30 * time.Second):
		t.Fatal("the triggered job did not run")
	}
	if !s.HasExecutor("lazy") {
		t.Fatal("the job ran without its executor kept")
	}
}
