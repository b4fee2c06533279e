//go:build linux

package plugins

import (
	"os"
	"strconv"
	"strings"
	"syscall"
)

// descendants lists the processes below pid (children, grandchildren, …)
// with their process groups, read from /proc. A plugin's job processes
// (SCRIPT runs each script as the leader of its own process group) are not
// in the plugin's group, so killing the plugin leaves them running; the
// caller kills them after the plugin. Read before the kill: once the plugin
// is gone they are re-parented and can no longer be found this way.
func descendants(pid int) []proc {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	children := map[int][]proc{}
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp ...; comm may hold spaces and parens.
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) < 3 {
			continue
		}
		ppid, err1 := strconv.Atoi(f[1])
		pgrp, err2 := strconv.Atoi(f[2])
		if err1 != nil || err2 != nil {
			continue
		}
		children[ppid] = append(children[ppid], proc{pid: p, pgid: pgrp})
	}
	var out []proc
	queue := []int{pid}
	for len(queue) > 0 {
		next := queue[0]
		queue = queue[1:]
		for _, c := range children[next] {
			out = append(out, c)
			queue = append(queue, c.pid)
		}
	}
	return out
}

// killAll sends SIGKILL to each process and to its process group when that
// group is its own (a script and whatever it started), never to this
// host's group.
func killAll(ps []proc) {
	own := syscall.Getpgrp()
	for _, p := range ps {
		if p.pgid == p.pid && p.pgid != own {
			_ = syscall.Kill(-p.pgid, syscall.SIGKILL)
		}
		_ = syscall.Kill(p.pid, syscall.SIGKILL)
	}
}
