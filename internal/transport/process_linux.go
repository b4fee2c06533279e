package transport

import "syscall"

// sysProcAttr makes the kernel SIGKILL the plugin when the thread that
// started it exits. Launch starts plugins from a goroutine locked to its OS
// thread for the plugin's lifetime, so that thread lives until the plugin
// exits or the host dies (Go issue 27505).
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
