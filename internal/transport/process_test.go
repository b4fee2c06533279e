package transport_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ejob-io/ejob/internal/proctree"
	"github.com/ejob-io/ejob/internal/testkit"
	"github.com/ejob-io/ejob/internal/transport"
	"github.com/ejob-io/ejob/spi"
	"github.com/ejob-io/ejob/spi/gson"
)

func TestInfo(t *testing.T) {
	t.Parallel()
	p, _ := launch(t, bins.plugin)
	if p.Pid() <= 0 {
		t.Errorf("Pid() = %d", p.Pid())
	}
	info, err := p.Info(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	want := spi.Info{
		PluginVersion: "1.2.3-test",
		APIVersion:    spi.APIVersion,
		Types: []spi.TypeKey{
			{Kind: spi.KindSharding, Type: "TEST_AVG"},
			{Kind: spi.KindSharding, Type: "Test_Other"},
			{Kind: spi.KindErrorHandler, Type: "TEST_LOG"},
			{Kind: spi.KindJobType, Type: "TEST_JOB"},
			{Kind: spi.KindThreadPool, Type: "TEST_POOL"},
		},
	}
	if !reflect.DeepEqual(info, want) {
		t.Errorf("Info() = %+v\nwant %+v", info, want)
	}
	if p.Exited() {
		t.Error("Exited() = true for a live plugin")
	}
}

func TestRoundTrips(t *testing.T) {
	t.Parallel()
	p, _ := launch(t, bins.plugin)
	c := p.Conn()
	ctx := t.Context()

	t.Run("Sharding", func(t *testing.T) {
		for _, typeName := range []string{"TEST_AVG", "test_avg", " Test_Other "} {
			resp, err := c.ShardingStrategy(typeName).Sharding(ctx, spi.ShardingRequest{
				JobName: "j", Instances: []string{"b@-@2", "a@-@1", "c@-@3"}, ShardingTotalCount: 5,
			})
			if err != nil {
				t.Fatalf("%s: %v", typeName, err)
			}
			want := spi.ShardingResponse{Assignments: []spi.Assignment{
				{InstanceID: "b@-@2", Items: []int{0, 3}},
				{InstanceID: "a@-@1", Items: []int{1, 4}},
				{InstanceID: "c@-@3", Items: []int{2}},
			}}
			if !reflect.DeepEqual(resp, want) {
				t.Errorf("%s: got %+v want %+v", typeName, resp, want)
			}
		}
		resp, err := c.ShardingStrategy("TEST_AVG").Sharding(ctx, spi.ShardingRequest{JobName: "j", ShardingTotalCount: 3})
		if err != nil || len(resp.Assignments) != 0 {
			t.Errorf("no instances: %+v, %v", resp, err)
		}
		resp, err = c.ShardingStrategy("TEST_AVG").Sharding(ctx, spi.ShardingRequest{JobName: "j", Instances: []string{"a", "b"}, ShardingTotalCount: 1})
		if err != nil || resp.Assignments[1].Items == nil || len(resp.Assignments[1].Items) != 0 {
			t.Errorf("instance without items must have an empty, non-nil list: %+v, %v", resp, err)
		}
	})

	t.Run("HandleError", func(t *testing.T) {
		h := c.ErrorHandler("test_log")
		for _, propagate := range []bool{true, false} {
			req := spi.HandleErrorRequest{
				JobName: "j", InstanceID: "10.0.0.1@-@7", TaskID: "t1", ShardingItem: -1,
				Props: map[string]string{"k": "v", "propagate": strconv.FormatBool(propagate)},
				Error: spi.JobError{Message: "it broke", Detail: "stack\nline 2"},
			}
			req.Props["echo"] = "10.0.0.1@-@7|t1|v|-1|it broke|stack\nline 2"
			resp, err := h.HandleError(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			if resp.Propagate != propagate {
				t.Errorf("Propagate = %v, want %v", resp.Propagate, propagate)
			}
		}
	})

	t.Run("ValidateErrorHandler", func(t *testing.T) {
		h := c.ErrorHandler("TEST_LOG")
		if err := h.Validate(ctx, spi.ValidatePropsRequest{JobName: "j", Props: map[string]string{"address": "x"}}); err != nil {
			t.Errorf("valid props: %v", err)
		}
		err := h.Validate(ctx, spi.ValidatePropsRequest{JobName: "j"})
		if !errors.Is(err, spi.ErrInvalidConfig) || !strings.Contains(err.Error(), "prop address is required") {
			t.Errorf("missing prop: %v", err)
		}
	})

	t.Run("Execute", func(t *testing.T) {
		empty, a := "", "A"
		for name, param := range map[string]*string{"nil": nil, "empty": &empty, "set": &a} {
			sc := spi.ShardingContext{
				JobName: "check", TaskID: "check@-@0@-@READY@-@1.2.3.4@-@9", ShardingTotalCount: 3,
				JobParameter: "k=v&x='y' <z>", ShardingItem: 2, ShardingParameter: param, FencingToken: 1<<33 + 7,
			}
			_, err := c.JobExecutor("TEST_JOB").Execute(ctx, spi.ExecuteRequest{
				Context: sc, Props: map[string]string{"want": string(gson.ShardingContext(sc))},
			})
			if err != nil {
				t.Errorf("shardingParameter %s: %v", name, err)
			}
		}
	})

	t.Run("ValidateJobType", func(t *testing.T) {
		e := c.JobExecutor("TEST_JOB")
		if err := e.Validate(ctx, spi.ValidatePropsRequest{JobName: "j", Props: map[string]string{"command": "echo"}}); err != nil {
			t.Errorf("valid props: %v", err)
		}
		if err := e.Validate(ctx, spi.ValidatePropsRequest{JobName: "j"}); !errors.Is(err, spi.ErrInvalidConfig) {
			t.Errorf("missing prop: %v", err)
		}
	})

	t.Run("PoolSize", func(t *testing.T) {
		resp, err := c.ThreadPoolSizeProvider("Test_Pool").PoolSize(ctx, spi.PoolSizeRequest{JobName: "j", AvailableCPUs: 3})
		if err != nil || resp.Size != 6 {
			t.Errorf("PoolSize = %+v, %v; want 6", resp, err)
		}
	})
}

func TestUnknownType(t *testing.T) {
	t.Parallel()
	p, _ := launch(t, bins.plugin)
	_, err := p.Conn().ShardingStrategy("NOPE").Sharding(t.Context(), spi.ShardingRequest{JobName: "j", ShardingTotalCount: 1})
	if !errors.Is(err, spi.ErrUnknownType) {
		t.Fatalf("err = %v, want ErrUnknownType", err)
	}
	for _, s := range []string{`"NOPE"`, "TEST_AVG, Test_Other", "testplugin"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not mention %s", err, s)
		}
	}
	_, err = p.Conn().ErrorHandler("TEST_AVG").HandleError(t.Context(), spi.HandleErrorRequest{JobName: "j"})
	if !errors.Is(err, spi.ErrUnknownType) || !strings.Contains(err.Error(), "TEST_LOG") {
		t.Errorf("sharding type used as error handler: %v", err)
	}
}

func TestSentinelsSurvive(t *testing.T) {
	t.Parallel()
	p, _ := launch(t, bins.plugin)
	tests := map[string]struct {
		sentinel error
		msg      string
	}{
		"invalid":     {spi.ErrInvalidConfig, "prop x.y of job invalid must be positive: invalid config"},
		"unsupported": {spi.ErrUnsupported, "sharding cannot do that: unsupported"},
		"unknown":     {spi.ErrUnknownType, "no such upstream thing: unknown type"},
		"fail":        {nil, "plain failure from sharding"},
	}
	all := []error{spi.ErrInvalidConfig, spi.ErrUnsupported, spi.ErrUnknownType, spi.ErrPluginExited}
	for job, tt := range tests {
		t.Run(job, func(t *testing.T) {
			t.Parallel()
			_, err := p.Conn().ShardingStrategy("TEST_AVG").Sharding(t.Context(), spi.ShardingRequest{JobName: job, ShardingTotalCount: 1})
			if err == nil {
				t.Fatal("no error")
			}
			for _, s := range all {
				if got, want := errors.Is(err, s), s == tt.sentinel; got != want {
					t.Errorf("errors.Is(%v, %v) = %v", err, s, got)
				}
			}
			if !strings.HasSuffix(err.Error(), tt.msg) {
				t.Errorf("error %q does not end with the plugin's message %q", err, tt.msg)
			}
		})
	}
}

func TestPanicBecomesError(t *testing.T) {
	t.Parallel()
	p, _ := launch(t, bins.plugin)
	pool := p.Conn().ThreadPoolSizeProvider("TEST_POOL")
	for i := 0; i < 3; i++ {
		_, err := pool.PoolSize(t.Context(), spi.PoolSizeRequest{JobName: "panic", AvailableCPUs: 1})
		if err == nil || !strings.Contains(err.Error(), "plugin panicked: boom in pool size") {
			t.Fatalf("err = %v, want plugin panicked", err)
		}
		if errors.Is(err, spi.ErrPluginExited) {
			t.Fatalf("a panic must not read as a dead plugin: %v", err)
		}
		resp, err := pool.PoolSize(t.Context(), spi.PoolSizeRequest{JobName: "4"})
		if err != nil || resp.Size != 4 {
			t.Fatalf("call after panic: %+v, %v", resp, err)
		}
	}
	if p.Exited() {
		t.Error("plugin exited after a panic")
	}
}

// hang starts a hanging Execute in the background and returns once the
// plugin has entered it, with the call's result channel and the file the
// plugin touches when it sees cancellation.
func hang(t *testing.T, ctx context.Context, c *transport.Conn) (<-chan error, string) {
	t.Helper()
	dir := t.TempDir()
	started, cancelled := filepath.Join(dir, "started"), filepath.Join(dir, "cancelled")
	done := make(chan error, 1)
	go func() {
		_, err := c.JobExecutor("TEST_JOB").Execute(ctx, spi.ExecuteRequest{
			Context: spi.ShardingContext{JobName: "hang"},
			Props:   map[string]string{"started": started, "cancelled": cancelled},
		})
		done <- err
	}()
	testkit.Eventually(t, 10*time.Second, "Execute to start in the plugin", fileExists(started))
	return done, cancelled
}

func TestCallerCancel(t *testing.T) {
	t.Parallel()
	p, _ := launch(t, bins.plugin)
	ctx, cancel := context.WithCancel(t.Context())
	done, cancelled := hang(t, ctx, p.Conn())
	cancel()
	err := <-done
	if !errors.Is(err, context.Canceled) || errors.Is(err, spi.ErrPluginExited) {
		t.Fatalf("err = %v, want context.Canceled only", err)
	}
	testkit.Eventually(t, 10*time.Second, "the plugin to observe ctx.Done()", fileExists(cancelled))
	if _, err := p.Conn().ThreadPoolSizeProvider("TEST_POOL").PoolSize(t.Context(), spi.PoolSizeRequest{JobName: "2"}); err != nil {
		t.Errorf("call after cancel: %v", err)
	}
}

func TestDeadline(t *testing.T) {
	t.Parallel()
	p, _ := launch(t, bins.plugin)
	ctx, cancel := context.WithTimeout(t.Context(), time.Second)
	defer cancel()
	done, cancelled := hang(t, ctx, p.Conn())
	err := <-done
	if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, spi.ErrPluginExited) {
		t.Fatalf("err = %v, want context.DeadlineExceeded", err)
	}
	testkit.Eventually(t, 10*time.Second, "the plugin to observe the deadline", fileExists(cancelled))
}

