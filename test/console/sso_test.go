package console

import (
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/ejob-io/ejob/internal/browsertest"
	"github.com/ejob-io/ejob/internal/oidctest"
)

// freeAddr is a loopback address free now (ejob serve's, known before it
// starts so that the provider can register its redirect URL).
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// ssoSignIn clicks "Sign in with SSO" on the login page and signs in at
// the provider's form as user.
func ssoSignIn(tab *browsertest.Tab, base, user string) {
	// The provider's example login page has no icon.
	tab.Expect(`status of 404 .*favicon\.ico`)
	tab.Run("open the login page", chromedp.Navigate(base+"/login"), chromedp.WaitVisible(chromedp.CSS("#sso-login")))
	tab.Run("sign in with SSO as "+user,
		chromedp.Click(chromedp.CSS("#sso-login")),
		chromedp.WaitVisible(chromedp.CSS("#username")),
		chromedp.SendKeys(chromedp.CSS("#username"), user),
		chromedp.SendKeys(chromedp.CSS("#password"), "pw-"+user),
		chromedp.Submit(chromedp.CSS("#password")))
}

type session struct {
	Username, Role string
	OK             bool
}

func currentSession(tab *browsertest.Tab) session {
	return browsertest.Eval[session](tab, `fetch('/console/session').then(async r => {
		const b = await r.json().catch(() => ({}));
		return {OK: r.ok, Username: b.model?.username || '', Role: b.model?.role || ''};
	})`)
}

