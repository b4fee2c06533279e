package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ejob-io/ejob/host/cli"
)

// exampleBin is the example third-party strategy and brokenBin a plugin
// that breaks two contracts (testdata/ejob-broken), built once in TestMain.
var exampleBin, brokenBin string

// TestMain lets the test binary stand in for the ejob binary: the host
// launches os.Executable() with the hidden built-in plugin subcommand, and
// this test binary then serves the built-ins exactly as bin/ejob does.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "__builtin-plugins" {
		os.Exit(cli.Main(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
	}
	dir, err := os.MkdirTemp("", "ejob-cli-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	exampleBin = filepath.Join(dir, "ejob-sharding-rendezvous")
	brokenBin = filepath.Join(dir, "ejob-broken")
	for bin, pkg := range map[string]string{
		exampleBin: "github.com/ejob-io/ejob/examples/sharding-rendezvous/ejob-sharding-rendezvous",
		brokenBin:  "./testdata/ejob-broken",
	} {
		if out, err := exec.Command("go", "build", "-o", bin, pkg).CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "build %s: %v\n%s", pkg, err, out)
			os.Exit(1)
		}
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func run(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var out, errb bytes.Buffer
	code = cli.Main(ctx, args, &out, &errb)
	return code, out.String(), errb.String()
}

// instances are deliberately not in runtime order; the runtime order is
// descending string order: 1.2@-@200, 1.1@-@100, 1.10@-@50 ('@' > '0').
const instances = "192.168.1.10@-@50,192.168.1.2@-@200,192.168.1.1@-@100"

func TestShardingPreviewMatchesUpstreamVectors(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		strategy, job string
		total         int
		want          string
	}{
		// AVG_ALLOCATION on the runtime order, total 10.
		"avg total 10": {"AVG_ALLOCATION", "any", 10, `{"192.168.1.2@-@200":[0,1,2,9],"192.168.1.1@-@100":[3,4,5],"192.168.1.10@-@50":[6,7,8]}`},
		// ODEVITY and ROUND_ROBIN on the runtime order, by the job name's
		// Java String.hashCode.
		"odevity even hash":         {"ODEVITY", "test_job", 2, `{"192.168.1.2@-@200":[],"192.168.1.1@-@100":[1],"192.168.1.10@-@50":[0]}`},
		"odevity odd hash":          {"odevity", "myJob", 2, `{"192.168.1.2@-@200":[0],"192.168.1.1@-@100":[1],"192.168.1.10@-@50":[]}`},
		"round robin offset 2":      {"Round_Robin", "javaSimpleJob", 2, `{"192.168.1.2@-@200":[1],"192.168.1.1@-@100":[],"192.168.1.10@-@50":[0]}`},
		"round robin MinInt32":      {"ROUND_ROBIN", "polygenelubricants", 3, `{"192.168.1.2@-@200":[2],"192.168.1.1@-@100":[0],"192.168.1.10@-@50":[1]}`},
		"more instances than items": {"AVG_ALLOCATION", "j", 1, `{"192.168.1.2@-@200":[0],"192.168.1.1@-@100":[],"192.168.1.10@-@50":[]}`},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			code, out, errOut := run(t, "sharding", "preview", "--strategy", c.strategy, "--job", c.job,
				"--total", fmt.Sprint(c.total), "--instances", instances)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			if got := strings.TrimSpace(out); got != c.want {
				t.Fatalf("got  %s\nwant %s", got, c.want)
			}
			if !json.Valid([]byte(out)) {
				t.Fatalf("not JSON: %s", out)
			}
		})
	}
}

func TestShardingPreviewWithThirdPartyPlugin(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	copyFile(t, exampleBin, filepath.Join(dir, "ejob-sharding-rendezvous"))
	code, out, errOut := run(t, "sharding", "preview", "--plugins-dir", dir, "--strategy", "rendezvous",
		"--job", "orders", "--total", "12", "--instances", instances)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var got map[string][]int
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	seen := map[int]bool{}
	for _, items := range got {
		for _, it := range items {
			if seen[it] {
				t.Fatalf("item %d twice: %s", it, out)
			}
			seen[it] = true
		}
	}
	if len(got) != 3 || len(seen) != 12 {
		t.Fatalf("want 3 instances and 12 items: %s", out)
	}
}

