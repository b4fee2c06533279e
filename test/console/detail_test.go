package console

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/ejob-io/ejob/internal/browsertest"
	"github.com/ejob-io/ejob/internal/testkit"
)

// tracing is an elasticjob.tracing section recording into an SQLite file
// of t's, for Options.Elasticjob: the hosts write it, `ejob serve` reads it.
func tracing(t *testing.T) string {
	return fmt.Sprintf("  tracing:\n    type: RDB\n    dataSource: {url: 'jdbc:sqlite:%s'}\n", filepath.Join(t.TempDir(), "trace.db"))
}

// jobShow is the part of `ejob job show JOB --json` the tests read.
type jobShow struct {
	Sharding []struct {
		Item   int
		Status string
	}
	Servers []struct {
		ServerIP string
		Status   string
	}
}

func (e *Env) showJob(job string) jobShow {
	e.t.Helper()
	out, err := e.Ejob("job", "show", job, "--json")
	if err != nil {
		e.t.Fatal(err)
	}
	var v jobShow
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		e.t.Fatalf("job show %s: %v\n%s", job, err, out)
	}
	return v
}

// execution is a row of the console's recent-executions endpoint.
type execution struct {
	ShardingItem int        `json:"shardingItem"`
	StartTime    time.Time  `json:"startTime"`
	CompleteTime *time.Time `json:"completeTime"`
	Success      bool       `json:"success"`
}

// executions fetches, in tab's session, job's executions started since.
func executions(tab *browsertest.Tab, job string, since time.Time) []execution {
	return browsertest.Eval[[]execution](tab, fmt.Sprintf(
		`fetch("/console/api/jobs/%s/executions?limit=1000&since=%d").then(r => r.json()).then(b => b.model.rows)`, job, since.UnixMilli()))
}

// confirm clicks sel, then the confirm dialog's OK button, and waits for
// the dialog to close.
func confirm(tab *browsertest.Tab, what, sel string) {
	tab.Run(what, chromedp.Click(chromedp.CSS(sel)), chromedp.WaitVisible(chromedp.CSS("dialog.confirm .confirm-ok")),
		chromedp.Click(chromedp.CSS("dialog.confirm .confirm-ok")), chromedp.WaitNotPresent(chromedp.CSS("dialog.confirm")))
}

// TestJobDetail: the detail page shows the sharding map with the item
// parameters, the instance with its PID, recent executions and the
// duration chart; disabling an item there writes the registry, and the
// host skips the item while the others run; enabling brings it back.
func TestJobDetail(t *testing.T) {
	e := NewEnv(t, Options{Hosts: 1, Elasticjob: tracing(t), Jobs: `    split:
      elasticJobType: SCRIPT
      cron: "* * * * * ?"
      shardingTotalCount: 3
      shardingItemParameters: 0=north,1=centre,2=south
      description: three regions, one item each
      props: {script.command.line: '%[1]s'}
`})
	b := browsertest.Start(t)
	tab := e.Login(b, AdminUser, AdminPW, "/jobs/split")
	tab.Eventually(20*time.Second, "the sharding map",
		`document.querySelectorAll("#items tbody tr").length === 3 && document.querySelector("#item-1").textContent.includes("centre")`)
	tab.Eventually(30*time.Second, "the instance with its PID, recent executions and the chart",
		`/\d+@-@\d+/.test(document.querySelector("#instances").textContent) && document.querySelectorAll("#recent tbody tr").length >= 3 &&
		 document.querySelector("#duration-chart canvas") !== null`)
	tab.Screenshot("job-detail")
	if browsertest.Screenshots() {
		tab.Run("scroll to the executions", chromedp.ScrollIntoView(chromedp.CSS("#executions")))
		tab.Screenshot("job-detail-executions")
	}

	guest := e.Login(b, GuestUser, GuestPW, "/jobs/split")
	guest.Eventually(20*time.Second, "the sharding map for a guest", `document.querySelectorAll("#items tbody tr").length === 3`)
	if n := browsertest.Eval[int](guest, `document.querySelectorAll("#items button").length`); n != 0 {
		t.Errorf("a guest sees %d buttons in the sharding map", n)
	}

	confirm(tab, "disable item 1", "#item-1 .item-disable")
	tab.Eventually(10*time.Second, "item 1 shown disabled", `document.querySelector("#item-1").dataset.status === "DISABLED"`)
	if s := e.showJob("split"); len(s.Sharding) != 3 || s.Sharding[1].Status != "DISABLED" || s.Sharding[0].Status == "DISABLED" {
		t.Fatalf("registry after disabling item 1: %+v", s.Sharding)
	}
	// From the next fire on the host skips item 1: three runs each of
	// items 0 and 2, and none of item 1 meanwhile.
	since := time.Now().Add(1500 * time.Millisecond)
	items := map[int]int{}
	testkit.Eventually(t, 45*time.Second, "three runs of items 0 and 2 after the disable", func() bool {
		clear(items)
		for _, x := range executions(tab, "split", since) {
			items[x.ShardingItem]++
		}
		return items[0] >= 3 && items[2] >= 3
	})
	if items[1] != 0 {
		t.Fatalf("runs per item since the disable: %v, want none of item 1", items)
	}

	confirm(tab, "enable item 1", "#item-1 .item-enable")
	tab.Eventually(10*time.Second, "item 1 enabled", `document.querySelector("#item-1").dataset.status !== "DISABLED"`)
	if s := e.showJob("split"); s.Sharding[1].Status == "DISABLED" {
		t.Fatalf("registry after enabling item 1: %+v", s.Sharding)
	}
	again := time.Now().Add(1500 * time.Millisecond)
	testkit.Eventually(t, 20*time.Second, "item 1 runs again", func() bool {
		for _, x := range executions(tab, "split", again) {
			if x.ShardingItem == 1 {
				return true
			}
		}
		return false
	})
}

