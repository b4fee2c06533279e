package plugin_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/ejob-io/ejob/plugins/launcher/kubernetes/plugin"
	"github.com/ejob-io/ejob/sdk"
	"github.com/ejob-io/ejob/sdk/sdktest"
	"github.com/ejob-io/ejob/spi"
	"github.com/ejob-io/ejob/spi/spitest"
	"github.com/hashicorp/go-hclog"
)

// kubeconfig is the test cluster's (scripts/k8s.sh start, one node), or
// empty when the binaries are not cached; skip says why then.
var kubeconfig, skip string

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	script, _ := filepath.Abs("../../../../scripts/k8s.sh")
	if exec.Command("bash", script, "bin").Run() != nil && os.Getenv("EJOB_K8S_BUILD") == "" {
		skip = "the Kubernetes binaries are not cached (scripts/k8s.sh build, or set EJOB_K8S_BUILD=1 to build them now)"
		fmt.Fprintln(os.Stderr, "kubernetes launcher plugin tests skipped: "+skip)
		return m.Run()
	}
	dir, err := os.MkdirTemp("", "ejob-k8s-plugin-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	start := exec.Command("bash", script, "start", dir, "--nodes", "1", "--cpu", "2", "--memory", "2Gi")
	start.Stdout, start.Stderr = os.Stderr, os.Stderr
	start.Env = append(os.Environ(), "EJOB_OWNER_PID="+strconv.Itoa(os.Getpid()))
	defer func() {
		stop := exec.Command("bash", script, "stop", dir)
		stop.Stdout, stop.Stderr = os.Stderr, os.Stderr
		_ = stop.Run()
	}()
	if err := start.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "k8s.sh start:", err)
		return 1
	}
	kubeconfig = filepath.Join(dir, "kubeconfig")
	return m.Run()
}

func options(t *testing.T) spitest.LauncherOptions {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "app.sh"), []byte(spitest.LauncherCheckScript), 0o755); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.FileServer(http.Dir(dir)))
	t.Cleanup(srv.Close)
	return spitest.LauncherOptions{
		Config: func() map[string]string {
			return map[string]string{plugin.KeyKubeconfig: kubeconfig, plugin.KeyNamespace: "default"}
		},
		App: func() spi.LaunchApp {
			return spi.LaunchApp{Name: "suite", AppURL: srv.URL + "/app.sh", BootstrapScript: "./app.sh"}
		},
		InvalidConfig: map[string]map[string]string{
			"missing kubeconfig": {plugin.KeyKubeconfig: filepath.Join(dir, "none")},
			"unknown context":    {plugin.KeyKubeconfig: kubeconfig, plugin.KeyContext: "no-such-context"},
		},
	}
}

// TestConformance runs the launcher suite in process and through gRPC
// against the test cluster.
func TestConformance(t *testing.T) {
	if skip != "" {
		t.Skip(skip)
	}
	l := plugin.New(hclog.New(&hclog.LoggerOptions{Name: "launcher", Output: os.Stderr, Level: hclog.Warn}))
	t.Run("in-process", func(t *testing.T) { spitest.TestLauncher(t, l, options(t)) })
	t.Run("grpc", func(t *testing.T) {
		p := sdktest.Connect(t, sdk.Plugins{Launchers: map[string]spi.Launcher{plugin.TypeName: l}})
		spitest.TestLauncher(t, p.Launcher(plugin.TypeName), options(t))
	})
}
