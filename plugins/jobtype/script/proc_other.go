//go:build !unix

package script

import (
	"os"
	"os/exec"
)

// newProcessGroup does nothing where process groups do not exist; only the
// script itself is stopped.
func newProcessGroup(cmd *exec.Cmd) {}

// signalGroup kills the process pid (there are no groups to signal and no
// SIGTERM).
func signalGroup(pid int, kill bool) {
	if p, err := os.FindProcess(pid); err == nil {
		_ = p.Kill()
	}
}

// groupAlive reports false: there is no group to wait for.
func groupAlive(int) bool { return false }

// exitStatus returns the exit code.
func exitStatus(ps *os.ProcessState) (code int, signal string) { return ps.ExitCode(), "" }
