package hostile

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/ejob-io/ejob/internal/oidctest"
	"github.com/ejob-io/ejob/internal/testkit"
)

// httpUser is one entry of ejob.http.users for a test.
type httpUser struct {
	name, password, role string
	cost                 int
}

// usersYAML is an ejob.http.users list (indented for ejob.http) with
// hashes of the given costs.
func usersYAML(t *testing.T, users ...httpUser) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("    users:\n")
	for _, u := range users {
		h, err := bcrypt.GenerateFromPassword([]byte(u.password), u.cost)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "      - {name: %s, passwordHash: '%s', role: %s}\n", u.name, h, u.role)
	}
	return b.String()
}

// serveHTTP writes a config whose ejob.http section is `listen: ADDR`
// plus section (keys indented four spaces), starts
// `ejob serve` on it and waits until it listens. scheme is http or https.
func (e *env) serveHTTP(scheme, section string) (p *proc, addr, base string) {
	e.t.Helper()
	addr = fmt.Sprintf("127.0.0.1:%d", testkit.FreePort(e.t))
	cfg := e.write("ejob.yaml", e.config("")+"ejob:\n  http:\n    listen: "+addr+"\n"+section)
	p = e.start("serve", "serve", "-c", cfg)
	p.waitLog(e.t, 60*time.Second, regexp.MustCompile(`operations HTTP server listening`))
	return p, addr, scheme + "://" + addr
}

// from is an HTTP client whose connections leave from the loopback address
// ip (127.0.0.0/8 is all loopback on Linux): a client of its own as the
// server sees it. It follows no redirect.
func from(t *testing.T, ip string) *http.Client {
	t.Helper()
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 10 * time.Second}
	tr := &http.Transport{DialContext: d.DialContext, MaxIdleConnsPerHost: 16}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 60 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// answer is one response, its body read.
type answer struct {
	status int
	header http.Header
	body   string
}

func do(t *testing.T, c *http.Client, method, u string, header map[string]string, body string) answer {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, u, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, u, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading the answer: %v", method, u, err)
	}
	return answer{status: testkit.APIStatus(resp.StatusCode, data), header: resp.Header, body: string(data)}
}

// location sends GET u with cookie through c's transport: the answer with
// its Location header as sent, however malformed (a client would refuse
// to parse it).
func location(t *testing.T, c *http.Client, u, cookie string) answer {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Cookie", cookie)
	resp, err := c.Transport.RoundTrip(req)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return answer{status: resp.StatusCode, header: resp.Header}
}

func loginBody(user, password string) string {
	b, _ := json.Marshal(map[string]string{"username": user, "password": password})
	return string(b)
}

