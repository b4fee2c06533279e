package console

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/ejob-io/ejob/internal/browsertest"
	"github.com/ejob-io/ejob/internal/testkit"
)

// jobsYAML: ticker and witness fire every second, nightly at 3 am (with a
// secret prop), manual is one-off.
const jobsYAML = `    ticker:
      elasticJobType: SCRIPT
      cron: "* * * * * ?"
      shardingTotalCount: 2
      description: fires every second
      props: {script.command.line: '%[1]s'}
    witness:
      elasticJobType: SCRIPT
      cron: "* * * * * ?"
      shardingTotalCount: 1
      props: {script.command.line: '%[1]s'}
    nightly:
      elasticJobType: SCRIPT
      cron: "0 0 3 * * ?"
      timeZone: Asia/Shanghai
      shardingTotalCount: 1
      description: nightly report
      props:
        script.command.line: '%[1]s'
        api.token: hunter2-secret
    manual:
      elasticJobType: SCRIPT
      shardingTotalCount: 1
      props: {script.command.line: '%[1]s'}
`

// status is the job's status as the registry says it (`ejob jobs --json`).
func (e *Env) status(job string) string {
	e.t.Helper()
	out, err := e.Ejob("jobs", "--json")
	if err != nil {
		e.t.Fatal(err)
	}
	var briefs []struct{ JobName, Status string }
	if err := json.Unmarshal([]byte(out), &briefs); err != nil {
		e.t.Fatalf("ejob jobs --json: %v: %s", err, out)
	}
	for _, b := range briefs {
		if b.JobName == job {
			return b.Status
		}
	}
	return ""
}

// cron is the job's cron in the registry (`ejob job show --json`).
func (e *Env) cron(job string) string {
	e.t.Helper()
	out, err := e.Ejob("job", "show", job, "--json")
	if err != nil {
		e.t.Fatal(err)
	}
	var v struct{ Config struct{ Cron string } }
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		e.t.Fatalf("ejob job show --json: %v: %s", err, out)
	}
	return v.Config.Cron
}

// act clicks a row action of the jobs table and confirms it.
func act(tab *browsertest.Tab, op, job string) {
	sel := fmt.Sprintf(`button[data-op=%q][data-job=%q]`, op, job)
	confirm(tab, op+" "+job, sel)
}

// rowHas is a JavaScript condition: the jobs table's row of job matches
// the CSS selector sel.
func rowHas(job, sel string) string {
	return fmt.Sprintf(`[...document.querySelectorAll('#jobs-table .tabulator-row')].some(r => r.querySelector('.job-link') && r.querySelector('.job-link').textContent === %q && r.querySelector(%q) !== null)`, job, sel)
}

// typeInto replaces an input's text the way a user does: cleared, then
// typed key by key (each key an input event the page reacts to).
func typeInto(tab *browsertest.Tab, sel, text string) {
	browsertest.Eval[bool](tab, fmt.Sprintf(`(() => { const i = document.querySelector(%q); i.value = ''; i.dispatchEvent(new Event('input', {bubbles: true})); return true })()`, sel))
	tab.Run("type into "+sel, chromedp.SendKeys(chromedp.CSS(sel), text))
}

