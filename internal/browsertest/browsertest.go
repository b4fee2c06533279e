// Package browsertest drives Debian's headless chromium from Go tests with
// chromedp, for the web console's browser tests: Start a browser (installed
// by scripts/chromium.sh when missing), open a Tab per user (each in its own
// browser context: its own cookies), run actions with a deadline, and fail
// the test on any JavaScript console error, uncaught exception or browser
// log error the test did not declare expected. Screenshot writes
// docs/console/<name>.png when EJOB_SCREENSHOTS=1 or the test binary runs
// with -update.
package browsertest

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/ejob-io/ejob/internal/testkit"
)

var update = flag.Bool("update", false, "write the console screenshots under docs/console")

// DefaultTimeout bounds one Run.
const DefaultTimeout = 30 * time.Second

// Browser is one headless chromium process.
type Browser struct {
	alloc  context.Context
	ctx    context.Context
	cancel func()
}

// Path is the chromium binary: $EJOB_CHROMIUM, else chromium on PATH or
// /usr/bin/chromium, installed by scripts/chromium.sh when missing.
func Path() (string, error) {
	if p := os.Getenv("EJOB_CHROMIUM"); p != "" {
		return p, nil
	}
	for _, name := range []string{"chromium", "/usr/bin/chromium"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	script, err := testkit.Script("chromium.sh", "EJOB_CHROMIUM_SCRIPT")
	if err != nil {
		return "", err
	}
	return testkit.RunScript(script, "install")
}

// Start starts a headless chromium that the test's cleanup stops. A
// browser that exits before it listens for DevTools is started once more;
// the test log keeps how the first one ended and what it printed.
func Start(t testing.TB) *Browser {
	t.Helper()
	path, err := Path()
	if err != nil {
		t.Fatalf("browsertest: no chromium: %v", err)
	}
	b, err := start(t, path)
	if err != nil {
		t.Logf("browsertest: %v; starting it once more", err)
		b, err = start(t, path)
	}
	if err != nil {
		t.Fatalf("browsertest: %v", err)
	}
	t.Cleanup(b.cancel)
	return b
}

// start starts the browser at path with a fresh profile. Its error says
// how the process ended (exit status or signal) as well as chromedp's,
// which has only the output.
func start(t testing.TB, path string) (*Browser, error) {
	dir := t.TempDir()
	var cmd *exec.Cmd
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("lang", "en-US"),
		chromedp.UserDataDir(dir),
		chromedp.Env("HOME="+dir, "TZ=UTC"),
		chromedp.WindowSize(1280, 860),
		chromedp.ModifyCmdFunc(func(c *exec.Cmd) {
			// What chromedp sets without this option: the browser dies
			// with the test binary.
			c.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
			cmd = c
		}),
	)
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(alloc)
	b := &Browser{alloc: alloc, ctx: ctx, cancel: func() { cancelCtx(); cancelAlloc() }}
	// The first Do starts the browser; its context must live as long as
	// the browser (a timeout here would close it).
	if err := chromedp.Do(ctx); err != nil {
		// The allocator's cancel returns once it has waited for the
		// process, so its state is set.
		b.cancel()
		ended := "not started"
		if cmd != nil && cmd.ProcessState != nil {
			ended = cmd.ProcessState.String()
		}
		return nil, fmt.Errorf("start %s (%s): %w", path, ended, err)
	}
	return b, nil
}

// Tab is one page of the browser in its own browser context.
type Tab struct {
	t      testing.TB
	Ctx    context.Context
	cancel func()

	mu       sync.Mutex
	expected []*regexp.Regexp
	errors   []string
	done     chan struct{}
}

// NewTab opens a tab with its own cookies. Every console error, uncaught
// exception or browser-log error in it fails the test (at the next Run or
// at cleanup) unless Expect matches it.
func (b *Browser) NewTab(t testing.TB) *Tab {
	t.Helper()
	ctx, cancel := chromedp.NewContext(b.ctx, chromedp.WithNewBrowserContext())
	tab := &Tab{t: t, Ctx: ctx, cancel: cancel, done: make(chan struct{})}
	if err := chromedp.Do(ctx); err != nil {
		cancel()
		t.Fatalf("browsertest: new tab: %v", err)
	}
	msgs := chromedp.Console(ctx)
	go func() {
		defer close(tab.done)
		for m, err := range msgs {
			if err != nil {
				return
			}
			if m.Type != chromedp.ConsoleError && !m.IsException() {
				continue
			}
			where := m.URL
			if where != "" {
				where = fmt.Sprintf(" (%s:%d)", where, m.Line+1)
			}
			tab.record(m.String() + where)
		}
	}()
	t.Cleanup(func() {
		tab.check()
		cancel()
		<-tab.done
	})
	return tab
}

func (tab *Tab) record(msg string) {
	tab.mu.Lock()
	defer tab.mu.Unlock()
	for _, re := range tab.expected {
		if re.MatchString(msg) {
			return
		}
	}
	tab.errors = append(tab.errors, msg)
}

// Expect declares console errors matching re expected (e.g. the browser's
// "Failed to load resource: ... 403" of a request the test forges).
func (tab *Tab) Expect(re string) {
	tab.mu.Lock()
	defer tab.mu.Unlock()
	tab.expected = append(tab.expected, regexp.MustCompile(re))
}