// TestHostileLoginRedirectTargets: after login, the console sends the
// browser to ?next= (a live session's GET /login answers 303 to it) and the
// login form to the next it posted. Every target that a browser could
// resolve to another origin (tabs and line breaks it strips, backslashes
// it reads as slashes, schemes, dot segments, each also percent-encoded)
// must become "/", and a plain path of the console must be kept.
func TestHostileLoginRedirectTargets(t *testing.T) {
	e := newEnv(t)
	_, base, pw := e.serve(e.write("ejob.yaml", e.config("")))
	c := from(t, "127.0.0.1")
	r := do(t, c, http.MethodPost, base+"/login", nil, loginBody("admin", pw))
	if r.status != http.StatusOK {
		t.Fatalf("console login: %d %s", r.status, r.body)
	}
	var cookie string
	for _, sc := range r.header.Values("Set-Cookie") {
		if strings.HasPrefix(sc, "ejob_session=") {
			cookie, _, _ = strings.Cut(sc, ";")
		}
	}
	if cookie == "" {
		t.Fatalf("no session cookie in %q", r.header.Values("Set-Cookie"))
	}
	// Decoded targets: what the query parameter or the JSON field holds.
	tricks := []string{
		"/\t/evil.example/x", "/\n/evil.example/x", "/\r/evil.example/x", "/\r\n/evil.example", "\t//evil.example",
		"//evil.example/x", "/\\evil.example/x", "/\\/evil.example", "\\\\evil.example", "/%5c/evil.example",
		"/%5C%5Cevil.example", "/%2F/evil.example", "/%2f%2fevil.example", "/%09/evil.example", "/%0a/evil.example",
		"/./%2F/evil.example", "/..//evil.example", "/.//evil.example", "/a/../../evil.example/..//x",
		"https://evil.example/x", "https:evil.example", "http:/\\evil.example", "javascript:alert(1)",
		"JaVaScRiPt:alert(1)", "/ /evil.example", "/\u00a0/evil.example", "/\u2028/evil.example", "/\u200b/evil.example",
		"/\x00/evil.example", "/\x7f/evil.example", "/\u3000/evil.example", "evil.example", "%2F%2Fevil.example",
		"/login?next=//evil.example", "///evil.example",
	}
	for _, next := range tricks {
		g := location(t, c, base+"/login?next="+url.QueryEscape(next), cookie)
		if g.status != http.StatusSeeOther || g.header.Get("Location") != "/" {
			t.Errorf("GET /login?next=%q with a session: %d Location %q, want 303 to /", next, g.status, g.header.Get("Location"))
		}
		body, _ := json.Marshal(map[string]string{"username": "admin", "password": pw, "next": next})
		p := do(t, c, http.MethodPost, base+"/login", nil, string(body))
		var m struct {
			Model struct {
				Next string `json:"next"`
			} `json:"model"`
		}
		if err := json.Unmarshal([]byte(p.body), &m); p.status != http.StatusOK || err != nil || m.Model.Next != "/" {
			t.Errorf("login form with next %q: %d %s, want next /", next, p.status, p.body)
		}
	}
	// Raw query strings: the encodings a link would carry.
	for _, q := range []string{"next=/%09/evil.example", "next=/%0A/evil.example", "next=/%0d/evil.example",
		"next=%2F%2Fevil.example", "next=/%5C/evil.example", "next=/%252F%252Fevil.example", "next=%09//evil.example",
		"next=https%3A%2F%2Fevil.example", "next=javascript%3Aalert(1)", "next=/%E2%80%A8/evil.example"} {
		g := location(t, c, base+"/login?"+q, cookie)
		if g.status != http.StatusSeeOther || g.header.Get("Location") != "/" {
			t.Errorf("GET /login?%s with a session: %d Location %q, want 303 to /", q, g.status, g.header.Get("Location"))
		}
	}
	// A path of the console is where the browser goes.
	if g := location(t, c, base+"/login?next="+url.QueryEscape("/jobs/j1?tab=items"), cookie); g.header.Get("Location") != "/jobs/j1?tab=items" {
		t.Errorf("GET /login?next=/jobs/j1?tab=items: %d Location %q", g.status, g.header.Get("Location"))
	}
}

