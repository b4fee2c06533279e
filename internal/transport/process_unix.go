//go:build unix

package transport

import (
	"errors"
	"os/exec"
	"syscall"
)

// killGroup sends SIGKILL to the process group pid leads (see
// sysProcAttr). The group outlives its leader while members remain, and
// its id is not reused as a process id meanwhile.
func killGroup(pid int) {
	if pid > 0 {
		_ = syscall.Kill(-pid, syscall.SIGKILL)
	}
}

// killedBySIGKILL reports whether cmd.Wait's err says the process was
// ended by SIGKILL.
func killedBySIGKILL(err error) bool {
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return false
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL
}
