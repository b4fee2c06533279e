//go:build unix

package script_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ejob-io/ejob/internal/testkit"
	"github.com/ejob-io/ejob/plugins/jobtype/script"
	"github.com/ejob-io/ejob/spi"
)

func run(t *testing.T, e *script.Executor, line string, sc spi.ShardingContext) error {
	t.Helper()
	_, err := e.Execute(t.Context(), spi.ExecuteRequest{Context: sc, Props: map[string]string{script.PropCommandLine: line}})
	return err
}

// TestArgvReachesProgram runs a real program (the test binary as helper,
// no shell) that records its argv, and compares it byte for byte with the
// expected list, the ShardingContext JSON last, for both quirk settings.
func TestArgvReachesProgram(t *testing.T) {
	t.Parallel()
	path, quoted := helperPath(t)
	tests := map[string]struct {
		args      string
		sc        spi.ShardingContext
		want      []string // after the helper's own "argv FILE"
		wantQuirk []string
	}{
		"Gson: item parameter, empty job parameter": {
			args: "plain",
			sc: spi.ShardingContext{JobName: "myJob", TaskID: "myJob@-@0,1,2@-@READY@-@192.168.1.10@-@12345",
				ShardingTotalCount: 3, ShardingItem: 0, ShardingParameter: ptr("A")},
			want: []string{"plain", `{"jobName":"myJob","taskId":"myJob@-@0,1,2@-@READY@-@192.168.1.10@-@12345","shardingTotalCount":3,"jobParameter":"","shardingItem":0,"shardingParameter":"A"}`},
		},
		"Gson: HTML-safe job parameter, no item parameter": {
			args: "plain",
			sc: spi.ShardingContext{JobName: "myJob", TaskID: "myJob@-@1@-@READY@-@192.168.1.10@-@12345",
				ShardingTotalCount: 3, JobParameter: "k=v&x='y' <z>", ShardingItem: 1},
			want: []string{"plain", `{"jobName":"myJob","taskId":"myJob@-@1@-@READY@-@192.168.1.10@-@12345","shardingTotalCount":3,"jobParameter":"k\u003dv\u0026x\u003d\u0027y\u0027 \u003cz\u003e","shardingItem":1}`},
		},
		"fencing token last in the JSON": {
			args: "plain",
			sc:   spi.ShardingContext{JobName: "j", ShardingTotalCount: 2, ShardingItem: 1, FencingToken: 4294967397},
			want: []string{"plain", `{"jobName":"j","taskId":"","shardingTotalCount":2,"jobParameter":"","shardingItem":1,"fencingToken":4294967397}`},
		},
		"spaces quotes equals non-ascii": {
			args: `"a b" 'say "hi"' "it's" k=v 作业 'é ü' "" --opt="v w"`,
			sc:   spi.ShardingContext{JobName: "j", ShardingTotalCount: 1, JobParameter: "p q \"r\" 's' 作业", ShardingParameter: ptr("x=y z")},
			want: []string{"a b", `say "hi"`, "it's", "k=v", "作业", "é ü", "", "--opt=v w",
				`{"jobName":"j","taskId":"","shardingTotalCount":1,"jobParameter":"p q \"r\" \u0027s\u0027 作业","shardingItem":0,"shardingParameter":"x\u003dy z"}`},
			wantQuirk: []string{`"a b"`, `'say "hi'`, `"it's"`, "k=v", "作业", `"é ü"`, "", `"--opt=v w"`,
				`{"jobName":"j","taskId":"","shardingTotalCount":1,"jobParameter":"p q \"r\" \u0027s\u0027 作业","shardingItem":0,"shardingParameter":"x\u003dy z"}`},
		},
		"shell syntax is data": {
			args: `'$(touch PWNED)' ; '|' '&&' '>' PWNED`,
			sc:   spi.ShardingContext{JobName: "j", JobParameter: "`touch PWNED`", ShardingParameter: ptr("$(touch PWNED); rm -rf .")},
			want: []string{"$(touch PWNED)", ";", "|", "&&", ">", "PWNED",
				`{"jobName":"j","taskId":"","shardingTotalCount":0,"jobParameter":"` + "`touch PWNED`" + `","shardingItem":0,"shardingParameter":"$(touch PWNED); rm -rf ."}`},
			wantQuirk: []string{`"$(touch PWNED)"`, ";", "|", "&&", ">", "PWNED",
				`{"jobName":"j","taskId":"","shardingTotalCount":0,"jobParameter":"` + "`touch PWNED`" + `","shardingItem":0,"shardingParameter":"$(touch PWNED); rm -rf ."}`},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			for _, quirk := range []string{script.QuirkNone, script.QuirkUpstream} {
				dir := t.TempDir()
				out := filepath.Join(dir, "argv.json")
				pwned := filepath.Join(dir, "PWNED")
				args := strings.ReplaceAll(tc.args, "PWNED", pwned)
				sc := tc.sc
				sc.JobParameter = strings.ReplaceAll(sc.JobParameter, "PWNED", pwned)
				if sc.ShardingParameter != nil {
					sc.ShardingParameter = ptr(strings.ReplaceAll(*sc.ShardingParameter, "PWNED", pwned))
				}
				line := quoted + " argv " + out + " " + args
				_, err := script.New(&recLogger{}).Execute(t.Context(), spi.ExecuteRequest{
					Context: sc,
					Props:   map[string]string{script.PropCommandLine: line, script.PropArgvQuirk: quirk},
				})
				if err != nil {
					t.Fatalf("quirk %s: Execute: %v", quirk, err)
				}
				b, err := os.ReadFile(out)
				if err != nil {
					t.Fatal(err)
				}
				var got []string
				if err := json.Unmarshal(b, &got); err != nil {
					t.Fatal(err)
				}
				want := []string{path, "argv", out}
				expected := tc.want
				if quirk == script.QuirkUpstream && tc.wantQuirk != nil {
					expected = tc.wantQuirk
				}
				for _, w := range expected {
					want = append(want, strings.ReplaceAll(w, "PWNED", pwned))
				}
				if !slices.Equal(got, want) {
					t.Errorf("quirk %s: argv\n got %q\nwant %q", quirk, got, want)
				}
				if _, err := os.Stat(pwned); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("quirk %s: %s exists (stat: %v): something ran a shell", quirk, pwned, err)
				}
			}
		})
	}
}

