package console

import (
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/ejob-io/ejob/internal/browsertest"
)

// TestLoginAndLogout: a page without a session goes to the login page and
// back to it after logging in; logout ends the session.
func TestLoginAndLogout(t *testing.T) {
	e := NewEnv(t, Options{})
	b := browsertest.Start(t)
	tab := e.Login(b, AdminUser, AdminPW, "/jobs", func(tab *browsertest.Tab) {
		tab.Run("type the user", chromedp.SendKeys(chromedp.CSS("#username"), AdminUser))
		tab.Screenshot("login")
	})
	tab.Eventually(10*time.Second, "the jobs page after login", `location.pathname === "/jobs"`)
	tab.Run("log out", chromedp.Click(chromedp.CSS("#logout")), chromedp.WaitVisible(chromedp.CSS("#login-form")))
	tab.Run("a page after logout", chromedp.Navigate(e.Base+"/overview"), chromedp.WaitVisible(chromedp.CSS("#login-form")))
}

// TestExpiredSessionGoesToLogin: a page left open past the idle timeout
// (its own refreshes do not count as use) goes back to the login page by
// itself, and a new login returns to it.
func TestExpiredSessionGoesToLogin(t *testing.T) {
	e := NewEnv(t, Options{ServeExtra: "    sessionIdleTimeout: 2s\n"})
	b := browsertest.Start(t)
	tab := e.Login(b, AdminUser, AdminPW, "/overview")
	tab.Run("the overview", chromedp.WaitVisible(chromedp.CSS("#card-total")))
	// The refresh after the timeout is refused (403) and the page leaves.
	tab.Expect(`status of 403`)
	tab.Eventually(30*time.Second, "the page to go to the login page", `location.pathname === "/login" && new URLSearchParams(location.search).get("next") === "/overview" && document.readyState === "complete"`)
	tab.Run("log in again",
		chromedp.WaitVisible(chromedp.CSS("#login-form")),
		chromedp.SetValue(chromedp.CSS("#username"), AdminUser),
		chromedp.SetValue(chromedp.CSS("#password"), AdminPW),
		chromedp.Click(chromedp.CSS("#login-submit")),
		chromedp.WaitVisible(chromedp.CSS("#card-total")))
	tab.Eventually(10*time.Second, "back on the overview", `location.pathname === "/overview"`)
}

// TestExpiredSessionOnAnAPIPage: a page that polls /api/* (the servers
// page), whose errors come as HTTP 200 with errorCode 403 as upstream
// answers them, goes to the login page too once its session has ended.
func TestExpiredSessionOnAnAPIPage(t *testing.T) {
	e := NewEnv(t, Options{ServeExtra: "    sessionIdleTimeout: 2s\n"})
	b := browsertest.Start(t)
	tab := e.Login(b, AdminUser, AdminPW, "/servers")
	tab.Eventually(30*time.Second, "the servers page to go to the login page", `location.pathname === "/login" && new URLSearchParams(location.search).get("next") === "/servers" && document.readyState === "complete"`)
}

// TestHistoryWithoutTracing: the history page of a server without
// elasticjob.tracing says so (the /api/* answer is errorCode 404 in an
// HTTP 200) rather than showing an error.
func TestHistoryWithoutTracing(t *testing.T) {
	e := NewEnv(t, Options{})
	b := browsertest.Start(t)
	tab := e.Login(b, AdminUser, AdminPW, "/history")
	tab.Eventually(15*time.Second, "the no-tracing note", `document.body.textContent.includes('this server has no elasticjob.tracing')`)
}
