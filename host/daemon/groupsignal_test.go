//go:build unix

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

// hostProcAttr starts a test's host in a process group of its own, as a
// service manager does, so that a signal to its group does not reach the
// test.
func hostProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

// TestGroupSIGTERMDrains stops a real `ejob run` with a running SCRIPT item
// the ways service managers do, and checks that each drains exactly like a
// SIGTERM to the host alone: the item runs to its end (well within
// drainTimeout) and succeeds, and the host exits cleanly.
//
//   - process group: `kill -- -PGID`, `timeout`, a terminal's Ctrl-C
//     signal the host's process group (plugins and scripts lead groups of
//     their own);
//   - control group: systemd's default KillMode=control-group sends
//     SIGTERM to every process of the unit: the host, its plugin processes
//     and the script (which traps it and goes on, as a script that must
//     finish its work does).
func TestGroupSIGTERMDrains(t *testing.T) {
	for _, mode := range []string{"process group", "control group"} {
		t.Run(mode, func(t *testing.T) {
			dir := t.TempDir()
			pidFile, done := filepath.Join(dir, "pid"), filepath.Join(dir, "done")
			script := filepath.Join(dir, "work.sh")
			// About 3 s of work in short steps; a SIGTERM ends only the
			// current step's sleep.
			if err := os.WriteFile(script, []byte(`#!/bin/sh
trap 'echo "work.sh: SIGTERM received, finishing" >&2' TERM
echo $$ > `+pidFile+`.tmp && mv `+pidFile+`.tmp `+pidFile+`
i=0
while [ $i -lt 30 ]; do sleep 0.1; i=$((i+1)); done
echo finished > `+done+`
`), 0o755); err != nil {
				t.Fatal(err)
			}
			cfg := filepath.Join(dir, "ejob.yaml")
			if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`elasticjob:
  jobs:
    work:
      elasticJobType: SCRIPT
      cron: "0/1 * * * * ?"
      shardingTotalCount: 1
      props:
        script.command.line: %s
ejob:
  drainTimeout: 1m
`, script)), 0o644); err != nil {
				t.Fatal(err)
			}
			h := runHost(t, nil, "run", "-c", cfg)
			testkit.Eventually(t, 30*time.Second, "the script to start", func() bool {
				_, err := os.Stat(pidFile)
				return err == nil
			})
			host := h.cmd.Process.Pid
			switch mode {
			case "process group":
				if err := syscall.Kill(-host, syscall.SIGTERM); err != nil {
					t.Fatal(err)
				}
			case "control group":
				all := append(proctree.Descendants(host), proctree.Proc{PID: host})
				if len(all) < 3 {
					t.Fatalf("want the host, its plugin process and the script; found %+v", all)
				}
				for _, p := range all {
					_ = syscall.Kill(p.PID, syscall.SIGTERM)
				}
			}
			logs := h.waitExit(50 * time.Second) // within the 1m drainTimeout
			if b, err := os.ReadFile(done); err != nil || strings.TrimSpace(string(b)) != "finished" {
				t.Errorf("the running item did not run to its end (%v):\n%s", err, logs)
			}
			for _, bad := range []string{"[ERROR]", "plugin exited", "host went away"} {
				if strings.Contains(logs, bad) {
					t.Errorf("host output has %q:\n%s", bad, logs)
				}
			}
			for _, want := range []string{"waiting for running items", "shut down"} {
				if !strings.Contains(logs, want) {
					t.Errorf("host output lacks %q:\n%s", want, logs)
				}
			}
			pid, _ := strconv.Atoi(readTrim(t, pidFile))
			if !proctree.Gone(pid) {
				t.Errorf("script %d still runs after the host exited", pid)
			}
		})
	}
}

func readTrim(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}