func TestExitCodes(t *testing.T) {
	t.Parallel()
	_, quoted := helperPath(t)
	for _, code := range []int{0, 1, 42} {
		t.Run(strconv.Itoa(code), func(t *testing.T) {
			t.Parallel()
			err := run(t, script.New(&recLogger{}), quoted+" exit "+strconv.Itoa(code), spi.ShardingContext{JobName: "j", ShardingItem: 2})
			if code == 0 {
				if err != nil {
					t.Fatalf("Execute = %v, want nil", err)
				}
				return
			}
			var exitErr *script.ExitError
			if !errors.As(err, &exitErr) || exitErr.Code != code || exitErr.Signal != "" {
				t.Fatalf("Execute = %v, want an ExitError with code %d", err, code)
			}
			wantTail := make([]string, 0, 20)
			for i := 11; i <= 30; i++ {
				wantTail = append(wantTail, fmt.Sprintf("line %d", i))
			}
			if exitErr.StderrTail != strings.Join(wantTail, "\n") {
				t.Errorf("stderr tail = %q, want lines 11..30", exitErr.StderrTail)
			}
			want := fmt.Sprintf("Process exited with an error: %d (Exit value: %d)", code, code)
			if !containsAll(err.Error(), want, "line 30") || strings.Contains(err.Error(), `"j"`) {
				t.Errorf("error %q lacks %q or the tail, or repeats the job the host names", err, want)
			}
			if errors.Is(err, spi.ErrInvalidConfig) {
				t.Errorf("a failing script is not a config error: %v", err)
			}
		})
	}
}

func TestKilledBySignal(t *testing.T) {
	t.Parallel()
	err := run(t, script.New(&recLogger{}), `sh -c 'kill -9 $$'`, spi.ShardingContext{})
	var exitErr *script.ExitError
	if !errors.As(err, &exitErr) || exitErr.Code != 128+9 || exitErr.Signal != "killed" {
		t.Fatalf("Execute = %v (%#v), want ExitError code 137 signal killed", err, exitErr)
	}
}

func TestProgramNotFound(t *testing.T) {
	t.Parallel()
	for _, line := range []string{"/nonexistent/demo.sh", "ejob-no-such-program-xyz arg"} {
		err := run(t, script.New(&recLogger{}), line, spi.ShardingContext{})
		if err == nil || !strings.Contains(err.Error(), "Execute script failure") || errors.Is(err, spi.ErrInvalidConfig) {
			t.Errorf("%s: Execute = %v, want an execution failure", line, err)
		}
	}
}

