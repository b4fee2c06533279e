package console_test

import (
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/ejob-io/ejob/host/httpapi"
	"github.com/ejob-io/ejob/internal/browsertest"
)

// TestShellInBrowser logs in through the login page in headless chromium,
// sees the app shell with its navigation, and logs out; any JavaScript
// error fails it.
func TestShellInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("browser test")
	}
	f := start(t, httpapi.Options{})
	b := browsertest.Start(t)
	tab := b.NewTab(t)
	tab.Run("open /jobs", chromedp.Navigate(f.base+"/jobs"), chromedp.WaitVisible(chromedp.CSS("#login-form")))
	tab.Expect(`Failed to load resource: the server responded with a status of 401`)
	tab.Run("log in wrong",
		chromedp.SendKeys(chromedp.CSS("#username"), "admin"),
		chromedp.SendKeys(chromedp.CSS("#password"), "nope"),
		chromedp.Click(chromedp.CSS("#login-submit")),
		chromedp.WaitVisible(chromedp.CSS("#login-error")))
	tab.Run("log in",
		chromedp.SetValue(chromedp.CSS("#password"), adminPW),
		chromedp.Click(chromedp.CSS("#login-submit")),
		chromedp.WaitVisible(chromedp.CSS("#nav a.active")))
	tab.Eventually(5*time.Second, "the jobs page is shown", `location.pathname === "/jobs" && document.querySelector("#nav a.active").textContent === "Jobs"`)
	tab.Run("log out", chromedp.Click(chromedp.CSS("#logout")), chromedp.WaitVisible(chromedp.CSS("#login-form")))
}
