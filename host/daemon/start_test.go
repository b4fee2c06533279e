package daemon_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ejob-io/ejob/core/reg"
	"github.com/ejob-io/ejob/core/reg/zktest"
	"github.com/ejob-io/ejob/core/reg/zookeeper"
)

// TestHostWithoutJobsExits: a host none of whose jobs could register (the
// namespace belongs to another digest identity) exits non-zero naming each
// job, its error and the digest; a host where only some failed runs the
// others and names the ones that failed.
func TestHostWithoutJobsExits(t *testing.T) {
	srv := zktest.Start(t, zktest.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// alice owns /taken; the namespace node itself stays open.
	open := zookeeper.DefaultConfig(srv.Addr(), "auth")
	c, err := zookeeper.Connect(ctx, open)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Create(ctx, "/open", nil, reg.Persistent); err != nil {
		t.Fatal(err)
	}
	alice := open
	alice.Digest = "alice:secret"
	a, err := zookeeper.Connect(ctx, alice)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if _, err := a.Create(ctx, "/taken", []byte("SCRIPT"), reg.Persistent); err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	config := func(name string, jobs ...string) string {
		var b strings.Builder
		fmt.Fprintf(&b, "elasticjob:\n  regCenter:\n    serverLists: %s\n    namespace: auth\n    digest: bob:other\n  jobs:\n", srv.Addr())
		for _, j := range jobs {
			fmt.Fprintf(&b, "    %s:\n      elasticJobType: SCRIPT\n      cron: \"0 0 0 1 1 ? 2099\"\n      shardingTotalCount: 1\n      props: {script.command.line: \"true\"}\n", j)
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}

	t.Run("no job", func(t *testing.T) {
		cmd := exec.Command(ejobBin, "run", "-c", config("none.yaml", "taken"))
		out, err := cmd.CombinedOutput()
		if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 1 {
			t.Fatalf("ejob run: %v, want exit status 1:\n%s", err, out)
		}
		for _, want := range []string{"no job could start: 1 of 1 jobs failed to start", `job "taken"`, "not authorized", "check elasticjob.regCenter.digest"} {
			if !strings.Contains(string(out), want) {
				t.Errorf("output lacks %q:\n%s", want, out)
			}
		}
		if strings.Contains(string(out), "host started") {
			t.Errorf("the host reported itself started:\n%s", out)
		}
	})
	t.Run("some jobs", func(t *testing.T) {
		logs := runUntilStarted(t, os.Environ(), "run", "-c", config("some.yaml", "taken", "fresh"))
		for _, want := range []string{"job failed to start; the host runs the others: ", "job=taken", "host started: ", "jobs=1"} {
			if !strings.Contains(logs, want) {
				t.Errorf("output lacks %q:\n%s", want, logs)
			}
		}
	})
}

// TestJavaPeersOnZooKeeper: `ejob run` on a ZooKeeper namespace with a job
// whose time zone a Java instance rejects: with ejob.javaPeers: strict it
// exits 1 naming the file position, job, key and what Java does, and writes
// nothing; by default (warn) it logs one WARN for the job and starts.
func TestJavaPeersOnZooKeeper(t *testing.T) {
	srv := zktest.Start(t, zktest.Options{})
	dir := t.TempDir()
	config := func(name, ejob string) string {
		data := fmt.Sprintf("elasticjob:\n  regCenter:\n    serverLists: %s\n    namespace: peers\n  jobs:\n"+
			"    shanghai:\n      elasticJobType: SCRIPT\n      cron: \"0 0 0 1 1 ? 2099\"\n      timeZone: Asia/Shanghai\n"+
			"      shardingTotalCount: 1\n      props: {script.command.line: \"true\"}\n%s", srv.Addr(), ejob)
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	configNode := func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c, err := zookeeper.Connect(ctx, zookeeper.DefaultConfig(srv.Addr(), "peers"))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_, ok, err := c.Exists(ctx, "/shanghai/config")
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}

	t.Run("strict", func(t *testing.T) {
		p := config("strict.yaml", "ejob:\n  javaPeers: strict\n")
		cmd := exec.Command(ejobBin, "run", "-c", p)
		out, err := cmd.CombinedOutput()
		if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 1 {
			t.Fatalf("ejob run: %v, want exit status 1:\n%s", err, out)
		}
		for _, want := range []string{p + `:6: elasticjob.jobs.shanghai: timeZone "Asia/Shanghai"`, "Invalid time zone specification", "ejob.javaPeers"} {
			if !strings.Contains(string(out), want) {
				t.Errorf("output lacks %q:\n%s", want, out)
			}
		}
		if configNode() {
			t.Error("the refused host wrote the job's config node")
		}
	})
	t.Run("warn", func(t *testing.T) {
		logs := runUntilStarted(t, os.Environ(), "run", "-c", config("warn.yaml", ""))
		var warns []string
		for _, l := range strings.Split(logs, "\n") {
			if strings.Contains(l, "[WARN]") && strings.Contains(l, "job=shanghai keys=timeZone") &&
				strings.Contains(l, "Invalid time zone specification") {
				warns = append(warns, l)
			}
		}
		if len(warns) != 1 {
			t.Errorf("want one WARN naming the job, the key and what Java does:\n%s", logs)
		}
		if !configNode() {
			t.Error("the host did not write the job's config node")
		}
	})
}
