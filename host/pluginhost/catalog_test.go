package pluginhost_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ejob-io/ejob/host/pluginhost"
	"github.com/ejob-io/ejob/internal/proctest"
	"github.com/ejob-io/ejob/internal/proctree"
	"github.com/ejob-io/ejob/internal/testkit"
	"github.com/ejob-io/ejob/spi"
)

// bins holds binaries built once for the whole test binary.
type bins struct {
	dir      string
	ejob     string // the ejob binary: serves the built-ins
	hosttest string // testdata/ejob-hosttest, type HOSTTEST
	override string // the same, built to serve AVG_ALLOCATION
	notPlug  string // a Go program that is not a plugin
	badAPI   string // reports another spi.APIVersion
	badProto string // another handshake protocol version
	silent   string // a Go program that never prints anything
}

var testBins bins // set once in TestMain, read-only afterwards

func TestMain(m *testing.M) {
	if dir := os.Getenv(lockChildEnv); dir != "" {
		// TestLockFileModeFollowsUmask's child: write a lock file under
		// the umask its shell set, and nothing else.
		if err := (pluginhost.Lock{"ejob-x": strings.Repeat("0", 64)}).Write(filepath.Join(dir, pluginhost.LockFileName)); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	dir, err := os.MkdirTemp("", "ejob-host-plugins-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	b := bins{dir: dir,
		ejob:     filepath.Join(dir, "ejob"),
		hosttest: filepath.Join(dir, "ejob-hosttest"),
		override: filepath.Join(dir, "ejob-override"),
		notPlug:  filepath.Join(dir, "ejob-notplugin"),
		badAPI:   filepath.Join(dir, "ejob-badapi"),
		badProto: filepath.Join(dir, "ejob-badproto"),
		silent:   filepath.Join(dir, "ejob-silent"),
	}
	notPlugSrc := filepath.Join(dir, "notplugin")
	_ = os.MkdirAll(notPlugSrc, 0o755)
	_ = os.WriteFile(filepath.Join(notPlugSrc, "main.go"), []byte("package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(\"hello, I am not a plugin\") }\n"), 0o644)
	_ = os.WriteFile(filepath.Join(notPlugSrc, "go.mod"), []byte("module notplugin\n\ngo 1.22\n"), 0o644)
	builds := [][]string{
		{"build", "-o", b.ejob, "github.com/ejob-io/ejob/cmd/ejob"},
		{"build", "-o", b.hosttest, "./testdata/ejob-hosttest"},
		{"build", "-ldflags", "-X main.typeName=AVG_ALLOCATION", "-o", b.override, "./testdata/ejob-hosttest"},
		{"build", "-o", b.badAPI, "github.com/ejob-io/ejob/internal/transport/testdata/badapi"},
		{"build", "-o", b.badProto, "github.com/ejob-io/ejob/internal/transport/testdata/badproto"},
		{"build", "-o", b.silent, "github.com/ejob-io/ejob/internal/transport/testdata/silent"},
	}
	for _, args := range builds {
		if out, err := exec.Command("go", args...).CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "go %s: %v\n%s", strings.Join(args, " "), err, out)
			os.Exit(1)
		}
	}
	cmd := exec.Command("go", "build", "-o", b.notPlug, ".")
	cmd.Dir = notPlugSrc
	if out, err := cmd.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build notplugin: %v\n%s", err, out)
		os.Exit(1)
	}
	testBins = b
	code := testkit.Run(m)
	os.RemoveAll(dir)
	os.Exit(code)
}

// install copies src into dir under name with mode.
func install(t *testing.T, dir, src, name string, mode os.FileMode) string {
	t.Helper()
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(dir, name)
	if err := os.WriteFile(dst, data, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dst, mode); err != nil { // WriteFile's mode is masked by umask
		t.Fatal(err)
	}
	return dst
}

func open(t *testing.T, dir string, mod func(*pluginhost.Config)) (*pluginhost.Catalog, *proctest.Buffer) {
	t.Helper()
	logs := &proctest.Buffer{}
	cfg := pluginhost.Config{
		Dir:    dir,
		Logger: hclog.New(&hclog.LoggerOptions{Output: logs, Level: hclog.Debug}),
		Builtin: &pluginhost.Builtin{Path: testBins.ejob, Args: []string{"__builtin-plugins"}, Version: "test",
			Types: []spi.TypeKey{{Kind: spi.KindSharding, Type: "AVG_ALLOCATION"}, {Kind: spi.KindThreadPool, Type: "CPU"}}},
	}
	if mod != nil {
		mod(&cfg)
	}
	cat, err := pluginhost.Open(context.Background(), cfg)
	if err != nil {
		t.Fatalf("open catalog: %v\nlogs:\n%s", err, logs)
	}
	t.Cleanup(func() { cat.Close() })
	return cat, logs
}

