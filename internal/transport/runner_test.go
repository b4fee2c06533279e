package transport_test

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ejob-io/ejob/internal/proctest"
	"github.com/ejob-io/ejob/internal/proctree"
	"github.com/ejob-io/ejob/internal/testkit"
	"github.com/ejob-io/ejob/internal/transport"
	"github.com/ejob-io/ejob/spi"
)

// childPid reads the pid a wrapper script wrote to the file.
func childPid(t *testing.T, file string) int {
	t.Helper()
	var pid int
	testkit.Eventually(t, 10*time.Second, "the wrapper's child pid in "+file, func() bool {
		b, err := os.ReadFile(file)
		if err != nil {
			return false
		}
		pid, err = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil
	})
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	return pid
}

// TestNotAValidPlugin: whatever sits in the plugins directory, Launch
// returns, within the start timeout at most, one line that names the file
// and says "not a valid ejob plugin" and why; the host logs no warning or
// error of its own about it; nothing the file started survives it.
func TestNotAValidPlugin(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		path    string
		timeout time.Duration // the start timeout
		why     string
		child   bool // the file starts a background child (see bins.wrapper)
	}{
		// A native executable without the handshake is refused unread: it
		// costs no start timeout (an hour here; the test would time out).
		"never-answering binary": {path: bins.silent, timeout: time.Hour,
			why: "native executable that does not contain the ejob plugin handshake"},
		"never-answering script": {path: bins.sleepScript, timeout: 300 * time.Millisecond,
			why: "it printed nothing on stdout within 300ms"},
		"garbage": {path: bins.garbageScript, timeout: time.Hour,
			why: `it printed "this|is not|a handshake" on stdout, not a plugin handshake line`},
		"fake handshake": {path: bins.fakeHandshake, timeout: time.Hour,
			why: `its handshake names the Unix socket "/nonexistent/plugin.sock", which does not exist`},
		"usage and exit": {path: bins.usage, timeout: time.Hour,
			why: `it exited (exit status 2) without printing the plugin handshake; its stderr ended with "usage: ejob-usage [-v] FILE"`},
		"wrapper of a never-answering program": {path: bins.wrapperSilent, timeout: 300 * time.Millisecond, child: true,
			why: "it printed nothing on stdout within 300ms"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			pidFile := filepath.Join(t.TempDir(), "child")
			logs := &proctest.Buffer{}
			p, err := transport.Launch(t.Context(), transport.LaunchConfig{
				Path: tt.path, Args: []string{pidFile}, StartTimeout: tt.timeout,
				Logger: hclog.New(&hclog.LoggerOptions{Output: logs, Level: hclog.Trace}),
			})
			if err == nil {
				p.Kill()
				t.Fatal("Launch succeeded")
			}
			msg := err.Error()
			if !errors.Is(err, transport.ErrNotPlugin) || !strings.Contains(msg, tt.path+": not a valid ejob plugin: ") ||
				!strings.Contains(msg, tt.why) || strings.Contains(msg, "\n") {
				t.Errorf("err = %q\nwant one line naming the file, saying \"not a valid ejob plugin\" and %q", msg, tt.why)
			}
			for _, level := range []string{"[WARN]", "[ERROR]"} {
				if strings.Contains(logs.String(), level) {
					t.Errorf("host logged a %s line about it:\n%s", level, logs.String())
				}
			}
			if tt.child {
				child := childPid(t, pidFile)
				testkit.Eventually(t, 10*time.Second, "the background child to be gone", func() bool { return proctree.Gone(child) })
			}
		})
	}
}

// TestWrapperWithBackgroundChild: a plugin run from a script without exec,
// whose background child keeps its stdout open, serves; Kill returns (go-
// plugin alone waits for that stdout forever) and the child is gone.
func TestWrapperWithBackgroundChild(t *testing.T) {
	t.Parallel()
	pidFile := filepath.Join(t.TempDir(), "child")
	logs := &proctest.Buffer{}
	p, err := transport.Launch(t.Context(), transport.LaunchConfig{Path: bins.wrapper, Args: []string{pidFile},
		Logger: hclog.New(&hclog.LoggerOptions{Output: logs, Level: hclog.Trace})})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Kill)
	child := childPid(t, pidFile)
	if proctree.Gone(child) {
		t.Fatal("the wrapper's child is not running")
	}
	p.Kill()
	if !proctree.Gone(child) {
		// The group is killed before Kill returns; the reaping by init
		// may follow.
		testkit.Eventually(t, 10*time.Second, "the wrapper's child to be gone", func() bool { return proctree.Gone(child) })
	}
	if strings.Contains(logs.String(), "[ERROR]") {
		t.Errorf("host logged an error:\n%s", logs.String())
	}
}

