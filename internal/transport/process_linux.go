package transport

import "syscall"

// sysProcAttr makes the kernel SIGTERM the plugin when the thread that
// started it exits; the plugin then cancels its in-flight calls (a SCRIPT
// kills its process group) and exits within terminationGrace, and its
// parent watcher is the fallback. Launch starts plugins from a goroutine locked to its OS
// thread for the plugin's lifetime, so that thread lives until the plugin
// exits or the host dies (Go issue 27505).
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
}
