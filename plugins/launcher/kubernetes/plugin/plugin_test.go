package plugin_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/ejob-io/ejob/plugins/launcher/kubernetes/internal/testcluster"
	"github.com/ejob-io/ejob/plugins/launcher/kubernetes/plugin"
	"github.com/ejob-io/ejob/sdk"
	"github.com/ejob-io/ejob/sdk/sdktest"
	"github.com/ejob-io/ejob/spi"
	"github.com/ejob-io/ejob/spi/spitest"
	"github.com/hashicorp/go-hclog"
)

// cluster is the test cluster (scripts/k8s.sh start, one node).
var cluster *testcluster.Cluster

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	root, err := filepath.Abs("../../../..")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	c, stop, err := testcluster.Start(root, nil, "--nodes", "1", "--cpu", "2", "--memory", "2Gi")
	defer stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if c.Skip != "" {
		fmt.Fprintln(os.Stderr, "kubernetes launcher plugin tests skipped: "+c.Skip)
	}
	cluster = c
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
			return map[string]string{plugin.KeyKubeconfig: cluster.Kubeconfig, plugin.KeyNamespace: "default"}
		},
		App: func() spi.LaunchApp {
			return spi.LaunchApp{Name: "suite", AppURL: srv.URL + "/app.sh", BootstrapScript: "./app.sh"}
		},
		InvalidConfig: map[string]map[string]string{
			"missing kubeconfig": {plugin.KeyKubeconfig: filepath.Join(dir, "none")},
			"unknown context":    {plugin.KeyKubeconfig: cluster.Kubeconfig, plugin.KeyContext: "no-such-context"},
			"unknown setting":    {plugin.KeyKubeconfig: cluster.Kubeconfig, "helperImages": "busybox"},
			"relative cache dir": {plugin.KeyKubeconfig: cluster.Kubeconfig, plugin.KeyAppCacheDir: "cache"},
		},
	}
}

// TestConformance runs the launcher suite in process and through gRPC
// against the test cluster.
func TestConformance(t *testing.T) {
	if cluster.Skip != "" {
		t.Skip(cluster.Skip)
	}
	l := plugin.New(hclog.New(&hclog.LoggerOptions{Name: "launcher", Output: os.Stderr, Level: hclog.Warn}))
	t.Run("in-process", func(t *testing.T) { spitest.TestLauncher(t, l, options(t)) })
	t.Run("grpc", func(t *testing.T) {
		p := sdktest.Connect(t, sdk.Plugins{Launchers: map[string]spi.Launcher{plugin.TypeName: l}})
		spitest.TestLauncher(t, p.Launcher(plugin.TypeName), options(t))
	})
}