func TestMissingCommandLine(t *testing.T) {
	t.Parallel()
	for _, props := range []map[string]string{nil, {script.PropCommandLine: ""}} {
		_, err := script.New(nil).Execute(t.Context(), spi.ExecuteRequest{Props: props})
		if !errors.Is(err, spi.ErrInvalidConfig) || !strings.Contains(err.Error(), "Cannot find script command line, job is not executed.") {
			t.Errorf("props %v: Execute = %v, want upstream's message wrapping spi.ErrInvalidConfig", props, err)
		}
	}
}

// TestOutputLogged checks that stdout and stderr lines reach the Logger
// with the job, item and stream fields, an unterminated last line
// included, and CRLF endings trimmed.
func TestOutputLogged(t *testing.T) {
	t.Parallel()
	_, quoted := helperPath(t)
	logger := &recLogger{}
	if err := run(t, script.New(logger), quoted+" print", spi.ShardingContext{JobName: "out_job", ShardingItem: 3}); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range logger.all() {
		if r.fields["job"] != "out_job" || r.fields["item"] != 3 {
			t.Errorf("record %+v lacks job=out_job item=3", r)
		}
		got = append(got, fmt.Sprintf("%s %s %q", r.level, r.fields["stream"], r.msg))
	}
	slices.Sort(got)
	want := []string{`info stdout "out 1"`, `info stdout "out 2"`, `info stdout "out tail"`, `warn stderr "err 1"`}
	if !slices.Equal(got, want) {
		t.Errorf("logged\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestOutputNotOnStdout runs the executor inside a separate process (the
// test binary in runexec mode, logging with slog to stderr) and checks
// that the script's output appears in that process's log on stderr and
// nothing at all on its stdout, which in a plugin carries the handshake.
func TestOutputNotOnStdout(t *testing.T) {
	t.Parallel()
	path, quoted := helperPath(t)
	cmd := exec.CommandContext(t.Context(), path, "runexec", quoted+" print")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("runexec: %v\nstderr: %s", err, stderr.String())
	}
	if stdout.Len() != 0 {
		t.Errorf("the executor's process wrote to stdout: %q", stdout.String())
	}
	for _, want := range []string{`"msg":"out 1"`, `"msg":"err 1"`, `"job":"log_job"`, `"stream":"stdout"`, `"stream":"stderr"`, `"item":0`} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr lacks %s:\n%s", want, stderr.String())
		}
	}
}

// processGone reports whether pid no longer exists or is a zombie
// (killed, waiting for its parent to reap it).
func processGone(pid int) bool {
	if errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
		return true
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return errors.Is(err, os.ErrNotExist)
	}
	// pid (comm) state ...; comm may hold spaces, so look after the last ')'.
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return len(fields) > 0 && (fields[0] == "Z" || fields[0] == "X")
}

// TestCancelKillsProcessGroup starts a script whose child spawns a
// grandchild sleep 300, cancels the item, and checks that Execute returns
// promptly with context.Canceled and that both processes are gone. With
// ignoreTerm, both ignore SIGTERM, so only the SIGKILL after KillGrace
// can end them.
func TestCancelKillsProcessGroup(t *testing.T) {
	t.Parallel()
	for _, ignoreTerm := range []bool{false, true} {
		t.Run(fmt.Sprintf("ignore_term=%v", ignoreTerm), func(t *testing.T) {
			t.Parallel()
			pidFile := filepath.Join(t.TempDir(), "pids")
			body := "sleep 300 & echo $$ $! > " + pidFile + ".tmp && mv " + pidFile + ".tmp " + pidFile + "; wait"
			if ignoreTerm {
				body = `trap "" TERM; ` + body
			}
			const grace = 300 * time.Millisecond
			e := &script.Executor{Logger: &recLogger{}, KillGrace: grace}
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			done := make(chan error, 1)
			go func() { done <- execLine(ctx, e, "sh -c '"+body+"'") }()

			var pids []int
			testkit.Eventually(t, 10*time.Second, "the pid file", func() bool {
				b, err := os.ReadFile(pidFile)
				if err != nil {
					return false
				}
				pids = nil
				for _, f := range strings.Fields(string(b)) {
					n, err := strconv.Atoi(f)
					if err != nil {
						t.Fatalf("pid file %q", b)
					}
					pids = append(pids, n)
				}
				return len(pids) == 2
			})
			cancelled := time.Now()
			cancel()
			select {
			case err := <-done:
				if !errors.Is(err, context.Canceled) {
					t.Errorf("Execute = %v, want an error wrapping context.Canceled", err)
				}
				took := time.Since(cancelled)
				if ignoreTerm && took < grace {
					t.Errorf("returned %v after cancel, before the %v grace: SIGTERM cannot have ended it", took, grace)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("Execute still running 10s after cancel")
			}
			for _, pid := range pids {
				testkit.Eventually(t, 5*time.Second, fmt.Sprintf("pid %d to be gone", pid), func() bool { return processGone(pid) })
			}
		})
	}
}

func execLine(ctx context.Context, e *script.Executor, line string) error {
	_, err := e.Execute(ctx, spi.ExecuteRequest{
		Context: spi.ShardingContext{JobName: "kill_job"},
		Props:   map[string]string{script.PropCommandLine: line},
	})
	return err
}

// TestDeadlineKillsScript checks the job-timeout path: a deadline on ctx.
func TestDeadlineKillsScript(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := execLine(ctx, script.New(&recLogger{}), "sh -c 'exec sleep 300'")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Execute = %v, want an error wrapping context.DeadlineExceeded", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("Execute took %v", took)
	}
}

