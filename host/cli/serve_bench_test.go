package cli_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ejob-io/ejob/core/lifecycle/lifecycletest"
	"github.com/ejob-io/ejob/core/reg/zktest"
	"github.com/ejob-io/ejob/core/reg/zookeeper"
	"github.com/ejob-io/ejob/internal/testkit"
)

// serveBenchJobs is the size of the namespace `ejob serve` is measured on.
const serveBenchJobs = 1000

// BenchmarkServeRSS measures the memory of a real `ejob serve` process
// (built without -race) on a ZooKeeper namespace of 1,000 jobs
// (lifecycletest.FillJobs: 14 nodes each). Per op it starts the process,
// waits until it accepts the generated admin's login and answers
// getAllJobsBriefInfo with every job, lets the resident size settle,
// sends 20 more getAllJobsBriefInfo requests and reads /proc again.
// Metrics: rss-MiB (VmRSS once settled after the first answer),
// after-requests-MiB (VmRSS after the 20 requests), peak-MiB (VmHWM at
// the end), ready-s (process start to the first full answer) and
// request-ms (the 20 requests' mean latency).
func BenchmarkServeRSS(b *testing.B) {
	if testing.Short() {
		b.Skip("real ZooKeeper")
	}
	if _, err := os.Stat("/proc/self/status"); err != nil {
		b.Skip("needs /proc (Linux)")
	}
	bin := filepath.Join(b.TempDir(), "ejob")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/ejob-io/ejob/cmd/ejob").CombinedOutput(); err != nil {
		b.Fatalf("build ejob: %v\n%s", err, out)
	}
	zk := zktest.Start(b, zktest.Options{})
	cfg := zookeeper.DefaultConfig(zk.Addr(), "bench-serve")
	cfg.Logger = hclog.NewNullLogger()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c, err := zookeeper.Connect(ctx, cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close() // its session owns the jobs' live instances
	lifecycletest.FillJobs(b, c, serveBenchJobs)

	var rss, after, peak, ready, request float64
	for b.Loop() {
		s := startServe(b, bin, zk.Addr(), "bench-serve")
		s.getAll(b) // serving works before we measure
		ready = time.Since(s.start).Seconds()
		pid := s.cmd.Process.Pid
		rss = kib(settleRSS(b, pid))
		t0 := time.Now()
		for range 20 {
			s.getAll(b)
		}
		request = float64(time.Since(t0).Microseconds()) / 1000 / 20
		after = kib(mustProcKB(b, pid, "VmRSS"))
		peak = kib(mustProcKB(b, pid, "VmHWM"))
		s.stop(b)
	}
	b.ReportMetric(rss, "rss-MiB")
	b.ReportMetric(after, "after-requests-MiB")
	b.ReportMetric(peak, "peak-MiB")
	b.ReportMetric(ready, "ready-s")
	b.ReportMetric(request, "request-ms")
}

func kib(kb int64) float64 { return float64(kb) / 1024 }

func mustProcKB(b *testing.B, pid int, field string) int64 {
	b.Helper()
	kb, ok := testkit.ProcStatusKB(pid, field)
	if !ok {
		b.Fatalf("no %s in /proc/%d/status", field, pid)
	}
	return kb
}

// settleRSS samples VmRSS every 250 ms until it has changed by less than
// 1% over the last second (at most 15 s) and returns the last sample.
func settleRSS(b *testing.B, pid int) int64 {
	b.Helper()
	kb, recent, ok := testkit.SettledSample(250*time.Millisecond, 15*time.Second, func() int64 { return mustProcKB(b, pid, "VmRSS") })
	if !ok {
		b.Logf("RSS still changing after 15 s: %v kB", recent)
	}
	return kb
}

// servedProcess is one running `ejob serve`.
type servedProcess struct {
	cmd    *exec.Cmd
	start  time.Time
	base   string
	token  string
	logs   *syncBuffer
	exited chan struct{}
}

var generatedPassword = regexp.MustCompile(`password=(\S+)`)

// startServe starts `ejob serve` on a free loopback port and waits (60 s
// at most) until it accepts the generated admin's login.
func startServe(b *testing.B, bin, zkAddr, namespace string) *servedProcess {
	b.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	s := &servedProcess{base: "http://" + addr, logs: &syncBuffer{}, exited: make(chan struct{})}
	s.cmd = exec.Command(bin, "serve", "--zk", zkAddr, "--namespace", namespace, "--listen", addr)
	s.cmd.Stdout, s.cmd.Stderr = s.logs, s.logs
	s.start = time.Now()
	if err := s.cmd.Start(); err != nil {
		b.Fatal(err)
	}
	go func() { _ = s.cmd.Wait(); close(s.exited) }()
	b.Cleanup(func() { s.stop(b) })
	ok := testkit.Poll(60*time.Second, func() bool {
		select {
		case <-s.exited:
			return true
		default:
		}
		m := generatedPassword.FindStringSubmatch(s.logs.String())
		if m == nil {
			return false
		}
		resp, err := http.Post(s.base+"/api/login", "application/json",
			strings.NewReader(fmt.Sprintf(`{"username":"admin","password":%q}`, strings.Trim(m[1], `"`))))
		if err != nil {
			return false
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if parts := strings.Split(string(body), `"accessToken":"`); resp.StatusCode == 200 && len(parts) == 2 {
			s.token = strings.Split(parts[1], `"`)[0]
			return true
		}
		return false
	})
	select {
	case <-s.exited:
		b.Fatalf("ejob serve exited:\n%s", s.logs)
	default:
	}
	if !ok {
		b.Fatalf("ejob serve not serving within 60 s:\n%s", s.logs)
	}
	return s
}

// getAll asks for getAllJobsBriefInfo and checks every job is there, OK.
func (s *servedProcess) getAll(b *testing.B) {
	b.Helper()
	req, _ := http.NewRequest("GET", s.base+"/api/jobs/getAllJobsBriefInfo", nil)
	req.Header.Set("Access-Token", s.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	data, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || strings.Count(string(data), `"status":"OK"`) != serveBenchJobs {
		b.Fatalf("getAllJobsBriefInfo: %d %.300s", resp.StatusCode, data)
	}
}

// stop ends the process with SIGTERM (SIGKILL after 10 s).
func (s *servedProcess) stop(b *testing.B) {
	select {
	case <-s.exited:
		return
	default:
	}
	_ = s.cmd.Process.Signal(os.Interrupt)
	select {
	case <-s.exited:
	case <-time.After(10 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.exited
	}
}