// wantServer fails the test unless servers/{ip} of each job is status.
func (e *Env) wantServer(ip, status string, jobs ...string) {
	e.t.Helper()
	for _, job := range jobs {
		got := ""
		for _, s := range e.showJob(job).Servers {
			if s.ServerIP == ip {
				got = s.Status
			}
		}
		if got != status {
			e.t.Errorf("servers/%s of %s: %q, want %q", ip, job, got, status)
		}
	}
}

// TestServersPage: the servers page lists the host's IP with its
// instance and jobs; disable and enable (after a confirm) write every
// job's servers/{ip}; a server's page opens a job's dump from the host's
// dump port in a dialog.
func TestServersPage(t *testing.T) {
	dumpPort := testkit.FreePort(t)
	// The console asks the dump port at the host's instance IP: the host
	// listens beyond loopback.
	e := NewEnv(t, Options{Hosts: 1, Elasticjob: fmt.Sprintf("  dump:\n    port: %d\n    address: 0.0.0.0\n", dumpPort), Jobs: `    alpha:
      elasticJobType: SCRIPT
      cron: "0 0 3 * * ?"
      shardingTotalCount: 2
      props: {script.command.line: '%[1]s'}
    beta:
      elasticJobType: SCRIPT
      cron: "0 0 4 * * ?"
      shardingTotalCount: 1
      props: {script.command.line: '%[1]s'}
`})
	b := browsertest.Start(t)
	tab := e.Login(b, AdminUser, AdminPW, "/servers")
	tab.Eventually(20*time.Second, "the host's server row", `document.querySelectorAll("#servers tbody tr[data-ip]").length === 1`)
	ip := browsertest.Eval[string](tab, `document.querySelector("#servers tbody tr[data-ip]").dataset.ip`)
	row := fmt.Sprintf(`#servers tr[data-ip=%q]`, ip)
	tab.Screenshot("servers")

	confirm(tab, "disable the server", row+" .op-disable")
	tab.Eventually(10*time.Second, "2 disabled jobs shown", fmt.Sprintf(`document.querySelector(%q).textContent.includes("2")`, row+" td:nth-child(4)"))
	e.wantServer(ip, "DISABLED", "alpha", "beta")
	confirm(tab, "enable the server", row+" .op-enable")
	tab.Eventually(10*time.Second, "no disabled job shown", fmt.Sprintf(`document.querySelector(%q).textContent.trim() === "0"`, row+" td:nth-child(4)"))
	e.wantServer(ip, "ENABLED", "alpha", "beta")

	tab.Run("open the server", chromedp.Click(chromedp.CSS(row+" a")), chromedp.WaitVisible(chromedp.CSS(`#server-jobs tr[data-job="alpha"]`)))
	tab.Run("dump alpha", chromedp.Click(chromedp.CSS(`#server-jobs tr[data-job="alpha"] .op-dump`)), chromedp.WaitVisible(chromedp.CSS("#dump-dialog")))
	typeInto(tab, "#dump-port", fmt.Sprint(dumpPort))
	tab.Run("fetch the dump", chromedp.Click(chromedp.CSS("#dump-fetch")))
	tab.Eventually(10*time.Second, "the dump text", `(document.querySelector("#dump-text") || {textContent: ""}).textContent.includes("/alpha/config | ")`)
	tab.Screenshot("server-dump")
	tab.Run("copy and close", chromedp.Click(chromedp.CSS("#dump-copy")), chromedp.Click(chromedp.CSS("#dump-close")))
	tab.Eventually(5*time.Second, "the dialog closed", `document.querySelector("#dump-dialog") === null`)

	// A read-only user sees the same without a write button.
	guest := e.Login(b, GuestUser, GuestPW, "/servers/"+ip)
	guest.Eventually(20*time.Second, "the server's jobs for a guest", `document.querySelectorAll("#server-jobs tr[data-job]").length === 2`)
	guest.Run("back to all servers", chromedp.Click(chromedp.CSS(`a[href="/servers"]`)), chromedp.WaitVisible(chromedp.CSS(row)))
	if n := browsertest.Eval[int](guest, `document.querySelectorAll("main button").length`); n != 0 {
		t.Errorf("a guest sees %d buttons on the servers page", n)
	}
}

