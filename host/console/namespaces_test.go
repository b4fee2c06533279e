package console_test

import (
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/ejob-io/ejob/host/httpapi"
	"github.com/ejob-io/ejob/internal/browsertest"
)

// TestNamespacesPageOnHost: a host's console (no namespaces store) shows
// its own namespace only, read-only even for an admin, and refuses the
// namespace writes with 409.
func TestNamespacesPageOnHost(t *testing.T) {
	if testing.Short() {
		t.Skip("browser test")
	}
	f := start(t, httpapi.Options{Registry: httpapi.RegistryInfo{ZKAddressList: "zk1:2181", Namespace: "console", HasDigest: true}})
	b := browsertest.Start(t)
	tab := b.NewTab(t)
	tab.Expect(`status of 401`)
	tab.Expect(`status of 409`)
	tab.Run("log in", chromedp.Navigate(f.base+"/namespaces"), chromedp.WaitVisible(chromedp.CSS("#login-form")),
		chromedp.SendKeys(chromedp.CSS("#username"), "admin"),
		chromedp.SendKeys(chromedp.CSS("#password"), adminPW),
		chromedp.Click(chromedp.CSS("#login-submit")),
		chromedp.WaitVisible(chromedp.CSS("#ns-host-note")),
		chromedp.WaitVisible(chromedp.CSS(`#ns-registry tr[data-name="console"].ns-active`)))
	if n := browsertest.Eval[int](tab, `document.querySelectorAll('.ns-add, .ns-use, .ns-edit, .ns-remove').length`); n != 0 {
		t.Errorf("a host's page shows %d write controls", n)
	}
	if got := tab.Text(`#ns-registry tr[data-name="console"] td:nth-child(4)`); got != "***" {
		t.Errorf("digest shown as %q", got)
	}
	st := browsertest.Eval[int](tab, `fetch('/console/session').then(r => r.json()).then(s =>
		fetch('/api/registry-center/add', {method: 'POST', headers: {'X-CSRF-Token': s.model.csrfToken, 'Content-Type': 'application/json'},
			body: JSON.stringify({name: 'x', zkAddressList: 'h:1', namespace: 'n'})})).then(r => r.json()).then(b => b.errorCode)`)
	if st != 409 {
		t.Errorf("add on a host: errorCode %d, want 409", st)
	}
}
