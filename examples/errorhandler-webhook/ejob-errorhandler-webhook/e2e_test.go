package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestEndToEnd builds the ejob host and this plugin, installs the plugin
// in a plugins directory and runs a standalone host on the README's
// configuration: a SCRIPT job that fails every second, with WEBHOOK as its
// error handler posting to a local endpoint. The endpoint must receive
// the failure; the host then stops cleanly on SIGTERM.
func TestEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the ejob binary")
	}
	posts := make(chan Failure, 16)
	endpoint := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var f Failure
		if err := json.NewDecoder(r.Body).Decode(&f); err == nil {
			select {
			case posts <- f:
			default:
			}
		}
	}))
	defer endpoint.Close()

	dir := t.TempDir()
	build := func(out, pkg string) {
		t.Helper()
		if b, err := exec.Command("go", "build", "-o", out, pkg).CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", pkg, err, b)
		}
	}
	ejob := filepath.Join(dir, "ejob")
	build(ejob, "github.com/ejob-io/ejob/cmd/ejob")
	plugins := filepath.Join(dir, "plugins")
	if err := os.Mkdir(plugins, 0o755); err != nil {
		t.Fatal(err)
	}
	plugin := filepath.Join(plugins, "ejob-errorhandler-webhook")
	build(plugin, ".")
	if err := os.Chmod(plugin, 0o755); err != nil { // the host refuses group/world-writable plugins
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "ejob.yaml")
	if err := os.WriteFile(cfg, []byte(`elasticjob:
  jobs:
    nightly-export:
      elasticJobType: SCRIPT
      cron: "* * * * * ?"
      shardingTotalCount: 1
      jobErrorHandlerType: WEBHOOK
      props:
        script.command.line: "sh -c 'exit 3'"
        webhook.url: `+endpoint.URL+`/hook
ejob:
  pluginsDir: plugins
  drainTimeout: 10s
`), 0o644); err != nil {
		t.Fatal(err)
	}
	logs, err := os.Create(filepath.Join(dir, "host.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logs.Close()
	host := exec.Command(ejob, "run", "-c", cfg)
	host.Stdout, host.Stderr = logs, logs
	if err := host.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- host.Wait() }()
	t.Cleanup(func() { _ = host.Process.Kill() })
	output := func() string { b, _ := os.ReadFile(logs.Name()); return string(b) }

	select {
	case f := <-posts:
		if f.Job != "nightly-export" || f.Item != 0 || f.Message == "" {
			t.Errorf("posted %+v, want the failure of item 0 of nightly-export", f)
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("no failure posted within 60s; host output:\n%s", output())
	}
	if err := host.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("host exit after SIGTERM: %v\n%s", err, output())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("host still running 30s after SIGTERM:\n%s", output())
	}
}