// TestJobsPageOperations: an admin sees the jobs, disables one (the
// registry says DISABLED and it stops firing), enables it (it fires
// again), triggers a one-off job, and edits a cron: an invalid value is
// shown as an error with nothing written, a valid one is written and the
// job runs on its new schedule.
func TestJobsPageOperations(t *testing.T) {
	e := NewEnv(t, Options{Jobs: jobsYAML, Hosts: 1})
	testkit.Eventually(t, 30*time.Second, "ticker and witness to fire", func() bool {
		return len(e.Starts("ticker")) >= 2 && len(e.Starts("witness")) >= 1
	})
	b := browsertest.Start(t)
	tab := e.Login(b, AdminUser, AdminPW, "/overview")
	tab.Eventually(15*time.Second, "the overview's counts", `document.querySelector('#card-total .num').textContent === '4' && document.querySelector('#card-instances .num').textContent === '1'`)
	tab.Screenshot("overview")
	tab.Run("jobs", chromedp.Click(chromedp.CSS(`#nav a[href="/jobs"]`)))
	tab.Run("the jobs table", chromedp.WaitVisible(chromedp.CSS(`#jobs-table .tabulator-row`)))
	tab.Eventually(10*time.Second, "4 jobs listed", `document.querySelectorAll('#jobs-table .tabulator-row').length === 4`)
	tab.Eventually(10*time.Second, "ticker and witness ready or running", rowHas("ticker", ".badge-ready, .badge-running")+" && "+rowHas("witness", ".badge-ready, .badge-running"))
	tab.Eventually(10*time.Second, "the count", `document.querySelector('#jobs-count').textContent === '4 of 4 jobs'`)
	// Next fire times and the one-off job's row.
	tab.Eventually(10*time.Second, "manual is one-off", rowHas("manual", ".muted"))
	tab.Screenshot("jobs")

	// The phone layout: same page, narrow viewport.
	tab.Run("phone viewport", chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile), chromedp.Reload(),
		chromedp.WaitVisible(chromedp.CSS(".menu-toggle")), chromedp.WaitVisible(chromedp.CSS(`#jobs-table .tabulator-row`)))
	// Every action button of a row is within the screen.
	tab.Eventually(10*time.Second, "the actions within the screen", `[...document.querySelectorAll('button[data-op]')].every(b => b.getBoundingClientRect().right <= window.innerWidth)`)
	tab.Screenshot("jobs-phone")
	tab.Run("laptop viewport", chromedp.EmulateViewport(1280, 860), chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS(`#jobs-table .tabulator-row`)))
	tab.Eventually(10*time.Second, "4 jobs listed again", `document.querySelectorAll('#jobs-table .tabulator-row').length === 4`)

	// Filter: kept in the URL and across refreshes.
	typeInto(tab, "#jobs-search", "tick")
	tab.Eventually(10*time.Second, "the filter", `document.querySelector('#jobs-count').textContent === '1 of 4 jobs' && location.search === '?q=tick'`)
	typeInto(tab, "#jobs-search", "")
	tab.Eventually(10*time.Second, "the filter cleared", `document.querySelector('#jobs-count').textContent === '4 of 4 jobs'`)

	// Disable: the registry says DISABLED, the job stops firing, the page shows it.
	if got := browsertest.Eval[bool](tab, `document.querySelector('button[data-op="enable"][data-job="ticker"]') === null`); !got {
		t.Fatal("enable is shown for an OK job")
	}
	act(tab, "disable", "ticker")
	testkit.Eventually(t, 15*time.Second, "the registry to say ticker is DISABLED", func() bool { return e.status("ticker") == "DISABLED" })
	n0, w0 := len(e.Starts("ticker")), len(e.Starts("witness"))
	testkit.Eventually(t, 20*time.Second, "witness to fire 3 more times", func() bool { return len(e.Starts("witness")) >= w0+3 })
	// At most the fire under way when the disable landed (2 items).
	if n := len(e.Starts("ticker")); n > n0+2 {
		t.Fatalf("ticker fired %d more items after it was disabled", n-n0)
	}
	tab.Eventually(15*time.Second, "the row to show Disabled and Enable", rowHas("ticker", ".badge-disabled")+` && document.querySelector('button[data-op="enable"][data-job="ticker"]') !== null && document.querySelector('button[data-op="disable"][data-job="ticker"]') === null`)
	// The buttons keep their places whatever the state (a click aimed at
	// Disable while the 5 s refresh re-renders a row that went from ready
	// to running would otherwise land on the button that took its place):
	// every row has the same four slots, and a slot with no action keeps
	// an inert stand-in.
	tab.Eventually(10*time.Second, "every row's actions in four fixed slots", `[...document.querySelectorAll('#jobs-table .row-actions')].every(c => c.children.length === 4) &&
		(() => { const b = document.querySelector('button[data-op="enable"][data-job="ticker"]'); const c = b.closest('.row-actions');
			return c.children[0].classList.contains('slot-empty') && c.children[0].getAttribute('data-op') === null && c.children[1] === b &&
				b.getBoundingClientRect().left === document.querySelector('button[data-op="disable"][data-job="witness"]').getBoundingClientRect().left })()`)

	// Enable: it fires again.
	act(tab, "enable", "ticker")
	testkit.Eventually(t, 15*time.Second, "the registry to say ticker is OK", func() bool { return e.status("ticker") == "OK" })
	n1 := len(e.Starts("ticker"))
	testkit.Eventually(t, 20*time.Second, "ticker to fire again", func() bool { return len(e.Starts("ticker")) >= n1+2 })
	tab.Eventually(15*time.Second, "the row to show ready or running", rowHas("ticker", ".badge-ready, .badge-running"))

	// Trigger the one-off job.
	if len(e.Starts("manual")) != 0 {
		t.Fatal("manual ran before it was triggered")
	}
	act(tab, "trigger", "manual")
	testkit.Eventually(t, 20*time.Second, "manual to run once triggered", func() bool { return len(e.Starts("manual")) == 1 })

	// Edit nightly's cron: its secret prop is masked in the form.
	tab.Run("open the edit form", chromedp.Click(chromedp.CSS(`button[data-op="edit"][data-job="nightly"]`)),
		chromedp.WaitVisible(chromedp.CSS("#edit-cron")))
	if leaked := browsertest.Eval[bool](tab, `[...document.querySelectorAll('#edit-form input')].some(i => i.value.includes('hunter2'))`); leaked {
		t.Fatal("the secret prop's value is in the form")
	}
	tab.Eventually(10*time.Second, "the stored cron's preview", `document.querySelectorAll('#cron-preview li').length === 5`)
	typeInto(tab, "#edit-cron", "0 0 25 * * ?")
	tab.Eventually(10*time.Second, "the preview to say the cron is wrong", `document.querySelector('#cron-preview-error') !== null`)
	tab.Expect(`status of 400 \(Bad Request\) \(\S+/console/api/jobs/nightly/config`)
	tab.Run("save the invalid cron", chromedp.Click(chromedp.CSS("#edit-save")), chromedp.WaitVisible(chromedp.CSS("#edit-error")),
		chromedp.WaitVisible(chromedp.CSS("#err-cron")))
	if got := e.cron("nightly"); got != "0 0 3 * * ?" {
		t.Fatalf("an invalid cron was written: %q", got)
	}
	typeInto(tab, "#edit-cron", "*/2 * * * * ?")
	tab.Eventually(10*time.Second, "the new cron's preview", `document.querySelectorAll('#cron-preview li').length === 5 && document.querySelector('#cron-preview-error') === null`)
	tab.Screenshot("job-edit")
	tab.Run("save the valid cron", chromedp.Click(chromedp.CSS("#edit-save")), chromedp.WaitNotPresent(chromedp.CSS("#edit-dialog")))
	if got := e.cron("nightly"); got != "*/2 * * * * ?" {
		t.Fatalf("cron after save: %q", got)
	}
	testkit.Eventually(t, 20*time.Second, "nightly to run on its new schedule", func() bool { return len(e.Starts("nightly")) >= 2 })
	tab.Eventually(15*time.Second, "the table to show the new cron", fmt.Sprintf(`[...document.querySelectorAll('#jobs-table .tabulator-row')].some(r => r.textContent.includes('nightly') && r.textContent.includes(%q))`, "*/2 * * * * ?"))

	// A write without the CSRF token is refused, even for an admin.
	tab.Expect(`status of 403`)
	// /api/* answers errors as upstream: HTTP 200, the status in errorCode.
	if st := browsertest.Eval[[]int](tab, `fetch('/api/jobs/ticker/disable', {method: 'POST'}).then(async r => [r.status, (await r.json()).errorCode])`); fmt.Sprint(st) != "[200 403]" {
		t.Fatalf("admin write without CSRF token: HTTP status and errorCode %v, want [200 403]", st)
	}
	if s := e.status("ticker"); s != "OK" {
		t.Fatalf("ticker after a forged disable: %s", s)
	}
}

