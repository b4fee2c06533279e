package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestEndToEnd builds the ejob host and this plugin, installs the plugin
// in a plugins directory, runs a standalone host on a config file naming
// the GREET type, waits for every item's greeting in the host's log (the
// plugin's log lines are re-levelled into it), and stops the host with
// SIGTERM.
func TestEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the ejob binary")
	}
	dir := t.TempDir()
	ejob := filepath.Join(dir, "ejob")
	goBuild(t, ejob, "github.com/ejob-io/ejob/cmd/ejob")
	pluginsDir := filepath.Join(dir, "plugins")
	if err := os.Mkdir(pluginsDir, 0o755); err != nil {
		t.Fatal(err)
	}
	plugin := filepath.Join(pluginsDir, "ejob-jobtype-greet")
	goBuild(t, plugin, ".")
	if err := os.Chmod(plugin, 0o755); err != nil { // the host refuses group/world-writable plugins
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "ejob.yaml")
	writeFile(t, cfg, `elasticjob:
  jobs:
    hello:
      elasticJobType: greet        # matched case-insensitively
      cron: "* * * * * ?"          # every second
      shardingTotalCount: 3
      shardingItemParameters: 0=Beijing,1=Shanghai
      props:
        greet.name: e2e
ejob:
  pluginsDir: plugins              # relative to this file
  drainTimeout: 10s
`)

	cmd := exec.Command(ejob, "run", "-c", cfg)
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() { cmd.Process.Kill() })

	want := []string{`text="Hello, Beijing! -- e2e"`, `text="Hello, Shanghai! -- e2e"`, `text="Hello, item 2! -- e2e"`}
	waitFor(t, 60*time.Second, out, "a greeting for every item", func() bool {
		for _, w := range want {
			if !hasLine(out.String(), "ejob-jobtype-greet: greeting:", w) {
				return false
			}
		}
		return true
	})

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("host exit after SIGTERM: %v\n%s", err, out)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("host still running 30s after SIGTERM:\n%s", out)
	}
	if !strings.Contains(out.String(), "shut down") {
		t.Errorf("host output lacks its shutdown line:\n%s", out)
	}
	if strings.Contains(out.String(), "[ERROR]") {
		t.Errorf("host logged errors:\n%s", out)
	}
}

// hasLine reports whether one line of log contains every part.
func hasLine(log string, parts ...string) bool {
	for line := range strings.Lines(log) {
		found := true
		for _, p := range parts {
			found = found && strings.Contains(line, p)
		}
		if found {
			return true
		}
	}
	return false
}

func goBuild(t *testing.T, out, pkg string) {
	t.Helper()
	if b, err := exec.Command("go", "build", "-o", out, pkg).CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, b)
	}
}

func writeFile(t *testing.T, name, content string) {
	t.Helper()
	if err := os.WriteFile(name, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// waitFor polls done until it holds or timeout passes, then fails the test
// with the host's output.
func waitFor(t *testing.T, timeout time.Duration, out *syncBuffer, what string, done func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !done() {
		if time.Now().After(deadline) {
			t.Fatalf("no %s within %v; host output:\n%s", what, timeout, out)
		}
		time.Sleep(50 * time.Millisecond) // bounded polling of observable state
	}
}

// syncBuffer collects a process's output safely.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
