package console

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/ejob-io/ejob/internal/browsertest"
	"github.com/ejob-io/ejob/internal/testkit"
)

// Users of every environment.
const (
	AdminUser = "admin"
	AdminPW   = "admin-pass-1"
	GuestUser = "viewer"
	GuestPW   = "viewer-pass-1"
)

// Env is a namespace on the shared ZooKeeper with `ejob run` hosts running
// its jobs and an `ejob serve` serving the console for it.
type Env struct {
	t   *testing.T
	Dir string
	// Cfg is the hosts' config file; ServeCfg is `ejob serve`'s.
	Cfg, ServeCfg string
	// Runs is the record file of the SCRIPT jobs (test/recorder).
	Runs      string
	Namespace string
	// Base is the console's URL (http://127.0.0.1:PORT).
	Base  string
	procs []*proc
}

type proc struct {
	name   string
	cmd    *exec.Cmd
	log    string
	exited chan struct{}
	err    error
}

func (p *proc) logText() string {
	b, _ := os.ReadFile(p.log)
	return string(b)
}

func (p *proc) alive() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// Options of NewEnv.
type Options struct {
	// Jobs is the YAML of elasticjob.jobs (indented by 4 spaces), with
	// %[1]s standing for the recorder's command line.
	Jobs string
	// Hosts is the number of `ejob run` processes (0: none).
	Hosts int
	// ServeExtra is YAML added under ejob.http of `ejob serve`'s file
	// (indented by 4 spaces).
	ServeExtra string
	// Elasticjob is YAML added under elasticjob: of both files (indented
	// by 2 spaces): a tracing or dump section, say.
	Elasticjob string
	// Listen is `ejob serve`'s address (default 127.0.0.1:0), for a test
	// that must know it before the start (an SSO redirect URL).
	Listen string
	// ServeArgs are added to `ejob serve`'s command line.
	ServeArgs []string
}

var notNameChars = regexp.MustCompile(`[^A-Za-z0-9_-]`)

// NewEnv starts the hosts and `ejob serve`, and waits until the console
// answers. Everything stops when t ends.
func NewEnv(t *testing.T, opts Options) *Env {
	t.Helper()
	dir := t.TempDir()
	e := &Env{t: t, Dir: dir, Cfg: filepath.Join(dir, "ejob.yaml"), ServeCfg: filepath.Join(dir, "serve.yaml"),
		Runs:      filepath.Join(dir, "runs.txt"),
		Namespace: fmt.Sprintf("console-%s-%d", notNameChars.ReplaceAllString(t.Name(), "_"), time.Now().UnixNano())}
	t.Cleanup(e.cleanup)
	reg := fmt.Sprintf(`elasticjob:
  regCenter:
    serverLists: %s
    namespace: %s
    sessionTimeoutMilliseconds: 2000
    connectionTimeoutMilliseconds: 5000
`, zk.Addr(), e.Namespace)
	if opts.Jobs == "" {
		// A file needs a job; without hosts none is registered.
		opts.Jobs = "    idle:\n      elasticJobType: SCRIPT\n      shardingTotalCount: 1\n      props: {script.command.line: '%[1]s'}\n"
	}
	// `ejob serve` reads the same jobs (it runs none of them).
	jobs := opts.Elasticjob + "  jobs:\n" + fmt.Sprintf(opts.Jobs, recorderBin+" "+e.Runs)
	write(t, e.Cfg, reg+jobs+"ejob:\n  drainTimeout: 5s\n")
	hash := func(pw string) string {
		h, err := bcrypt.GenerateFromPassword([]byte(pw), bcrypt.DefaultCost)
		if err != nil {
			t.Fatal(err)
		}
		return string(h)
	}
	write(t, e.ServeCfg, reg+jobs+fmt.Sprintf(`ejob:
  http:
    listen: %s
    users:
      - {name: %s, passwordHash: '%s', role: admin}
      - {name: %s, passwordHash: '%s', role: guest}
%s`, cmp.Or(opts.Listen, "127.0.0.1:0"), AdminUser, hash(AdminPW), GuestUser, hash(GuestPW), opts.ServeExtra))
	for i := range opts.Hosts {
		h := e.start(fmt.Sprintf("host%d", i+1), "run", "-c", e.Cfg)
		e.waitLog(h, 60*time.Second, regexp.MustCompile(`host started`))
	}
	srv := e.start("serve", append([]string{"serve", "-c", e.ServeCfg}, opts.ServeArgs...)...)
	m := e.waitLog(srv, 60*time.Second, regexp.MustCompile(`operations HTTP server listening.*addr=(\S+)`))
	e.Base = "http://" + m[1]
	return e
}