func TestShardingPreviewErrors(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		args     []string
		wantCode int
		wantErr  []string
	}{
		"unknown strategy": {[]string{"--strategy", "NOPE", "--job", "j", "--total", "2", "--instances", "a"}, 1,
			[]string{`"NOPE"`, "AVG_ALLOCATION", "ODEVITY", "ROUND_ROBIN"}},
		"missing job":        {[]string{"--total", "2", "--instances", "a"}, 2, []string{"--job is required"}},
		"zero total":         {[]string{"--job", "j", "--total", "0", "--instances", "a"}, 2, []string{"--total must be > 0"}},
		"missing instances":  {[]string{"--job", "j", "--total", "2"}, 2, []string{"--instances is required"}},
		"empty instance":     {[]string{"--job", "j", "--total", "2", "--instances", "a,,b"}, 2, []string{"empty instance id"}},
		"bad flag value":     {[]string{"--job", "j", "--total", "two", "--instances", "a"}, 2, []string{"--total"}},
		"missing plugin dir": {[]string{"--plugins-dir", "/nonexistent/ejob", "--job", "j", "--total", "2", "--instances", "a"}, 1, []string{"/nonexistent/ejob"}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			code, out, errOut := run(t, append([]string{"sharding", "preview"}, c.args...)...)
			if code != c.wantCode {
				t.Fatalf("exit %d, want %d; stderr: %s", code, c.wantCode, errOut)
			}
			if out != "" {
				t.Fatalf("stdout should be empty on error, got %q", out)
			}
			for _, w := range c.wantErr {
				if !strings.Contains(errOut, w) {
					t.Errorf("stderr %q does not contain %q", errOut, w)
				}
			}
		})
	}
}

func TestPluginsListAndLock(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	plugin := filepath.Join(dir, "ejob-sharding-rendezvous")
	copyFile(t, exampleBin, plugin)

	code, out, errOut := run(t, "plugins", "list", "--plugins-dir", dir)
	if code != 0 {
		t.Fatalf("list: exit %d: %s", code, errOut)
	}
	for _, want := range []string{"KIND", "sharding", "AVG_ALLOCATION", "ROUND_ROBIN", "threadpool", "SINGLE_THREAD",
		"errorhandler", "THROW", "RENDEZVOUS", "1.0.0", plugin, "(built-in)"} {
		if !strings.Contains(out, want) {
			t.Errorf("list output lacks %q:\n%s", want, out)
		}
	}
	code, out, errOut = run(t, "plugins", "lock", "--plugins-dir", dir)
	if code != 0 || !strings.Contains(out, "pinned 1 plugin binaries") {
		t.Fatalf("lock: exit %d out %q err %q", code, out, errOut)
	}
	lock, err := os.ReadFile(filepath.Join(dir, "ejob-plugins.lock"))
	if err != nil {
		t.Fatal(err)
	}
	// sha256sum -c verifies the lock file (same format).
	check := exec.Command("sha256sum", "-c", "ejob-plugins.lock")
	check.Dir = dir
	if out, err := check.CombinedOutput(); err != nil {
		t.Fatalf("sha256sum -c: %v\n%s\nlock:\n%s", err, out, lock)
	}
	// Tamper with the binary: list now refuses it, naming the checksum problem.
	f, err := os.OpenFile(plugin, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("tampered"))
	f.Close()
	code, out, errOut = run(t, "plugins", "list", "--plugins-dir", dir)
	if code != 0 {
		t.Fatalf("list after tampering: exit %d: %s", code, errOut)
	}
	if strings.Contains(out, "RENDEZVOUS") || !strings.Contains(errOut, "checksum mismatch") {
		t.Fatalf("tampered plugin not refused:\nstdout:\n%s\nstderr:\n%s", out, errOut)
	}
}

