package console_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"golang.org/x/crypto/bcrypt"

	"github.com/ejob-io/ejob/core/config"
	"github.com/ejob-io/ejob/core/lifecycle"
	"github.com/ejob-io/ejob/core/node"
	"github.com/ejob-io/ejob/core/reg"
	"github.com/ejob-io/ejob/core/reg/embedded"
	"github.com/ejob-io/ejob/host/console"
	"github.com/ejob-io/ejob/host/httpapi"
	"github.com/ejob-io/ejob/internal/proctest"
	"github.com/ejob-io/ejob/internal/testkit"
)

func TestMain(m *testing.M) { testkit.Main(m) }

const (
	adminPW = "admin-pass-1"
	guestPW = "guest-pass-1"
)

// fixture is a console on an embedded namespace holding job "j".
type fixture struct {
	t    *testing.T
	c    reg.Client
	base string
	logs *proctest.Buffer
}

func start(t *testing.T, opts httpapi.Options) *fixture {
	t.Helper()
	c, err := embedded.NewServer().Connect("console")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	cfg := config.New("j", 2)
	cfg.Cron = "0 0/5 * * * ?"
	cfg.Props = map[string]string{"email.password": "hunter2-secret"}
	data, err := config.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	j := node.New("j")
	id := "10.0.0.1@-@42"
	for path, v := range map[string]string{j.Config(): string(data), j.Server("10.0.0.1"): "ENABLED",
		j.ShardingInstance(0): id, j.ShardingInstance(1): id} {
		if _, err := reg.Persist(context.Background(), c, path, []byte(v)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Create(context.Background(), j.Instance(id), []byte("jobInstanceId: "+id+"\nserverIp: 10.0.0.1\n"), reg.Ephemeral, reg.WithParents()); err != nil {
		t.Fatal(err)
	}
	hash := func(pw string) string {
		h, err := bcrypt.GenerateFromPassword([]byte(pw), bcrypt.MinCost)
		if err != nil {
			t.Fatal(err)
		}
		return string(h)
	}
	logs := &proctest.Buffer{}
	opts.Listen, opts.Client, opts.Console = "127.0.0.1:0", c, console.Handler
	opts.Users = []httpapi.User{{Name: "admin", PasswordHash: hash(adminPW), Role: httpapi.RoleAdmin},
		{Name: "guest", PasswordHash: hash(guestPW), Role: httpapi.RoleGuest}}
	opts.Logger = hclog.New(&hclog.LoggerOptions{Output: logs, Level: hclog.Info})
	srv, err := httpapi.Listen(opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	return &fixture{t: t, c: c, base: "http://" + srv.Addr().String(), logs: logs}
}

// browser is an HTTP client with a cookie jar that does not follow
// redirects, as a browser tab's session.
type browser struct {
	f    *fixture
	hc   *http.Client
	csrf string
}

func (f *fixture) browser() *browser {
	jar, err := cookiejar.New(nil)
	if err != nil {
		f.t.Fatal(err)
	}
	return &browser{f: f, hc: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

type response struct {
	status int
	header http.Header
	body   string
}

func (b *browser) do(method, path string, header map[string]string, body string) response {
	b.f.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, b.f.base+path, rd)
	if err != nil {
		b.f.t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := b.hc.Do(req)
	if err != nil {
		b.f.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		b.f.t.Fatal(err)
	}
	return response{testkit.APIStatus(resp.StatusCode, data), resp.Header, string(data)}
}

// login logs in through POST /login and reads the CSRF token.
func (b *browser) login(user, pw string) {
	b.f.t.Helper()
	r := b.do("POST", "/login", nil, fmt.Sprintf(`{"username":%q,"password":%q,"next":"/jobs"}`, user, pw))
	if r.status != 200 || !strings.Contains(r.body, `"next":"/jobs"`) {
		b.f.t.Fatalf("login %s: %d %s", user, r.status, r.body)
	}
	ss := b.session()
	if ss.Username != user || ss.CSRFToken == "" {
		b.f.t.Fatalf("session after login: %+v", ss)
	}
	b.csrf = ss.CSRFToken
}

func (b *browser) session() httpapi.Session {
	b.f.t.Helper()
	r := b.do("GET", "/console/session", nil, "")
	if r.status != 200 {
		b.f.t.Fatalf("GET /console/session: %d %s", r.status, r.body)
	}
	var env struct{ Model httpapi.Session }
	if err := json.Unmarshal([]byte(r.body), &env); err != nil {
		b.f.t.Fatal(err)
	}
	return env.Model
}

// disabled reports whether job j's server node says DISABLED.
func (f *fixture) disabled() bool {
	f.t.Helper()
	v, _, err := f.c.Get(context.Background(), node.New("j").Server("10.0.0.1"))
	if err != nil {
		f.t.Fatal(err)
	}
	return string(v) == "DISABLED"
}

// pagePaths are page routes of the console (any path but /api, /assets,
// /console and /login is one).
var pagePaths = []string{"/", "/overview", "/jobs", "/jobs/j", "/servers", "/history", "/namespaces", "/no/such/page?x=1"}

func TestPagesWithoutSessionRedirectToLogin(t *testing.T) {
	f := start(t, httpapi.Options{})
	b := f.browser()
	for _, p := range pagePaths {
		r := b.do("GET", p, nil, "")
		want := "/login?next=" + url.QueryEscape(p)
		if r.status != http.StatusSeeOther || r.header.Get("Location") != want {
			t.Errorf("GET %s without a session: %d Location %q, want 303 to %q", p, r.status, r.header.Get("Location"), want)
		}
	}
	// The login page and the assets need no session; the console's API does.
	for p, want := range map[string]int{"/login": 200, "/assets/app.js": 200, "/assets/style.css": 200,
		"/console/session": 401, "/console/api/overview": 403, "/assets/index.html": 404} {
		if r := b.do("GET", p, nil, ""); r.status != want {
			t.Errorf("GET %s without a session: %d, want %d", p, r.status, want)
		}
	}
	// With a session every page path serves the app shell.
	b.login("guest", guestPW)
	for _, p := range pagePaths {
		r := b.do("GET", p, nil, "")
		if r.status != 200 || !strings.Contains(r.body, `<script type="module" src="/assets/app.js">`) {
			t.Errorf("GET %s with a session: %d %.80s", p, r.status, r.body)
		}
		if csp := r.header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self' 'sha256-") || r.header.Get("X-Frame-Options") != "DENY" {
			t.Errorf("GET %s: Content-Security-Policy %q, X-Frame-Options %q", p, csp, r.header.Get("X-Frame-Options"))
		}
	}
	// A logged-in browser asking for /login goes on to the page.
	if r := b.do("GET", "/login?next=/jobs", nil, ""); r.status != http.StatusSeeOther || r.header.Get("Location") != "/jobs" {
		t.Errorf("GET /login with a session: %d %q", r.status, r.header.Get("Location"))
	}
}

func TestLoginRefusals(t *testing.T) {
	f := start(t, httpapi.Options{})
	b := f.browser()
	for _, body := range []string{`{"username":"admin","password":"wrong"}`, `{"username":"nobody","password":"admin-pass-1"}`, `{"username":"admin"}`} {
		if r := b.do("POST", "/login", nil, body); r.status != http.StatusUnauthorized {
			t.Errorf("POST /login %s: %d %s", body, r.status, r.body)
		}
	}
	if r := b.do("GET", "/console/session", nil, ""); r.status != http.StatusUnauthorized {
		t.Errorf("session after refused logins: %d", r.status)
	}
	// A login posted from another site is refused.
	r := b.do("POST", "/login", map[string]string{"Origin": "http://evil.example"}, fmt.Sprintf(`{"username":"admin","password":%q}`, adminPW))
	if r.status != http.StatusForbidden {
		t.Errorf("cross-site login: %d %s", r.status, r.body)
	}
	// The cookie is HttpOnly and SameSite=Strict.
	r = b.do("POST", "/login", nil, fmt.Sprintf(`{"username":"admin","password":%q,"next":"//evil.example"}`, adminPW))
	c := r.header.Get("Set-Cookie")
	if r.status != 200 || !strings.Contains(c, "HttpOnly") || !strings.Contains(c, "SameSite=Strict") || !strings.Contains(c, httpapi.SessionCookie+"=") {
		t.Errorf("login: %d Set-Cookie %q", r.status, c)
	}
	if !strings.Contains(r.body, `"next":"/"`) {
		t.Errorf("an off-site next is not replaced by /: %s", r.body)
	}
}

func TestWritesNeedTheCSRFToken(t *testing.T) {
	f := start(t, httpapi.Options{})
	b := f.browser()
	b.login("admin", adminPW)
	for _, h := range []map[string]string{nil, {httpapi.CSRFHeader: "wrong"}, {httpapi.CSRFHeader: ""}} {
		r := b.do("POST", "/api/jobs/j/disable", h, "")
		if r.status != http.StatusForbidden || !strings.Contains(r.body, httpapi.CSRFHeader) {
			t.Errorf("disable with CSRF header %v: %d %s", h, r.status, r.body)
		}
		if f.disabled() {
			t.Fatalf("disable without the CSRF token was done")
		}
		if r := b.do("PUT", "/api/jobs/config", h, `{"jobName":"j","cron":"0 0 1 * * ?","shardingTotalCount":2}`); r.status != http.StatusForbidden {
			t.Errorf("PUT config with CSRF header %v: %d %s", h, r.status, r.body)
		}
		if r := b.do("POST", "/logout", h, ""); r.status != http.StatusForbidden {
			t.Errorf("logout with CSRF header %v: %d %s", h, r.status, r.body)
		}
	}
	if st, _ := lifecycle.GetConfig(context.Background(), f.c, "j"); st.Config.Cron != "0 0/5 * * * ?" {
		t.Fatalf("cron changed without the CSRF token: %q", st.Config.Cron)
	}
	// With the token the same write is done.
	if r := b.do("POST", "/api/jobs/j/disable", map[string]string{httpapi.CSRFHeader: b.csrf}, ""); r.status != 200 {
		t.Fatalf("disable with the CSRF token: %d %s", r.status, r.body)
	}
	testkit.Eventually(t, 5*time.Second, "job j disabled", func() bool { return f.disabled() })
	// The Access-Token API needs no CSRF token (no cookie is involved).
	tok := f.token("admin", adminPW)
	if r := f.browser().do("POST", "/api/jobs/j/enable", map[string]string{httpapi.TokenHeader: tok}, ""); r.status != 200 {
		t.Fatalf("enable with an access token: %d %s", r.status, r.body)
	}
}

func (f *fixture) token(user, pw string) string {
	f.t.Helper()
	r := f.browser().do("POST", "/api/login", nil, fmt.Sprintf(`{"username":%q,"password":%q}`, user, pw))
	var env struct{ Model httpapi.LoginModel }
	if err := json.Unmarshal([]byte(r.body), &env); err != nil || env.Model.AccessToken == "" {
		f.t.Fatalf("api login: %d %s", r.status, r.body)
	}
	return env.Model.AccessToken
}

func TestGuestWritesRefusedEvenWithCSRF(t *testing.T) {
	f := start(t, httpapi.Options{})
	b := f.browser()
	b.login("guest", guestPW)
	if ss := b.session(); ss.Role != httpapi.RoleGuest {
		t.Fatalf("guest session role %q", ss.Role)
	}
	r := b.do("POST", "/api/jobs/j/disable", map[string]string{httpapi.CSRFHeader: b.csrf}, "")
	if r.status != http.StatusForbidden || !strings.Contains(r.body, "read-only") {
		t.Fatalf("guest disable: %d %s", r.status, r.body)
	}
	if f.disabled() {
		t.Fatal("a guest's write was done")
	}
	// Reads work under the cookie.
	if r := b.do("GET", "/api/jobs/getAllJobsBriefInfo", nil, ""); r.status != 200 || !strings.Contains(r.body, `"jobName":"j"`) {
		t.Fatalf("guest read: %d %s", r.status, r.body)
	}
}

func TestLogout(t *testing.T) {
	f := start(t, httpapi.Options{})
	b := f.browser()
	b.login("admin", adminPW)
	if r := b.do("POST", "/logout", map[string]string{httpapi.CSRFHeader: b.csrf}, ""); r.status != 200 {
		t.Fatalf("logout: %d %s", r.status, r.body)
	}
	if r := b.do("GET", "/jobs", nil, ""); r.status != http.StatusSeeOther {
		t.Fatalf("page after logout: %d", r.status)
	}
	if r := b.do("GET", "/api/jobs/getAllJobsBriefInfo", nil, ""); r.status != http.StatusForbidden {
		t.Fatalf("API after logout: %d", r.status)
	}
}

func TestSessionExpires(t *testing.T) {
	t.Run("idle", func(t *testing.T) {
		f := start(t, httpapi.Options{SessionIdle: 300 * time.Millisecond, SessionMaxAge: time.Hour})
		b := f.browser()
		b.login("admin", adminPW)
		first := b.session().ExpiresAt
		// A request extends an idle session; none, and it ends.
		testkit.Eventually(t, 5*time.Second, "the idle expiry to move on", func() bool { return b.session().ExpiresAt.After(first) })
		// A background request (a page's refresh) does not.
		bg := map[string]string{httpapi.BackgroundHeader: "1"}
		r := b.do("GET", "/api/jobs/getAllJobsBriefInfo", bg, "")
		if r.status != 200 {
			t.Fatalf("background read: %d", r.status)
		}
		testkit.Eventually(t, 5*time.Second, "the session to idle out under background requests", func() bool {
			return b.do("GET", "/api/jobs/getAllJobsBriefInfo", bg, "").status == http.StatusForbidden
		})
		testkit.Eventually(t, 5*time.Second, "the idle session to end", func() bool {
			return time.Now().After(first.Add(300 * time.Millisecond))
		})
		testkit.Eventually(t, 5*time.Second, "GET /jobs to go to login", func() bool {
			return b.do("GET", "/jobs", nil, "").status == http.StatusSeeOther
		})
	})
	t.Run("absolute", func(t *testing.T) {
		f := start(t, httpapi.Options{SessionIdle: time.Hour, SessionMaxAge: 2 * time.Second})
		b := f.browser()
		b.login("admin", adminPW)
		ss := b.session()
		if ss.ExpiresAt.After(time.Now().Add(2 * time.Second)) {
			t.Fatalf("ExpiresAt %v past the max age", ss.ExpiresAt)
		}
		// Requests do not extend a session past its max age.
		testkit.Eventually(t, 10*time.Second, "the session to end at its max age", func() bool {
			return b.do("GET", "/console/session", nil, "").status == http.StatusUnauthorized
		})
		if r := b.do("POST", "/api/jobs/j/disable", map[string]string{httpapi.CSRFHeader: ss.CSRFToken}, ""); r.status != http.StatusForbidden {
			t.Fatalf("write after expiry: %d %s", r.status, r.body)
		}
		if f.disabled() {
			t.Fatal("a write under an expired session was done")
		}
	})
}
