package main

import (
	"bytes"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestEndToEnd builds the ejob host and this plugin, installs the plugin
// in a plugins directory, and runs a standalone host on a config file with
// a streaming WORDCOUNT job of 3 items until every item's counts file adds
// up to its input. It appends input while the host runs and again while
// it is stopped, and checks that each word is counted exactly once across
// executions and host restarts. Each host is stopped with SIGTERM.
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
	plugin := filepath.Join(pluginsDir, "ejob-jobtype-wordcount")
	goBuild(t, plugin, ".")
	if err := os.Chmod(plugin, 0o755); err != nil { // the host refuses group/world-writable plugins
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	if err := os.Mkdir(data, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "ejob.yaml")
	writeFile(t, cfg, fmt.Sprintf(`elasticjob:
  jobs:
    wordcount:
      elasticJobType: WORDCOUNT
      cron: "* * * * * ?"          # every second
      shardingTotalCount: 3
      props:
        wordcount.dir: %q
        wordcount.batch.lines: 2
        streaming.process: true
ejob:
  pluginsDir: plugins              # relative to this file
  drainTimeout: 10s
`, data))

	// Item i's input repeats its own words, so every total is known.
	input := func(item, times int) string {
		return strings.Repeat(fmt.Sprintf("alpha item%d\nbeta beta\n", item), times)
	}
	want := func(item, times int) map[string]int {
		return map[string]int{"alpha": times, "beta": 2 * times, "item" + strconv.Itoa(item): times}
	}
	times := []int{5, 7, 1}
	for item, n := range times {
		writeFile(t, filepath.Join(data, fmt.Sprintf("part-%d.txt", item)), input(item, n))
	}

	host := startHost(t, ejob, cfg)
	host.waitForCounts(t, data, times, want)

	// The next executions carry on from each item's offset.
	appendFile(t, filepath.Join(data, "part-1.txt"), input(1, 3))
	times[1] += 3
	host.waitForCounts(t, data, times, want)
	host.stop(t)

	// So does a new host: progress lives in the files, not the processes.
	appendFile(t, filepath.Join(data, "part-2.txt"), input(2, 4))
	times[2] += 4
	host = startHost(t, ejob, cfg)
	host.waitForCounts(t, data, times, want)
	host.stop(t)
}

type hostProcess struct {
	cmd    *exec.Cmd
	out    *syncBuffer
	exited chan error
}

func startHost(t *testing.T, ejob, cfg string) *hostProcess {
	t.Helper()
	h := &hostProcess{cmd: exec.Command(ejob, "run", "-c", cfg), out: &syncBuffer{}, exited: make(chan error, 1)}
	h.cmd.Stdout, h.cmd.Stderr = h.out, h.out
	if err := h.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { h.exited <- h.cmd.Wait() }()
	t.Cleanup(func() { h.cmd.Process.Kill() })
	return h
}

// waitForCounts polls until part-<item>.counts adds up to want(item,
// times[item]) for every item.
func (h *hostProcess) waitForCounts(t *testing.T, data string, times []int, want func(item, times int) map[string]int) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		var wrong []string
		for item, n := range times {
			got := sumCounts(filepath.Join(data, fmt.Sprintf("part-%d.counts", item)))
			if w := want(item, n); !maps.Equal(got, w) {
				wrong = append(wrong, fmt.Sprintf("item %d: %v, want %v", item, got, w))
			}
		}
		if len(wrong) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("counts not reached within 60s:\n%s\nhost output:\n%s", strings.Join(wrong, "\n"), h.out)
		}
		time.Sleep(50 * time.Millisecond) // bounded polling of the output files
	}
}

func (h *hostProcess) stop(t *testing.T) {
	t.Helper()
	if err := h.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-h.exited:
		if err != nil {
			t.Fatalf("host exit after SIGTERM: %v\n%s", err, h.out)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("host still running 30s after SIGTERM:\n%s", h.out)
	}
	if !strings.Contains(h.out.String(), "shut down") {
		t.Errorf("host output lacks its shutdown line:\n%s", h.out)
	}
	if strings.Contains(h.out.String(), "[ERROR]") {
		t.Errorf("host logged errors:\n%s", h.out)
	}
}

// sumCounts adds up a counts file's "word count" lines; a line being
// written (no newline yet) is left for the next poll.
func sumCounts(name string) map[string]int {
	got := map[string]int{}
	b, _ := os.ReadFile(name)
	for line := range strings.Lines(string(b)) {
		word, n, ok := strings.Cut(strings.TrimSuffix(line, "\n"), " ")
		c, err := strconv.Atoi(n)
		if !ok || err != nil || !strings.HasSuffix(line, "\n") {
			continue
		}
		got[word] += c
	}
	return got
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

func appendFile(t *testing.T, name, content string) {
	t.Helper()
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(content); err != nil {
		t.Fatal(err)
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