// TestPluginsCheck: `ejob plugins check DIR` runs the suites through the
// real transport: a conforming plugin's checks pass; the contract breaks of
// a broken one fail, each naming its check and case; a file that is not a
// plugin fails too; the exit status is 1.
func TestPluginsCheck(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	copyFile(t, exampleBin, filepath.Join(dir, "ejob-sharding-rendezvous"))
	copyFile(t, brokenBin, filepath.Join(dir, "ejob-broken"))
	if err := os.WriteFile(filepath.Join(dir, "ejob-garbage"), []byte("#!/bin/sh\necho garbage\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := run(t, "plugins", "check", dir)
	if code != 1 || !strings.Contains(errOut, "contract breaks found") {
		t.Errorf("exit %d, stderr %q; want 1 and contract breaks found", code, errOut)
	}
	for _, want := range []string{
		"sharding RENDEZVOUS\n    ok    items_assigned_exactly_once\n",
		"    ok    duplicate_instances_is_invalid_config\n",
		"sharding BROKEN_SHARDING\n",
		"    FAIL  duplicate_instances_is_invalid_config: case ",
		"errorhandler BROKEN_HANDLER\n",
		"    FAIL  validate_errors_wrap_invalid_config: case empty_props: Validate(map[]) returned",
		"broken.address is required; its errors must wrap spi.ErrInvalidConfig",
		"    skip  handle_error: no ErrorHandlerOptions.Request given",
		"ejob-garbage\n    FAIL  not a usable plugin: not a valid ejob plugin: it printed \"garbage\"",
		"3 types in 2 binaries: ",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Count(out, "FAIL") != 3 {
		t.Errorf("want exactly 3 FAIL lines:\n%s", out)
	}
	if n := strings.Count(out+errOut, "ejob-garbage"); n != 1 {
		t.Errorf("the garbage binary is reported %d times, want once:\nstdout:\n%s\nstderr:\n%s", n, out, errOut)
	}

	// list reports a skipped entry once too (its own line, no WARN besides).
	code, out, errOut = run(t, "plugins", "list", "--plugins-dir", dir)
	if code != 0 {
		t.Fatalf("list: exit %d: %s", code, errOut)
	}
	if n := strings.Count(out+errOut, "ejob-garbage"); n != 1 || !strings.Contains(errOut, "skipped "+filepath.Join(dir, "ejob-garbage")) {
		t.Errorf("list reports the garbage binary %d times, want one \"skipped\" line:\nstdout:\n%s\nstderr:\n%s", n, out, errOut)
	}
}

func TestHelpReadsWell(t *testing.T) {
	t.Parallel()
	code, out, _ := run(t, "--help")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, want := range []string{"plugins", "sharding", "plugin binary"} {
		if !strings.Contains(out, want) {
			t.Errorf("--help lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "__builtin-plugins") {
		t.Errorf("--help shows the hidden subcommand:\n%s", out)
	}
}

func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, data, 0o755); err != nil {
		t.Fatal(err)
	}
}

func TestCronPrintsNextFireTimes(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		args     []string
		wantCode int
		wantOut  string
		wantErr  string
	}{
		"weekday business hours in Shanghai": {
			args:    []string{"cron", "0 0/15 9-17 ? * MON-FRI", "--tz", "Asia/Shanghai", "--from", "2026-11-21T00:00:00Z", "-n", "3"},
			wantOut: "2026-11-23T09:00:00+08:00\n2026-11-23T09:15:00+08:00\n2026-11-23T09:30:00+08:00\n",
		},
		"GMT offset zone and last day of month": {
			args:    []string{"cron", "0 30 2 L * ?", "--tz", "GMT+08:00", "--from", "2026-02-01T00:00:00Z", "-n", "2"},
			wantOut: "2026-02-28T02:30:00+08:00\n2026-03-31T02:30:00+08:00\n",
		},
		"past year fires no more": {
			args: []string{"cron", "0 0 0 1 1 ? 2020", "--tz", "UTC", "--from", "2026-01-01T00:00:00Z"}, wantErr: "fires only 0 more",
		},
		"every 90s": {
			args:    []string{"cron", "@every 90s", "--from", "2026-01-01T00:00:00Z", "-n", "5"},
			wantOut: "2026-01-01T00:01:30Z\n2026-01-01T00:03:00Z\n2026-01-01T00:04:30Z\n2026-01-01T00:06:00Z\n2026-01-01T00:07:30Z\n",
		},
		"crontab across spring forward in New York": {
			args:    []string{"cron", "30 2 * * *", "--tz", "America/New_York", "--from", "2025-03-08T00:00:00-05:00", "-n", "2"},
			wantOut: "2025-03-08T02:30:00-05:00\n2025-03-10T02:30:00-04:00\n",
		},
		"descriptor in Berlin": {
			args:    []string{"cron", "@monthly", "--tz", "Europe/Berlin", "--from", "2026-01-15T00:00:00Z", "-n", "2"},
			wantOut: "2026-02-01T00:00:00+01:00\n2026-03-01T00:00:00+01:00\n",
		},
		"six stars is a Quartz error": {args: []string{"cron", "* * * * * *"}, wantCode: 1, wantErr: "read as Quartz (6 fields): specifying both a day-of-month and a day-of-week"},
		"question mark in a crontab":  {args: []string{"cron", "0/5 * * * ?"}, wantCode: 1, wantErr: "read as a standard crontab (5 fields): day-of-week field: '?' is Quartz syntax"},
		"every zero":                  {args: []string{"cron", "@every 0s"}, wantCode: 1, wantErr: "read as a descriptor (starts with @): @every needs a positive"},
		"invalid field named":         {args: []string{"cron", "0 0 25 * * ?"}, wantCode: 1, wantErr: "hour field"},
		"unknown zone":                {args: []string{"cron", "0 0 * * * ?", "--tz", "Mars/Olympus"}, wantCode: 1, wantErr: "Mars/Olympus"},
		"bad --from":                  {args: []string{"cron", "0 0 * * * ?", "--from", "yesterday"}, wantCode: 2, wantErr: "RFC 3339"},
		"unquoted expression":         {args: []string{"cron", "0", "0", "*"}, wantCode: 2, wantErr: "exactly one cron expression"},
		"non-positive count":          {args: []string{"cron", "0 0 * * * ?", "-n", "0"}, wantCode: 2, wantErr: "-n must be > 0"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			code, out, errOut := run(t, c.args...)
			if code != c.wantCode {
				t.Fatalf("exit %d, want %d; stderr %s", code, c.wantCode, errOut)
			}
			if c.wantOut != "" && out != c.wantOut {
				t.Fatalf("stdout:\n%s\nwant:\n%s", out, c.wantOut)
			}
			if c.wantErr != "" && !strings.Contains(errOut, c.wantErr) {
				t.Fatalf("stderr %q lacks %q", errOut, c.wantErr)
			}
		})
	}
}

// `ejob cron '@every 90s' -n 5` counts from now: five times 90 s apart,
// the first 90 s after the current second.
func TestCronEveryFromNow(t *testing.T) {
	t.Parallel()
	before := time.Now().Truncate(time.Second)
	code, out, errOut := run(t, "cron", "@every 90s", "-n", "5")
	after := time.Now()
	if code != 0 {
		t.Fatalf("exit %d; stderr %s", code, errOut)
	}
	lines := strings.Fields(out)
	if len(lines) != 5 {
		t.Fatalf("stdout %q: want 5 lines", out)
	}
	var prev time.Time
	for i, l := range lines {
		got, err := time.Parse(time.RFC3339, l)
		if err != nil {
			t.Fatal(err)
		}
		if i > 0 && got.Sub(prev) != 90*time.Second {
			t.Errorf("line %d = %s, %v after the line before, want 90s", i, l, got.Sub(prev))
		}
		prev = got
		lo := before.Add(time.Duration(i+1) * 90 * time.Second)
		if got.Before(lo) || got.After(after.Add(time.Duration(i+1)*90*time.Second)) {
			t.Errorf("line %d = %s, want %d×90s after the command started (%s)", i, l, i+1, before.Format(time.RFC3339))
		}
	}
}