// TestKillStoppedPlugin: a plugin that cannot even take the request to
// exit (stopped by SIGSTOP) is killed, with what it started in its
// process group, and Kill returns.
func TestKillStoppedPlugin(t *testing.T) {
	t.Parallel()
	p, logs := launch(t, bins.plugin)
	pid := p.Pid()
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 10*time.Second, "the plugin to be stopped", func() bool {
		st, err := proctree.Stat(pid)
		return err == nil && st.State == 'T'
	})
	p.Kill()
	if !proctree.Gone(pid) {
		t.Errorf("plugin %d still runs after Kill returned", pid)
	}
	if !strings.Contains(logs.String(), "killing the plugin process") {
		t.Errorf("no warning about the forced kill:\n%s", logs.String())
	}
}

// TestGroupSignalsIgnored: SIGTERM and SIGINT sent to the plugin's process
// group (as systemd's KillMode=control-group, `timeout` or `kill -- -PGID`
// send them to every process) do not stop the plugin: its host drains
// through it and stops it.
func TestGroupSignalsIgnored(t *testing.T) {
	t.Parallel()
	p, logs := launch(t, bins.plugin)
	st, err := proctree.Stat(p.Pid())
	if err != nil {
		t.Fatal(err)
	}
	if st.PGID != p.Pid() || st.PGID == syscall.Getpgrp() {
		t.Fatalf("plugin %d in process group %d, want a group of its own", p.Pid(), st.PGID)
	}
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		if err := syscall.Kill(-st.PGID, sig); err != nil {
			t.Fatal(err)
		}
	}
	testkit.Eventually(t, 10*time.Second, "the plugin to log that it ignored SIGTERM", func() bool {
		return strings.Contains(logs.String(), "ignoring the signal") && strings.Contains(logs.String(), "signal=terminated")
	})
	if _, err := p.Info(t.Context()); err != nil {
		t.Fatalf("Info after the group's SIGTERM and SIGINT: %v", err)
	}
	if p.Exited() {
		t.Fatal("the plugin exited")
	}
}

// TestSocketFilesRemoved: go-plugin's socket (and its directory) is gone
// from the temp directory after every way a plugin ends: Kill, a crash
// (SIGKILL), a start refused after the handshake (API version), and its
// host dying (the plugin removes it then).
func TestSocketFilesRemoved(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp) // Launch's go-plugin and the plugins make their sockets there
	leftovers := func() []string {
		entries, err := os.ReadDir(tmp)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		return names
	}
	empty := func(what string) {
		t.Helper()
		// Kill and Done return once the directory is gone; an orphan
		// removes its own on its way out.
		testkit.Eventually(t, 10*time.Second, "no socket left after "+what, func() bool { return len(leftovers()) == 0 })
	}

	p, _ := launch(t, bins.plugin)
	if len(leftovers()) == 0 {
		t.Fatal("no socket directory in TMPDIR while the plugin runs: the test looks in the wrong place")
	}
	p.Kill()
	if l := leftovers(); len(l) != 0 {
		t.Errorf("left after Kill: %v", l)
	}

	p, _ = launch(t, bins.plugin)
	if err := syscall.Kill(p.Pid(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-p.Done()
	if l := leftovers(); len(l) != 0 {
		t.Errorf("left after a crash, once Done: %v", l)
	}

	if _, err := transport.Launch(t.Context(), transport.LaunchConfig{Path: bins.badAPI}); !errors.Is(err, transport.ErrAPIVersion) {
		t.Fatalf("Launch(badapi) = %v", err)
	}
	empty("a refused start")

	pid := killHost(t, "launch")
	testkit.Eventually(t, 10*time.Second, "the orphaned plugin to exit", func() bool { return proctree.Gone(pid) })
	empty("the host's death")
}

// TestNothingSurvivesThePlugin: a process the plugin started in a session
// of its own (out of the process group the host kills) is gone once the
// host has stopped the plugin.
func TestNothingSurvivesThePlugin(t *testing.T) {
	t.Parallel()
	p, logs := launch(t, bins.plugin)
	pidFile := filepath.Join(t.TempDir(), "child")
	if _, err := p.Conn().JobExecutor("TEST_JOB").Execute(t.Context(), spi.ExecuteRequest{
		Context: spi.ShardingContext{JobName: "daemon"}, Props: map[string]string{"pidfile": pidFile},
	}); err != nil {
		t.Fatal(err)
	}
	child := childPid(t, pidFile)
	if st, err := proctree.Stat(child); err != nil || st.PGID == p.Pid() {
		t.Fatalf("the daemon child %d: %+v, %v; want it running outside the plugin's group", child, st, err)
	}
	p.Kill()
	testkit.Eventually(t, 10*time.Second, "the plugin's setsid child to be gone", func() bool { return proctree.Gone(child) })
	if !strings.Contains(logs.String(), "killing processes the plugin started") {
		t.Errorf("the plugin did not say what it killed:\n%s", logs.String())
	}
}