func ctxT(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func poolPid(t *testing.T, cat *pluginhost.Catalog, job string) (int, error) {
	t.Helper()
	p, err := spi.Resolve[spi.ThreadPoolSizeProvider](cat, "hosttest_pool")
	if err != nil {
		t.Fatal(err)
	}
	resp, err := p.PoolSize(ctxT(t, 20*time.Second), spi.PoolSizeRequest{JobName: job, AvailableCPUs: 2})
	return resp.Size, err
}

func TestCatalogIndexesBuiltinsAndPlugins(t *testing.T) {
	dir := t.TempDir()
	path := install(t, dir, testBins.hosttest, "ejob-hosttest", 0o755)
	cat, _ := open(t, dir, nil)

	if got := strings.Join(cat.Types(spi.KindSharding), ","); got != "AVG_ALLOCATION,HOSTTEST" {
		t.Fatalf("sharding types = %s", got)
	}
	bin, err := cat.Provider(spi.KindSharding, "hostTest")
	if err != nil {
		t.Fatal(err)
	}
	if bin.Path != path || bin.Builtin || bin.Info.PluginVersion != "0.0.1-test" || len(bin.SHA256) != 64 {
		t.Fatalf("provider = %+v", bin)
	}
	s, err := spi.Resolve[spi.ShardingStrategy](cat, "hosttest") // case-insensitive
	if err != nil {
		t.Fatal(err)
	}
	resp, err := s.Sharding(ctxT(t, 20*time.Second), spi.ShardingRequest{JobName: "j", Instances: []string{"b", "a"}, ShardingTotalCount: 3})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(resp.Assignments) != "[{b [0 2]} {a [1]}]" {
		t.Fatalf("assignments = %v", resp.Assignments)
	}
	if b, err := cat.Provider(spi.KindSharding, "AVG_ALLOCATION"); err != nil || !b.Builtin || len(b.SHA256) != 64 {
		t.Fatalf("built-in provider = %+v, %v; want its checksum", b, err)
	}
	// The built-in is served out of process by the ejob binary.
	avg, err := spi.Resolve[spi.ShardingStrategy](cat, "avg_allocation")
	if err != nil {
		t.Fatal(err)
	}
	resp, err = avg.Sharding(ctxT(t, 20*time.Second), spi.ShardingRequest{JobName: "j", Instances: []string{"host0", "host1", "host2"}, ShardingTotalCount: 8})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(resp.Assignments) != "[{host0 [0 1 6]} {host1 [2 3 7]} {host2 [4 5]}]" {
		t.Fatalf("AVG_ALLOCATION assignments = %v", resp.Assignments)
	}
}

func TestUnknownTypeListsAvailableAndDirectory(t *testing.T) {
	dir := t.TempDir()
	install(t, dir, testBins.hosttest, "ejob-hosttest", 0o755)
	cat, _ := open(t, dir, nil)
	_, err := spi.Resolve[spi.ShardingStrategy](cat, "NOPE")
	if !errors.Is(err, spi.ErrUnknownType) {
		t.Fatalf("err = %v, want ErrUnknownType", err)
	}
	for _, want := range []string{`"NOPE"`, "AVG_ALLOCATION", "HOSTTEST", dir} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}

func TestDuplicateTypeNamesBothBinaries(t *testing.T) {
	dir := t.TempDir()
	a := install(t, dir, testBins.hosttest, "ejob-a", 0o755)
	b := install(t, dir, testBins.hosttest, "ejob-b", 0o755)
	_, err := pluginhost.Open(ctxT(t, 30*time.Second), pluginhost.Config{Dir: dir})
	if !errors.Is(err, pluginhost.ErrDuplicateType) {
		t.Fatalf("err = %v, want ErrDuplicateType", err)
	}
	if !strings.Contains(err.Error(), a) || !strings.Contains(err.Error(), b) {
		t.Fatalf("error %q does not name both %s and %s", err, a, b)
	}
}

func TestBuiltinNoChecksum(t *testing.T) {
	cat, _ := open(t, "", func(c *pluginhost.Config) { c.Builtin.NoChecksum = true })
	b, err := cat.Provider(spi.KindSharding, "AVG_ALLOCATION")
	if err != nil || !b.Builtin || b.SHA256 != "" {
		t.Fatalf("built-in provider = %+v, %v; want no checksum", b, err)
	}
}

func TestPluginOverridesBuiltin(t *testing.T) {
	dir := t.TempDir()
	path := install(t, dir, testBins.override, "ejob-my-avg", 0o755)
	cat, logs := open(t, dir, nil)
	bin, err := cat.Provider(spi.KindSharding, "AVG_ALLOCATION")
	if err != nil {
		t.Fatal(err)
	}
	if bin.Builtin || bin.Path != path {
		t.Fatalf("AVG_ALLOCATION served by %+v, want %s", bin, path)
	}
	if !strings.Contains(logs.String(), "plugin overrides built-in type") || !strings.Contains(logs.String(), path) {
		t.Fatalf("no override log line naming %s:\n%s", path, logs)
	}
	// The override answers (round-robin), not the built-in (AVG: [0 1] [2]).
	s, _ := spi.Resolve[spi.ShardingStrategy](cat, "AVG_ALLOCATION")
	resp, err := s.Sharding(ctxT(t, 20*time.Second), spi.ShardingRequest{JobName: "j", Instances: []string{"x", "y"}, ShardingTotalCount: 3})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(resp.Assignments) != "[{x [0 2]} {y [1]}]" {
		t.Fatalf("assignments = %v", resp.Assignments)
	}
}

func TestBadFilesAreSkippedWithTheirOwnReason(t *testing.T) {
	dir := t.TempDir()
	install(t, dir, testBins.hosttest, "ejob-good", 0o755)
	cases := map[string]struct {
		setup func() string
		want  string
	}{
		"zero-byte": {func() string {
			p := filepath.Join(dir, "ejob-empty")
			os.WriteFile(p, nil, 0o755)
			os.Chmod(p, 0o755)
			return p
		}, "empty file"},
		"shell script": {func() string {
			p := filepath.Join(dir, "ejob-script")
			os.WriteFile(p, []byte("#!/bin/sh\necho not a plugin\n"), 0o755)
			os.Chmod(p, 0o755)
			return p
		}, "not a valid ejob plugin"},
		"non-plugin executable": {func() string {
			return install(t, dir, testBins.notPlug, "ejob-notplugin", 0o755)
		}, "not a valid ejob plugin"},
		"world-writable": {func() string {
			return install(t, dir, testBins.hosttest, "ejob-ww", 0o757)
		}, "group- or world-writable"},
		"group-writable": {func() string {
			return install(t, dir, testBins.hosttest, "ejob-gw", 0o775)
		}, "group- or world-writable"},
		"not executable": {func() string {
			return install(t, dir, testBins.hosttest, "ejob-noexec", 0o644)
		}, "not executable"},
		"API version mismatch": {func() string {
			return install(t, dir, testBins.badAPI, "ejob-badapi", 0o755)
		}, "API version 99"},
		"protocol version mismatch": {func() string {
			return install(t, dir, testBins.badProto, "ejob-badproto", 0o755)
		}, "protocol"},
	}
	paths := map[string]string{}
	for name, c := range cases {
		paths[name] = c.setup()
	}
	// Files without the ejob- prefix are not plugins and are ignored silently.
	os.WriteFile(filepath.Join(dir, "README"), []byte("hi"), 0o644)

	cat, logs := open(t, dir, nil)
	skipped := map[string]error{}
	for _, s := range cat.Skipped() {
		skipped[s.Path] = s.Reason
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			reason, ok := skipped[paths[name]]
			if !ok {
				t.Fatalf("%s not skipped; skipped: %v", paths[name], skipped)
			}
			if !strings.Contains(reason.Error(), c.want) {
				t.Fatalf("reason %q, want it to contain %q", reason, c.want)
			}
			if !strings.Contains(logs.String(), paths[name]) {
				t.Fatalf("no warning naming %s", paths[name])
			}
		})
	}
	if len(skipped) != len(cases) {
		t.Fatalf("skipped %d files, want %d: %v", len(skipped), len(cases), skipped)
	}
	if _, err := spi.Resolve[spi.ShardingStrategy](cat, "HOSTTEST"); err != nil {
		t.Fatalf("the good plugin was not loaded: %v", err)
	}
}

