package main

import (
	"os/exec"
	"testing"
	"time"
)

// processStart gives when a process was created, not when it first ran
// code of its own: a child started 500 ms ago reads as started then,
// whatever it did since.
func TestProcessStartIsTheCreation(t *testing.T) {
	cmd := exec.Command("sleep", "5")
	created := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	time.Sleep(500 * time.Millisecond)
	got, err := processStart(cmd.Process.Pid, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if d := got.Sub(created); d < -100*time.Millisecond || d > 100*time.Millisecond {
		t.Errorf("process start read as %v after its creation; want within 100 ms", d)
	}
}