func TestPluginKilledMidCall(t *testing.T) {
	t.Parallel()
	p, _ := launch(t, bins.plugin)
	done, _ := hang(t, t.Context(), p.Conn())
	if err := syscall.Kill(p.Pid(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, spi.ErrPluginExited) || errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want ErrPluginExited", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Execute did not return after the plugin was killed")
	}
	select {
	case <-p.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("Done() not closed after the plugin was killed")
	}
	if !p.Exited() {
		t.Error("Exited() = false")
	}
	_, err := p.Conn().ShardingStrategy("TEST_AVG").Sharding(t.Context(), spi.ShardingRequest{JobName: "j", ShardingTotalCount: 1})
	if !errors.Is(err, spi.ErrPluginExited) {
		t.Errorf("call after exit: %v", err)
	}
}

func TestKill(t *testing.T) {
	t.Parallel()
	p, _ := launch(t, bins.plugin)
	pid := p.Pid()
	p.Kill()
	p.Kill()
	select {
	case <-p.Done():
	default:
		t.Fatal("Done() not closed after Kill returned")
	}
	testkit.Eventually(t, 5*time.Second, "the plugin process to disappear", func() bool { return proctree.Gone(pid) })
	if _, err := p.Info(t.Context()); !errors.Is(err, spi.ErrPluginExited) {
		t.Errorf("Info after Kill: %v", err)
	}
}