func TestLockFilePinsBinaries(t *testing.T) {
	dir := t.TempDir()
	good := install(t, dir, testBins.hosttest, "ejob-good", 0o755)
	sum, err := pluginhost.FileSHA256(good)
	if err != nil {
		t.Fatal(err)
	}
	if err := (pluginhost.Lock{"ejob-good": sum}).Write(filepath.Join(dir, pluginhost.LockFileName)); err != nil {
		t.Fatal(err)
	}
	unlisted := install(t, dir, testBins.override, "ejob-unlisted", 0o755)

	cat, _ := open(t, dir, nil)
	if _, err := spi.Resolve[spi.ShardingStrategy](cat, "HOSTTEST"); err != nil {
		t.Fatalf("pinned binary not loaded: %v", err)
	}
	if reason := skippedReason(cat, unlisted); !errors.Is(reason, pluginhost.ErrChecksum) || !strings.Contains(reason.Error(), "not listed") {
		t.Fatalf("unlisted binary: reason %v", reason)
	}
	cat.Close()

	// Replace the pinned binary: it no longer matches.
	install(t, dir, testBins.override, "ejob-good", 0o755)
	cat, _ = open(t, dir, nil)
	reason := skippedReason(cat, good)
	if !errors.Is(reason, pluginhost.ErrChecksum) || !strings.Contains(reason.Error(), sum) {
		t.Fatalf("replaced binary: reason %v, want checksum mismatch naming %s", reason, sum)
	}
}

