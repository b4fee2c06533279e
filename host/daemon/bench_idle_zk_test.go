package daemon_test

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/ejob-io/ejob/core/reg/zktest"
	"github.com/ejob-io/ejob/internal/testkit"
)

// BenchmarkHostIdleOnZooKeeper starts one `ejob run -c FILE` host with
// 1,000 idle SCRIPT jobs (1 item, cron 0 0 0 1 1 ? 2099) on a real
// ZooKeeper (standalone, loopback) and reports what the jobs cost while
// nothing fires (the "1,000 idle jobs on ZooKeeper" rows of the
// benchmarks doc):
//
//   - started-s: process start to the "host started" line (every job
//     registered);
//   - total-MiB: settled VmRSS of the host plus its plugin process, and
//     its parts (memParts: anonymous, file-backed, the binary's pages both
//     map, PSS);
//   - cpu-first30s-pct: CPU (user + system, host + plugin process) over the
//     30 s after "host started", in % of one core;
//   - cpu-idle-pct: the same over the following 10 s, once settled;
//   - watches-per-job: the watches ZooKeeper holds for the host's session
//     (4lw "wchs": the server's total, and the host is its only client),
//     divided by the number of jobs.
func BenchmarkHostIdleOnZooKeeper(b *testing.B) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		b.Skip("needs /proc (Linux)")
	}
	bin := benchEjob(b)
	const jobs = 1_000
	var started, total, first, idle, watches float64
	var mem memParts
	for b.Loop() {
		srv := zktest.Start(b, zktest.Options{})
		cfg := writeConfigOn(b, b.TempDir(), srv.Addr(), jobs, "SCRIPT", "0 0 0 1 1 ? 2099",
			map[string]string{"script.command.line": "/bin/true"})
		h := startHost(b, bin, cfg, 3*time.Minute)
		started = h.started.Sub(h.start).Seconds()
		pid := h.cmd.Process.Pid
		first = cpuPercent(b, pid, 30*time.Second)
		idle = cpuPercent(b, pid, 10*time.Second)
		h.waitRelease() // long past already: the CPU windows took 40 s
		hostKB, pluginKB, _ := settledRSS(b, pid)
		total = benchKiB(hostKB + pluginKB)
		mem = memSplit(b, pid)
		watches = float64(zkWatches(b, srv.Addr())) / jobs
		h.stop(b)
	}
	b.ReportMetric(started, "started-s")
	b.ReportMetric(total, "total-MiB")
	mem.report(b)
	b.ReportMetric(first, "cpu-first30s-pct")
	b.ReportMetric(idle, "cpu-idle-pct")
	b.ReportMetric(watches, "watches-per-job")
}

// cpuPercent is the CPU time pid and its children use over d, in % of
// one core.
func cpuPercent(b *testing.B, pid int, d time.Duration) float64 {
	b.Helper()
	cpu := func() time.Duration {
		t, ok := testkit.ProcCPU(pid)
		if !ok {
			b.Fatalf("no /proc/%d/stat", pid)
		}
		for _, c := range childPIDs(b, pid) {
			if ct, ok := testkit.ProcCPU(c); ok {
				t += ct
			}
		}
		return t
	}
	before, start := cpu(), time.Now()
	time.Sleep(d) // the measuring window itself
	return 100 * float64(cpu()-before) / float64(time.Since(start))
}

var totalWatches = regexp.MustCompile(`Total watches:\s*(\d+)`)

// zkWatches asks the ZooKeeper at addr for its total number of watches
// (four-letter word wchs).
func zkWatches(b *testing.B, addr string) int {
	b.Helper()
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := conn.Write([]byte("wchs")); err != nil {
		b.Fatal(err)
	}
	var out []byte
	sc := bufio.NewScanner(conn)
	for sc.Scan() {
		out = append(out, sc.Bytes()...)
		out = append(out, '\n')
	}
	m := totalWatches.FindSubmatch(out)
	if m == nil {
		b.Fatalf("wchs answered %q", out)
	}
	n, err := strconv.Atoi(string(m[1]))
	if err != nil {
		b.Fatal(fmt.Errorf("wchs: %w", err))
	}
	return n
}
