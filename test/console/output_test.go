package console

import (
	"regexp"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/ejob-io/ejob/internal/browsertest"
)

// TestRunOutput: a failing SCRIPT's output was only in the host's log and
// the console cut its failure cause. A run's row on the job detail page
// and on the history page opens a dialog with the whole failure cause and
// the run's output, its stderr lines marked.
func TestRunOutput(t *testing.T) {
	e := NewEnv(t, Options{Hosts: 1, Elasticjob: tracing(t), Jobs: `    noisy:
      elasticJobType: SCRIPT
      cron: "* * * * * ?"
      shardingTotalCount: 1
      props: {script.command.line: "/bin/sh -c 'echo rows: 3; echo cannot reach db for item 0 >&2; exit 3'"}
    idle:
      elasticJobType: SCRIPT
      shardingTotalCount: 1
      props: {script.command.line: '%[1]s'}
`})
	b := browsertest.Start(t)
	tab := e.Login(b, AdminUser, AdminPW, "/jobs/noisy")
	tab.Eventually(30*time.Second, "a recent run with an output button",
		`document.querySelector("#recent tbody tr[data-success=false] .op-output") !== null`)
	opened := `document.querySelector("#output-text") !== null && document.querySelector("#output-text").textContent.includes("out| rows: 3\n") &&
		document.querySelector("#output-text .stderr") !== null &&
		document.querySelector("#output-text .stderr").textContent.startsWith("err| cannot reach db for item 0") &&
		document.querySelector("#output-cause").textContent.includes('stderr tail: "cannot reach db for item 0"')`
	tab.Run("open a failed run's output", chromedp.Click(chromedp.CSS("#recent tbody tr[data-success=false] .op-output")),
		chromedp.WaitVisible(chromedp.CSS("#output-dialog")))
	tab.Eventually(10*time.Second, "the output and the whole cause in the dialog", opened)
	tab.Screenshot("run-output")
	tab.Run("close the output", chromedp.Click(chromedp.CSS("#output-close")))
	tab.Eventually(5*time.Second, "the dialog closed", `document.querySelector("#output-dialog") === null`)

	tab.Run("the history page", chromedp.Navigate(e.Base+"/history?job=noisy"))
	tab.Eventually(20*time.Second, "a failed row with an output button",
		`document.querySelector("#history-rows tbody tr[data-success=false] .op-output") !== null`)
	tab.Run("open a row's output", chromedp.Click(chromedp.CSS("#history-rows tbody tr[data-success=false] .op-output")),
		chromedp.WaitVisible(chromedp.CSS("#output-dialog")))
	tab.Eventually(10*time.Second, "the output in the history's dialog", opened)
}

// TestLiveOutput: a running item's output showed nowhere until it ended.
// On the console of the host that runs it, a running item of the sharding
// map opens its output so far, read again while it runs.
func TestLiveOutput(t *testing.T) {
	e := NewEnv(t, Options{Elasticjob: tracing(t), Jobs: `    slow:
      elasticJobType: SCRIPT
      cron: "* * * * * ?"
      shardingTotalCount: 1
      props: {script.command.line: "/bin/sh -c 'echo step 1 of 2; sleep 8; echo step 2 of 2'"}
    idle:
      elasticJobType: SCRIPT
      shardingTotalCount: 1
      props: {script.command.line: '%[1]s'}
`})
	// A host serving its own console (the file of ejob serve, which has
	// ejob.http) runs the job: only it knows its running items' output.
	h := e.start("host1", "run", "-c", e.ServeCfg)
	m := e.waitLog(h, 60*time.Second, regexp.MustCompile(`operations HTTP server listening.*addr=(\S+)`))
	e.Base = "http://" + m[1]
	b := browsertest.Start(t)
	tab := e.Login(b, AdminUser, AdminPW, "/jobs/slow")
	tab.Eventually(40*time.Second, "item 0 running, with its live output link", `document.querySelector("#item-0 .item-live") !== null`)
	tab.Run("open the live output", chromedp.Click(chromedp.CSS("#item-0 .item-live")), chromedp.WaitVisible(chromedp.CSS("#live-dialog")))
	tab.Eventually(10*time.Second, "the output so far", `(document.querySelector("#live-text") || {textContent: ""}).textContent.includes("out| step 1 of 2\n")`)
	tab.Screenshot("live-output")
	tab.Run("close it", chromedp.Click(chromedp.CSS("#live-close")))
	tab.Eventually(5*time.Second, "the dialog closed", `document.querySelector("#live-dialog") === null`)
}