// TestReadOnlyUser: a guest sees the jobs but no write control, and the
// server refuses a forged write with or without the CSRF token.
func TestReadOnlyUser(t *testing.T) {
	e := NewEnv(t, Options{Jobs: jobsYAML, Hosts: 1})
	b := browsertest.Start(t)
	tab := e.Login(b, GuestUser, GuestPW, "/jobs")
	tab.Eventually(15*time.Second, "4 jobs listed", `document.querySelectorAll('#jobs-table .tabulator-row').length === 4`)
	if n := browsertest.Eval[int](tab, `document.querySelectorAll('button[data-op]').length`); n != 0 {
		t.Fatalf("a read-only user sees %d write buttons", n)
	}
	if txt := tab.Text(".role"); txt != "read-only" {
		t.Errorf("role shown as %q", txt)
	}
	tab.Expect(`status of 403`)
	// ticker is OK once its first fire has sharded it (SHARDING_FLAG
	// before): the forged writes must leave it so.
	testkit.Eventually(t, 15*time.Second, "ticker to be OK", func() bool { return e.status("ticker") == "OK" })
	got := browsertest.Eval[[]int](tab, `(async () => {
		const s = (await (await fetch('/console/session')).json()).model;
		const a = await fetch('/api/jobs/ticker/disable', {method: 'POST'});
		const b = await fetch('/api/jobs/ticker/disable', {method: 'POST', headers: {'X-CSRF-Token': s.csrfToken}});
		const c = await fetch('/console/api/jobs/nightly/config', {method: 'PUT', headers: {'X-CSRF-Token': s.csrfToken, 'Content-Type': 'application/json'},
			body: JSON.stringify({config: {jobName: 'nightly', cron: '* * * * * ?', shardingTotalCount: 1}, version: 0})});
		return [a.status, (await a.json()).errorCode, b.status, (await b.json()).errorCode, c.status];
	})()`)
	if fmt.Sprint(got) != "[200 403 200 403 403]" {
		t.Fatalf("forged writes of a read-only user: %v", got)
	}
	if s := e.status("ticker"); s != "OK" {
		t.Fatalf("ticker after forged writes: %s", s)
	}
	if c := e.cron("nightly"); c != "0 0 3 * * ?" {
		t.Fatalf("nightly's cron after a forged write: %s", c)
	}
	tab.Screenshot("jobs-read-only")
	// The overview, as a guest.
	tab.Run("overview", chromedp.Click(chromedp.CSS(`#nav a[href="/overview"]`)), chromedp.WaitVisible(chromedp.CSS("#card-total")))
	tab.Eventually(15*time.Second, "the overview's counts", `document.querySelector('#card-total .num').textContent === '4' && document.querySelector('#card-instances .num').textContent === '1'`)
	if !strings.Contains(tab.Text("#failures"), "No event trace configured") {
		t.Errorf("failures panel without a trace: %q", tab.Text("#failures"))
	}
}