// TestBackgroundChildKeepsOutputOpen: a script that exits 0 while a
// background child still holds its stdout succeeds after KillGrace
// instead of hanging.
func TestBackgroundChildKeepsOutputOpen(t *testing.T) {
	t.Parallel()
	logger := &recLogger{}
	e := &script.Executor{Logger: logger, KillGrace: 200 * time.Millisecond}
	pidFile := filepath.Join(t.TempDir(), "pid")
	start := time.Now()
	err := execLine(t.Context(), e, "sh -c 'sleep 300 & echo $! > "+pidFile+"; echo started'")
	if err != nil {
		t.Fatalf("Execute = %v", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("Execute took %v", took)
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
		_ = syscall.Kill(pid, syscall.SIGKILL) // clean up the sleeper
	}
	if !slices.ContainsFunc(logger.all(), func(r record) bool { return r.msg == "started" }) {
		t.Errorf("the output before exit was not logged: %+v", logger.all())
	}
}

func TestPrecancelledDoesNotStart(t *testing.T) {
	t.Parallel()
	out := filepath.Join(t.TempDir(), "ran")
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	err := execLine(ctx, script.New(nil), "touch "+out)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Execute = %v, want context.Canceled", err)
	}
	if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the script ran under a cancelled context")
	}
}

// TestHandshakeEnvNotPassedOn: the variables the host's go-plugin handshake
// sets for the plugin process do not reach scripts; the rest does.
func TestHandshakeEnvNotPassedOn(t *testing.T) {
	t.Setenv("EJOB_PLUGIN_MAGIC_COOKIE", "cookie")
	t.Setenv("PLUGIN_CLIENT_CERT", "cert")
	t.Setenv("PLUGIN_PROTOCOL_VERSIONS", "1")
	t.Setenv("EJOB_SCRIPT_ENV_KEPT", "kept")
	dir := t.TempDir()
	out := filepath.Join(dir, "env")
	sh := filepath.Join(dir, "env.sh")
	if err := os.WriteFile(sh, []byte("#!/bin/sh\nenv > "+out+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := run(t, script.New(&recLogger{}), sh, spi.ShardingContext{JobName: "env_job"}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	env := string(b)
	for _, gone := range []string{"EJOB_PLUGIN_MAGIC_COOKIE=", "PLUGIN_CLIENT_CERT=", "PLUGIN_PROTOCOL_VERSIONS="} {
		if strings.Contains(env, gone) {
			t.Errorf("script environment has %s...:\n%s", gone, env)
		}
	}
	if !strings.Contains(env, "EJOB_SCRIPT_ENV_KEPT=kept") {
		t.Errorf("script environment lost an ordinary variable:\n%s", env)
	}
}

// TestFencingTokenInEnvironment: the script finds the item's fencing token
// in EJOB_FENCING_TOKEN ("0" when the run has none), never one inherited
// from the host's environment.
func TestFencingTokenInEnvironment(t *testing.T) {
	t.Setenv(script.EnvFencingToken, "999")
	dir := t.TempDir()
	out := filepath.Join(dir, "token")
	sh := filepath.Join(dir, "token.sh")
	if err := os.WriteFile(sh, []byte("#!/bin/sh\nenv | grep '^EJOB_FENCING_TOKEN=' > "+out+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for tok, want := range map[int64]string{4294967397: "EJOB_FENCING_TOKEN=4294967397\n", 0: "EJOB_FENCING_TOKEN=0\n"} {
		if err := run(t, script.New(&recLogger{}), sh, spi.ShardingContext{JobName: "fenced", FencingToken: tok}); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != want {
			t.Errorf("token %d: the script's environment has %q, want %q", tok, b, want)
		}
	}
}