func TestLockFileIsVerifiedBeforeEveryLaunch(t *testing.T) {
	dir := t.TempDir()
	good := install(t, dir, testBins.hosttest, "ejob-good", 0o755)
	sum, _ := pluginhost.FileSHA256(good)
	if err := (pluginhost.Lock{"ejob-good": sum}).Write(filepath.Join(dir, pluginhost.LockFileName)); err != nil {
		t.Fatal(err)
	}
	cat, _ := open(t, dir, nil)
	// Swap the binary after discovery, before first use.
	install(t, dir, testBins.override, "ejob-good", 0o755)
	_, err := poolPid(t, cat, "normal")
	if !errors.Is(err, pluginhost.ErrChecksum) {
		t.Fatalf("launch of a swapped binary: err = %v, want ErrChecksum", err)
	}
}

func skippedReason(cat *pluginhost.Catalog, path string) error {
	for _, s := range cat.Skipped() {
		if s.Path == path {
			return s.Reason
		}
	}
	return nil
}

func TestPluginExitMidCallThenRelaunch(t *testing.T) {
	dir := t.TempDir()
	install(t, dir, testBins.hosttest, "ejob-hosttest", 0o755)
	cat, _ := open(t, dir, nil)
	first, err := poolPid(t, cat, "normal")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := poolPid(t, cat, "exit"); !errors.Is(err, spi.ErrPluginExited) {
		t.Fatalf("call whose plugin exits: err = %v, want ErrPluginExited", err)
	}
	second, err := poolPid(t, cat, "normal")
	if err != nil {
		t.Fatalf("call after the exit: %v", err)
	}
	if second == first {
		t.Fatalf("pid %d reused: the process was not relaunched", second)
	}
}

func TestPluginKilledMidCall(t *testing.T) {
	dir := t.TempDir()
	install(t, dir, testBins.hosttest, "ejob-hosttest", 0o755)
	cat, logs := open(t, dir, nil)
	pid, err := poolPid(t, cat, "normal")
	if err != nil {
		t.Fatal(err)
	}
	p, _ := spi.Resolve[spi.ThreadPoolSizeProvider](cat, "HOSTTEST_POOL")
	errc := make(chan error, 1)
	go func() {
		_, err := p.PoolSize(ctxT(t, 30*time.Second), spi.PoolSizeRequest{JobName: "hang"})
		errc <- err
	}()
	testkit.Eventually(t, 20*time.Second, "the plugin to report the hanging call", func() bool {
		return strings.Contains(logs.String(), "hosttest is hanging until cancelled")
	})
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; !errors.Is(err, spi.ErrPluginExited) {
		t.Fatalf("err = %v, want ErrPluginExited", err)
	}
	again, err := poolPid(t, cat, "normal")
	if err != nil {
		t.Fatalf("call after kill: %v", err)
	}
	if again == pid {
		t.Fatal("not relaunched")
	}
}