// TestHostileSSOBeginFlood: 10,000 quick unauthenticated GET /login/sso
// from one client must not lock another client out of single sign-on (it
// is sent on to the provider, not to /login?sso=busy), the flood itself
// is refused with 429 and Retry-After, and the server's log does not get
// a line per refusal.
func TestHostileSSOBeginFlood(t *testing.T) {
	e := newEnv(t)
	port := testkit.FreePort(t)
	redirect := fmt.Sprintf("http://127.0.0.1:%d/login/sso/callback", port)
	op := oidctest.Start(t, oidctest.Client{ID: "ejob-console", Secret: "console-secret", RedirectURL: redirect},
		oidctest.User{Name: "alice", Password: "pw-alice", Groups: []string{"ejob-admins"}})
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	cfg := e.write("ejob.yaml", e.config("")+fmt.Sprintf(`ejob:
  http:
    listen: %s
    oidc:
      issuer: %s
      clientId: ejob-console
      clientSecret: console-secret
      redirectUrl: %s
      roleClaim: groups
      adminValues: [ejob-admins]
`, addr, op.Issuer, redirect))
	p := e.start("serve", "serve", "-c", cfg)
	p.waitLog(t, 60*time.Second, regexp.MustCompile(`single sign-on ready`))
	p.waitLog(t, 60*time.Second, regexp.MustCompile(`operations HTTP server listening`))
	base := "http://" + addr

	const flood = 10000
	attacker := from(t, "127.0.0.1")
	var statuses sync.Map
	var next atomic.Int64
	var wg sync.WaitGroup
	retryAfter := atomic.Value{}
	for range 8 {
		wg.Go(func() {
			for next.Add(1) <= flood {
				resp, err := attacker.Get(base + "/login/sso")
				if err != nil {
					t.Errorf("flood: %v", err)
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				n, _ := statuses.LoadOrStore(resp.StatusCode, new(atomic.Int64))
				n.(*atomic.Int64).Add(1)
				if resp.StatusCode == http.StatusTooManyRequests {
					retryAfter.Store(resp.Header.Get("Retry-After"))
				}
			}
		})
	}
	wg.Wait()
	counts := map[int]int64{}
	statuses.Range(func(k, v any) bool { counts[k.(int)] = v.(*atomic.Int64).Load(); return true })
	t.Logf("flood of %d begins from one client: statuses %v", flood, counts)
	if counts[http.StatusTooManyRequests] < flood/2 {
		t.Errorf("the flood was not rate-limited: statuses %v", counts)
	}
	if ra, _ := retryAfter.Load().(string); ra == "" {
		t.Errorf("a 429 without Retry-After")
	} else if n, err := strconv.Atoi(ra); err != nil || n < 1 {
		t.Errorf("Retry-After %q: want a number of seconds", ra)
	}

	// Another client signs in as usual: it is sent to the provider.
	r := do(t, from(t, "127.0.0.2"), http.MethodGet, base+"/login/sso", nil, "")
	if r.status != http.StatusFound || !strings.HasPrefix(r.header.Get("Location"), op.Issuer) {
		t.Fatalf("another client's sign-in after the flood: %d Location %q, want 302 to the provider %s", r.status, r.header.Get("Location"), op.Issuer)
	}
	// A few lines stand for the refusals, not one each.
	if n := strings.Count(p.out.String(), `op="console sso login"`); n > 200 {
		t.Errorf("%d log lines for %d refused sign-ins: want a bounded number", n, flood)
	}
}

// TestHostileLoginBackoff: wrong passwords in a row for one user are
// answered 429 with Retry-After after a few, and then even the right
// password waits (no unlimited guessing); once the wait is over the right
// password works. One client trying many user names backs off too.
func TestHostileLoginBackoff(t *testing.T) {
	e := newEnv(t)
	_, _, base := e.serveHTTP("http", usersYAML(t, httpUser{"ops", "right-pw", "admin", bcrypt.DefaultCost}))
	c := from(t, "127.0.0.1")
	var limited answer
	for i := range 60 {
		r := do(t, c, http.MethodPost, base+"/api/login", nil, loginBody("ops", fmt.Sprintf("wrong-%d", i)))
		if r.status == http.StatusTooManyRequests {
			limited = r
			t.Logf("429 after %d wrong passwords", i)
			break
		}
		if r.status != http.StatusForbidden {
			t.Fatalf("wrong password %d: %d %s", i, r.status, r.body)
		}
	}
	if limited.status == 0 {
		t.Fatal("60 wrong passwords in a row and never 429")
	}
	ra, err := strconv.Atoi(limited.header.Get("Retry-After"))
	if err != nil || ra < 1 {
		t.Fatalf("429 with Retry-After %q: want whole seconds", limited.header.Get("Retry-After"))
	}
	if r := do(t, c, http.MethodPost, base+"/api/login", nil, loginBody("ops", "right-pw")); r.status != http.StatusTooManyRequests {
		t.Errorf("the right password during the backoff: %d %s, want 429", r.status, r.body)
	}
	// From another client too: the user name backs off, wherever from.
	other := from(t, "127.0.0.4")
	if r := do(t, other, http.MethodPost, base+"/api/login", nil, loginBody("ops", "right-pw")); r.status != http.StatusTooManyRequests {
		t.Errorf("the right password from another client during the backoff: %d %s, want 429", r.status, r.body)
	}
	var ok bool
	testkit.Eventually(t, time.Duration(ra+30)*time.Second, "the right password to work after the backoff", func() bool {
		r := do(t, other, http.MethodPost, base+"/api/login", nil, loginBody("ops", "right-pw"))
		ok = r.status == http.StatusOK
		return ok || r.status != http.StatusTooManyRequests
	})
	if !ok {
		t.Errorf("the right password after the backoff is refused")
	}

	// One client spraying user names backs off as a client.
	sprayer := from(t, "127.0.0.5")
	var sprayed bool
	for i := range 30 {
		r := do(t, sprayer, http.MethodPost, base+"/api/login", nil, loginBody(fmt.Sprintf("user%d", i), "guess"))
		if r.status == http.StatusTooManyRequests && r.header.Get("Retry-After") != "" {
			sprayed = true
			break
		}
	}
	if !sprayed {
		t.Errorf("30 user names from one client and never 429")
	}
}

// TestHostileLoginFloodKeepsAPI: 16 clients hammering POST /api/login
// (right passwords, from 16 addresses) must not starve the
// server: /healthz and an API read answer within 2 s throughout, and the
// password checks are bounded to half the cores (the process's CPU use
// stays well under all of them).
func TestHostileLoginFloodKeepsAPI(t *testing.T) {
	e := newEnv(t)
	const clients = 16
	users := []httpUser{{"ops", "right-pw", "admin", bcrypt.DefaultCost}}
	for i := range clients {
		users = append(users, httpUser{fmt.Sprintf("flood%d", i), "flood-pw", "guest", bcrypt.DefaultCost})
	}
	p, _, base := e.serveHTTP("http", usersYAML(t, users...))
	api := login(t, base, "ops", "right-pw")
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var logins atomic.Int64
	for i := range clients {
		c := from(t, fmt.Sprintf("127.0.1.%d", i+1))
		body := loginBody(fmt.Sprintf("flood%d", i), "flood-pw")
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				// Right passwords: wrong ones back off after a few, these
				// are checked every time.
				resp, err := c.Post(base+"/api/login", "application/json", strings.NewReader(body))
				if err != nil {
					continue
				}
				data, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if testkit.APIStatus(resp.StatusCode, data) == http.StatusOK {
					logins.Add(1)
				}
			}
		})
	}
	defer func() { close(stop); wg.Wait() }()
	testkit.Eventually(t, 60*time.Second, "the flood to start", func() bool { return logins.Load() > clients })
	cpu0, _ := testkit.ProcCPU(p.cmd.Process.Pid)
	t0 := time.Now()
	probe := &http.Client{Timeout: 30 * time.Second}
	var worst time.Duration
	for time.Since(t0) < 5*time.Second {
		for _, path := range []string{"/healthz", "/readyz"} {
			start := time.Now()
			resp, err := probe.Get(base + path)
			if err != nil {
				t.Fatalf("%s during the flood: %v", path, err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			worst = max(worst, time.Since(start))
		}
		start := time.Now()
		if st, body := api.call(http.MethodGet, "/api/jobs/getAllJobsBriefInfo", ""); st != http.StatusOK {
			t.Fatalf("API read during the flood: %d %s", st, body)
		}
		worst = max(worst, time.Since(start))
	}
	cpu1, _ := testkit.ProcCPU(p.cmd.Process.Pid)
	wall := time.Since(t0)
	t.Logf("during the flood (%d logins so far): worst probe or API answer %v; the server used %.2f cores", logins.Load(), worst,
		(cpu1-cpu0).Seconds()/wall.Seconds())
	if worst > 2*time.Second {
		t.Errorf("a probe or API read took %v while logins were flooded: want under 2 s", worst)
	}
	// One password check at a time on 2 cores (half of them): with the
	// probes' and the flood's own cost the process stays under 1.6.
	if cores := (cpu1 - cpu0).Seconds() / wall.Seconds(); cores > 1.6 {
		t.Errorf("the server used %.2f cores during the login flood: the password checks are not bounded", cores)
	}
}

// TestHostileUnknownUserTiming: a wrong password for a known user (hash of
// cost 12) and any password for an unknown name take the same bcrypt work,
// so the answer's timing does not tell which names exist.
func TestHostileUnknownUserTiming(t *testing.T) {
	e := newEnv(t)
	_, _, base := e.serveHTTP("http", usersYAML(t, httpUser{"ops", "right-pw", "admin", 12}))
	fastest := func(user string, client int) time.Duration {
		best := time.Hour
		for i := range 3 {
			c := from(t, fmt.Sprintf("127.0.2.%d", client*10+i+1))
			start := time.Now()
			r := do(t, c, http.MethodPost, base+"/api/login", nil, loginBody(user, "wrong"))
			if r.status != http.StatusForbidden {
				t.Fatalf("login %s: %d %s", user, r.status, r.body)
			}
			best = min(best, time.Since(start))
		}
		return best
	}
	known, unknown := fastest("ops", 1), fastest("nobody-at-all", 2)
	t.Logf("fastest of 3: known user %v, unknown user %v", known, unknown)
	if ratio := float64(known) / float64(unknown); ratio > 2 || ratio < 0.5 {
		t.Errorf("a known user's refusal takes %v, an unknown user's %v: want the same work (within a factor 2)", known, unknown)
	}
}

// TestHostileCheapHashRefused: a user hash of bcrypt cost 4 (fast to
// guess, and faster than an unknown user's refusal) stops `ejob serve` at
// start with an error naming the user and the cost; `ejob hash-password`
// refuses to make one.
func TestHostileCheapHashRefused(t *testing.T) {
	e := newEnv(t)
	addr := fmt.Sprintf("127.0.0.1:%d", testkit.FreePort(t))
	cfg := e.write("ejob.yaml", e.config("")+"ejob:\n  http:\n    listen: "+addr+"\n"+
		usersYAML(t, httpUser{"cheap", "pw", "admin", 4}))
	r := e.ejob(30*time.Second, "serve", "-c", cfg)
	if r.code == 0 || !strings.Contains(r.stderr, `user "cheap": the bcrypt hash has cost 4, want at least 10`) {
		t.Errorf("serve with a cost-4 hash: exit %d, stderr:\n%s", r.code, r.stderr)
	}
	r = e.ejob(30*time.Second, "hash-password", "--cost", "4")
	if r.code == 0 || !strings.Contains(r.stderr, "--cost 4: want 10 to 31") || r.stdout != "" {
		t.Errorf("hash-password --cost 4: exit %d, stdout %q, stderr:\n%s", r.code, r.stdout, r.stderr)
	}
}

// selfSigned writes a certificate for 127.0.0.1 with serial and its key
// as PEM files into dir and returns the certificate.
func selfSigned(t *testing.T, dir string, serial int64) *x509.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: "ejob test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, BasicConstraintsValid: true, IsCA: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	// Written to temporary names and renamed, as a renewal does.
	for name, block := range map[string]*pem.Block{"cert.pem": {Type: "CERTIFICATE", Bytes: der},
		"key.pem": {Type: "PRIVATE KEY", Bytes: kder}} {
		if err := os.WriteFile(dir+"/"+name+".tmp", pem.EncodeToMemory(block), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(dir+"/"+name+".tmp", dir+"/"+name); err != nil {
			t.Fatal(err)
		}
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestHostileTLS: with ejob.http.tls the server speaks HTTPS only, the
// console's session cookie is Secure, and after SIGHUP it serves the
// certificate the files hold now.
func TestHostileTLS(t *testing.T) {
	e := newEnv(t)
	cert := selfSigned(t, e.dir, 1)
	p, addr, base := e.serveHTTP("https", "    tls: {certFile: cert.pem, keyFile: key.pem}\n"+
		usersYAML(t, httpUser{"ops", "right-pw", "admin", bcrypt.DefaultCost}))
	client := func(c *x509.Certificate) *http.Client {
		pool := x509.NewCertPool()
		pool.AddCert(c)
		tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}
		t.Cleanup(tr.CloseIdleConnections)
		return &http.Client{Transport: tr, Timeout: 30 * time.Second}
	}
	r := do(t, client(cert), http.MethodPost, base+"/login", nil, loginBody("ops", "right-pw"))
	if r.status != http.StatusOK {
		t.Fatalf("login over HTTPS: %d %s", r.status, r.body)
	}
	if sc := r.header.Get("Set-Cookie"); !strings.Contains(sc, "ejob_session=") || !strings.Contains(sc, "; Secure") {
		t.Errorf("session cookie over HTTPS is not Secure: %q", sc)
	}
	// Plain HTTP gets no answer but the server's refusal.
	plain := &http.Client{Timeout: 10 * time.Second}
	if resp, err := plain.Get("http://" + addr + "/healthz"); err == nil {
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Errorf("plain HTTP on the HTTPS port: %d %s", resp.StatusCode, body)
		}
	}

	renewed := selfSigned(t, e.dir, 2)
	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 30*time.Second, "the renewed certificate to be served after SIGHUP", func() bool {
		conn, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // reads the served certificate
		if err != nil {
			return false
		}
		defer conn.Close()
		return conn.ConnectionState().PeerCertificates[0].SerialNumber.Int64() == 2
	})
	if r := do(t, client(renewed), http.MethodGet, base+"/healthz", nil, ""); r.status != http.StatusOK {
		t.Errorf("healthz with the renewed certificate: %d %s", r.status, r.body)
	}
	if !p.alive() {
		t.Fatalf("SIGHUP ended the server")
	}
}

