package daemon_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/ejob-io/ejob/core/reg/zktest"
)

// scriptFires is how many steady fires one op of
// BenchmarkScriptFireToRunning measures.
const scriptFires = 20

// BenchmarkScriptFireToRunning starts one `ejob run -c FILE` host with a
// 1-item SCRIPT job firing every second on a real ZooKeeper (standalone,
// loopback), whose script (`/bin/sh -c 'date +%s%N >> FILE'`) writes the
// time it ran. One op is scriptFires steady fires of one host: those
// after both processes released the binary's start-up pages (the first
// fires also do the job's first sharding and measure the registry round
// trip a fire dispatched ahead needs). The percentiles are over every
// op's fires:
//
//   - fire-to-script-p50-ms, -p99-ms: the scheduled fire (the whole
//     second) to the script's `date` running, the shell's start included;
//   - sh-floor-p50-ms, -p99-ms: the same command started by this process
//     with os/exec, spaced as the fires are: the fork and exec of the
//     shell and of date, which no scheduler can save;
//   - fires: how many fires the percentiles are over.
func BenchmarkScriptFireToRunning(b *testing.B) {
	bin := benchEjob(b)
	srv := zktest.Start(b, zktest.Options{})
	var delays []float64
	for b.Loop() {
		dir := b.TempDir()
		out := filepath.Join(dir, "fired.txt")
		cfg := writeConfigOn(b, dir, srv.Addr(), 1, "SCRIPT", "* * * * * ?", map[string]string{
			"script.command.line": "/bin/sh -c 'date +%s%N >> " + out + "'",
		})
		h := startHost(b, bin, cfg, time.Minute)
		steady := h.started.Add(releaseWait)
		times := waitLines(b, out, steady, scriptFires, releaseWait+time.Duration(scriptFires+10)*time.Second, h)
		h.stop(b)
		for _, t := range times {
			delays = append(delays, benchMS(t.Sub(t.Truncate(time.Second))))
		}
	}
	floor := shFloor(b, filepath.Join(b.TempDir(), "floor.txt"), len(delays))
	sort.Float64s(delays)
	sort.Float64s(floor)
	b.ReportMetric(benchPercentile(delays, 50), "fire-to-script-p50-ms")
	b.ReportMetric(benchPercentile(delays, 99), "fire-to-script-p99-ms")
	b.ReportMetric(benchPercentile(floor, 50), "sh-floor-p50-ms")
	b.ReportMetric(benchPercentile(floor, 99), "sh-floor-p99-ms")
	b.ReportMetric(float64(len(delays)), "fires")
}

// shFloor runs `/bin/sh -c 'date +%s%N >> path'` n times, 200 ms apart (an
// idle process, as between a host's fires), and returns each run's time
// from just before its start to the time date wrote, in ms.
func shFloor(b *testing.B, path string, n int) []float64 {
	b.Helper()
	var out []float64
	for i := range n {
		time.Sleep(200 * time.Millisecond) // idle between runs, as between fires
		cmd := exec.Command("/bin/sh", "-c", "date +%s%N >> "+path)
		start := time.Now()
		if err := cmd.Run(); err != nil {
			b.Fatal(err)
		}
		times := readLines(b, path)
		if len(times) != i+1 {
			b.Fatalf("%s: %d lines after %d runs", path, len(times), i+1)
		}
		out = append(out, benchMS(times[i].Sub(start)))
	}
	return out
}

// waitLines waits (up to timeout) for n lines in path after from, each a
// Unix time in ns written by the script, and returns those times. Polling
// only waits: the times are the ones the script wrote.
func waitLines(b *testing.B, path string, from time.Time, n int, timeout time.Duration, h *benchHost) []time.Time {
	b.Helper()
	deadline := time.Now().Add(timeout)
	for {
		times := readLines(b, path)
		for len(times) > 0 && times[0].Before(from) {
			times = times[1:]
		}
		if len(times) >= n {
			return times[:n]
		}
		if time.Now().After(deadline) {
			b.Fatalf("fewer than %d items ran within %v of host start:\n%s", n, timeout, h.logs)
		}
		time.Sleep(100 * time.Millisecond) // bounded polling of the file
	}
}

// readLines returns the times of path's complete lines (none when path
// does not exist yet).
func readLines(b *testing.B, path string) []time.Time {
	b.Helper()
	data, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		b.Fatal(err)
	}
	var times []time.Time
	for {
		line, rest, ok := bytes.Cut(data, []byte("\n"))
		if !ok {
			return times
		}
		ns, err := strconv.ParseInt(string(line), 10, 64)
		if err != nil {
			b.Fatalf("%s: line %q: %v", path, line, err)
		}
		times = append(times, time.Unix(0, ns))
		data = rest
	}
}
