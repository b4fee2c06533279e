//go:build unix && !linux

package transport

import "syscall"

// sysProcAttr puts the plugin in a process group of its own (see
// runner.go). There is no parent-death signal outside Linux; the plugin's
// parent watcher (see Serve) ends orphans.
func sysProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