// TestHostileForwardedHeaders: X-Forwarded-Proto: https marks the session
// cookie Secure only when the peer is a trusted proxy, and
// X-Forwarded-For names the client in the audit line only then; from any
// other peer both headers are ignored.
func TestHostileForwardedHeaders(t *testing.T) {
	e := newEnv(t)
	p, _, base := e.serveHTTP("http", "    trustedProxies: [127.0.0.2]\n"+
		usersYAML(t, httpUser{"ops", "right-pw", "admin", bcrypt.DefaultCost}))
	hdr := map[string]string{"X-Forwarded-Proto": "https", "X-Forwarded-For": "203.0.113.9, 198.51.100.7"}
	for _, tc := range []struct {
		ip     string
		secure bool
		remote string
	}{{"127.0.0.1", false, "remote=127.0.0.1"}, {"127.0.0.2", true, "remote=198.51.100.7"}} {
		before := len(p.out.String())
		r := do(t, from(t, tc.ip), http.MethodPost, base+"/login", hdr, loginBody("ops", "right-pw"))
		if r.status != http.StatusOK {
			t.Fatalf("login from %s: %d %s", tc.ip, r.status, r.body)
		}
		sc := r.header.Get("Set-Cookie")
		if got := strings.Contains(sc, "; Secure"); got != tc.secure {
			t.Errorf("login from %s with X-Forwarded-Proto: https: cookie %q, Secure %v, want %v", tc.ip, sc, got, tc.secure)
		}
		line := regexp.MustCompile(`(?m)^.*op="console login" result=ok.*$`)
		testkit.Eventually(t, 10*time.Second, "the login's audit line", func() bool {
			return line.MatchString(p.out.String()[before:])
		})
		if got := line.FindString(p.out.String()[before:]); !strings.Contains(got, tc.remote) {
			t.Errorf("login from %s: audit line %q, want %s", tc.ip, got, tc.remote)
		}
	}
}