func TestHungPluginFailsAtDeadlineAndHostStaysResponsive(t *testing.T) {
	dir := t.TempDir()
	install(t, dir, testBins.hosttest, "ejob-hosttest", 0o755)
	cat, _ := open(t, dir, func(c *pluginhost.Config) { c.CallTimeout = 500 * time.Millisecond })
	if _, err := poolPid(t, cat, "normal"); err != nil {
		t.Fatal(err)
	}
	p, _ := spi.Resolve[spi.ThreadPoolSizeProvider](cat, "HOSTTEST_POOL")
	errc := make(chan error, 1)
	go func() {
		_, err := p.PoolSize(context.Background(), spi.PoolSizeRequest{JobName: "hang"})
		errc <- err
	}()
	// While it hangs, the same plugin and the built-ins keep answering.
	if _, err := poolPid(t, cat, "normal"); err != nil {
		t.Fatalf("same plugin while another call hangs: %v", err)
	}
	cpu, _ := spi.Resolve[spi.ThreadPoolSizeProvider](cat, "CPU")
	if _, err := cpu.PoolSize(ctxT(t, 20*time.Second), spi.PoolSizeRequest{JobName: "j", AvailableCPUs: 2}); err != nil {
		t.Fatalf("built-in while a plugin hangs: %v", err)
	}
	if err := <-errc; !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("hung call: err = %v, want DeadlineExceeded", err)
	}
}

// TestExecuteIsNotBoundedByCallTimeout: a job type's Execute runs as long
// as its own ctx allows, past the catalog's CallTimeout (which bounds every
// other call).
func TestExecuteIsNotBoundedByCallTimeout(t *testing.T) {
	dir := t.TempDir()
	install(t, dir, testBins.hosttest, "ejob-hosttest", 0o755)
	const callTimeout = 200 * time.Millisecond
	cat, _ := open(t, dir, func(c *pluginhost.Config) { c.CallTimeout = callTimeout })
	exec, err := spi.Resolve[spi.JobExecutor](cat, "HOSTTEST_JOB")
	if err != nil {
		t.Fatal(err)
	}
	// The job "hang" runs until its ctx ends; the test ends it well after
	// the call timeout, with a cause of its own.
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	over := errors.New("the test ended the execution")
	stop := time.AfterFunc(5*callTimeout, func() { cancel(over) })
	defer stop.Stop()
	_, err = exec.Execute(ctx, spi.ExecuteRequest{Context: spi.ShardingContext{JobName: "hang"}})
	if !errors.Is(err, context.Canceled) || !errors.Is(err, over) || errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Execute = %v, want it ended by the test's cancellation, not by the call timeout", err)
	}
}

func TestPanicIsAnErrorAndProcessSurvives(t *testing.T) {
	dir := t.TempDir()
	install(t, dir, testBins.hosttest, "ejob-hosttest", 0o755)
	cat, _ := open(t, dir, nil)
	pid, err := poolPid(t, cat, "normal")
	if err != nil {
		t.Fatal(err)
	}
	_, err = poolPid(t, cat, "panic")
	if err == nil || !strings.Contains(err.Error(), "hosttest asked to panic") {
		t.Fatalf("err = %v, want the panic message", err)
	}
	again, err := poolPid(t, cat, "normal")
	if err != nil || again != pid {
		t.Fatalf("after panic: pid %d err %v, want the same process %d", again, err, pid)
	}
}

func TestPluginWritingToStdoutKeepsWorking(t *testing.T) {
	dir := t.TempDir()
	install(t, dir, testBins.hosttest, "ejob-hosttest", 0o755)
	cat, _ := open(t, dir, nil)
	for i := 0; i < 20; i++ {
		if _, err := poolPid(t, cat, "stdout"); err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
	}
}

