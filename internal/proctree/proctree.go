// Package proctree reads the process tree from Linux's /proc: a process's
// parent, process group and state, and the processes below a given one,
// and kills what it found (Kill). The host uses it to kill what a stopped
// or stuck plugin started; tests use it to find and check the processes
// their hosts and plugins run. On other systems every lookup reports that
// nothing is known.
package proctree

import (
	"bytes"
	"errors"
	"os"
	"strconv"
	"strings"
)

// ErrUnsupported: this system has no /proc process information.
var ErrUnsupported = errors.New("proctree: /proc is not available")

// Proc is one process as /proc/<pid>/stat reports it.
type Proc struct {
	PID, PPID, PGID int
	// State is the state letter: R, S, D, T (stopped), Z (zombie), …
	State byte
}

// Stat reads pid's entry; an error wrapping os.ErrNotExist when there is
// no such process.
func Stat(pid int) (Proc, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return Proc{}, err
	}
	return parse(pid, b)
}

// parse reads "pid (comm) state ppid pgrp ...": comm may hold spaces and
// parentheses, so the fields start after the last ')'.
func parse(pid int, b []byte) (Proc, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return Proc{}, errors.New("proctree: malformed stat of pid " + strconv.Itoa(pid))
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 3 || len(f[0]) != 1 {
		return Proc{}, errors.New("proctree: malformed stat of pid " + strconv.Itoa(pid))
	}
	ppid, err1 := strconv.Atoi(f[1])
	pgid, err2 := strconv.Atoi(f[2])
	if err1 != nil || err2 != nil {
		return Proc{}, errors.New("proctree: malformed stat of pid " + strconv.Itoa(pid))
	}
	return Proc{PID: pid, PPID: ppid, PGID: pgid, State: f[0][0]}, nil
}

// Gone reports whether pid no longer runs: absent, or a zombie its parent
// has not reaped yet.
func Gone(pid int) bool {
	p, err := Stat(pid)
	return err != nil || p.State == 'Z'
}

// All lists every process. Processes that end while it reads are skipped.
func All() ([]Proc, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, errors.Join(ErrUnsupported, err)
	}
	var out []Proc
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if p, err := Stat(pid); err == nil {
			out = append(out, p)
		}
	}
	return out, nil
}

// Children lists pid's direct children.
func Children(pid int) []Proc {
	all, _ := All()
	var out []Proc
	for _, p := range all {
		if p.PPID == pid {
			out = append(out, p)
		}
	}
	return out
}

// Descendants lists the processes below pid (children, grandchildren, …),
// parents before their children, from one reading of /proc. Once a
// process's parent is gone it is re-parented and no longer found below it.
func Descendants(pid int) []Proc {
	all, _ := All()
	children := map[int][]Proc{}
	for _, p := range all {
		children[p.PPID] = append(children[p.PPID], p)
	}
	var out []Proc
	queue := []int{pid}
	for len(queue) > 0 {
		next := queue[0]
		queue = queue[1:]
		for _, c := range children[next] {
			out = append(out, c)
			queue = append(queue, c.PID)
		}
	}
	return out
}