func TestStrayOutputIsLogged(t *testing.T) {
	t.Parallel()
	p, logs := launch(t, bins.plugin)
	s := p.Conn().ShardingStrategy("TEST_AVG")
	for i := 0; i < 50; i++ {
		if _, err := s.Sharding(t.Context(), spi.ShardingRequest{JobName: "noisy", Instances: []string{"a"}, ShardingTotalCount: 2}); err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
	}
	want := []string{
		// fmt.Println to os.Stdout after Serve: via go-plugin's stdio stream.
		`[WARN]  host.testplugin: plugin wrote to stdout: line="stdout noise from sharding"`,
		`[INFO]  host.testplugin: plugin wrote to stderr: line="stderr noise from sharding"`,
		// sdk.Logger line, re-levelled under the plugin's name.
		`[WARN]  host.testplugin: called: @module=testplugin job=noisy method=sharding`,
	}
	for _, w := range want {
		testkit.Eventually(t, 10*time.Second, "host log line "+w, func() bool { return strings.Contains(logs.String(), w) })
	}
	if n := strings.Count(logs.String(), "stdout noise from sharding"); n > 50 {
		t.Errorf("%d stdout lines logged for 50 calls", n)
	}
}

// TestPluginLogFieldsInAFixedOrder: go-plugin re-logs a plugin's JSON log
// line with its fields taken from a map; every such line must carry them
// in one fixed order (sorted by key, the timestamp last), not a random
// order on each line.
func TestPluginLogFieldsInAFixedOrder(t *testing.T) {
	t.Parallel()
	p, logs := launch(t, bins.plugin)
	s := p.Conn().ShardingStrategy("TEST_AVG")
	const calls = 30
	for i := 0; i < calls; i++ {
		if _, err := s.Sharding(t.Context(), spi.ShardingRequest{JobName: "ordered", Instances: []string{"a"}, ShardingTotalCount: 2}); err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
	}
	lines := func() []string {
		var out []string
		for _, l := range strings.Split(logs.String(), "\n") {
			if strings.Contains(l, "host.testplugin: called:") && strings.Contains(l, "job=ordered") {
				out = append(out, l)
			}
		}
		return out
	}
	testkit.Eventually(t, 10*time.Second, "every call's log line", func() bool { return len(lines()) >= calls })
	for _, l := range lines() {
		if !strings.Contains(l, "called: @module=testplugin job=ordered method=sharding timestamp=") {
			t.Errorf("fields out of order: %s", l)
		}
	}
}