// Errors are the unexpected console errors seen so far.
func (tab *Tab) Errors() []string {
	tab.mu.Lock()
	defer tab.mu.Unlock()
	return append([]string(nil), tab.errors...)
}

func (tab *Tab) check() {
	tab.t.Helper()
	if errs := tab.Errors(); len(errs) > 0 {
		tab.t.Errorf("browsertest: JavaScript console errors:\n  %s", strings.Join(errs, "\n  "))
		tab.mu.Lock()
		tab.errors = nil
		tab.mu.Unlock()
	}
}

// Run runs actions within DefaultTimeout; an error or a console error
// fails the test now.
func (tab *Tab) Run(what string, actions ...chromedp.Action[chromedp.Void]) {
	tab.t.Helper()
	ctx, cancel := context.WithTimeout(tab.Ctx, DefaultTimeout)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		tab.t.Fatalf("browsertest: %s: %v (console errors: %q)", what, err, tab.Errors())
	}
	tab.check()
	if tab.t.Failed() {
		tab.t.FailNow()
	}
}

// Eval evaluates a JavaScript expression (awaiting a promise) and decodes
// its value into T.
func Eval[T any](tab *Tab, expr string) T {
	tab.t.Helper()
	ctx, cancel := context.WithTimeout(tab.Ctx, DefaultTimeout)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		tab.t.Fatalf("browsertest: eval %s: %v", expr, err)
	}
	return v
}

// Text is the visible text of the first element matching the CSS selector
// (waited for).
func (tab *Tab) Text(sel string) string {
	tab.t.Helper()
	ctx, cancel := context.WithTimeout(tab.Ctx, DefaultTimeout)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel), chromedp.NodeVisible))
	if err != nil {
		tab.t.Fatalf("browsertest: text of %s: %v", sel, err)
	}
	return s
}

// Eventually polls the JavaScript boolean expression cond until it is true
// or within passes (then the test fails naming what).
func (tab *Tab) Eventually(within time.Duration, what, cond string) {
	tab.t.Helper()
	var last error
	ok := testkit.Poll(within, func() bool {
		ctx, cancel := context.WithTimeout(tab.Ctx, DefaultTimeout)
		defer cancel()
		v, err := chromedp.Run(ctx, chromedp.Evaluate[bool](cond))
		last = err
		return err == nil && v
	})
	if !ok {
		tab.t.Fatalf("browsertest: %s: not true within %v (%s; last error %v; console errors %q)\npage %s", what, within, cond, last, tab.Errors(), tab.describe())
	}
	tab.check()
}

// describe is the page's address and text, for a failure message.
func (tab *Tab) describe() string {
	ctx, cancel := context.WithTimeout(tab.Ctx, 5*time.Second)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](`location.href + "\n" + document.body.innerText.slice(0, 3000)`))
	if err != nil {
		return "(unreadable: " + err.Error() + ")"
	}
	return s
}

// Login opens base+path in a new tab of b, which a console without a
// session sends to its login page; runs before there (e.g. a
// screenshot); logs in as user with pw and waits for the shell.
func (b *Browser) Login(t testing.TB, base, path, user, pw string, before ...func(*Tab)) *Tab {
	t.Helper()
	tab := b.NewTab(t)
	// The shell asks GET /console/session first; without a session it
	// answers 401, which the browser logs.
	tab.Expect(`Failed to load resource: the server responded with a status of 401`)
	tab.Run("open "+path, chromedp.Navigate(base+path), chromedp.WaitVisible(chromedp.CSS("#login-form")))
	for _, f := range before {
		f(tab)
	}
	tab.Run("log in as "+user,
		chromedp.SetValue(chromedp.CSS("#username"), user),
		chromedp.SendKeys(chromedp.CSS("#password"), pw),
		chromedp.Click(chromedp.CSS("#login-submit")),
		chromedp.WaitVisible(chromedp.CSS("#logout")))
	return tab
}

// Screenshots reports whether Screenshot writes files.
func Screenshots() bool { return *update || os.Getenv("EJOB_SCREENSHOTS") == "1" }

// Screenshot saves the tab's viewport as docs/console/<name>.png under the
// module root when Screenshots() (else it does nothing).
func (tab *Tab) Screenshot(name string) {
	tab.t.Helper()
	if !Screenshots() {
		return
	}
	ctx, cancel := context.WithTimeout(tab.Ctx, DefaultTimeout)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		tab.t.Fatalf("browsertest: screenshot %s: %v", name, err)
	}
	root, err := moduleRoot()
	if err != nil {
		tab.t.Fatalf("browsertest: %v", err)
	}
	dir := filepath.Join(root, "docs", "console")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		tab.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		tab.t.Fatal(err)
	}
	tab.t.Logf("browsertest: wrote docs/console/%s.png", name)
}

func moduleRoot() (string, error) {
	script, err := testkit.Script("chromium.sh", "EJOB_CHROMIUM_SCRIPT_UNSET")
	if err != nil {
		return "", err
	}
	return filepath.Dir(filepath.Dir(script)), nil
}
