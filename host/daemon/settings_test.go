package daemon_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ejob-io/ejob/internal/proctest"
)

// hostTestPlugins builds host/plugins' test plugin (job type HOSTTEST_JOB)
// into a new plugins directory and returns the directory.
func hostTestPlugins(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "plugins")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := proctest.GoBuild(filepath.Join(dir, "ejob-hosttest"), "github.com/ejob-io/ejob/host/plugins/testdata/ejob-hosttest", false); err != nil {
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

// runUntilStarted runs ejob with args until it logs "host started", then
// stops it with SIGTERM and returns its output once it has exited cleanly.
func runUntilStarted(t *testing.T, env []string, args ...string) string {
	t.Helper()
	cmd := exec.Command(ejobBin, args...)
	cmd.Env = env
	logs := &proctest.Buffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer cmd.Process.Kill()
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(logs.String(), "host started"); {
		select {
		case err := <-exited:
			t.Fatalf("ejob exited before it started (%v):\n%s", err, logs)
		case <-time.After(20 * time.Millisecond): // bounded polling of the host's output
		}
		if time.Now().After(deadline) {
			t.Fatalf("no \"host started\" within 30 s:\n%s", logs)
		}
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("host exit: %v\n%s", err, logs)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("host did not exit after SIGTERM:\n%s", logs)
	}
	return logs.String()
}
