package cli_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ejob-io/ejob/core/config"
	"github.com/ejob-io/ejob/core/lifecycle"
	"github.com/ejob-io/ejob/core/node"
	"github.com/ejob-io/ejob/core/reg"
	"github.com/ejob-io/ejob/core/reg/zktest"
	"github.com/ejob-io/ejob/core/reg/zookeeper"
	"github.com/ejob-io/ejob/host/cli"
)

// opsWorld is a namespace on a real ZooKeeper with two jobs as hosts leave
// them: "report" (3 items, 2 instances on 10.0.0.1 and 10.0.0.2) and
// "nightly" (one-off, 1 instance on 10.0.0.1). The instances are ephemeral
// nodes of the returned client's session.
func opsWorld(t *testing.T) (c reg.Client, flags []string) {
	t.Helper()
	zk := zktest.Start(t, zktest.Options{})
	ns := "cli-ops"
	cfg := zookeeper.DefaultConfig(zk.Addr(), ns)
	cfg.Logger = hclog.NewNullLogger()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := zookeeper.Connect(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	a, b := "10.0.0.1@-@100", "10.0.0.2@-@200"
	writeJob(t, c, "report", "0 0/5 * * * ?", 3, map[string]string{a: "10.0.0.1", b: "10.0.0.2"}, map[int]string{0: a, 1: b, 2: a})
	writeJob(t, c, "nightly", "", 1, map[string]string{a: "10.0.0.1"}, map[int]string{0: a})
	return c, []string{"--zk", zk.Addr(), "--namespace", ns}
}

func writeJob(t *testing.T, c reg.Client, name, cron string, total int, instances map[string]string, owners map[int]string) {
	t.Helper()
	ctx := context.Background()
	j := node.New(name)
	cfg := config.New(name, total)
	cfg.Cron = cron
	data, err := config.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	must := func(_ any, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(reg.Persist(ctx, c, j.Root(), []byte("SCRIPT")))
	must(reg.Persist(ctx, c, j.Config(), data))
	for id, ip := range instances {
		must(reg.Persist(ctx, c, j.Server(ip), []byte("ENABLED")))
		v, _ := node.EncodeInstance(node.JobInstance{JobInstanceID: id, ServerIP: ip})
		must(c.Create(ctx, j.Instance(id), v, reg.Ephemeral, reg.WithParents()))
	}
	for item, id := range owners {
		must(reg.Persist(ctx, c, j.ShardingInstance(item), []byte(id)))
	}
}

func value(t *testing.T, c reg.Client, path string) (string, bool) {
	t.Helper()
	v, _, err := c.Get(context.Background(), path)
	if err != nil {
		return "", false
	}
	return string(v), true
}

// ops runs an operator command against the world and checks its exit code.
func ops(t *testing.T, flags []string, wantCode int, args ...string) (stdout, stderr string) {
	t.Helper()
	code, out, errOut := run(t, append(args, flags...)...)
	if code != wantCode {
		t.Fatalf("ejob %s: exit %d, want %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), code, wantCode, out, errOut)
	}
	return out, errOut
}

func TestOperatorCommands(t *testing.T) {
	c, flags := opsWorld(t)
	report := node.New("report")

	t.Run("jobs", func(t *testing.T) {
		out, _ := ops(t, flags, cli.ExitOK, "jobs")
		for _, re := range []string{`(?m)^nightly\s+\(one-off\)\s+1\s+1\s+READY$`, `(?m)^report\s+0 0/5 \* \* \* \?\s+3\s+2\s+READY$`} {
			if !regexp.MustCompile(re).MatchString(out) {
				t.Errorf("jobs output lacks %s:\n%s", re, out)
			}
		}
		out, _ = ops(t, flags, cli.ExitOK, "jobs", "--json")
		var briefs []map[string]any
		if err := json.Unmarshal([]byte(out), &briefs); err != nil || len(briefs) != 2 || briefs[1]["jobName"] != "report" ||
			briefs[1]["instanceCount"] != 2.0 || briefs[1]["status"] != "OK" || briefs[1]["state"] != "READY" {
			t.Errorf("jobs --json = %s (%v)", out, err)
		}
	})

	t.Run("job show", func(t *testing.T) {
		// Secret props are masked, as the REST API masks them; the stored
		// config is put back afterwards.
		orig, _ := value(t, c, report.Config())
		defer func() { _, _ = reg.Persist(context.Background(), c, report.Config(), []byte(orig)) }()
		withProps := orig + "props:\n  email.password: hunter2-secret\n  script.command.line: echo hi\n"
		if _, err := reg.Persist(context.Background(), c, report.Config(), []byte(withProps)); err != nil {
			t.Fatal(err)
		}
		out, _ := ops(t, flags, cli.ExitOK, "job", "show", "report")
		if strings.Contains(out, "hunter2") || !strings.Contains(out, "email.password: '***'") || !strings.Contains(out, "script.command.line: echo hi") {
			t.Errorf("job show does not mask the secret prop (only it):\n%s", out)
		}
		if out, _ := ops(t, flags, cli.ExitOK, "job", "show", "report", "--json"); strings.Contains(out, "hunter2") || !strings.Contains(out, `"email.password": "***"`) {
			t.Errorf("job show --json does not mask the secret prop:\n%s", out)
		}
		for _, want := range []string{"State:   READY (ElasticJob status OK)", "Cron:    0 0/5 * * * ? (host zone)", "shardingTotalCount: 3",
			"1     READY  10.0.0.2@-@200", "10.0.0.1  ENABLED  10.0.0.1@-@100"} {
			if !strings.Contains(out, want) {
				t.Errorf("job show lacks %q:\n%s", want, out)
			}
		}
		out, _ = ops(t, flags, cli.ExitOK, "job", "show", "report", "--json", "-n", "3")
		var v struct {
			Config        lifecycle.ConfigJSON
			NextFireTimes []time.Time
			Sharding      []lifecycle.ShardingInfo
		}
		if err := json.Unmarshal([]byte(out), &v); err != nil || v.Config.ShardingTotalCount != 3 || len(v.NextFireTimes) != 3 ||
			v.NextFireTimes[1].Sub(v.NextFireTimes[0]) != 5*time.Minute || len(v.Sharding) != 3 {
			t.Errorf("job show --json = %s (%v)", out, err)
		}
		_, errOut := ops(t, flags, cli.ExitNotFound, "job", "show", "nope")
		if !strings.Contains(errOut, `job not found: "nope" in namespace "cli-ops"`) {
			t.Errorf("unknown job: %s", errOut)
		}
	})

	t.Run("job set", func(t *testing.T) {
		before, _ := value(t, c, report.Config())
		for _, bad := range [][]string{{"cron=0 0/5 * * *  ?  ? ?"}, {"shardingTotalCount=0"}, {"shardingTotalCount=x"},
			{"cron=61 * * * *"}, {"nope=1"}, {"timeZone=Nowhere/Land"}} {
			_, errOut := ops(t, flags, cli.ExitRefused, append([]string{"job", "set", "report"}, bad...)...)
			if !strings.Contains(errOut, "invalid request") {
				t.Errorf("job set %v: %s", bad, errOut)
			}
		}
		ops(t, flags, cli.ExitNotFound, "job", "set", "nope", "cron=0 0/5 * * * ?")
		if after, _ := value(t, c, report.Config()); after != before {
			t.Fatalf("a refused job set wrote the config:\n%s", after)
		}
		out, _ := ops(t, flags, cli.ExitOK, "job", "set", "report", "cron=0 0/10 * * * ?", "props.x=1")
		if !strings.Contains(out, "- cron: 0 0/5 * * * ?") || !strings.Contains(out, "+ cron: 0 0/10 * * * ?") {
			t.Errorf("job set output: %s", out)
		}
		if after, _ := value(t, c, report.Config()); !strings.Contains(after, "cron: 0 0/10 * * * ?\n") || !strings.Contains(after, "props:\n  x: '1'\n") {
			t.Errorf("config after job set:\n%s", after)
		}
		out, _ = ops(t, flags, cli.ExitOK, "job", "set", "report", "props.x=1")
		if !strings.Contains(out, "report: no change") {
			t.Errorf("unchanged job set: %s", out)
		}
	})

	t.Run("job edit", func(t *testing.T) {
		dir := t.TempDir()
		// The "editor" is a script that edits the file in place.
		editor := func(sedExpr string) {
			script := filepath.Join(dir, "ed.sh")
			if err := os.WriteFile(script, []byte("#!/bin/sh\nsed -i '"+sedExpr+"' \"$1\"\n"), 0o755); err != nil {
				t.Fatal(err)
			}
			t.Setenv("VISUAL", "")
			t.Setenv("EDITOR", script)
		}
		editor("s/^description: .*/description: edited/")
		out, _ := ops(t, flags, cli.ExitOK, "job", "edit", "report")
		if v, _ := value(t, c, report.Config()); !strings.Contains(v, "description: edited\n") || !strings.Contains(out, "+ description: edited") {
			t.Errorf("after edit: %s\n%s", out, v)
		}
		before, _ := value(t, c, report.Config())
		editor("s/^shardingTotalCount: .*/shardingTotalCount: 0/")
		_, errOut := ops(t, flags, cli.ExitRefused, "job", "edit", "report")
		kept := regexp.MustCompile(`your edit is kept in (\S+)`).FindStringSubmatch(errOut)
		if kept == nil {
			t.Fatalf("refused edit: %s", errOut)
		}
		if data, err := os.ReadFile(kept[1]); err != nil || !strings.Contains(string(data), "shardingTotalCount: 0") {
			t.Errorf("kept edit %s: %q, %v", kept[1], data, err)
		}
		_ = os.Remove(kept[1])
		editor("s/^jobName: .*/jobName: other/")
		ops(t, flags, cli.ExitRefused, "job", "edit", "report")
		editor("s/^cron: .*/cron: every day/")
		ops(t, flags, cli.ExitRefused, "job", "edit", "report")
		if after, _ := value(t, c, report.Config()); after != before {
			t.Fatalf("a refused edit wrote the config:\n%s", after)
		}
		editor("s/x/x/")
		if out, _ := ops(t, flags, cli.ExitOK, "job", "edit", "report"); !strings.Contains(out, "no change") {
			t.Errorf("unchanged edit: %s", out)
		}
	})

	t.Run("disable and enable", func(t *testing.T) {
		ops(t, flags, cli.ExitOK, "disable", "report", "--item", "1")
		if _, ok := value(t, c, report.Disabled(1)); !ok {
			t.Error("item 1 not disabled")
		}
		ops(t, flags, cli.ExitOK, "enable", "report", "--item", "1")
		if _, ok := value(t, c, report.Disabled(1)); ok {
			t.Error("item 1 still disabled")
		}
		_, errOut := ops(t, flags, cli.ExitRefused, "disable", "report", "--item", "3")
		if !strings.Contains(errOut, `job "report" has items 0 to 2`) {
			t.Errorf("item out of range: %s", errOut)
		}
		ops(t, flags, cli.ExitNotFound, "disable", "nope")
		ops(t, flags, cli.ExitNotFound, "disable", "report", "--server", "10.9.9.9")
		ops(t, flags, cli.ExitNotFound, "disable", "--server", "10.9.9.9")
		ops(t, flags, cli.ExitUsage, "disable")
		ops(t, flags, cli.ExitUsage, "disable", "report", "--item", "1", "--server", "10.0.0.1")
		if _, ok := value(t, c, report.Server("10.9.9.9")); ok {
			t.Error("a refused disable created a server node")
		}

		out, _ := ops(t, flags, cli.ExitOK, "disable", "--server", "10.0.0.1", "--json")
		var targets []lifecycle.Target
		if err := json.Unmarshal([]byte(out), &targets); err != nil || len(targets) != 2 {
			t.Errorf("disable --server --json = %s (%v)", out, err)
		}
		for _, job := range []string{"report", "nightly"} {
			if v, _ := value(t, c, node.New(job).Server("10.0.0.1")); v != "DISABLED" {
				t.Errorf("%s server 10.0.0.1 = %q", job, v)
			}
		}
		out, _ = ops(t, flags, cli.ExitOK, "jobs")
		if !regexp.MustCompile(`(?m)^nightly.*DISABLED$`).MatchString(out) || !regexp.MustCompile(`(?m)^report.*READY$`).MatchString(out) {
			t.Errorf("jobs after disabling 10.0.0.1: %s", out)
		}
		out, _ = ops(t, flags, cli.ExitOK, "servers")
		if !regexp.MustCompile(`(?m)^10\.0\.0\.1\s+1\s+2\s+2$`).MatchString(out) || !regexp.MustCompile(`(?m)^10\.0\.0\.2\s+1\s+1\s+0$`).MatchString(out) {
			t.Errorf("servers: %s", out)
		}
		out, _ = ops(t, flags, cli.ExitOK, "servers", "10.0.0.1")
		if !regexp.MustCompile(`(?m)^report\s+1\s+DISABLED$`).MatchString(out) {
			t.Errorf("servers 10.0.0.1: %s", out)
		}
		ops(t, flags, cli.ExitOK, "enable", "report")
		ops(t, flags, cli.ExitOK, "enable", "nightly", "--server", "10.0.0.1")
		for _, job := range []string{"report", "nightly"} {
			if v, _ := value(t, c, node.New(job).Server("10.0.0.1")); v != "ENABLED" {
				t.Errorf("%s server 10.0.0.1 = %q after enable", job, v)
			}
		}
	})

	t.Run("trigger", func(t *testing.T) {
		out, _ := ops(t, flags, cli.ExitOK, "trigger", "report")
		if !strings.Contains(out, "triggered report on 2 instances") {
			t.Errorf("trigger: %s", out)
		}
		for _, id := range []string{"10.0.0.1@-@100", "10.0.0.2@-@200"} {
			if _, ok := value(t, c, report.TriggerInstance(id)); !ok {
				t.Errorf("no trigger node for %s", id)
			}
		}
		ops(t, flags, cli.ExitNotFound, "trigger", "nope")
	})

	t.Run("shutdown, remove, delete", func(t *testing.T) {
		ops(t, flags, cli.ExitNotFound, "shutdown", "report", "--server", "10.9.9.9")
		out, _ := ops(t, flags, cli.ExitOK, "shutdown", "report", "--server", "10.0.0.2")
		if !strings.Contains(out, "shut report down on instance 10.0.0.2@-@200") {
			t.Errorf("shutdown: %s", out)
		}
		if _, ok := value(t, c, report.Instance("10.0.0.2@-@200")); ok {
			t.Error("instance still there after shutdown")
		}
		if _, ok := value(t, c, report.Server("10.0.0.2")); !ok {
			t.Error("shutdown removed the server node")
		}
		ops(t, flags, cli.ExitOK, "remove", "report", "--server", "10.0.0.2")
		if _, ok := value(t, c, report.Server("10.0.0.2")); ok {
			t.Error("server node still there after remove")
		}
		_, errOut := ops(t, flags, cli.ExitRefused, "job", "delete", "report")
		if !strings.Contains(errOut, "has 1 live instance (10.0.0.1@-@100)") {
			t.Errorf("delete with live instances: %s", errOut)
		}
		ops(t, flags, cli.ExitOK, "job", "delete", "report", "--force")
		if _, ok := value(t, c, report.Root()); ok {
			t.Error("job still there after delete")
		}
		ops(t, flags, cli.ExitNotFound, "job", "delete", "report")
	})
}

// A job that has never fired (no owner, the resharding flag set) is
// NEVER_RUN, not SHARDING_FLAG as upstream's status calls it; a trigger
// that no instance would run exits 4 with the reason and writes nothing,
// where it once reported success on a disabled job.
func TestStatesAndRefusedTrigger(t *testing.T) {
	c, flags := opsWorld(t)
	a := "10.0.0.1@-@100"
	writeJob(t, c, "fresh", "", 2, map[string]string{a: "10.0.0.1"}, nil)
	fresh := node.New("fresh")
	if _, err := reg.Persist(context.Background(), c, fresh.ShardingNecessary(), nil); err != nil {
		t.Fatal(err)
	}
	out, _ := ops(t, flags, cli.ExitOK, "jobs")
	if !regexp.MustCompile(`(?m)^fresh\s+\(one-off\)\s+2\s+1\s+NEVER_RUN$`).MatchString(out) {
		t.Errorf("jobs: a never-run job is not NEVER_RUN:\n%s", out)
	}
	out, _ = ops(t, flags, cli.ExitOK, "job", "show", "fresh")
	for _, want := range []string{"State:   NEVER_RUN (ElasticJob status SHARDING_FLAG)", "0     NEVER_RUN  -", "1     NEVER_RUN  -"} {
		if !strings.Contains(out, want) {
			t.Errorf("job show lacks %q:\n%s", want, out)
		}
	}

	ops(t, flags, cli.ExitOK, "disable", "fresh")
	_, errOut := ops(t, flags, cli.ExitRefused, "trigger", "fresh")
	if !strings.Contains(errOut, `job "fresh" is disabled on every server with a live instance (10.0.0.1); enable it first`) {
		t.Errorf("trigger of a disabled job: %s", errOut)
	}
	if _, ok := value(t, c, fresh.TriggerInstance(a)); ok {
		t.Error("a refused trigger wrote a trigger node")
	}
	ops(t, flags, cli.ExitOK, "enable", "fresh")
	ops(t, flags, cli.ExitOK, "trigger", "fresh")

	writeJob(t, c, "orphan", "", 1, nil, nil)
	_, errOut = ops(t, flags, cli.ExitRefused, "trigger", "orphan")
	if !strings.Contains(errOut, `job "orphan" has no live instance`) {
		t.Errorf("trigger of a job without instances: %s", errOut)
	}
}
