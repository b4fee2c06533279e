package pluginhost_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ejob-io/ejob/host/pluginhost"
	"github.com/ejob-io/ejob/internal/proctree"
	"github.com/ejob-io/ejob/internal/testkit"
	"github.com/ejob-io/ejob/internal/transport"
	"github.com/ejob-io/ejob/spi"
)

// TestPluginsDirectoryNeverHangs: whatever sits in the plugins directory,
// Open (what `ejob plugins list` and `ejob run` do first) and Close
// return. A plugin run from a wrapper script whose background child keeps
// its stdout open serves, and is stopped with that child; broken files
// are skipped, each with one line saying "not a valid ejob plugin" and why,
// without go-plugin's own messages in the log; nothing any of them started
// survives.
func TestPluginsDirectoryNeverHangs(t *testing.T) {
	dir, pids := t.TempDir(), t.TempDir()
	script := func(name, body string) {
		t.Helper()
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	withChild := func(name string) string {
		return fmt.Sprintf("sleep 600 &\necho $! > %s\n", filepath.Join(pids, name))
	}
	script("ejob-wrapper", withChild("wrapper")+testBins.hosttest+"\n")
	script("ejob-silent-script", withChild("silent-script")+"exec sleep 600\n")
	script("ejob-garbage", withChild("garbage")+"echo 'this|is not|a handshake'\n")
	script("ejob-fake-handshake", fmt.Sprintf("echo '1|%d|unix|/nonexistent/plugin.sock|grpc|'\nexec sleep 600\n", transport.ProtocolVersion))
	install(t, dir, testBins.silent, "ejob-silent", 0o755)
	want := map[string]string{
		"ejob-silent":         "it is a native executable that does not contain the ejob plugin handshake",
		"ejob-silent-script":  "it printed nothing on stdout within 1s",
		"ejob-garbage":        `it printed "this|is not|a handshake" on stdout, not a plugin handshake line`,
		"ejob-fake-handshake": `its handshake names the Unix socket "/nonexistent/plugin.sock", which does not exist`,
	}
	child := func(name string) int {
		t.Helper()
		var pid int
		testkit.Eventually(t, 10*time.Second, "the pid of "+name+"'s child", func() bool {
			b, err := os.ReadFile(filepath.Join(pids, name))
			if err == nil {
				pid, err = strconv.Atoi(strings.TrimSpace(string(b)))
			}
			return err == nil
		})
		t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
		return pid
	}
	gone := func(name string, pid int) {
		t.Helper()
		testkit.Eventually(t, 10*time.Second, fmt.Sprintf("%s's child %d to be gone", name, pid), func() bool { return proctree.Gone(pid) })
	}

	cat, logs := open(t, dir, func(c *pluginhost.Config) { c.StartTimeout = time.Second })
	skipped := map[string]string{}
	for _, s := range cat.Skipped() {
		skipped[filepath.Base(s.Path)] = s.Reason.Error()
	}
	for name, why := range want {
		reason, ok := skipped[name]
		if !ok {
			t.Errorf("%s not skipped", name)
			continue
		}
		if !strings.Contains(reason, "not a valid ejob plugin: "+why) || strings.Contains(reason, "\n") {
			t.Errorf("%s skipped for %q\nwant one line saying \"not a valid ejob plugin: %s\"", name, reason, why)
		}
	}
	if len(skipped) != len(want) {
		t.Errorf("skipped %v, want only %d files", skipped, len(want))
	}
	for _, noise := range []string{"Unrecognized remote plugin message", "signal: killed", "connection refused", "stdio service"} {
		if strings.Contains(logs.String(), noise) {
			t.Errorf("log has %q:\n%s", noise, logs)
		}
	}
	for _, line := range strings.Split(logs.String(), "\n") {
		if (strings.Contains(line, "[WARN]") || strings.Contains(line, "[ERROR]")) && !strings.Contains(line, "skipping plugins directory entry") {
			t.Errorf("log line other than the skip warning:\n%s", line)
		}
	}
	for _, name := range []string{"garbage", "silent-script", "wrapper"} {
		gone(name, child(name)) // the wrapper's: after its probe
	}

	// The wrapper serves; its new process and child stop with Close.
	if err := os.Remove(filepath.Join(pids, "wrapper")); err != nil {
		t.Fatal(err)
	}
	pool, err := spi.Resolve[spi.ThreadPoolSizeProvider](cat, "HOSTTEST_POOL")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pool.PoolSize(ctxT(t, 20*time.Second), spi.PoolSizeRequest{JobName: "normal"}); err != nil {
		t.Fatalf("PoolSize through the wrapper: %v", err)
	}
	running := child("wrapper")
	if proctree.Gone(running) {
		t.Fatal("the wrapper's child is not running while the wrapper serves")
	}
	cat.Close()
	gone("wrapper", running)
}
