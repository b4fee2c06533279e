package daemon_test

// Benchmarks of a real `ejob run -c FILE` process (standalone, embedded
// registry) and of the real out-of-process job-type path (the built-in
// plugin server, `ejob __builtin-plugins`, over go-plugin gRPC). They build
// their own ejob binary without -race (TestMain's is a race build, which
// is slower and several times larger), report their figures with
// b.ReportMetric and never fail on a timing. ns/op is the wall time of one
// iteration of a scenario, not a figure to compare. docs/benchmarks.md
// ("Host") records the figures and how to reproduce them.

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ejob-io/ejob/host/pluginhost"
	"github.com/ejob-io/ejob/internal/proctree"
	"github.com/ejob-io/ejob/internal/testkit"
	"github.com/ejob-io/ejob/plugins/builtin"
	"github.com/ejob-io/ejob/spi"
)

// builtinPluginsArg is the hidden subcommand under which the ejob binary
// serves the built-in types (host/cli's builtinPluginsCmd).
const builtinPluginsArg = "__builtin-plugins"

var (
	benchBinOnce sync.Once
	benchBinPath string
	benchBinErr  error
)

// benchBinEnv names a prebuilt ejob binary for the host benchmarks to run
// instead of their own build (to compare two builds, alternated).
const benchBinEnv = "EJOB_BENCH_BIN"

// benchEjob builds the ejob binary once, without -race, next to TestMain's
// race build (so TestMain's cleanup removes it), or returns $EJOB_BENCH_BIN
// when set.
func benchEjob(b *testing.B) string {
	b.Helper()
	if p := os.Getenv(benchBinEnv); p != "" {
		return p
	}
	benchBinOnce.Do(func() {
		benchBinPath = filepath.Join(filepath.Dir(ejobBin), "ejob-bench")
		out, err := exec.Command("go", "build", "-o", benchBinPath, "github.com/ejob-io/ejob/cmd/ejob").CombinedOutput()
		if err != nil {
			benchBinErr = fmt.Errorf("build ejob: %v\n%s", err, out)
		}
	})
	if benchBinErr != nil {
		b.Fatal(benchBinErr)
	}
	return benchBinPath
}

// lineClock is a process's stderr: it keeps the output and records when
// (by this process's clock) the first line containing mark arrived.
type lineClock struct {
	mark string

	mu      sync.Mutex
	buf     bytes.Buffer
	scanned int // bytes of buf already searched for complete lines
	at      time.Time
	seen    chan struct{}
}

func newLineClock(mark string) *lineClock {
	return &lineClock{mark: mark, seen: make(chan struct{})}
}

func (l *lineClock) Write(p []byte) (int, error) {
	now := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf.Write(p)
	if !l.at.IsZero() {
		return len(p), nil
	}
	rest := l.buf.Bytes()[l.scanned:]
	for {
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			break
		}
		if bytes.Contains(rest[:i], []byte(l.mark)) {
			l.at = now
			close(l.seen)
			break
		}
		l.scanned += i + 1
		rest = rest[i+1:]
	}
	return len(p), nil
}

func (l *lineClock) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// benchHost is one running `ejob run -c FILE`.
type benchHost struct {
	cmd     *exec.Cmd
	start   time.Time // just before the process was started
	started time.Time // when "host started" arrived on its stderr
	logs    *lineClock
	exited  chan struct{} // closed when the process has been waited for
	waitErr error         // Wait's result, once exited is closed

	stopOnce sync.Once
}

// startHost starts `bin run -c cfg` and waits (up to timeout) for its
// "host started" line, which it logs once every job has registered.
func startHost(b *testing.B, bin, cfg string, timeout time.Duration) *benchHost {
	b.Helper()
	h := &benchHost{logs: newLineClock("host started"), exited: make(chan struct{})}
	h.cmd = exec.Command(bin, "run", "-c", cfg)
	h.cmd.Stdout, h.cmd.Stderr = io.Discard, h.logs
	h.start = time.Now()
	if err := h.cmd.Start(); err != nil {
		b.Fatal(err)
	}
	go func() {
		h.waitErr = h.cmd.Wait()
		close(h.exited)
	}()
	b.Cleanup(func() { h.stop(b) })
	select {
	case <-h.logs.seen:
		h.logs.mu.Lock()
		h.started = h.logs.at
		h.logs.mu.Unlock()
	case <-h.exited:
		b.Fatalf("host exited before it started: %v\n%s", h.waitErr, h.logs)
	case <-time.After(timeout):
		b.Fatalf("no \"host started\" within %v:\n%s", timeout, h.logs)
	}
	return h
}

