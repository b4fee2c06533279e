package testkit

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestStallProbeProcess is the probe process of TestWriteStallsRecordsAFrozenProcess
// (it runs only there).
func TestStallProbeProcess(t *testing.T) {
	out := os.Getenv("EJOB_TESTKIT_STALLS")
	if out == "" {
		t.Skip("the probe process of TestWriteStallsRecordsAFrozenProcess")
	}
	f, err := os.OpenFile(out, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	os.Stdout.WriteString("probing\n")
	if err := WriteStalls(ctx, f, 50*time.Millisecond); err != nil {
		t.Fatal(err)
	}
}

// A probe process frozen with SIGSTOP for 300 ms writes a stall that
// spans the freeze; none while it runs freely on a quiet machine is not
// asserted (the machine may be loaded).
func TestWriteStallsRecordsAFrozenProcess(t *testing.T) {
	out := filepath.Join(t.TempDir(), "stalls.txt")
	cmd := exec.Command(os.Args[0], "-test.run=^TestStallProbeProcess$")
	cmd.Env = append(os.Environ(), "EJOB_TESTKIT_STALLS="+out)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	started := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if bytes.Equal(sc.Bytes(), []byte("probing")) {
				started <- true
			}
		}
		close(started)
	}()
	select {
	case ok := <-started:
		if !ok {
			t.Fatal("the probe process exited before probing")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the probe process did not start probing within 30s")
	}
	// "probing" comes just before the ticks start: a freeze that lands
	// before the first tick is no stall of the probe, so up to three.
	const hold = 300 * time.Millisecond
	for attempt := 1; attempt <= 3; attempt++ {
		if err := cmd.Process.Signal(syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		time.Sleep(hold) // the freeze lasts by design
		thawed := time.Now()
		if err := cmd.Process.Signal(syscall.SIGCONT); err != nil {
			t.Fatal(err)
		}
		var got []Stall
		Poll(5*time.Second, func() bool {
			b, _ := os.ReadFile(out)
			got, err = ReadStalls(bytes.NewReader(b))
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range got {
				if s.From.Before(thawed) && s.To.After(thawed) {
					return true
				}
			}
			return false
		})
		for _, s := range got {
			if !s.From.Before(thawed) || !s.To.After(thawed) {
				continue
			}
			if s.Lost() < hold/2 {
				t.Fatalf("the stall over the %v freeze lost only %v: %+v", hold, s.Lost(), s)
			}
			if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			if err := cmd.Wait(); err != nil {
				t.Fatalf("the probe process ended with %v after SIGTERM", err)
			}
			return
		}
		t.Logf("attempt %d: no stall spans the freeze ending %s: %+v", attempt, thawed.Format("15:04:05.000"), got)
	}
	t.Fatal("three freezes of the probe process, no stall recorded over any")
}
