//go:build unix

package daemon_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ejob-io/ejob/internal/proctree"
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
			done := filepath.Join(t.TempDir(), "done")
			// About 3 s of work in short steps; a SIGTERM ends only the
			// current step's sleep.
			h, pid := runScriptJob(t, `trap 'echo "job.sh: SIGTERM received, finishing" >&2' TERM
i=0
while [ $i -lt 30 ]; do sleep 0.1; i=$((i+1)); done
echo finished > `+done+"\n", "1m")
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
			if !proctree.Gone(pid) {
				t.Errorf("script %d still runs after the host exited", pid)
			}
		})
	}
}
