package locallauncher_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/ejob-io/ejob/internal/locallauncher"
	"github.com/ejob-io/ejob/sdk"
	"github.com/ejob-io/ejob/sdk/sdktest"
	"github.com/ejob-io/ejob/spi"
	"github.com/ejob-io/ejob/spi/spitest"
)

// buildSelf builds the plugin binary, the wrapper every item runs under.
func buildSelf(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "ejob-launcher-local")
	out, err := exec.Command("go", "build", "-o", bin, "./ejob-launcher-local").CombinedOutput()
	if err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	return bin
}

// options serves the suite's bootstrap script as a single-file app over HTTP.
func options(t *testing.T) spitest.LauncherOptions {
	dir := t.TempDir()
	app := filepath.Join(dir, "app.sh")
	if err := os.WriteFile(app, []byte(spitest.LauncherCheckScript), 0o755); err != nil {
		t.Fatal(err)
	}
	srv := serveDir(t, dir)
	return spitest.LauncherOptions{
		Config: func() map[string]string { return map[string]string{"dir": t.TempDir()} },
		App: func() spi.LaunchApp {
			return spi.LaunchApp{Name: "suite", AppURL: srv + "/app.sh", BootstrapScript: "./app.sh", AppCacheEnable: true}
		},
		InvalidConfig: map[string]map[string]string{
			"no dir":       {},
			"relative dir": {"dir": "x"},
			"bad cpu":      {"dir": dir, "cpu": "-1"},
		},
	}
}

func TestConformance(t *testing.T) {
	l := locallauncher.Launcher{Self: buildSelf(t)}
	t.Run("in-process", func(t *testing.T) { spitest.TestLauncher(t, l, options(t)) })
	t.Run("grpc", func(t *testing.T) {
		p := sdktest.Connect(t, sdk.Plugins{Launchers: map[string]spi.Launcher{locallauncher.Type: l}})
		spitest.TestLauncher(t, p.Launcher(locallauncher.Type), options(t))
	})
}