// stop sends SIGTERM and waits for the host to drain and exit (SIGKILL
// after 30 s). It is idempotent.
func (h *benchHost) stop(b *testing.B) {
	h.stopOnce.Do(func() {
		_ = h.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-h.exited:
			if h.waitErr != nil {
				b.Errorf("host exit: %v\n%s", h.waitErr, h.logs)
			}
		case <-time.After(30 * time.Second):
			_ = h.cmd.Process.Kill()
			<-h.exited
			b.Errorf("host did not exit within 30 s of SIGTERM:\n%s", h.logs)
		}
	})
}

// writeConfig writes a standalone config of njobs jobs named job-0...,
// each with one item, cron and props, and returns its path.
func writeConfig(b *testing.B, dir string, njobs int, jobType, cron string, props map[string]string) string {
	b.Helper()
	return writeConfigOn(b, dir, "", njobs, jobType, cron, props)
}

// writeConfigOn is writeConfig on the ZooKeeper at zkAddr (namespace
// bench), standalone when zkAddr is empty.
func writeConfigOn(b *testing.B, dir, zkAddr string, njobs int, jobType, cron string, props map[string]string) string {
	b.Helper()
	var sb strings.Builder
	sb.WriteString("elasticjob:\n")
	if zkAddr != "" {
		fmt.Fprintf(&sb, "  regCenter:\n    serverLists: %s\n    namespace: bench\n", zkAddr)
	}
	sb.WriteString("  jobs:\n")
	keys := make([]string, 0, len(props))
	for k := range props {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for i := range njobs {
		fmt.Fprintf(&sb, "    job-%d:\n      elasticJobType: %s\n      cron: %q\n      shardingTotalCount: 1\n", i, jobType, cron)
		if len(keys) > 0 {
			sb.WriteString("      props:\n")
			for _, k := range keys {
				fmt.Fprintf(&sb, "        %s: %q\n", k, props[k])
			}
		}
	}
	sb.WriteString("ejob:\n  drainTimeout: 10s\n")
	p := filepath.Join(dir, "ejob.yaml")
	if err := os.WriteFile(p, []byte(sb.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	return p
}

func benchPercentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(p/100*float64(len(sorted)) + 0.5)
	return sorted[min(max(i-1, 0), len(sorted)-1)]
}

func benchP50(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return benchPercentile(s, 50)
}

func benchMS(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// BenchmarkHostStartToFirstExecution starts `ejob run -c FILE` (standalone)
// with one 1-item SCRIPT job whose cron fires every second; the script
// writes the wall-clock time it ran (date +%s%N). One op is 5 host starts;
// each metric is the p50 over them:
//
//   - started-ms: process start to the "host started" line (config loaded,
//     built-in plugin process launched and asked to validate, embedded
//     registry up, the job registered and elected);
//   - fire-to-item-ms: the scheduled fire (the whole second) to the script
//     running; the first fire also does the job's first sharding, and the
//     figure includes starting /bin/sh and date;
//   - start-to-item-ms: process start to the script running, less the
//     cron wait (host started to the scheduled fire, when positive), which
//     depends only on where in the second the host happened to start;
//   - raw-start-to-item-ms and cron-wait-ms: the same without subtracting,
//     and the wait itself (0–1000 ms, uniform in principle).
func BenchmarkHostStartToFirstExecution(b *testing.B) {
	bin := benchEjob(b)
	const runs = 5
	var started, fireToItem, startToItem, raw, wait []float64
	for b.Loop() {
		for range runs {
			dir := b.TempDir()
			out := filepath.Join(dir, "fired.txt")
			cfg := writeConfig(b, dir, 1, "SCRIPT", "* * * * * ?", map[string]string{
				"script.command.line": "/bin/sh -c 'date +%s%N >> " + out + "'",
			})
			h := startHost(b, bin, cfg, 30*time.Second)
			item := waitFirstLine(b, out, 5*time.Second, h)
			h.stop(b)

			fire := item.Truncate(time.Second) // the scheduled fire: item start is well within the second
			cw := max(fire.Sub(h.started), 0)
			started = append(started, benchMS(h.started.Sub(h.start)))
			fireToItem = append(fireToItem, benchMS(item.Sub(fire)))
			raw = append(raw, benchMS(item.Sub(h.start)))
			startToItem = append(startToItem, benchMS(item.Sub(h.start)-cw))
			wait = append(wait, benchMS(cw))
		}
	}
	b.ReportMetric(benchP50(started), "started-ms")
	b.ReportMetric(benchP50(fireToItem), "fire-to-item-ms")
	b.ReportMetric(benchP50(startToItem), "start-to-item-ms")
	b.ReportMetric(benchP50(raw), "raw-start-to-item-ms")
	b.ReportMetric(benchP50(wait), "cron-wait-ms")
}

// waitFirstLine waits for the first line of path (a Unix time in ns
// written by the script) and returns it. Polling only waits: the time
// measured is the one the script wrote.
func waitFirstLine(b *testing.B, path string, timeout time.Duration, h *benchHost) time.Time {
	b.Helper()
	deadline := time.Now().Add(timeout)
	for {
		data, err := os.ReadFile(path)
		if err != nil && !os.IsNotExist(err) {
			b.Fatal(err)
		}
		if line, _, ok := bytes.Cut(data, []byte("\n")); ok {
			ns, err := strconv.ParseInt(string(line), 10, 64)
			if err != nil {
				b.Fatalf("script wrote %q: %v", line, err)
			}
			return time.Unix(0, ns)
		}
		if time.Now().After(deadline) {
			b.Fatalf("no item ran within %v of host start:\n%s", timeout, h.logs)
		}
		time.Sleep(5 * time.Millisecond) // bounded polling of the file
	}
}

// BenchmarkHostRSS starts one standalone host with N SCRIPT jobs (1 item,
// cron 0 0 0 1 1 ? 2099, so none fires; or one firing every second for
// 20 s), waits for "host started", for both processes to release the
// binary's start-up pages and for the resident sizes to settle, then
// reports VmRSS from /proc in MiB: the host process (host-MiB, plus its
// peak VmHWM as host-peak-MiB), the built-in plugin process `ejob
// __builtin-plugins` (plugin-MiB; all the host's children, in fact: there
// is one) and their sum (total-MiB),
// then the parts (memParts: anonymous, file-backed, the binary's pages
// both map, PSS). started-s is process start to "host started".
// Upstream ElasticJob-Lite takes about 90–106 MB per JVM for one job.
func BenchmarkHostRSS(b *testing.B) {
	if _, err := os.Stat("/proc/self/status"); err != nil {
		b.Skip("needs /proc (Linux)")
	}
	bin := benchEjob(b)
	for _, sc := range []struct {
		name string
		jobs int
		cron string
	}{
		{"jobs=1", 1, "0 0 0 1 1 ? 2099"},
		{"jobs=1000", 1_000, "0 0 0 1 1 ? 2099"},
		// One job firing every second for 20 s: what a working host maps
		// again of the binary after the release.
		{"jobs=1/every-second", 1, "* * * * * ?"},
	} {
		b.Run(sc.name, func(b *testing.B) {
			var host, peak, plugin, started float64
			var mem memParts
			var children int
			for b.Loop() {
				cfg := writeConfig(b, b.TempDir(), sc.jobs, "SCRIPT", sc.cron,
					map[string]string{"script.command.line": "/bin/true"})
				h := startHost(b, bin, cfg, 60*time.Second)
				started = h.started.Sub(h.start).Seconds()
				pid := h.cmd.Process.Pid
				h.waitRelease()
				if sc.cron == "* * * * * ?" {
					time.Sleep(20 * time.Second) // 20 fires after the release
				}
				hostKB, pluginKB, kids := settledRSS(b, pid)
				host, plugin, children = benchKiB(hostKB), benchKiB(pluginKB), kids
				peak = benchKiB(procStatusKB(b, pid, "VmHWM"))
				mem = memSplit(b, pid)
				h.stop(b)
			}
			if children != 1 {
				b.Logf("%d child processes (want the one plugin process)", children)
			}
			b.ReportMetric(host, "host-MiB")
			b.ReportMetric(peak, "host-peak-MiB")
			b.ReportMetric(plugin, "plugin-MiB")
			b.ReportMetric(host+plugin, "total-MiB")
			mem.report(b)
			b.ReportMetric(started, "started-s")
		})
	}
}

// releaseWait is how long after "host started" both processes have
// released the binary's start-up pages: the host's and the plugin
// process's start-up tails (5 s each; the plugin process starts before
// "host started"), and a margin.
const releaseWait = 6 * time.Second

// waitRelease waits until the host and its plugin process have released
// the binary's start-up pages, so that the RSS read next is the steady
// one.
func (h *benchHost) waitRelease() {
	time.Sleep(time.Until(h.started.Add(releaseWait))) // the processes' own timers
}

// memParts splits the RSS of a host and its plugin process: anonymous
// memory (heap, stacks, the runtime's) against file-backed pages (mostly
// the ejob binary's, which both processes map, and libc's), the pages of
// the binary that both map (binShared: counted in each one's RSS, so twice
// in the total), and the proportional set size of both (a page shared by n
// processes counts 1/n in each, so the binary's pages count once in all).
type memParts struct{ hostAnon, pluginAnon, file, binShared, pss float64 }

func memSplit(b *testing.B, pid int) memParts {
	b.Helper()
	exe, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/exe")
	if err != nil {
		b.Fatal(err)
	}
	var m memParts
	for i, p := range append([]int{pid}, childPIDs(b, pid)...) {
		anon, _ := testkit.ProcStatusKB(p, "RssAnon")
		file, _ := testkit.ProcStatusKB(p, "RssFile")
		pss, _ := testkit.ProcRollupKB(p, "Pss")
		if i == 0 {
			m.hostAnon = benchKiB(anon)
		} else {
			m.pluginAnon += benchKiB(anon)
			// The plugin process is the host's binary re-executed; only
			// the two of them map this build of it, so its pages that
			// another process maps too are the host's (clean, or dirty
			// when the fresh build is not written back yet).
			clean, _ := testkit.ProcMappingKB(p, exe, "Shared_Clean")
			dirty, _ := testkit.ProcMappingKB(p, exe, "Shared_Dirty")
			m.binShared += benchKiB(clean + dirty)
		}
		m.file += benchKiB(file)
		m.pss += benchKiB(pss)
	}
	return m
}

func (m memParts) report(b *testing.B) {
	b.ReportMetric(m.hostAnon, "host-anon-MiB")
	b.ReportMetric(m.pluginAnon, "plugin-anon-MiB")
	b.ReportMetric(m.file, "file-MiB")
	b.ReportMetric(m.binShared, "binary-shared-MiB")
	b.ReportMetric(m.pss, "pss-MiB")
}

func benchKiB(kb int64) float64 { return float64(kb) / 1024 }

// settledRSS samples the VmRSS of pid and of its children every 250 ms
// until the total has changed by less than 1% over the last second (at
// most 15 s), and returns the last sample.
func settledRSS(b *testing.B, pid int) (hostKB, childKB int64, children int) {
	b.Helper()
	_, recent, ok := testkit.SettledSample(250*time.Millisecond, 15*time.Second, func() int64 {
		hostKB = procStatusKB(b, pid, "VmRSS")
		childKB, children = 0, 0
		for _, c := range childPIDs(b, pid) {
			if kb, ok := testkit.ProcStatusKB(c, "VmRSS"); ok {
				childKB += kb
				children++
			}
		}
		return hostKB + childKB
	})
	if !ok {
		b.Logf("RSS still changing after 15 s: %v kB", recent)
	}
	return hostKB, childKB, children
}

func procStatusKB(b *testing.B, pid int, field string) int64 {
	b.Helper()
	kb, ok := testkit.ProcStatusKB(pid, field)
	if !ok {
		b.Fatalf("no %s in /proc/%d/status", field, pid)
	}
	return kb
}

// childPIDs lists the processes whose parent is pid.
func childPIDs(b *testing.B, pid int) []int {
	b.Helper()
	var out []int
	for _, p := range proctree.Children(pid) {
		out = append(out, p.PID)
	}
	return out
}

// BenchmarkBuiltinPluginExecute measures the real out-of-process job-type
// path the host uses: the plugin catalog (host/pluginhost) calling
// Execute on the built-in plugin process (`ejob __builtin-plugins`, go-plugin
// gRPC over a Unix socket with AutoMTLS). Each op runs one item through
// the plugin and the same work directly in this process, interleaved; the
// metrics are p50s per item: direct-us, plugin-us, and extra-us = plugin-us
// − direct-us, the cost per item beyond the command or request itself.
//
//   - SCRIPT: /bin/true; direct is exec.Command("/bin/true").Run().
//   - HTTP: GET to a local httptest server; direct is a plain http.Client
//     request on a new connection each time (the HTTP job type opens one
//     per item, as upstream's HttpURLConnection does without keep-alive).
func BenchmarkBuiltinPluginExecute(b *testing.B) {
	bin := benchEjob(b)
	set := builtin.New(builtin.Options{})
	cat, err := pluginhost.Open(context.Background(), pluginhost.Config{
		Builtin: &pluginhost.Builtin{Path: bin, Args: []string{builtinPluginsArg}, Version: builtin.Version, Types: set.Types()},
		Logger:  hclog.New(&hclog.LoggerOptions{Name: "bench", Level: hclog.Error, Output: os.Stderr}),
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = cat.Close() })

	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "ok")
	}))
	b.Cleanup(srv.Close)
	plain := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}

	cases := []struct {
		typ    string
		props  map[string]string
		direct func() error
	}{
		{"SCRIPT", map[string]string{"script.command.line": "/bin/true"},
			func() error { return exec.Command("/bin/true").Run() }},
		{"HTTP", map[string]string{"http.uri": srv.URL, "http.method": "GET"},
			func() error {
				resp, err := plain.Get(srv.URL)
				if err != nil {
					return err
				}
				_, err = io.Copy(io.Discard, resp.Body)
				_ = resp.Body.Close()
				if err == nil && resp.StatusCode != http.StatusOK {
					err = fmt.Errorf("status %s", resp.Status)
				}
				return err
			}},
	}
	for _, c := range cases {
		b.Run(c.typ, func(b *testing.B) {
			ex, err := spi.Resolve[spi.JobExecutor](cat, c.typ)
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			req := spi.ExecuteRequest{
				Context: spi.ShardingContext{JobName: "bench", TaskID: "bench@-@0@-@READY@-@192.0.2.1@-@1", ShardingTotalCount: 1},
				Props:   c.props,
			}
			// The first call launches the plugin process; not measured.
			if _, err := ex.Execute(ctx, req); err != nil {
				b.Fatal(err)
			}
			var direct, viaPlugin []float64
			for b.Loop() {
				t := time.Now()
				if err := c.direct(); err != nil {
					b.Fatal(err)
				}
				direct = append(direct, benchUS(time.Since(t)))
				t = time.Now()
				if _, err := ex.Execute(ctx, req); err != nil {
					b.Fatal(err)
				}
				viaPlugin = append(viaPlugin, benchUS(time.Since(t)))
			}
			d, p := benchP50(direct), benchP50(viaPlugin)
			b.ReportMetric(d, "direct-us")
			b.ReportMetric(p, "plugin-us")
			b.ReportMetric(p-d, "extra-us")
		})
	}
}

func benchUS(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