func TestCloseStopsPluginProcesses(t *testing.T) {
	dir := t.TempDir()
	install(t, dir, testBins.hosttest, "ejob-hosttest", 0o755)
	cat, _ := open(t, dir, nil)
	pid, err := poolPid(t, cat, "normal")
	if err != nil {
		t.Fatal(err)
	}
	cat.Close()
	if !proctree.Gone(pid) {
		t.Fatalf("plugin %d still running after Close returned", pid)
	}
	if _, err := poolPid(t, cat, "normal"); !errors.Is(err, spi.ErrPluginExited) {
		t.Fatalf("call after Close: %v, want ErrPluginExited", err)
	}
}

// lockChildEnv makes the test binary a child that only writes a lock file.
const lockChildEnv = "EJOB_TEST_WRITE_LOCK_IN"

// TestLockFileModeFollowsUmask: the lock file is written 0644 less the
// umask (a umask of 077 gives 0600), never wider.
func TestLockFileModeFollowsUmask(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command("sh", "-c", `umask 077 && exec "$0"`, os.Args[0])
	cmd.Env = append(os.Environ(), lockChildEnv+"="+dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	st, err := os.Stat(filepath.Join(dir, pluginhost.LockFileName))
	if err != nil {
		t.Fatal(err)
	}
	if got := st.Mode().Perm(); got != 0o600 {
		t.Errorf("lock file mode %v under umask 077, want 0600", got)
	}
}

// TestUntrustedFilesAreRefused: a plugins directory or lock file others
// could write, a binary another non-root user owns, and a symlink leaving
// the directory are refused, each with the fix in the message.
func TestUntrustedFilesAreRefused(t *testing.T) {
	t.Run("world-writable directory", func(t *testing.T) {
		dir := t.TempDir()
		if err := os.Chmod(dir, 0o777); err != nil {
			t.Fatal(err)
		}
		_, err := pluginhost.Open(t.Context(), pluginhost.Config{Dir: dir})
		if err == nil || !strings.Contains(err.Error(), "plugins directory "+dir+" is group- or world-writable") ||
			!strings.Contains(err.Error(), "run chmod go-w "+dir) {
			t.Fatalf("Open = %v, want a refusal naming the directory and the chmod", err)
		}
	})
	t.Run("group-writable lock file", func(t *testing.T) {
		dir := t.TempDir()
		lock := filepath.Join(dir, pluginhost.LockFileName)
		if err := (pluginhost.Lock{}).Write(lock); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(lock, 0o664); err != nil {
			t.Fatal(err)
		}
		_, err := pluginhost.Open(t.Context(), pluginhost.Config{Dir: dir})
		if err == nil || !strings.Contains(err.Error(), "lock file "+lock+" is group- or world-writable") {
			t.Fatalf("Open = %v, want a refusal naming the lock file", err)
		}
	})
	t.Run("binaries", func(t *testing.T) {
		dir := t.TempDir()
		elsewhere := t.TempDir()
		install(t, dir, testBins.hosttest, "ejob-good", 0o755)
		outside := install(t, elsewhere, testBins.override, "ejob-outside", 0o755)
		link := filepath.Join(dir, "ejob-link")
		if err := os.Symlink(outside, link); err != nil {
			t.Fatal(err)
		}
		// A link to a file inside the directory is trusted like its
		// target (not named ejob-*, so not scanned itself).
		install(t, dir, testBins.override, "override.bin", 0o755)
		inside := filepath.Join(dir, "ejob-alias")
		if err := os.Symlink("override.bin", inside); err != nil {
			t.Fatal(err)
		}
		want := map[string]string{link: "outside the plugins directory; copy the binary into " + dir}
		if os.Getuid() == 0 { // only root can give a file away
			foreign := install(t, dir, testBins.override, "ejob-foreign", 0o755)
			if err := os.Chown(foreign, 54321, 54321); err != nil {
				t.Fatal(err)
			}
			want[foreign] = "is owned by uid 54321, neither root nor this user"
		}
		cat, _ := open(t, dir, nil)
		for path, msg := range want {
			if reason := skippedReason(cat, path); reason == nil || !strings.Contains(reason.Error(), msg) {
				t.Errorf("%s: reason %v, want it to say %q", path, reason, msg)
			}
		}
		if reason := skippedReason(cat, inside); reason != nil {
			t.Errorf("a link inside the directory was refused: %v", reason)
		}
		if _, err := spi.Resolve[spi.ShardingStrategy](cat, "HOSTTEST"); err != nil {
			t.Fatalf("the trusted plugin was not loaded: %v", err)
		}
	})
}