// TestHistoryPage: the history page shows a failed item with its cause
// (expandable) under the job and result filters, which stay through the
// page's refreshes; the status traces show the failed trigger.
func TestHistoryPage(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "flaky.sh")
	// Item 1 fails with a message on stderr; item 0 succeeds.
	write(t, script, "#!/bin/sh\ncase \"$1\" in *'\"shardingItem\":1'*) echo 'disk full on item 1' >&2; exit 3;; esac\n")
	if err := os.Chmod(script, 0o755); err != nil {
		t.Fatal(err)
	}
	e := NewEnv(t, Options{Hosts: 1, Elasticjob: tracing(t), Jobs: `    steady:
      elasticJobType: SCRIPT
      cron: "* * * * * ?"
      shardingTotalCount: 1
      props: {script.command.line: '%[1]s'}
    flaky:
      elasticJobType: SCRIPT
      cron: "* * * * * ?"
      shardingTotalCount: 2
      props: {script.command.line: '` + script + `'}
`})
	b := browsertest.Start(t)
	tab := e.Login(b, AdminUser, AdminPW, "/history?job=flaky&result=failure")
	tab.Eventually(30*time.Second, "failed rows of flaky",
		`document.querySelectorAll("#history-rows tbody tr[data-success=false]").length > 0 &&
		 [...document.querySelectorAll("#history-rows tbody tr")].every(r => r.dataset.job === "flaky" && r.dataset.success === "false")`)
	tab.Run("expand a cause", chromedp.Click(chromedp.CSS("#history-rows details.cause summary")))
	if cause := tab.Text("#history-rows details.cause pre"); !strings.Contains(cause, "disk full on item 1") || !strings.Contains(cause, "3") {
		t.Errorf("failure cause %q", cause)
	}
	tab.Screenshot("history")
	// The filters stay through a refresh.
	before := tab.Text(".toolbar .small")
	tab.Eventually(15*time.Second, "a refresh", fmt.Sprintf(`(document.querySelector(".toolbar .small") || {}).textContent !== %q`, before))
	if v := browsertest.Eval[string](tab, `document.querySelector("#history-filters input[name=job]").value + "/" + document.querySelector("#history-filters select[name=result]").value`); v != "flaky/failure" {
		t.Errorf("filters after a refresh: %q", v)
	}
	tab.Run("status traces", chromedp.Click(chromedp.CSS("#tab-status")))
	tab.Eventually(10*time.Second, "a TASK_ERROR trace of flaky", `document.querySelector("#history-rows tr[data-state=TASK_ERROR]") !== null`)
	tab.Screenshot("history-status")
}
