package gocron

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// idleReport is the JSON line both idlejobs programs print once their
// jobs are idle, with the VmRSS read from the caller's side.
type idleReport struct {
	Jobs       int     `json:"jobs"`
	SetupS     float64 `json:"setup_s"`
	HeapMiB    float64 `json:"heap_mib"`
	LiveMiB    float64 `json:"live_mib"`
	StackMiB   float64 `json:"stack_mib"`
	Goroutines int     `json:"goroutines"`
	RSSMiB     float64 `json:"-"`
}

// BenchmarkIdleJobsSameRun: 10,000 idle jobs with ejob (the library on
// its embedded registry, bench/idlejobs in the main module) and with
// gocron (idlejobs in this module), each in a process of its own so that
// one's heap does not count in the other's RSS, in alternated pairs
// (EJOB_BENCH_PAIRS, default 5; the first of a pair alternates). Per pair
// it logs both sides' registration time (creating the scheduler to
// Start's return), heap in use and stacks after GC, live heap, VmRSS and
// goroutines, and their ratios; it reports the median of the pairs'
// ratios and of each side's figures.
func BenchmarkIdleJobsSameRun(b *testing.B) {
	const njobs = 10_000
	pairs := 5
	if v := os.Getenv("EJOB_BENCH_PAIRS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			b.Fatalf("EJOB_BENCH_PAIRS=%q: want a positive number of pairs", v)
		}
		pairs = n
	}
	dir := b.TempDir()
	ejobBin, gocronBin := filepath.Join(dir, "ejob-idlejobs"), filepath.Join(dir, "gocron-idlejobs")
	goBuild(b, "../..", ejobBin, "./bench/idlejobs")
	goBuild(b, ".", gocronBin, "./idlejobs")
	if l, err := os.ReadFile("/proc/loadavg"); err == nil {
		b.Logf("load average before: %s", bytes.TrimSpace(l))
	}
	var ejobs, gocrons []idleReport
	for b.Loop() {
		ejobs, gocrons = ejobs[:0], gocrons[:0]
		for i := range pairs {
			var e, g idleReport
			if i%2 == 0 {
				e, g = runIdle(b, ejobBin, njobs), runIdle(b, gocronBin, njobs)
			} else {
				g, e = runIdle(b, gocronBin, njobs), runIdle(b, ejobBin, njobs)
			}
			ejobs, gocrons = append(ejobs, e), append(gocrons, g)
		}
	}
	if l, err := os.ReadFile("/proc/loadavg"); err == nil {
		b.Logf("load average after: %s", bytes.TrimSpace(l))
	}
	var tab strings.Builder
	fmt.Fprintf(&tab, "%d idle jobs, %d pairs (ejob / gocron = ratio)\n", njobs, pairs)
	fmt.Fprintf(&tab, "pair  register s              heap MiB               stack MiB     live MiB      RSS MiB                goroutines\n")
	var rSetup, rHeap, rRSS []float64
	for i := range ejobs {
		e, g := ejobs[i], gocrons[i]
		rSetup, rHeap, rRSS = append(rSetup, e.SetupS/g.SetupS), append(rHeap, e.HeapMiB/g.HeapMiB), append(rRSS, e.RSSMiB/g.RSSMiB)
		fmt.Fprintf(&tab, "%4d  %.3f / %.3f = %4.1f×  %5.1f / %4.1f = %4.1f×  %4.1f / %4.1f  %5.1f / %4.1f  %5.1f / %4.1f = %4.1f×  %d / %d\n",
			i+1, e.SetupS, g.SetupS, rSetup[i], e.HeapMiB, g.HeapMiB, rHeap[i], e.StackMiB, g.StackMiB,
			e.LiveMiB, g.LiveMiB, e.RSSMiB, g.RSSMiB, rRSS[i], e.Goroutines, g.Goroutines)
	}
	fmt.Fprintf(&tab, "median ratio: register %.2f×, heap %.2f×, RSS %.2f×", median(rSetup), median(rHeap), median(rRSS))
	b.Log(tab.String())
	field := func(rs []idleReport, f func(idleReport) float64) float64 {
		v := make([]float64, len(rs))
		for i, r := range rs {
			v[i] = f(r)
		}
		return median(v)
	}
	b.ReportMetric(median(rSetup), "register-ratio")
	b.ReportMetric(median(rHeap), "heap-ratio")
	b.ReportMetric(median(rRSS), "rss-ratio")
	b.ReportMetric(field(ejobs, func(r idleReport) float64 { return r.SetupS }), "ejob-register-s")
	b.ReportMetric(field(gocrons, func(r idleReport) float64 { return r.SetupS }), "gocron-register-s")
	b.ReportMetric(field(ejobs, func(r idleReport) float64 { return r.HeapMiB }), "ejob-heap-MiB")
	b.ReportMetric(field(gocrons, func(r idleReport) float64 { return r.HeapMiB }), "gocron-heap-MiB")
	b.ReportMetric(field(ejobs, func(r idleReport) float64 { return r.RSSMiB }), "ejob-rss-MiB")
	b.ReportMetric(field(gocrons, func(r idleReport) float64 { return r.RSSMiB }), "gocron-rss-MiB")
}

// goBuild builds pkg (relative to dir) into out, without -race.
func goBuild(tb testing.TB, dir, out, pkg string) {
	tb.Helper()
	cmd := exec.Command("go", "build", "-o", out, pkg)
	cmd.Dir = dir
	if msg, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("go build %s (in %s): %v\n%s", pkg, dir, err, msg)
	}
}

// runIdle runs an idlejobs program with njobs, reads its report and, while
// it waits with its jobs idle, its VmRSS; then closes its stdin and waits
// for it to exit.
func runIdle(tb testing.TB, bin string, njobs int) idleReport {
	tb.Helper()
	cmd := exec.Command(bin, "-jobs", strconv.Itoa(njobs))
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatalf("start %s: %v", bin, err)
	}
	defer func() {
		_ = stdin.Close()
		if err := cmd.Wait(); err != nil {
			tb.Errorf("%s: %v", bin, err)
		}
	}()
	line, err := bufio.NewReader(stdout).ReadBytes('\n')
	if err != nil {
		tb.Fatalf("%s: no report: %v", bin, err)
	}
	var r idleReport
	if err := json.Unmarshal(line, &r); err != nil {
		tb.Fatalf("%s: report %q: %v", bin, line, err)
	}
	if r.Jobs != njobs {
		tb.Fatalf("%s: report for %d jobs, want %d", bin, r.Jobs, njobs)
	}
	r.RSSMiB = vmRSS(tb, cmd.Process.Pid)
	return r
}

// vmRSS returns the VmRSS of process pid in MiB.
func vmRSS(tb testing.TB, pid int) float64 {
	tb.Helper()
	status, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		tb.Fatal(err)
	}
	for l := range strings.Lines(string(status)) {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			if err != nil {
				tb.Fatalf("VmRSS of %d: %q: %v", pid, l, err)
			}
			return kb / 1024
		}
	}
	tb.Fatalf("no VmRSS in /proc/%d/status", pid)
	return 0
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	if n := len(s); n%2 == 0 {
		return (s[n/2-1] + s[n/2]) / 2
	} else {
		return s[n/2]
	}
}
