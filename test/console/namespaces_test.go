package console

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/hashicorp/go-hclog"

	"github.com/ejob-io/ejob/core/config"
	"github.com/ejob-io/ejob/core/node"
	"github.com/ejob-io/ejob/core/reg"
	"github.com/ejob-io/ejob/core/reg/zookeeper"
	"github.com/ejob-io/ejob/internal/browsertest"
)

// seedNamespace writes job into namespace ns of the shared ZooKeeper.
func seedNamespace(t *testing.T, ns, job string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cfg := zookeeper.DefaultConfig(zk.Addr(), ns)
	cfg.Logger = hclog.NewNullLogger()
	c, err := zookeeper.Connect(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	jc := config.New(job, 1)
	jc.Cron = "0 0/5 * * * ?"
	data, err := config.Marshal(jc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := reg.Persist(ctx, c, node.New(job).Config(), data); err != nil {
		t.Fatal(err)
	}
}

// jobNames is the namespace in use as the page's REST API sees it.
func jobNames(tab *browsertest.Tab) string {
	return browsertest.Eval[string](tab, `fetch('/api/jobs/getAllJobsBriefInfo').then(r => r.json()).then(b => b.model.map(j => j.jobName).join(','))`)
}

// TestNamespacesPage: an admin adds a registry center in the page (the
// file is 0600, the digest shown masked and kept on an edit that leaves
// it blank), switches ejob serve to it (the API then answers from the
// other namespace) and back; it adds an SQLite data source and uses it
// under ejob serve's --data-source-dir (the event trace then answers from
// it); a read-only user sees no controls and a
// forged switch is refused.
func TestNamespacesPage(t *testing.T) {
	traces := t.TempDir() // --data-source-dir: SQLite files from the console go here
	e := NewEnv(t, Options{ServeArgs: []string{"--data-source-dir", traces}})
	other := e.Namespace + "-b"
	seedNamespace(t, other, "beta")
	store := filepath.Join(e.Dir, "config", "ejob", "namespaces.json")
	b := browsertest.Start(t)

	tab := e.Login(b, AdminUser, AdminPW, "/namespaces")
	tab.Run("the page", chromedp.WaitVisible(chromedp.CSS(`#ns-registry tr[data-name="`+e.Namespace+`"].ns-active`)))
	tab.Run("add a registry center",
		chromedp.Click(chromedp.CSS("#ns-registry .ns-add")),
		chromedp.SendKeys(chromedp.CSS(`#ns-form-registry input[name=name]`), "second"),
		chromedp.SendKeys(chromedp.CSS(`#ns-form-registry input[name=zkAddressList]`), zk.Addr()),
		chromedp.SendKeys(chromedp.CSS(`#ns-form-registry input[name=namespace]`), other),
		chromedp.SendKeys(chromedp.CSS(`#ns-form-registry input[name=digest]`), "ops:s3cret"),
		chromedp.Click(chromedp.CSS(`#ns-form-registry button[type=submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`#ns-registry tr[data-name="second"]`)))
	if got := tab.Text(`#ns-registry tr[data-name="second"] td:nth-child(4)`); got != "***" {
		t.Errorf("digest shown as %q, want ***", got)
	}
	fi, err := os.Stat(store)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("namespaces file: %v %v", fi, err)
	}
	tab.Run("edit it, the digest left blank",
		chromedp.Click(chromedp.CSS(`#ns-registry tr[data-name="second"] .ns-edit`)),
		chromedp.WaitVisible(chromedp.CSS(`#ns-form-registry`)),
		chromedp.Click(chromedp.CSS(`#ns-form-registry button[type=submit]`)),
		chromedp.WaitNotPresent(chromedp.CSS(`#ns-form-registry`)))
	if data, _ := os.ReadFile(store); !strings.Contains(string(data), `"digest": "ops:s3cret"`) {
		t.Errorf("the digest changed on an edit that did not touch it:\n%s", data)
	}
	if got := jobNames(tab); got != "" {
		t.Errorf("jobs before the switch: %q, want none (no host registered idle)", got)
	}
	tab.Run("use it", chromedp.Click(chromedp.CSS(`#ns-registry tr[data-name="second"] .ns-use`)),
		chromedp.WaitVisible(chromedp.CSS(`#ns-registry tr[data-name="second"].ns-active`)))
	if got := jobNames(tab); got != "beta" {
		t.Errorf("jobs after the switch: %q, want beta", got)
	}
	if got := browsertest.Eval[string](tab, `fetch('/console/api/overview').then(r => r.json()).then(b => b.model.registry.namespace)`); got != other {
		t.Errorf("the overview's registry after the switch: %q, want %q", got, other)
	}
	// An event-trace data source: SQLite through the built-in RDB sink.
	tab.Run("add a data source",
		chromedp.Click(chromedp.CSS("#ns-dataSource .ns-add")),
		chromedp.SendKeys(chromedp.CSS(`#ns-form-dataSource input[name=name]`), "history"),
		chromedp.SetValue(chromedp.CSS(`#ns-form-dataSource select[name=driver]`), "sqlite"),
		chromedp.SendKeys(chromedp.CSS(`#ns-form-dataSource input[name=url]`), filepath.Join(traces, "trace.db")),
		chromedp.Click(chromedp.CSS(`#ns-form-dataSource button[type=submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`#ns-dataSource tr[data-name="history"]`)),
		chromedp.Click(chromedp.CSS(`#ns-dataSource tr[data-name="history"] .ns-use`)),
		chromedp.WaitVisible(chromedp.CSS(`#ns-dataSource tr[data-name="history"].ns-active`)))
	if got := browsertest.Eval[string](tab, `fetch('/console/session').then(r => r.json()).then(s => fetch('/api/event-trace/execution',
		{method: 'POST', headers: {'Content-Type': 'application/json', 'X-CSRF-Token': s.model.csrfToken}, body: '{}'})).then(r => r.json()).then(b => JSON.stringify(b.model))`); got != `{"total":0,"rows":[]}` {
		t.Errorf("event trace of the data source in use: %s", got)
	}
	tab.Screenshot("namespaces")

	guest := e.Login(b, GuestUser, GuestPW, "/namespaces")
	guest.Expect(`status of 403`)
	guest.Run("the page, read-only", chromedp.WaitVisible(chromedp.CSS(`#ns-readonly-note`)),
		chromedp.WaitVisible(chromedp.CSS(`#ns-registry tr[data-name="second"].ns-active`)))
	if n := browsertest.Eval[int](guest, `document.querySelectorAll('.ns-add, .ns-use, .ns-edit, .ns-remove').length`); n != 0 {
		t.Errorf("a read-only user sees %d write controls", n)
	}
	st := browsertest.Eval[int](guest, `fetch('/console/session').then(r => r.json()).then(s =>
		fetch('/api/registry-center/connect', {method: 'POST', headers: {'X-CSRF-Token': s.model.csrfToken, 'Content-Type': 'application/json'},
			body: JSON.stringify({name: '`+e.Namespace+`'})})).then(r => r.json()).then(b => b.errorCode)`)
	if st != 403 {
		t.Errorf("a read-only user's forged switch: errorCode %d, want 403", st)
	}

	tab.Run("switch back", chromedp.Click(chromedp.CSS(`#ns-registry tr[data-name="`+e.Namespace+`"] .ns-use`)),
		chromedp.WaitVisible(chromedp.CSS(`#ns-registry tr[data-name="`+e.Namespace+`"].ns-active`)))
	if got := jobNames(tab); got != "" {
		t.Errorf("jobs after switching back: %q, want none", got)
	}
	tab.Run("remove it", chromedp.Click(chromedp.CSS(`#ns-registry tr[data-name="second"] .ns-remove`)),
		chromedp.WaitVisible(chromedp.CSS(`dialog.confirm`)), chromedp.Click(chromedp.CSS(`dialog.confirm .confirm-ok`)),
		chromedp.WaitNotPresent(chromedp.CSS(`#ns-registry tr[data-name="second"]`)))
}
