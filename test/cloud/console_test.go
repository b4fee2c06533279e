package cloud

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/ejob-io/ejob/internal/browsertest"
)

// consoleLogin opens path in a new tab of b and logs in there as user.
func consoleLogin(t *testing.T, b *browsertest.Browser, base, user, path string) *browsertest.Tab {
	t.Helper()
	return b.Login(t, base, path, user, adminPassword)
}

// confirmed clicks sel and confirms the dialog it opens.
func confirmed(tab *browsertest.Tab, what, sel string) {
	tab.Run(what, chromedp.Click(chromedp.CSS(sel)), chromedp.WaitVisible(chromedp.CSS("dialog.confirm .confirm-ok")),
		chromedp.Click(chromedp.CSS("dialog.confirm .confirm-ok")), chromedp.WaitNotPresent(chromedp.CSS("dialog.confirm")))
}

// TestConsolePages: `ejob cloud` serves the console with its own pages.
// An app and a job registered through the REST API show on the apps and
// cloud jobs pages with what they ask for; triggering the job from the
// console runs its items, which the tasks page lists with where they run;
// disabling the job and the app from the console writes the scheduler's
// state; a guest sees the same pages without any write control, and the
// namespace pages of `ejob serve` are not there.
func TestConsolePages(t *testing.T) {
	e := newEnv(t)
	s := e.start("a")
	c := login(t, s.base, "admin")
	e.registerApp(c, "billing")
	c.must("POST", "/api/job/register", e.jobBody("invoices", "billing", "TRANSIENT", "0 0 3 * * ?", 2, "0=sleep600,1=sleep600", true, false))
	b := browsertest.Start(t)

	tab := consoleLogin(t, b, s.base, "admin", "/apps")
	tab.Eventually(15*time.Second, "the app's row", `!!document.querySelector('#cloud-apps tr[data-app="billing"]')`)
	row := tab.Text(`#cloud-apps tr[data-app="billing"]`)
	for _, want := range []string{e.appURL, "sh app.sh", "0.1", "16", "enabled"} {
		if !strings.Contains(row, want) {
			t.Errorf("apps row %q lacks %q", row, want)
		}
	}
	nav := tab.Text("#nav")
	for _, want := range []string{"Apps", "Cloud jobs", "Tasks"} {
		if !strings.Contains(nav, want) {
			t.Errorf("navigation %q lacks %q", nav, want)
		}
	}
	for _, gone := range []string{"Servers", "History", "Namespaces"} {
		if strings.Contains(nav, gone) {
			t.Errorf("navigation %q shows the namespace page %q", nav, gone)
		}
	}
	tab.Screenshot("cloud-apps")
	tab.Run("the start page", chromedp.Navigate(s.base+"/"))
	tab.Eventually(15*time.Second, "the start page to be the apps page", `location.pathname === "/apps" && !!document.querySelector('#cloud-apps tr[data-app="billing"]') && document.querySelector('#nav a.active').getAttribute('href') === "/apps"`)

	tab.Run("the cloud jobs page", chromedp.Navigate(s.base+"/jobs"))
	jobRow := `#cloud-jobs tr[data-job="invoices"]`
	tab.Eventually(15*time.Second, "the job's row", fmt.Sprintf(`!!document.querySelector('%s')`, jobRow))
	row = tab.Text(jobRow)
	for _, want := range []string{"billing", "0 0 3 * * ?", "2", "TRANSIENT", "0.5", "32", "enabled"} {
		if !strings.Contains(row, want) {
			t.Errorf("jobs row %q lacks %q", row, want)
		}
	}
	tab.Screenshot("cloud-jobs")
	confirmed(tab, "trigger the job", jobRow+" .op-trigger")
	// An item's slave and start time are known once the launcher has
	// placed and started it.
	var running []runningTask
	e.eventually(30*time.Second, "both items to run on a slave", func() bool {
		running = c.running()
		for _, rt := range running {
			if rt.SlaveID == "unassigned-slave" || rt.StartTime == nil {
				return false
			}
		}
		return len(running) == 2
	})

	tab.Run("the tasks page", chromedp.Navigate(s.base+"/tasks"))
	for _, rt := range running {
		sel := fmt.Sprintf(`#tasks-running tr[data-job="invoices"][data-item="%d"]`, rt.MetaInfo.ShardingItems[0])
		tab.Eventually(15*time.Second, "item "+rt.ID+" on the tasks page with where it runs",
			fmt.Sprintf(`(document.querySelector('%s') || {}).textContent?.includes(%q) && document.querySelector('%s').textContent.includes(%q)`, sel, rt.SlaveID, sel, rt.ID))
		tab.Eventually(15*time.Second, "item "+rt.ID+" on the tasks page with since when it runs",
			fmt.Sprintf(`document.querySelector('%s .since').title !== '—' && /ago|now/.test(document.querySelector('%s .since').textContent)`, sel, sel))
	}
	tab.Screenshot("cloud-tasks")

	tab.Run("the cloud jobs page again", chromedp.Navigate(s.base+"/jobs"), chromedp.WaitVisible(chromedp.CSS(jobRow+" .op-disable")))
	confirmed(tab, "disable the job", jobRow+" .op-disable")
	tab.Eventually(15*time.Second, "the job shown disabled", fmt.Sprintf(`document.querySelector('%s').dataset.disabled === "true" && !document.querySelector('%s .op-trigger')`, jobRow, jobRow))
	if d := string(c.must("GET", "/api/job/invoices/disable", "")); d != "true" {
		t.Errorf("GET /api/job/invoices/disable = %s after disabling in the console, want true", d)
	}

	tab.Run("the apps page again", chromedp.Navigate(s.base+"/apps"), chromedp.WaitVisible(chromedp.CSS(`#cloud-apps tr[data-app="billing"] .op-disable`)))
	confirmed(tab, "disable the app", `#cloud-apps tr[data-app="billing"] .op-disable`)
	tab.Eventually(15*time.Second, "the app shown disabled", `document.querySelector('#cloud-apps tr[data-app="billing"]').dataset.disabled === "true"`)
	if d := string(c.must("GET", "/api/app/billing/disable", "")); d != "true" {
		t.Errorf("GET /api/app/billing/disable = %s after disabling in the console, want true", d)
	}

	guest := consoleLogin(t, b, s.base, "guest", "/jobs")
	guest.Eventually(15*time.Second, "the job's row for a guest", fmt.Sprintf(`!!document.querySelector('%s')`, jobRow))
	if n := browsertest.Eval[int](guest, `document.querySelectorAll('#cloud-jobs button').length`); n != 0 {
		t.Errorf("a guest sees %d buttons on the cloud jobs page, want none", n)
	}
	guest.Run("the apps page as a guest", chromedp.Navigate(s.base+"/apps"))
	guest.Eventually(15*time.Second, "the app's row for a guest", `!!document.querySelector('#cloud-apps tr[data-app="billing"]')`)
	if n := browsertest.Eval[int](guest, `document.querySelectorAll('#cloud-apps button').length`); n != 0 {
		t.Errorf("a guest sees %d buttons on the apps page, want none", n)
	}
	guest.Run("the tasks page as a guest", chromedp.Navigate(s.base+"/tasks"))
	guest.Eventually(15*time.Second, "the tasks page for a guest", `!!document.querySelector('#tasks-running')`)

	confirmed(tab, "delete the app", `#cloud-apps tr[data-app="billing"] .op-delete`)
	tab.Eventually(15*time.Second, "no app left", `!document.querySelector('#cloud-apps tr[data-app="billing"]')`)
	e.eventually(30*time.Second, "nothing running once the app is deleted", func() bool { return len(c.running()) == 0 })
}

