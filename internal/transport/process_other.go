//go:build !unix

package transport

import "syscall"

// sysProcAttr: no process groups or parent-death signal; the plugin's
// parent watcher (see Serve) ends orphans.
func sysProcAttr() *syscall.SysProcAttr { return nil }

// killGroup: without Unix process groups only the process itself is
// killed (procRunner.kill).
func killGroup(int) {}

// killedBySIGKILL: a process the host killed exits with an error.
func killedBySIGKILL(err error) bool { return err != nil }
