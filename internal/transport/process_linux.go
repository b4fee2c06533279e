package transport

import "syscall"

// sysProcAttr puts the plugin in a process group of its own (see
// runner.go) and makes the kernel SIGTERM it when the thread that started
// it exits. The plugin tells that SIGTERM from one sent to its group by
// its parent having changed (see drainer.onSignals): it then cancels its
// in-flight calls (a SCRIPT kills its process group) and exits within
// terminationGrace; its parent watcher is the fallback. Launch starts
// plugins from a goroutine locked to its OS thread for the plugin's
// lifetime, so that thread lives until the plugin exits or the host dies
// (Go issue 27505).
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
}
