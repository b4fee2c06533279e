//go:build unix

package proctree

import "syscall"

// Kill sends SIGKILL to each process and to its process group when it
// leads one of its own (a script and whatever it started), never to the
// caller's own group.
func Kill(ps []Proc) {
	own := syscall.Getpgrp()
	for _, p := range ps {
		if p.PGID == p.PID && p.PGID != own {
			_ = syscall.Kill(-p.PGID, syscall.SIGKILL)
		}
		_ = syscall.Kill(p.PID, syscall.SIGKILL)
	}
}
