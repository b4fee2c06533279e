package hostile

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ejob-io/ejob/internal/testkit"
)

// standaloneConfig is a standalone file (no regCenter) with one one-off
// SCRIPT job "once" of two items that records its runs into runs, and
// tracing into the default SQLite file next to it.
func standaloneConfig(runs string) string {
	return fmt.Sprintf(`elasticjob:
  tracing:
    type: RDB
  jobs:
    once:
      elasticJobType: SCRIPT
      shardingTotalCount: 2
      props:
        script.command.line: %s %s
`, recorderBin, runs)
}

// ended counts the items that ended in a recorder file.
func ended(t *testing.T, runs string) int {
	t.Helper()
	b, err := testkit.ReadLines(runs)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "E ") {
			n++
		}
	}
	return n
}

// ok runs `ejob args...` and fails the test unless it exits 0; it returns
// the standard output.
func (e *env) ok(args ...string) string {
	e.t.Helper()
	r := e.ejob(30*time.Second, args...)
	if r.code != 0 {
		e.t.Fatalf("ejob %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
	}
	return r.stdout
}

// jobStatus is `ejob jobs --json`'s status of job.
func (e *env) jobStatus(file, job string) string {
	e.t.Helper()
	var briefs []struct {
		JobName string `json:"jobName"`
		Status  string `json:"status"`
	}
	out := e.ok("jobs", "-c", file, "--json")
	if err := json.Unmarshal([]byte(out), &briefs); err != nil {
		e.t.Fatalf("ejob jobs --json: %v\n%s", err, out)
	}
	for _, b := range briefs {
		if b.JobName == job {
			return b.Status
		}
	}
	e.t.Fatalf("ejob jobs lists no %s:\n%s", job, out)
	return ""
}

var hostStarted = regexp.MustCompile(`host started`)

// TestEveryCommandReachesAStandaloneHost: a real standalone host
// (`ejob run -c standalone.yaml`, embedded registry) is steered by every
// operator command given the same file: jobs, job show, job set,
// trigger (the items run), disable, enable, shutdown, and history reads
// the runs from the file's tracing. A second host on the file is refused.
// The commands used to answer "has no regCenter" for such a file.
func TestEveryCommandReachesAStandaloneHost(t *testing.T) {
	e := newEnv(t)
	runs := filepath.Join(e.dir, "runs.txt")
	const file = "standalone.yaml"
	e.write(file, standaloneConfig(runs))
	host := e.start("host", "run", "-c", file)
	host.waitLog(t, 60*time.Second, hostStarted)

	if out := e.ok("jobs", "-c", file); !strings.Contains(out, "once") {
		t.Errorf("ejob jobs lists no job once:\n%s", out)
	}
	if out := e.ok("job", "show", "once", "-c", file); !strings.Contains(out, "Sharding:") || !strings.Contains(out, "shardingTotalCount: 2") {
		t.Errorf("ejob job show once:\n%s", out)
	}

	e.ok("trigger", "once", "-c", file)
	testkit.Eventually(t, 30*time.Second, "both items of once to run", func() bool { return ended(t, runs) == 2 })
	testkit.Eventually(t, 30*time.Second, "ejob history to list both runs", func() bool {
		out := e.ok("history", "-c", file, "--job", "once", "--json")
		return strings.Count(out, `"jobName": "once"`) == 2
	})

	e.ok("job", "set", "once", "description=steered from the CLI", "-c", file)
	if out := e.ok("job", "show", "once", "-c", file); !strings.Contains(out, "description: steered from the CLI") {
		t.Errorf("the description set is not shown:\n%s", out)
	}

	e.ok("disable", "once", "-c", file)
	if s := e.jobStatus(file, "once"); s != "DISABLED" {
		t.Errorf("status after disable: %s, want DISABLED", s)
	}
	e.ok("enable", "once", "-c", file)
	if s := e.jobStatus(file, "once"); s == "DISABLED" {
		t.Errorf("status after enable: %s", s)
	}
	// The host obeys the enable: a trigger runs the items again.
	e.ok("trigger", "once", "-c", file)
	testkit.Eventually(t, 30*time.Second, "once to run again after enable", func() bool { return ended(t, runs) == 4 })

	second := e.ejob(30*time.Second, "run", "-c", file)
	if second.code == 0 || !strings.Contains(second.stderr, "another ejob host is running on "+file) {
		t.Errorf("a second host on the file: exit %d\n%s", second.code, second.stderr)
	}

	e.ok("shutdown", "once", "-c", file)
	testkit.Eventually(t, 30*time.Second, "the job to be shut down", func() bool { return e.jobStatus(file, "once") == "CRASHED" })
	if !host.alive() {
		t.Fatalf("the host exited: %v", host.err)
	}
}

// TestCommandsWithoutAStandaloneHost: with no host running on a
// standalone file the commands say how to start one, with the exit
// status of the other "cannot reach the registry" errors (1), also when a
// host killed with SIGKILL left its socket behind; the next host replaces
// that socket and the commands reach it.
func TestCommandsWithoutAStandaloneHost(t *testing.T) {
	e := newEnv(t)
	const file = "standalone.yaml"
	e.write(file, standaloneConfig(filepath.Join(e.dir, "runs.txt")))
	noHost := func(when string) {
		t.Helper()
		r := e.ejob(30*time.Second, "jobs", "-c", file)
		if r.code != 1 || !strings.Contains(r.stderr, "no ejob host is running on "+file) ||
			!strings.Contains(r.stderr, "start one with `ejob run -c "+file+"`") {
			t.Errorf("%s: ejob jobs: exit %d\n%s", when, r.code, r.stderr)
		}
	}
	noHost("before any host ran")

	host := e.start("host", "run", "-c", file)
	host.waitLog(t, 60*time.Second, hostStarted)
	e.ok("jobs", "-c", file)
	if err := host.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-host.exited
	noHost("after the host was killed")

	again := e.start("host again", "run", "-c", file)
	again.waitLog(t, 60*time.Second, hostStarted)
	if !strings.Contains(again.out.String(), "replaced the control socket") {
		t.Errorf("the new host did not say it replaced the stale socket:\n%s", again.out.String())
	}
	if s := e.jobStatus(file, "once"); s == "" {
		t.Error("no status from the new host")
	}
	if err := again.stop(20 * time.Second); err != nil {
		t.Fatal(err)
	}
	noHost("after the host stopped")
}

// sendRaw writes raw bytes on a fresh connection to the Unix socket sock
// and returns the status line of the answer ("" when the host closed
// without one).
func sendRaw(t *testing.T, sock string, raw []byte) string {
	t.Helper()
	c, err := net.DialTimeout("unix", sock, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(20 * time.Second))
	go func() { _, _ = c.Write(raw) }()
	line, _ := bufio.NewReader(c).ReadString('\n')
	return strings.TrimSpace(line)
}

var socketLine = regexp.MustCompile(`control socket: .*socket=(\S+)`)

// TestControlSocketSurvivesHostileRequests: a standalone host's control
// socket is owner-only (mode 0600), and what arrives on it that is not
// the protocol (an oversized body, bytes that are not HTTP, a JSON body
// with unknown fields, a request for an ephemeral node) is refused with
// an answer while the host runs on and the commands still reach it.
func TestControlSocketSurvivesHostileRequests(t *testing.T) {
	e := newEnv(t)
	const file = "standalone.yaml"
	e.write(file, standaloneConfig(filepath.Join(e.dir, "runs.txt")))
	host := e.start("host", "run", "-c", file)
	host.waitLog(t, 60*time.Second, hostStarted)
	sock := socketLine.FindStringSubmatch(host.out.String())
	if sock == nil {
		t.Fatalf("the host did not log its control socket:\n%s", host.out.String())
	}
	fi, err := os.Lstat(sock[1])
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Type() != os.ModeSocket || fi.Mode().Perm() != 0o600 {
		t.Errorf("control socket mode %v, want a socket with 0600", fi.Mode())
	}
	send := func(raw []byte) string { return sendRaw(t, sock[1], raw) }
	post := func(op, body string, length int) []byte {
		return []byte(fmt.Sprintf("POST /registry/v1/%s HTTP/1.1\r\nHost: ejob\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", op, length, body))
	}
	big := append(post("create", "", 9<<20), bytes.Repeat([]byte("x"), 9<<20)...)
	for name, c := range map[string]struct {
		raw  []byte
		want string
	}{
		"9 MiB body":     {big, "413"},
		"not HTTP":       {[]byte("\x00\x01\x02 hello\r\n\r\n"), "400"},
		"unknown fields": {post("get", `{"path":"/","x":1}`, len(`{"path":"/","x":1}`)), "400"},
		"ephemeral":      {post("create", `{"path":"/e","mode":1}`, len(`{"path":"/e","mode":1}`)), "400"},
		"unknown path":   {post("watch", `{}`, 2), "404"},
	} {
		if got := send(c.raw); !strings.Contains(got, " "+c.want+" ") {
			t.Errorf("%s: answer %q, want status %s", name, got, c.want)
		}
	}
	if !host.alive() {
		t.Fatalf("the host exited: %v", host.err)
	}
	if out := e.ok("jobs", "-c", file); !strings.Contains(out, "once") {
		t.Errorf("ejob jobs after the hostile requests:\n%s", out)
	}
}

// TestServeReachesAStandaloneHost: `ejob serve -c standalone.yaml` serves
// the console's REST API for the standalone host running on the file.
func TestServeReachesAStandaloneHost(t *testing.T) {
	e := newEnv(t)
	cfg := e.write("standalone.yaml", standaloneConfig(filepath.Join(e.dir, "runs.txt")))
	host := e.start("host", "run", "-c", cfg)
	host.waitLog(t, 60*time.Second, hostStarted)
	_, base, pw := e.serve(cfg)
	c := login(t, base, "admin", pw)
	status, body := c.call(http.MethodGet, "/api/jobs/getAllJobsBriefInfo", "")
	if status != http.StatusOK || !strings.Contains(string(body), `"jobName":"once"`) {
		t.Errorf("jobs list through ejob serve: %d %s", status, body)
	}
}