// TestHostilePlainHTTPOnPublicAddress: users on a non-loopback address
// over plain HTTP stop `ejob serve` at start (passwords and cookies would
// cross the network in clear), whether the address comes from the file or
// --listen, unless allowInsecureHTTP says a proxy terminates TLS.
func TestHostilePlainHTTPOnPublicAddress(t *testing.T) {
	e := newEnv(t)
	users := usersYAML(t, httpUser{"ops", "right-pw", "admin", bcrypt.DefaultCost})
	public := fmt.Sprintf("0.0.0.0:%d", testkit.FreePort(t))
	cfg := e.write("public.yaml", e.config("")+"ejob:\n  http:\n    listen: "+public+"\n"+users)
	r := e.ejob(30*time.Second, "serve", "-c", cfg)
	if r.code == 0 || !strings.Contains(r.stderr, "plain HTTP on a non-loopback address") || !strings.Contains(r.stderr, "allowInsecureHTTP") {
		t.Errorf("serve on %s over plain HTTP: exit %d, stderr:\n%s", public, r.code, r.stderr)
	}
	local := e.write("local.yaml", e.config("")+"ejob:\n  http:\n    listen: 127.0.0.1:1\n"+users)
	r = e.ejob(30*time.Second, "serve", "-c", local, "--listen", public)
	if r.code == 0 || !strings.Contains(r.stderr, "plain HTTP on a non-loopback address") {
		t.Errorf("serve --listen %s over plain HTTP: exit %d, stderr:\n%s", public, r.code, r.stderr)
	}
	optIn := e.write("optin.yaml", e.config("")+"ejob:\n  http:\n    listen: "+public+"\n    allowInsecureHTTP: true\n"+users)
	p := e.start("serve", "serve", "-c", optIn)
	p.waitLog(t, 60*time.Second, regexp.MustCompile(`operations HTTP server listening`))
}