// TestPluginLogsAtTheHostsLevel: the host passes its log level to the
// plugin process (LogLevelEnv), whose sdk.Logger uses it.
func TestPluginLogsAtTheHostsLevel(t *testing.T) {
	t.Parallel()
	for _, level := range []hclog.Level{hclog.Warn, hclog.Debug} {
		t.Run(level.String(), func(t *testing.T) {
			t.Parallel()
			p, err := transport.Launch(t.Context(), transport.LaunchConfig{Path: bins.plugin,
				Logger: hclog.New(&hclog.LoggerOptions{Output: io.Discard, Level: level})})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Kill()
			_, err = p.Conn().JobExecutor("TEST_JOB").Execute(t.Context(), spi.ExecuteRequest{Context: spi.ShardingContext{JobName: "loglevel"}})
			if want := "plugin log level " + level.String(); err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("Execute: %v, want an error saying %q", err, want)
			}
		})
	}
}

func TestLaunchErrors(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		path    *string
		args    []string
		timeout time.Duration
		want    []error
		wantMsg []string
	}{
		"plain Go program": {path: &bins.notPlugin, want: []error{transport.ErrNotPlugin}},
		"shell script":     {path: &bins.garbageScript, want: []error{transport.ErrNotPlugin}},
		"silent hang":      {path: &bins.sleepScript, timeout: 500 * time.Millisecond, want: []error{transport.ErrNotPlugin}},
		"zero-byte file":   {path: &bins.empty, want: []error{transport.ErrNotPlugin}},
		"missing file":     {path: &bins.notExists, want: []error{transport.ErrNotPlugin, fs.ErrNotExist}},
		"protocol version": {path: &bins.badProto, want: []error{transport.ErrProtocolVersion}},
		// A plugin of protocol version 1 may lack Cancel and RenewLease,
		// which the host relies on: it is refused, saying so.
		"previous protocol version": {path: &bins.badProto, args: []string{"1"}, want: []error{transport.ErrProtocolVersion},
			wantMsg: []string{`it speaks ejob plugin protocol version "1"`, fmt.Sprintf("this host speaks ejob plugin protocol version %d; rebuild the plugin", transport.ProtocolVersion)}},
		"API version": {path: &bins.badAPI, want: []error{transport.ErrAPIVersion}},
	}
	sentinels := []error{transport.ErrNotPlugin, transport.ErrProtocolVersion, transport.ErrAPIVersion}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			p, err := transport.Launch(t.Context(), transport.LaunchConfig{Path: *tt.path, Args: tt.args, StartTimeout: tt.timeout})
			if err == nil {
				p.Kill()
				t.Fatal("Launch succeeded")
			}
			t.Log(err)
			for _, w := range tt.want {
				if !errors.Is(err, w) {
					t.Errorf("err = %v, want %v", err, w)
				}
			}
			for _, s := range sentinels {
				if errors.Is(err, s) && !errors.Is(tt.want[0], s) {
					t.Errorf("err = %v also matches %v", err, s)
				}
			}
			if !strings.Contains(err.Error(), *tt.path) {
				t.Errorf("error %q does not name the binary", err)
			}
			for _, w := range tt.wantMsg {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

func TestLaunchCancelled(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := transport.Launch(ctx, transport.LaunchConfig{Path: bins.plugin}); !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
	ctx, cancel = context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	_, err := transport.Launch(ctx, transport.LaunchConfig{Path: bins.sleepScript})
	if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, transport.ErrNotPlugin) {
		t.Errorf("err = %v, want context.DeadlineExceeded", err)
	}
}

