package pluginhost_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ejob-io/ejob/host/pluginhost"
	"github.com/ejob-io/ejob/internal/proctree"
	"github.com/ejob-io/ejob/internal/testkit"
	"github.com/ejob-io/ejob/internal/transport"
	"github.com/ejob-io/ejob/spi"
)

// TestStopTimeoutKillsAndRelaunches: a plugin that ignores cancellation
// fails the Execute with ErrStopTimeout after the stop grace; the
// supervisor has killed its process by then, and the process it had
// started in its own process group (as SCRIPT does), logged it at ERROR
// naming the job and item, and the next call relaunches the plugin.
func TestStopTimeoutKillsAndRelaunches(t *testing.T) {
	dir := t.TempDir()
	install(t, dir, testBins.hosttest, "ejob-hosttest", 0o755)
	const grace = 300 * time.Millisecond
	cat, logs := open(t, dir, func(c *pluginhost.Config) { c.StopGrace = grace })
	pid, err := poolPid(t, cat, "normal")
	if err != nil {
		t.Fatal(err)
	}
	exec, err := spi.Resolve[spi.JobExecutor](cat, "hosttest_job")
	if err != nil {
		t.Fatal(err)
	}
	started := filepath.Join(t.TempDir(), "started")
	childFile := filepath.Join(t.TempDir(), "child")
	ctx, cancel := context.WithCancel(ctxT(t, 30*time.Second))
	errc := make(chan error, 1)
	go func() {
		_, err := exec.Execute(ctx, spi.ExecuteRequest{
			Context: spi.ShardingContext{JobName: "ignore", ShardingItem: 7},
			Props:   map[string]string{"started": started, "child": childFile},
		})
		errc <- err
	}()
	testkit.Eventually(t, 20*time.Second, "Execute to start in the plugin", func() bool { _, err := os.Stat(started); return err == nil })
	b, err := os.ReadFile(childFile)
	if err != nil {
		t.Fatal(err)
	}
	child, err := strconv.Atoi(string(b))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(child, syscall.SIGKILL) })
	cancel()
	err = <-errc
	if !errors.Is(err, transport.ErrStopTimeout) || !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want ErrStopTimeout and context.Canceled", err)
	}
	if !proctree.Gone(pid) {
		t.Errorf("plugin process %d still runs after Execute returned", pid)
	}
	// The kill of the child's group is sent before Execute returns; its
	// exit (and the reaping by init) follows.
	testkit.Eventually(t, 20*time.Second, "the stuck plugin's child process to be gone", func() bool { return proctree.Gone(child) })
	log := logs.String()
	for _, want := range []string{"[ERROR]", "did not stop a cancelled execution", "job=ignore", "item=7", "plugin=ejob-hosttest", "pid=" + strconv.Itoa(pid)} {
		if !strings.Contains(log, want) {
			t.Errorf("log lacks %q:\n%s", want, log)
		}
	}
	again, err := poolPid(t, cat, "normal")
	if err != nil {
		t.Fatalf("call after the kill: %v", err)
	}
	if again == pid {
		t.Fatal("not relaunched")
	}
}

// TestScriptStopsBeforeExecuteReturns runs the built-in SCRIPT type out of
// process: cancelling an item whose script traps SIGTERM and takes 300 ms
// to exit returns only once the script is gone.
func TestScriptStopsBeforeExecuteReturns(t *testing.T) {
	cat, _ := open(t, t.TempDir(), func(c *pluginhost.Config) {
		c.Builtin.Types = append(c.Builtin.Types, spi.TypeKey{Kind: spi.KindJobType, Type: "SCRIPT"})
	})
	exec, err := spi.Resolve[spi.JobExecutor](cat, "SCRIPT")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	pidFile, stopped := filepath.Join(dir, "pid"), filepath.Join(dir, "stopped")
	sh := filepath.Join(dir, "trap.sh")
	body := fmt.Sprintf(`#!/bin/sh
trap 'sleep 0.3; touch %q; exit 0' TERM
echo $$ > %q.tmp && mv %q.tmp %q
while :; do sleep 0.05; done
`, stopped, pidFile, pidFile, pidFile)
	if err := os.WriteFile(sh, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(ctxT(t, 30*time.Second))
	errc := make(chan error, 1)
	go func() {
		_, err := exec.Execute(ctx, spi.ExecuteRequest{
			Context: spi.ShardingContext{JobName: "trap", ShardingTotalCount: 1},
			Props:   map[string]string{"script.command.line": sh},
		})
		errc <- err
	}()
	var pid int
	testkit.Eventually(t, 20*time.Second, "the script to start", func() bool {
		b, err := os.ReadFile(pidFile)
		if err != nil {
			return false
		}
		pid, err = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil
	})
	cancelled := time.Now()
	cancel()
	err = <-errc
	took := time.Since(cancelled)
	if !proctree.Gone(pid) {
		t.Errorf("script %d still runs after Execute returned", pid)
	}
	if _, serr := os.Stat(stopped); serr != nil {
		t.Errorf("Execute returned before the script's SIGTERM trap finished: %v", serr)
	}
	if took < 300*time.Millisecond {
		t.Errorf("returned %v after cancel, before the script's 300 ms stop", took)
	}
	if !errors.Is(err, context.Canceled) || errors.Is(err, transport.ErrStopTimeout) || errors.Is(err, spi.ErrPluginExited) {
		t.Errorf("err = %v, want context.Canceled only", err)
	}
}
