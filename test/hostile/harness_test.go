package hostile

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ejob-io/ejob/internal/proctest"
	"github.com/ejob-io/ejob/internal/testkit"
)

// env is one test's directory of config files and process logs.
type env struct {
	t   *testing.T
	dir string
	ns  string // a ZooKeeper namespace of the test's own
}

func newEnv(t *testing.T) *env {
	t.Helper()
	name := strings.ToLower(regexp.MustCompile(`[^A-Za-z0-9]+`).ReplaceAllString(t.Name(), "-"))
	return &env{t: t, dir: t.TempDir(), ns: fmt.Sprintf("hostile-%s-%d", name, time.Now().UnixNano())}
}

// config is an ejob config file's text for the shared ZooKeeper and a
// namespace of the test's own, with one one-off SCRIPT job ("idle", one
// item, never fired unless triggered) and then jobs: more entries under
// elasticjob.jobs, indented by four spaces.
func (e *env) config(jobs string) string {
	return fmt.Sprintf(`elasticjob:
  regCenter:
    serverLists: %s
    namespace: %s
  jobs:
    idle:
      elasticJobType: SCRIPT
      shardingTotalCount: 1
      props:
        script.command.line: "true"
%s`, zk.Addr(), e.ns, jobs)
}

// write writes text to name in the test's directory and returns its path.
func (e *env) write(name, text string) string {
	e.t.Helper()
	p := filepath.Join(e.dir, name)
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		e.t.Fatal(err)
	}
	return p
}

// proc is one long-running ejob process (`run`, `serve`).
type proc struct {
	name   string
	cmd    *exec.Cmd
	out    *proctest.Buffer // stdout and stderr
	exited chan struct{}
	err    error // the exit status, set before exited closes
}

// start starts `ejob args...` in the test's directory and returns at once.
// When the test ends the process gets SIGTERM (SIGKILL after 20 s, which
// fails the test), and its output is logged if the test failed.
func (e *env) start(name string, args ...string) *proc {
	e.t.Helper()
	p := &proc{name: name, out: &proctest.Buffer{}, exited: make(chan struct{})}
	p.cmd = exec.Command(ejobBin, args...)
	p.cmd.Dir = e.dir
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	if err := p.cmd.Start(); err != nil {
		e.t.Fatal(err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.exited)
	}()
	e.t.Cleanup(func() {
		if err := p.stop(20 * time.Second); err != nil {
			e.t.Errorf("stop %s: %v", p.name, err)
		}
		if e.t.Failed() {
			e.t.Logf("---- %s output ----\n%s", p.name, p.out.String())
		}
	})
	return p
}

func (p *proc) alive() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// stop sends SIGTERM and waits for the process to exit; after timeout it
// kills the process and says so.
func (p *proc) stop(timeout time.Duration) error {
	if !p.alive() {
		return nil
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
		return nil
	case <-time.After(timeout):
		_ = p.cmd.Process.Kill()
		<-p.exited
		return fmt.Errorf("%s did not exit within %v of SIGTERM", p.name, timeout)
	}
}

// waitLog waits until the process's output matches re and returns the
// first match's submatches; it fails the test if the process exits first.
func (p *proc) waitLog(t *testing.T, within time.Duration, re *regexp.Regexp) []string {
	t.Helper()
	var m []string
	testkit.Eventually(t, within, fmt.Sprintf("%s to print %q", p.name, re), func() bool {
		if !p.alive() {
			t.Fatalf("%s exited (%v) before printing %q:\n%s", p.name, p.err, re, p.out.String())
		}
		m = re.FindStringSubmatch(p.out.String())
		return m != nil
	})
	return m
}

// result is what a finished command printed and how it ended.
type result struct {
	stdout, stderr string
	code           int // the exit code; -1 when killed
	took           time.Duration
}

// ejob runs `ejob args...` to its end (killed after within, which fails
// the test) in the test's directory.
func (e *env) ejob(within time.Duration, args ...string) result {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	cmd := exec.CommandContext(ctx, ejobBin, args...)
	cmd.Dir = e.dir
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	err := cmd.Run()
	r := result{stdout: out.String(), stderr: errb.String(), took: time.Since(start)}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	default:
		e.t.Fatalf("ejob %s: %v", strings.Join(args, " "), err)
	}
	if ctx.Err() != nil {
		e.t.Fatalf("ejob %s did not end within %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), within, r.stdout, r.stderr)
	}
	return r
}

// passwordLine is the line a server without users prints its generated
// admin password in.
var passwordLine = regexp.MustCompile(`password=(\S+)`)

// serve starts `ejob serve -c cfg --listen 127.0.0.1:PORT` and waits for it
// to listen. It returns the process, its base URL and the generated admin
// password ("" when the config has users of its own).
func (e *env) serve(cfg string) (p *proc, base, password string) {
	e.t.Helper()
	addr := fmt.Sprintf("127.0.0.1:%d", testkit.FreePort(e.t))
	p = e.start("serve", "serve", "-c", cfg, "--listen", addr)
	p.waitLog(e.t, 60*time.Second, regexp.MustCompile(`operations HTTP server listening`))
	if m := passwordLine.FindStringSubmatch(p.out.String()); m != nil {
		password = m[1]
	}
	return p, "http://" + addr, password
}

// apiClient calls a REST API with a token from POST /api/login.
type apiClient struct {
	t     *testing.T
	base  string
	token string
	http  *http.Client
}

// login logs user in at base's /api/login and fails the test if refused.
func login(t *testing.T, base, user, password string) *apiClient {
	t.Helper()
	c := &apiClient{t: t, base: base, http: &http.Client{Timeout: 60 * time.Second}}
	status, env := c.call(http.MethodPost, "/api/login", fmt.Sprintf(`{"username":%q,"password":%q}`, user, password))
	if status != http.StatusOK {
		t.Fatalf("login %s: status %d: %s", user, status, env)
	}
	var m struct {
		Model struct {
			AccessToken string `json:"accessToken"`
		} `json:"model"`
	}
	if err := json.Unmarshal(env, &m); err != nil || m.Model.AccessToken == "" {
		t.Fatalf("login %s: no token in %s (%v)", user, env, err)
	}
	c.token = m.Model.AccessToken
	return c
}

// call sends method path with body (JSON, or none when empty) and returns
// the status (an /api/* error's errorCode: testkit.APIStatus) and the raw
// response body.
func (c *apiClient) call(method, path, body string) (int, []byte) {
	c.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, c.base+path, rd)
	if err != nil {
		c.t.Fatal(err)
	}
	if c.token != "" {
		req.Header.Set("Access-Token", c.token)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		c.t.Fatalf("%s %s: reading the answer: %v", method, path, err)
	}
	return testkit.APIStatus(resp.StatusCode, data), data
}
