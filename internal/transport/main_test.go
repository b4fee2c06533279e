package transport_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/ejob-io/ejob/internal/proctest"

	"github.com/hashicorp/go-hclog"

	"github.com/ejob-io/ejob/internal/transport"
)

// bins holds the test executables TestMain builds; set once before any test
// runs and read-only afterwards.
var bins struct {
	dir                                          string
	plugin, badAPI, badProto, notPlugin, host    string
	garbageScript, sleepScript, empty, notExists string
}

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "ejob-transport-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	bins.dir = dir
	cmd := exec.Command("go", "build", "-o", dir+string(filepath.Separator),
		"./testdata/plugin", "./testdata/badapi", "./testdata/badproto", "./testdata/notplugin", "./testdata/host")
	if out, err := cmd.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building test plugins: %v\n%s", err, out)
		return 1
	}
	bins.plugin = filepath.Join(dir, "plugin")
	bins.badAPI = filepath.Join(dir, "badapi")
	bins.badProto = filepath.Join(dir, "badproto")
	bins.notPlugin = filepath.Join(dir, "notplugin")
	bins.host = filepath.Join(dir, "host")
	bins.garbageScript = filepath.Join(dir, "garbage.sh")
	bins.sleepScript = filepath.Join(dir, "sleep.sh")
	bins.empty = filepath.Join(dir, "empty")
	bins.notExists = filepath.Join(dir, "does-not-exist")
	files := map[string]string{
		bins.garbageScript: "#!/bin/sh\necho 'this|is not|a handshake'\n",
		bins.sleepScript:   "#!/bin/sh\nexec sleep 60\n",
		bins.empty:         "",
	}
	for path, content := range files {
		if err := os.WriteFile(path, []byte(content), 0o755); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	return m.Run()
}

// launch starts path with a host logger writing to the returned buffer and
// kills the process at cleanup.
func launch(t testing.TB, path string) (*transport.Process, *proctest.Buffer) {
	t.Helper()
	logs := &proctest.Buffer{}
	p, err := transport.Launch(context.Background(), transport.LaunchConfig{
		Path:   path,
		Name:   "testplugin",
		Logger: hclog.New(&hclog.LoggerOptions{Name: "host", Output: logs, Level: hclog.Trace}),
	})
	if err != nil {
		t.Fatalf("Launch(%s): %v", path, err)
	}
	t.Cleanup(p.Kill)
	return p, logs
}

// waitFor polls cond every 5ms until it holds, failing the test after d.
func waitFor(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func fileExists(path string) func() bool {
	return func() bool {
		_, err := os.Stat(path)
		return err == nil
	}
}