// forgedNames are user names that try to forge a successful login's audit
// line: a line break and the fields, or only the fields.
var forgedNames = []string{
	"x\n2026-12-01T00:00:00.000Z [INFO]  ejob.serve.http: audit: user=ops op=login result=ok remote=10.0.0.1",
	"x\r\n  | user=ops op=login result=ok",
	"ops op=login result=ok",
	`x" op=login result=ok user="ops`,
	"x\u2028user=ops op=login result=ok",
}

// forgeLogins tries each forged name at POST /api/login and at the console
// login form, from an address of its own (the failures hold back no other
// client).
func forgeLogins(t *testing.T, base string) {
	t.Helper()
	c := from(t, "127.0.0.9")
	for i, name := range forgedNames {
		path := "/api/login"
		if i%2 == 1 {
			path = "/login"
		}
		if r := do(t, c, http.MethodPost, base+path, nil, loginBody(name, "guess")); r.status == http.StatusOK {
			t.Fatalf("login as %q: %d", name, r.status)
		}
	}
}

// forgedLine finds a successful login's audit line.
var forgedLine = regexp.MustCompile(`(?m)^.*op=login result=ok.*$`)

// TestHostileForgedAuditLine: a user name holding a line break and
// "op=login result=ok" (or only the fields) must not produce a log line
// that a grep for `op=login result=ok` finds, and each refusal is one
// line.
func TestHostileForgedAuditLine(t *testing.T) {
	e := newEnv(t)
	p, _, base := e.serveHTTP("http", usersYAML(t, httpUser{"ops", "right-pw", "admin", bcrypt.DefaultCost}))
	forgeLogins(t, base)
	refused := regexp.MustCompile(`(?m)^\S+ \[WARN\]  ejob\.serve\.http: audit: user=.* op=(login|"console login") result=refused remote=127\.0\.0\.9$`)
	testkit.Eventually(t, 10*time.Second, "the refusals' audit lines", func() bool {
		return strings.Count(p.out.String(), "result=refused") >= len(forgedNames)
	})
	if m := forgedLine.FindAllString(p.out.String(), -1); len(m) > 0 {
		t.Errorf("forged user names produced lines matching op=login result=ok:\n%s", strings.Join(m, "\n"))
	}
	if n := len(refused.FindAllString(p.out.String(), -1)); n != len(forgedNames) {
		t.Errorf("%d of %d refusals are one whole audit line each:\n%s", n, len(forgedNames), p.out.String())
	}
}