// TestConsoleTasksWaitingForRoom: an item the launcher holds for lack of
// room shows on the tasks page as ready with the launcher's reason, next
// to the item that runs.
func TestConsoleTasksWaitingForRoom(t *testing.T) {
	e := newEnv(t)
	e.cpu = "1" // two items of 0.6 CPU (job and app): one at a time
	s := e.start("a")
	c := login(t, s.base, "admin")
	e.registerApp(c, "app")
	c.must("POST", "/api/job/register", e.jobBody("tight", "app", "TRANSIENT", "", 2, "0=sleep600,1=sleep600", false, false))
	c.must("POST", "/api/job/trigger", `"tight"`)
	b := browsertest.Start(t)
	tab := consoleLogin(t, b, s.base, "guest", "/tasks")
	tab.Eventually(30*time.Second, "one item running and one waiting with its reason",
		`(() => { const rows = [...document.querySelectorAll('#tasks-running tr[data-job="tight"]')].map((r) => r.textContent);
		  return rows.length === 2 && rows.some((r) => r.includes('running')) &&
		    rows.some((r) => r.includes('ready') && r.includes('Insufficient resources: needs cpu 0.6')); })()`)
}

// TestConsoleStatistics: with elasticjob.tracing the statistics page
// shows the task results of a fire (one item succeeded, one failed) in
// its cards and, once the leader has written the minute rows, in its
// charts, and the registered jobs by execution type; without tracing it
// shows the leader's own counts and, in place of each chart, why the
// statistics tables are missing.
func TestConsoleStatistics(t *testing.T) {
	b := browsertest.Start(t)
	t.Run("tracing", func(t *testing.T) {
		e := newEnv(t)
		e.tracing = true
		s, c := e.boot()
		c.must("POST", "/api/job/register", e.jobBody("counted", "app", "TRANSIENT", "", 2, "0=sleep1,1=fail", false, false))
		c.must("POST", "/api/job/register", e.jobBody("forever", "app", "DAEMON", "0/30 * * * * ?", 1, "0=sleep600", false, false))
		c.must("POST", "/api/job/trigger", "counted")
		tab := consoleLogin(t, b, s.base, "guest", "/statistics")
		tab.Eventually(30*time.Second, "today's results counting both items",
			`(() => { const c = document.querySelector('#stats-online'); return !!c && +c.dataset.success >= 1 && +c.dataset.failed >= 1; })()`)
		tab.Eventually(15*time.Second, "the jobs by execution type",
			`document.querySelector('#stats-jobs .num')?.textContent === '2' && document.querySelector('#stats-transient .num').textContent === '1' && document.querySelector('#stats-daemon .num').textContent === '1'`)
		// At the start of the next minute the leader writes the minute rows:
		// the results chart sums them, the running chart has points.
		tab.Eventually(90*time.Second, "the results chart counting both items",
			`(() => { const c = document.querySelector('#stats-results-chart'); if (!c || !c.dataset.sums) return false;
			  const s = JSON.parse(c.dataset.sums); return s.successCount >= 1 && s.failedCount >= 1 && !!c.querySelector('canvas'); })()`)
		// The registered jobs' row is a day's: it is written when the day
		// ends, so the chart says it has no row yet.
		tab.Eventually(30*time.Second, "the running tasks chart, and no registered jobs' row yet",
			`+(document.querySelector('#stats-running-tasks-chart')?.dataset.points || 0) > 0 &&
			 document.querySelector('#stats-register')?.textContent.includes('No row yet')`)
		if n := browsertest.Eval[int](tab, `document.querySelectorAll('#cloud-statistics .missing').length`); n != 0 {
			t.Errorf("with tracing the statistics page says %d parts are missing: %s", n, tab.Text("#cloud-statistics"))
		}
		tab.Screenshot("cloud-statistics")
	})
	t.Run("without tracing", func(t *testing.T) {
		e := newEnv(t)
		s, c := e.boot()
		c.must("POST", "/api/job/register", e.jobBody("counted", "app", "TRANSIENT", "", 1, "0=fail", false, false))
		c.must("POST", "/api/job/trigger", "counted")
		tab := consoleLogin(t, b, s.base, "guest", "/statistics")
		tab.Eventually(30*time.Second, "the leader's own count of the failed item",
			`(() => { const c = document.querySelector('#stats-online'); return !!c && +c.dataset.failed >= 1; })()`)
		tab.Eventually(15*time.Second, "each chart saying why it is missing",
			`['#stats-results', '#stats-running-tasks', '#stats-running-jobs', '#stats-register'].every((id) =>
			  document.querySelector(id + ' .missing')?.textContent.includes('elasticjob.tracing') && !document.querySelector(id + ' canvas'))`)
		if got := tab.Text("#stats-last-hour"); !strings.Contains(got, "elasticjob.tracing") {
			t.Errorf("last hour's card without tracing = %q, want the reason naming elasticjob.tracing", got)
		}
		if got := tab.Text("#stats-transient"); !strings.Contains(got, "1") {
			t.Errorf("TRANSIENT jobs card = %q, want 1", got)
		}
	})
}