// TestNoOrphans kills a host with SIGKILL and checks that its plugin
// follows, both through Launch (Pdeathsig and the parent watcher) and with
// a bare exec (the parent watcher alone), and that a process the plugin
// started in a session of its own (setsid) goes with it.
func TestNoOrphans(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"launch", "raw"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			pid := killHost(t, mode)
			testkit.Eventually(t, 10*time.Second, "the orphaned plugin to exit", func() bool { return proctree.Gone(pid) })
		})
	}
	t.Run("setsid child", func(t *testing.T) {
		t.Parallel()
		pidFile := filepath.Join(t.TempDir(), "child")
		pid := killHost(t, "launch", pidFile)
		child := childPid(t, pidFile)
		testkit.Eventually(t, 10*time.Second, "the orphaned plugin to exit", func() bool { return proctree.Gone(pid) })
		testkit.Eventually(t, 10*time.Second, "the plugin's setsid child to be gone", func() bool { return proctree.Gone(child) })
	})
}

// killHost starts testdata/host in mode with the test plugin (and extra
// arguments), waits for the plugin's pid, kills the host with SIGKILL and
// returns the pid; the plugin is killed when the test ends.
func killHost(t *testing.T, mode string, extra ...string) int {
	t.Helper()
	host := exec.Command(bins.host, append([]string{mode, bins.plugin}, extra...)...)
	out, err := host.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := host.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = host.Process.Kill(); _ = host.Wait() })
	lines := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(out).ReadString('\n')
		lines <- strings.TrimSpace(line)
	}()
	var pid int
	select {
	case line := <-lines:
		if pid, err = strconv.Atoi(line); err != nil {
			t.Fatalf("host printed %q, not a pid", line)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("host did not report its plugin's pid")
	}
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	if proctree.Gone(pid) {
		t.Fatal("plugin not running before the host is killed")
	}
	if err := host.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = host.Wait()
	return pid
}
