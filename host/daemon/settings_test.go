package daemon_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ejob-io/ejob/internal/proctest"
	"github.com/ejob-io/ejob/internal/testkit"
)

// hostTestPlugins builds host/pluginhost' test plugin (job type HOSTTEST_JOB)
// into a new plugins directory and returns the directory.
func hostTestPlugins(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "plugins")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := proctest.GoBuild(filepath.Join(dir, "ejob-hosttest"), "github.com/ejob-io/ejob/host/pluginhost/testdata/ejob-hosttest", false); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestRunHonoursEnvironmentAndFileSettings runs real `ejob run` hosts whose
// file names no plugins directory and sets ejob.logLevel: debug.
// EJOB_PLUGINS_DIR must supply the directory (the job's type is only
// there), the file's level must apply, and EJOB_LOG_LEVEL must override it.
func TestRunHonoursEnvironmentAndFileSettings(t *testing.T) {
	plugins := hostTestPlugins(t)
	cfg := filepath.Join(t.TempDir(), "ejob.yaml")
	if err := os.WriteFile(cfg, []byte(`elasticjob:
  jobs:
    idle:
      elasticJobType: HOSTTEST_JOB
      cron: "0 0 0 1 1 ? 2099"
      shardingTotalCount: 1
ejob:
  logLevel: debug
`), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		env       []string
		wantDebug bool
	}{
		"file level":        {env: []string{"EJOB_PLUGINS_DIR=" + plugins}, wantDebug: true},
		"environment level": {env: []string{"EJOB_PLUGINS_DIR=" + plugins, "EJOB_LOG_LEVEL=info"}, wantDebug: false},
	} {
		t.Run(name, func(t *testing.T) {
			logs := runUntilStarted(t, append(os.Environ(), tc.env...), "run", "-c", cfg)
			if got := strings.Contains(logs, "[DEBUG]"); got != tc.wantDebug {
				t.Errorf("DEBUG lines logged: %v, want %v:\n%s", got, tc.wantDebug, logs)
			}
		})
	}
}

// host is a running `ejob` process of a test.
type host struct {
	t      *testing.T
	cmd    *exec.Cmd
	logs   *proctest.Buffer
	exited chan error
}

// runHost starts ejob with args (env nil: this process's environment);
// it is killed when the test ends.
func runHost(t *testing.T, env []string, args ...string) *host {
	t.Helper()
	h := &host{t: t, cmd: exec.Command(ejobBin, args...), logs: &proctest.Buffer{}, exited: make(chan error, 1)}
	h.cmd.Env = env
	h.cmd.SysProcAttr = hostProcAttr() // a group of its own: see groupsignal_test.go
	h.cmd.Stdout, h.cmd.Stderr = h.logs, h.logs
	if err := h.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { h.exited <- h.cmd.Wait() }()
	t.Cleanup(func() { h.cmd.Process.Kill() })
	return h
}

// waitLog waits until the host has logged want.
func (h *host) waitLog(want string) {
	h.t.Helper()
	testkit.Eventually(h.t, 30*time.Second, fmt.Sprintf("%q in the host's output", want), func() bool {
		return strings.Contains(h.logs.String(), want)
	})
}

// signal sends sig to the host.
func (h *host) signal(sig os.Signal) {
	h.t.Helper()
	if err := h.cmd.Process.Signal(sig); err != nil {
		h.t.Fatal(err)
	}
}

// waitExit waits up to within for the host to exit with status 0 and
// returns its output.
func (h *host) waitExit(within time.Duration) string {
	h.t.Helper()
	select {
	case err := <-h.exited:
		if err != nil {
			h.t.Fatalf("host exit: %v\n%s", err, h.logs)
		}
	case <-time.After(within):
		h.t.Fatalf("host did not exit within %v:\n%s", within, h.logs)
	}
	return h.logs.String()
}

// runUntilStarted runs ejob with args until it logs "host started", then
// stops it with SIGTERM and returns its output once it has exited cleanly.
func runUntilStarted(t *testing.T, env []string, args ...string) string {
	t.Helper()
	h := runHost(t, env, args...)
	h.waitLog("host started")
	h.signal(syscall.SIGTERM)
	return h.waitExit(30 * time.Second)
}
