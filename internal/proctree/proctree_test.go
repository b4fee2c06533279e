package proctree_test

import (
	"os"
	"os/exec"
	"runtime"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/ejob-io/ejob/internal/proctree"
)

func TestStatOfThisProcess(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("/proc is Linux's")
	}
	p, err := proctree.Stat(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if p.PID != os.Getpid() || p.PPID != os.Getppid() || p.PGID != syscall.Getpgrp() {
		t.Fatalf("Stat = %+v, want pid %d ppid %d pgid %d", p, os.Getpid(), os.Getppid(), syscall.Getpgrp())
	}
	if proctree.Gone(os.Getpid()) {
		t.Fatal("this process reported gone")
	}
}

// A shell with a child in its own process group: both are found below
// this process with their groups, parent first; once killed and reaped
// they are gone.
func TestDescendantsAndGone(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("/proc is Linux's")
	}
	cmd := exec.Command("sh", "-c", "sleep 30 & wait")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sh := cmd.Process.Pid
	t.Cleanup(func() { _ = syscall.Kill(-sh, syscall.SIGKILL); _ = cmd.Wait() })
	var below []proctree.Proc
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if below = proctree.Descendants(os.Getpid()); len(below) >= 2 {
			break
		}
	}
	i := slices.IndexFunc(below, func(p proctree.Proc) bool { return p.PID == sh })
	j := slices.IndexFunc(below, func(p proctree.Proc) bool { return p.PPID == sh })
	if i < 0 || j < 0 || j < i {
		t.Fatalf("Descendants = %+v, want the shell %d and then its child", below, sh)
	}
	if below[i].PGID != sh || below[j].PGID != sh {
		t.Fatalf("process groups %+v, want %d (the shell's own)", below, sh)
	}
	if kids := proctree.Children(sh); len(kids) != 1 || kids[0].PID != below[j].PID {
		t.Fatalf("Children(%d) = %+v", sh, kids)
	}
	sleeper := below[j].PID
	_ = syscall.Kill(-sh, syscall.SIGKILL)
	_ = cmd.Wait()
	for deadline := time.Now().Add(10 * time.Second); !proctree.Gone(sleeper) && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	if !proctree.Gone(sh) || !proctree.Gone(sleeper) {
		t.Fatalf("killed processes not gone: shell %v, child %v", proctree.Gone(sh), proctree.Gone(sleeper))
	}
}
