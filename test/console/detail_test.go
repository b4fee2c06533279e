package console

import (
	"encoding/json"
	"fmt"
	"path/filepath"
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
	ShardingItem int       `json:"shardingItem"`
	StartTime    time.Time `json:"startTime"`
	Success      bool      `json:"success"`
}

// executions fetches, in tab's session, job's executions started since.
func executions(tab *browsertest.Tab, job string, since time.Time) []execution {
	return browsertest.Eval[[]execution](tab, fmt.Sprintf(
		`fetch("/console/api/jobs/%s/executions?limit=1000&since=%d").then(r => r.json()).then(b => b.model.rows)`, job, since.UnixMilli()))
}

// confirm clicks sel, then the confirm dialog's OK button.
func confirm(tab *browsertest.Tab, what, sel string) {
	tab.Run(what, chromedp.Click(chromedp.CSS(sel)), chromedp.WaitVisible(chromedp.CSS("dialog.confirm .confirm-ok")),
		chromedp.Click(chromedp.CSS("dialog.confirm .confirm-ok")))
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

	confirm(tab, "disable item 1", "#item-1 .item-disable")
	tab.Eventually(10*time.Second, "item 1 shown disabled", `document.querySelector("#item-1").dataset.status === "DISABLED"`)
	if s := e.showJob("split"); len(s.Sharding) != 3 || s.Sharding[1].Status != "DISABLED" || s.Sharding[0].Status == "DISABLED" {
		t.Fatalf("registry after disabling item 1: %+v", s.Sharding)
	}
	// From the next fire on the host skips item 1: three fire seconds of
	// items 0 and 2, and no item 1 among them.
	since := time.Now().Add(1500 * time.Millisecond)
	var after []execution
	testkit.Eventually(t, 30*time.Second, "three fire seconds after the disable", func() bool {
		after = executions(tab, "split", since)
		seconds := map[int64]bool{}
		for _, x := range after {
			seconds[x.StartTime.Unix()] = true
		}
		return len(seconds) >= 3
	})
	items := map[int]int{}
	for _, x := range after {
		items[x.ShardingItem]++
	}
	if items[1] != 0 || items[0] < 3 || items[2] < 3 {
		t.Fatalf("runs per item since the disable: %v, want none of item 1 and 3+ of items 0 and 2", items)
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