// TestSSOInBrowser: single sign-on in headless chromium against a real
// OpenID Provider (zitadel/oidc's), with ejob serve a real process: an
// admin by claim signs in and can write; a read-only user by claim is
// read-only and a write forged with the session's CSRF token is refused;
// a user whose claim gives no role is refused with the message; a code
// obtained at another provider (a second OP that knows the same client)
// for this very sign-in is refused.
func TestSSOInBrowser(t *testing.T) {
	addr := freeAddr(t)
	redirect := "http://" + addr + "/login/sso/callback"
	client := oidctest.Client{ID: "ejob-console", Secret: "console-secret", RedirectURL: redirect}
	op := oidctest.Start(t, client,
		oidctest.User{Name: "alice", Password: "pw-alice", Groups: []string{"staff", "ejob-admins"}},
		oidctest.User{Name: "bob", Password: "pw-bob", Groups: []string{"ejob-viewers"}},
		oidctest.User{Name: "carol", Password: "pw-carol", Groups: []string{"staff"}})
	other := oidctest.Start(t, client, oidctest.User{Name: "alice", Password: "pw-alice", Groups: []string{"ejob-admins"}})
	e := NewEnv(t, Options{Listen: addr, ServeExtra: fmt.Sprintf(`    oidc:
      issuer: %s
      clientId: %s
      clientSecret: %s
      redirectUrl: %s
      roleClaim: groups
      adminValues: [ejob-admins]
      readOnlyValues: [ejob-viewers]
`, op.Issuer, client.ID, client.Secret, redirect)})
	b := browsertest.Start(t)

	t.Run("admin", func(t *testing.T) {
		tab := b.NewTab(t)
		tab.Expect(`Failed to load resource: the server responded with a status of 401`)
		ssoSignIn(tab, e.Base, "alice")
		tab.Run("the console", chromedp.WaitVisible(chromedp.CSS("#logout")))
		if s := currentSession(tab); s != (session{OK: true, Username: "alice", Role: "admin"}) {
			t.Fatalf("session %+v", s)
		}
		st := browsertest.Eval[int](tab, `fetch('/console/session').then(r => r.json()).then(s =>
			fetch('/api/registry-center/add', {method: 'POST', headers: {'X-CSRF-Token': s.model.csrfToken, 'Content-Type': 'application/json'},
				body: JSON.stringify({name: 'by-alice', zkAddressList: '127.0.0.1:2181', namespace: 'other'})})).then(r => r.json()).then(b => b.success ? 200 : b.errorCode)`)
		if st != 200 {
			t.Errorf("admin's write: errorCode %d", st)
		}
		tab.Run("log out", chromedp.Click(chromedp.CSS("#logout")), chromedp.WaitVisible(chromedp.CSS("#sso-login")))
		tab.Screenshot("login-sso")
	})

	t.Run("read-only", func(t *testing.T) {
		tab := b.NewTab(t)
		tab.Expect(`Failed to load resource: the server responded with a status of 40[13]`)
		ssoSignIn(tab, e.Base, "bob")
		tab.Run("the console", chromedp.WaitVisible(chromedp.CSS("#logout")))
		if s := currentSession(tab); s != (session{OK: true, Username: "bob", Role: "guest"}) {
			t.Fatalf("session %+v", s)
		}
		st := browsertest.Eval[int](tab, `fetch('/console/session').then(r => r.json()).then(s =>
			fetch('/api/registry-center/add', {method: 'POST', headers: {'X-CSRF-Token': s.model.csrfToken, 'Content-Type': 'application/json'},
				body: JSON.stringify({name: 'by-bob', zkAddressList: '127.0.0.1:2181', namespace: 'other'})})).then(r => r.json()).then(b => b.errorCode)`)
		if st != 403 {
			t.Errorf("read-only user's forged write: errorCode %d, want 403", st)
		}
	})

	t.Run("no role", func(t *testing.T) {
		tab := b.NewTab(t)
		tab.Expect(`Failed to load resource: the server responded with a status of 401`)
		ssoSignIn(tab, e.Base, "carol")
		tab.Eventually(10*time.Second, "back at the login page with the reason",
			`location.pathname === "/login" && !document.querySelector("#login-error").hidden`)
		if got := tab.Text("#login-error"); !strings.Contains(got, "Your account has no role in this console") {
			t.Errorf("message %q", got)
		}
		if s := currentSession(tab); s.OK {
			t.Errorf("carol has a session: %+v", s)
		}
		tab.Screenshot("login-sso-norole")
	})

	t.Run("code from another provider", func(t *testing.T) {
		tab := b.NewTab(t)
		tab.Expect(`Failed to load resource: the server responded with a status of 401`)
		tab.Expect(`status of 404 .*favicon\.ico`)
		// The authorization request ejob sends to its provider, with this
		// sign-in's state, nonce and PKCE challenge...
		var mu sync.Mutex
		var authURL string
		err := chromedp.Listen(tab.Ctx, func(ev any) {
			if r, ok := ev.(*network.EventRequestWillBeSent); ok && strings.HasPrefix(r.Request.URL, op.Issuer+"/auth?") {
				mu.Lock()
				authURL = r.Request.URL
				mu.Unlock()
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		tab.Run("start a sign-in", chromedp.Navigate(e.Base+"/login"), chromedp.WaitVisible(chromedp.CSS("#sso-login")),
			chromedp.Click(chromedp.CSS("#sso-login")), chromedp.WaitVisible(chromedp.CSS("#username")))
		mu.Lock()
		u := authURL
		mu.Unlock()
		if u == "" {
			t.Fatal("no authorization request to the provider seen")
		}
		// ... is taken to the other provider, where the user signs in; it
		// sends its code to ejob's callback with the same state.
		tab.Run("sign in at the other provider",
			chromedp.Navigate(other.Issuer+strings.TrimPrefix(u, op.Issuer)),
			chromedp.WaitVisible(chromedp.CSS("#username")),
			chromedp.SendKeys(chromedp.CSS("#username"), "alice"),
			chromedp.SendKeys(chromedp.CSS("#password"), "pw-alice"),
			chromedp.Submit(chromedp.CSS("#password")))
		tab.Eventually(10*time.Second, "back at the login page with the reason",
			`location.pathname === "/login" && location.search === "?sso=token" && !document.querySelector("#login-error").hidden`)
		if s := currentSession(tab); s.OK {
			t.Errorf("a code of another provider opened a session: %+v", s)
		}
	})
}
