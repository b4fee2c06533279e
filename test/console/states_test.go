package console

import (
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/ejob-io/ejob/internal/browsertest"
	"github.com/ejob-io/ejob/internal/testkit"
)

// TestStatesTellTheTruth: the console shows what is true of each job.
// A one-off job never triggered is "Never run" (it once showed orange
// "Resharding" in the overview, the jobs table and per item, because
// nothing is sharded before the first run); an item that fails every run
// shows its last failure (it once showed "Pending" like the others); the
// duration chart scales to runs of a few milliseconds (its y-axis was
// fixed at 0-1 s) and its legend shows values (it showed "--"); the
// Servers page offers Disable or Enable, not both; and a trigger that no
// instance would run is refused with the server's reason (it once
// reported success and nothing ran).
func TestStatesTellTheTruth(t *testing.T) {
	flaky := filepath.Join(t.TempDir(), "flaky.sh")
	if err := os.WriteFile(flaky, []byte("#!/bin/sh\ncase \"$1\" in *'\"shardingItem\":1'*) echo \"cannot reach db for item 1\" >&2; exit 3;; esac\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	e := NewEnv(t, Options{Hosts: 1, Elasticjob: tracing(t), Jobs: `    manual:
      elasticJobType: SCRIPT
      shardingTotalCount: 2
      props: {script.command.line: '%[1]s'}
    flaky:
      elasticJobType: SCRIPT
      shardingTotalCount: 2
      props: {script.command.line: '` + flaky + `'}
    fast:
      elasticJobType: SCRIPT
      cron: "* * * * * ?"
      shardingTotalCount: 1
      props: {script.command.line: '%[1]s'}
`})
	testkit.Eventually(t, 30*time.Second, "fast to fire 3 times", func() bool { return len(e.Starts("fast")) >= 3 })
	b := browsertest.Start(t)
	tab := e.Login(b, AdminUser, AdminPW, "/overview")
	tab.Eventually(15*time.Second, "2 jobs never run, none resharding",
		`document.querySelector('#card-never-run .num').textContent === '2' && document.querySelector('#card-resharding .num').textContent === '0'`)

	// The jobs table.
	tab.Run("jobs", chromedp.Click(chromedp.CSS(`#nav a[href="/jobs"]`)), chromedp.WaitVisible(chromedp.CSS(`#jobs-table .tabulator-row`)))
	tab.Eventually(10*time.Second, "manual and flaky never run", rowHas("manual", ".badge-never-run")+" && "+rowHas("flaky", ".badge-never-run")+
		" && !"+rowHas("manual", ".badge-resharding"))
	tab.Eventually(10*time.Second, "the count in the singular after filtering",
		`(() => { const i = document.querySelector('#jobs-status'); i.value = 'RESHARDING'; i.dispatchEvent(new Event('change', {bubbles: true})); return true })() &&
		 document.querySelector('#jobs-count').textContent === '0 of 3 jobs'`)
	browsertest.Eval[bool](tab, `(() => { const i = document.querySelector('#jobs-status'); i.value = ''; i.dispatchEvent(new Event('change', {bubbles: true})); return true })()`)
	// Nothing clipped: every badge and header label fits its cell, and the
	// name column takes no more than its share (it once took 300 px).
	tab.Eventually(10*time.Second, "badges and headers not clipped", `[...document.querySelectorAll('#jobs-table .tabulator-cell .badge, #jobs-table .tabulator-col-title')].every(x => {
		const cell = x.closest('.tabulator-cell, .tabulator-col');
		return x.scrollWidth <= x.clientWidth + 1 && x.getBoundingClientRect().right <= cell.getBoundingClientRect().right + 1;
	}) && document.querySelector('#jobs-table .tabulator-col[tabulator-field="jobName"]').offsetWidth <
		document.querySelector('#jobs-table .tabulator-col[tabulator-field="lastRun"]').offsetWidth`)

	act(tab, "trigger", "flaky")
	tab.Eventually(10*time.Second, "the trigger done", `[...document.querySelectorAll('.toast')].some(x => x.textContent.includes('flaky done'))`)

	// The detail of a job never run.
	tab.Run("manual's detail", chromedp.Navigate(e.Base+"/jobs/manual"), chromedp.WaitVisible(chromedp.CSS("#items tbody tr")))
	tab.Eventually(10*time.Second, "manual never run, its items too", `document.querySelector('#job-state .badge-never-run') !== null &&
		[...document.querySelectorAll('#items tbody tr')].every(r => r.dataset.state === 'NEVER_RUN') && !document.querySelector('#items').textContent.includes('Resharding')`)
	if txt := tab.Text(".facts"); !strings.Contains(txt, "2 items") || !strings.Contains(txt, "1 instance") || strings.Contains(txt, "1 instances") {
		t.Errorf("facts: %q, want 2 items and 1 instance", txt)
	}

	// A failing item's last result.
	tab.Run("flaky's detail", chromedp.Navigate(e.Base+"/jobs/flaky"), chromedp.WaitVisible(chromedp.CSS("#items tbody tr")))
	tab.Eventually(30*time.Second, "item 1 failed, item 0 succeeded",
		`document.querySelector('#item-1 .last-result.badge-failure') !== null && document.querySelector('#item-0 .last-result.badge-success') !== null`)
	if title := browsertest.Eval[string](tab, `document.querySelector('#item-1 .last-result').title`); !strings.Contains(title, "cannot reach db for item 1") {
		t.Errorf("item 1's last result: title %q lacks the cause", title)
	}
	tab.Eventually(10*time.Second, "flaky ready, its items ready", `document.querySelector('#job-state .badge-ready') !== null &&
		[...document.querySelectorAll('#items tbody tr')].every(r => r.dataset.state === 'READY')`)

	// The chart of runs of a few milliseconds.
	tab.Run("fast's detail", chromedp.Navigate(e.Base+"/jobs/fast"), chromedp.WaitVisible(chromedp.CSS("#duration-chart canvas")))
	tab.Eventually(20*time.Second, "the chart in ms with a legend of values", `document.querySelector('#duration-chart').dataset.unit === 'ms' &&
		[...document.querySelectorAll('#duration-chart .u-legend .u-value')].every(v => v.textContent !== '--' && v.textContent !== '') &&
		/\d+ runs?, longest \d+ ms/.test(document.querySelector('#duration-chart .u-legend').textContent)`)
	// The y-axis ends just above the longest run plotted (the chart's own
	// rows: a refresh may have brought newer runs since), which is one of
	// the job's runs in the trace.
	tab.Eventually(10*time.Second, "the y-axis fitted to the longest run", `(() => {
		const c = document.querySelector('#duration-chart'), y = Number(c.dataset.yMax), longest = Number(c.dataset.longestMs);
		return c.dataset.unit === 'ms' && longest > 0 && y >= longest && y <= longest * 1.2 + 0.01 && y < 1000;
	})()`)
	plotted, err := strconv.ParseFloat(browsertest.Eval[string](tab, `document.querySelector('#duration-chart').dataset.longestMs`), 64)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, x := range executions(tab, "fast", time.Time{}) {
		// The browser's times have whole milliseconds.
		if x.CompleteTime != nil && math.Abs(float64(x.CompleteTime.Sub(x.StartTime))/float64(time.Millisecond)-plotted) < 1 {
			found = true
		}
	}
	if !found {
		t.Errorf("the chart's longest run, %v ms, is no run of the trace", plotted)
	}

	// The Servers page: one of Disable and Enable.
	tab.Run("servers", chromedp.Navigate(e.Base+"/servers"), chromedp.WaitVisible(chromedp.CSS("#servers tbody tr")))
	oneButton := func(op string) string {
		other := map[string]string{"disable": "enable", "enable": "disable"}[op]
		return `[...document.querySelectorAll('#servers tbody tr')].every(r => r.querySelector('.op-` + op + `') !== null && r.querySelector('.op-` + other + `') === null)`
	}
	tab.Eventually(10*time.Second, "Disable only", oneButton("disable"))

	// A trigger refused: the dialog is opened while the job runs, the job
	// is disabled meanwhile, then the trigger is confirmed.
	tab.Run("jobs", chromedp.Navigate(e.Base+"/jobs"), chromedp.WaitVisible(chromedp.CSS(`button[data-op="trigger"][data-job="manual"]`)))
	tab.Run("open the trigger dialog", chromedp.Click(chromedp.CSS(`button[data-op="trigger"][data-job="manual"]`)),
		chromedp.WaitVisible(chromedp.CSS("dialog.confirm .confirm-ok")))
	if _, err := e.Ejob("disable", "manual"); err != nil {
		t.Fatal(err)
	}
	tab.Expect(`status of 409`)
	tab.Run("confirm", chromedp.Click(chromedp.CSS("dialog.confirm .confirm-ok")))
	tab.Eventually(10*time.Second, "the refusal's reason", `[...document.querySelectorAll('.toast-error')].some(x =>
		x.textContent.includes('job "manual" is disabled on every server with a live instance'))`)
	if n := len(e.Starts("manual")); n != 0 {
		t.Errorf("manual ran %d times", n)
	}
	tab.Eventually(15*time.Second, "manual disabled, offered Enable only", rowHas("manual", ".badge-disabled")+
		` && document.querySelector('button[data-op="enable"][data-job="manual"]') !== null && document.querySelector('button[data-op="trigger"][data-job="manual"]') === null`)
	tab.Run("servers", chromedp.Navigate(e.Base+"/servers"), chromedp.WaitVisible(chromedp.CSS("#servers tbody tr")))
	tab.Eventually(10*time.Second, "Enable only, with a disabled job", oneButton("enable"))
}
