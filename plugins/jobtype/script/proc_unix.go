//go:build unix

package script

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
)

// newProcessGroup makes the command the leader of a new process group, so
// that stopping an item reaches everything the script started.
func newProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// signalGroup sends SIGTERM (or SIGKILL when kill is set) to every member
// of process group pgid. A group that is already gone is not an error.
func signalGroup(pgid int, kill bool) {
	sig := syscall.SIGTERM
	if kill {
		sig = syscall.SIGKILL
	}
	_ = syscall.Kill(-pgid, sig)
}

// groupAlive reports whether process group pgid still has a member (a
// zombie not yet reaped by its parent counts).
func groupAlive(pgid int) bool {
	return !errors.Is(syscall.Kill(-pgid, 0), syscall.ESRCH)
}

// exitStatus returns the exit code as the JVM reports it (128 plus the
// signal number for a signalled process) and the signal's name, if any.
func exitStatus(ps *os.ProcessState) (code int, signal string) {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal()), ws.Signal().String()
	}
	return ps.ExitCode(), ""
}
