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
	tab := e.Login(b, AdminUser, AdminPW, "/jobs")
	tab.Eventually(10*time.Second, "the jobs page after login", `location.pathname === "/jobs"`)
	tab.Screenshot("login-done")
	tab.Run("log out", chromedp.Click(chromedp.CSS("#logout")), chromedp.WaitVisible(chromedp.CSS("#login-form")))
	tab.Run("a page after logout", chromedp.Navigate(e.Base+"/overview"), chromedp.WaitVisible(chromedp.CSS("#login-form")))
}
