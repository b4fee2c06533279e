//go:build !linux

package transport

import "syscall"

// sysProcAttr: no parent-death signal outside Linux; the plugin's parent
// watcher (see Serve) ends orphans.
func sysProcAttr() *syscall.SysProcAttr { return nil }
