package daemon_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ejob-io/ejob/internal/proctree"
	"github.com/ejob-io/ejob/internal/testkit"
)

// TestSecondSignalStopsAtOnce: the first SIGTERM makes the host wait for
// its running item (drainTimeout 5m); a second one cancels it at once: the
// script's process is gone and the host exits cleanly long before the drain
// timeout.
func TestSecondSignalStopsAtOnce(t *testing.T) {
	h, pid := runScriptJob(t, "exec sleep 300\n", "5m")
	h.signal(syscall.SIGTERM)
	h.waitLog("waiting for running items")
	if proctree.Gone(pid) {
		t.Fatalf("the first SIGTERM stopped the running script; it must drain:\n%s", h.logs)
	}
	h.signal(syscall.SIGTERM)
	logs := h.waitExit(60 * time.Second) // far below the 5 m drain
	testkit.Eventually(t, 10*time.Second, fmt.Sprintf("script process %d to be gone", pid), func() bool { return proctree.Gone(pid) })
	for _, want := range []string{"second signal: cancelling running items now", "shut down"} {
		if !strings.Contains(logs, want) {
			t.Errorf("host output lacks %q:\n%s", want, logs)
		}
	}
}

// runScriptJob runs `ejob run` on a config with one SCRIPT job of one item
// fired every second, whose script is body after a line recording its pid,
// with the given ejob.drainTimeout. It returns once the script runs, with
// the script's pid.
func runScriptJob(t *testing.T, body, drainTimeout string) (*host, int) {
	t.Helper()
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pid")
	script := filepath.Join(dir, "job.sh")
	prologue := "#!/bin/sh\necho $$ > " + pidFile + ".tmp && mv " + pidFile + ".tmp " + pidFile + "\n"
	if err := os.WriteFile(script, []byte(prologue+body), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "ejob.yaml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`elasticjob:
  jobs:
    job:
      elasticJobType: SCRIPT
      cron: "* * * * * ?"
      shardingTotalCount: 1
      props:
        script.command.line: %s
ejob:
  drainTimeout: %s
`, script, drainTimeout)), 0o644); err != nil {
		t.Fatal(err)
	}
	h := runHost(t, nil, "run", "-c", cfg)
	var pid int
	testkit.Eventually(t, 30*time.Second, "the script to start", func() bool {
		b, err := os.ReadFile(pidFile)
		if err != nil {
			return false
		}
		pid, err = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil
	})
	return h, pid
}