func write(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}

func (e *Env) start(name string, args ...string) *proc {
	e.t.Helper()
	p := &proc{name: name, log: filepath.Join(e.Dir, name+".log"), exited: make(chan struct{})}
	f, err := os.Create(p.log)
	if err != nil {
		e.t.Fatal(err)
	}
	defer f.Close()
	p.cmd = exec.Command(ejobBin, args...)
	p.cmd.Stdout, p.cmd.Stderr, p.cmd.Dir = f, f, e.Dir
	// The user's configuration directory (ejob serve's namespaces file)
	// is the test's, never the real one.
	p.cmd.Env = append(os.Environ(), "XDG_CONFIG_HOME="+filepath.Join(e.Dir, "config"))
	if err := p.cmd.Start(); err != nil {
		e.t.Fatal(err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.exited)
	}()
	e.procs = append(e.procs, p)
	return p
}

// waitLog waits for a line of p's log matching re and returns its match.
func (e *Env) waitLog(p *proc, within time.Duration, re *regexp.Regexp) []string {
	e.t.Helper()
	var m []string
	testkit.Eventually(e.t, within, p.name+" to log "+re.String(), func() bool {
		if !p.alive() {
			e.t.Fatalf("%s exited: %v\n%s", p.name, p.err, p.logText())
		}
		m = re.FindStringSubmatch(p.logText())
		return m != nil
	})
	return m
}

func (e *Env) cleanup() {
	for i := len(e.procs) - 1; i >= 0; i-- {
		p := e.procs[i]
		if !p.alive() {
			continue
		}
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.exited:
		case <-time.After(20 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.exited
			e.t.Errorf("%s did not exit within 20s of SIGTERM", p.name)
		}
	}
	if e.t.Failed() {
		for _, p := range e.procs {
			e.t.Logf("---- %s log ----\n%s", p.name, tailLines(p.logText(), 80))
		}
	}
}

func tailLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// Ejob runs an ejob subcommand against the hosts' config file.
func (e *Env) Ejob(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, ejobBin, append(args, "-c", e.Cfg)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("ejob %s: %w\n%s", strings.Join(args, " "), err, errb.String())
	}
	return out.String(), nil
}

// Starts are the start times of the recorded runs of job.
func (e *Env) Starts(job string) []time.Time {
	e.t.Helper()
	data, err := testkit.ReadLines(e.Runs)
	if err != nil {
		e.t.Fatal(err)
	}
	var out []time.Time
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		f := strings.SplitN(sc.Text(), " ", 4)
		if len(f) < 4 || f[0] != "S" {
			continue
		}
		var ctx struct {
			JobName string `json:"jobName"`
		}
		if json.Unmarshal([]byte(f[3]), &ctx) != nil || ctx.JobName != job {
			continue
		}
		var ns int64
		if _, err := fmt.Sscan(f[1], &ns); err == nil {
			out = append(out, time.Unix(0, ns))
		}
	}
	return out
}

// Login opens a tab for user logged in through the login page, on the
// page path; before, if given, runs on the login page.
func (e *Env) Login(b *browsertest.Browser, user, pw, path string, before ...func(*browsertest.Tab)) *browsertest.Tab {
	e.t.Helper()
	return b.Login(e.t, e.Base, path, user, pw, before...)
}