// TestHostileAuditLogFile: with ejob.http.auditLog the audit lines go to
// that file, one line each, forged names as harmless as in the process
// log, and none to the process log.
func TestHostileAuditLogFile(t *testing.T) {
	e := newEnv(t)
	p, _, base := e.serveHTTP("http", "    auditLog: audit.log\n"+
		usersYAML(t, httpUser{"ops", "right-pw", "admin", bcrypt.DefaultCost}))
	forgeLogins(t, base)
	read := func() string {
		data, _ := os.ReadFile(e.dir + "/audit.log")
		return string(data)
	}
	testkit.Eventually(t, 10*time.Second, "the refusals' audit lines in the file", func() bool {
		return strings.Count(read(), "result=refused") >= len(forgedNames)
	})
	if m := forgedLine.FindAllString(read(), -1); len(m) > 0 {
		t.Errorf("forged user names produced lines matching op=login result=ok:\n%s", strings.Join(m, "\n"))
	}
	lines := strings.Split(strings.TrimSpace(read()), "\n")
	if len(lines) != len(forgedNames) || slices.ContainsFunc(lines, func(l string) bool { return !strings.Contains(l, "audit:") }) {
		t.Errorf("want one audit line per refusal, got:\n%s", read())
	}
	login(t, base, "ops", "right-pw")
	testkit.Eventually(t, 10*time.Second, "the real login's audit line", func() bool {
		return regexp.MustCompile(`(?m)^.*audit: user=ops op=login result=ok remote=127\.0\.0\.1$`).MatchString(read())
	})
	if strings.Contains(p.out.String(), "audit:") {
		t.Errorf("audit lines in the process log although ejob.http.auditLog is set:\n%s", p.out.String())
	}
}
