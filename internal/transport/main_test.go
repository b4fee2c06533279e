package transport_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/ejob-io/ejob/internal/proctest"
	"github.com/ejob-io/ejob/internal/testkit"
	"github.com/ejob-io/ejob/internal/transport"
)

// bins holds the test executables TestMain builds; set once before any test
// runs and read-only afterwards.
var bins struct {
	dir                                               string
	plugin, badAPI, badProto, notPlugin, host, silent string
	garbageScript, sleepScript, empty, notExists      string
	// wrapper runs the test plugin from a shell without exec, after
	// starting a background child that keeps stdout open and writing its
	// pid to the file named by its argument.
	wrapper string
	// wrapperSilent is wrapper's child and then a silent sleep.
	wrapperSilent string
	// fakeHandshake prints a handshake line naming a socket that does not
	// exist, then sleeps.
	fakeHandshake string
	// usage prints a usage message on stderr and exits 2.
	usage string
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
		"./testdata/plugin", "./testdata/badapi", "./testdata/badproto", "./testdata/notplugin", "./testdata/host", "./testdata/silent")
	if out, err := cmd.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building test plugins: %v\n%s", err, out)
		return 1
	}
	bins.plugin = filepath.Join(dir, "plugin")
	bins.badAPI = filepath.Join(dir, "badapi")
	bins.badProto = filepath.Join(dir, "badproto")
	bins.notPlugin = filepath.Join(dir, "notplugin")
	bins.host = filepath.Join(dir, "host")
	bins.silent = filepath.Join(dir, "silent")
	bins.wrapper = filepath.Join(dir, "wrapper.sh")
	bins.wrapperSilent = filepath.Join(dir, "wrapper-silent.sh")
	bins.fakeHandshake = filepath.Join(dir, "fake-handshake.sh")
	bins.usage = filepath.Join(dir, "usage.sh")
	bins.garbageScript = filepath.Join(dir, "garbage.sh")
	bins.sleepScript = filepath.Join(dir, "sleep.sh")
	bins.empty = filepath.Join(dir, "empty")
	bins.notExists = filepath.Join(dir, "does-not-exist")
	files := map[string]string{
		bins.garbageScript: "#!/bin/sh\necho 'this|is not|a handshake'\n",
		bins.sleepScript:   "#!/bin/sh\nexec sleep 60\n",
		bins.empty:         "",
		bins.wrapper:       "#!/bin/sh\nsleep 600 &\necho $! > \"$1\"\n" + bins.plugin + "\n",
		bins.wrapperSilent: "#!/bin/sh\nsleep 600 &\necho $! > \"$1\"\nsleep 600\n",
		bins.fakeHandshake: fmt.Sprintf("#!/bin/sh\necho '1|%d|unix|/nonexistent/plugin.sock|grpc|'\nexec sleep 600\n", transport.ProtocolVersion),
		bins.usage:         "#!/bin/sh\necho 'usage: ejob-usage [-v] FILE' >&2\nexit 2\n",
	}
	for path, content := range files {
		if err := os.WriteFile(path, []byte(content), 0o755); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	return testkit.Run(m)
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

func fileExists(path string) func() bool {
	return func() bool {
		_, err := os.Stat(path)
		return err == nil
	}
}
