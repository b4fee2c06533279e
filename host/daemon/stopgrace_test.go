package daemon_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ejob-io/ejob/host/daemon"
	"github.com/ejob-io/ejob/internal/transport"
	"github.com/ejob-io/ejob/spi"
)

// ejob.pluginStopGrace reaches the plugin catalog: a job-type plugin that
// ignores cancellation (host/pluginhost' test plugin, job name "ignore") is
// given up on after the configured 300 ms, not the default 10 s.
func TestPluginStopGraceFromConfig(t *testing.T) {
	dir := t.TempDir()
	pluginDir := hostTestPlugins(t)
	cfg := filepath.Join(dir, "host.yaml")
	if err := os.WriteFile(cfg, []byte(`elasticjob:
  jobs:
    ignore:
      elasticJobType: HOSTTEST_JOB
      cron: "0 0 0 1 1 ? 2099"
      shardingTotalCount: 1
ejob:
  pluginsDir: `+pluginDir+`
  pluginStopGrace: 300ms
`), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancelAll := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancelAll()
	_, cat, err := daemon.Load(ctx, daemon.Options{ConfigFile: cfg})
	if err != nil {
		t.Fatal(err)
	}
	defer cat.Close()
	exec, err := spi.Resolve[spi.JobExecutor](cat, "HOSTTEST_JOB")
	if err != nil {
		t.Fatal(err)
	}
	started := filepath.Join(dir, "started")
	cctx, cancel := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() {
		_, err := exec.Execute(cctx, spi.ExecuteRequest{
			Context: spi.ShardingContext{JobName: "ignore", ShardingTotalCount: 1},
			Props:   map[string]string{"started": started},
		})
		errc <- err
	}()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(started); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the plugin never started the execution")
		}
	}
	cancelled := time.Now()
	cancel()
	err = <-errc
	if !errors.Is(err, transport.ErrStopTimeout) {
		t.Fatalf("err = %v, want ErrStopTimeout", err)
	}
	// 300 ms of grace, then the kill (go-plugin waits up to 2 s for a
	// graceful exit); the default grace alone would be 10 s.
	if took := time.Since(cancelled); took > 5*time.Second {
		t.Fatalf("gave up after %v: the configured stop grace (300ms) was not used", took)
	}
}
