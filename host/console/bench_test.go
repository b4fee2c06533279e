package console_test

import (
	"context"
	"io/fs"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/hashicorp/go-hclog"
	"golang.org/x/crypto/bcrypt"

	"github.com/ejob-io/ejob/core/lifecycle/lifecycletest"
	"github.com/ejob-io/ejob/core/reg"
	"github.com/ejob-io/ejob/core/reg/zktest"
	"github.com/ejob-io/ejob/core/reg/zookeeper"
	"github.com/ejob-io/ejob/host/console"
	"github.com/ejob-io/ejob/host/httpapi"
	"github.com/ejob-io/ejob/internal/browsertest"
	"github.com/ejob-io/ejob/internal/testkit"
)

// BenchmarkJobsPageFirstRender measures, in headless chromium, the time
// from opening /jobs (logged in, assets revalidated from the browser's
// cache) to the table showing its rows and "1000 of 1000 jobs", on a
// ZooKeeper namespace of 1,000 jobs served as `ejob serve` serves it (from
// the watch-fed namespace cache). It also reports the size of the
// embedded assets: all of them, and the vendored libraries' share.
func BenchmarkJobsPageFirstRender(b *testing.B) {
	if testing.Short() {
		b.Skip("real ZooKeeper and chromium")
	}
	const jobs = 1000
	zk := zktest.Start(b, zktest.Options{})
	cfg := zookeeper.DefaultConfig(zk.Addr(), "bench-console")
	cfg.Logger = hclog.NewNullLogger()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c, err := zookeeper.Connect(ctx, cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	lifecycletest.FillJobs(b, c, jobs)
	cache := reg.NewTreeCache(c, "/", reg.WithoutEvents())
	cctx, stopCache := context.WithCancel(ctx)
	cacheDone := make(chan struct{})
	go func() { _ = cache.Run(cctx); close(cacheDone) }()
	defer func() { stopCache(); <-cacheDone }()
	if !testkit.Poll(60*time.Second, func() bool {
		select {
		case <-cache.Initialized():
			return true
		default:
			return false
		}
	}) {
		b.Fatal("cache not loaded")
	}
	h, err := bcrypt.GenerateFromPassword([]byte(adminPW), bcrypt.MinCost)
	if err != nil {
		b.Fatal(err)
	}
	srv, err := httpapi.Listen(httpapi.Options{Listen: "127.0.0.1:0", Client: c, Reader: httpapi.CacheReader{Cache: cache, Client: c},
		Users: []httpapi.User{{Name: "admin", PasswordHash: string(h), Role: httpapi.RoleAdmin}}, Console: console.Handler,
		Logger: hclog.NewNullLogger()})
	if err != nil {
		b.Fatal(err)
	}
	sctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { _ = srv.Run(sctx); close(done) }()
	defer func() { stop(); <-done }()
	base := "http://" + srv.Addr().String()

	br := browsertest.Start(b)
	tab := br.NewTab(b)
	tab.Expect(`status of 401`)
	tab.Run("log in", chromedp.Navigate(base+"/login"), chromedp.WaitVisible(chromedp.CSS("#login-form")),
		chromedp.SetValue(chromedp.CSS("#username"), "admin"), chromedp.SetValue(chromedp.CSS("#password"), adminPW),
		chromedp.Click(chromedp.CSS("#login-submit")), chromedp.WaitVisible(chromedp.CSS("#logout")))
	rendered := `(() => { const n = document.querySelector('#jobs-count');
		return n !== null && n.textContent === '1000 of 1000 jobs' && document.querySelectorAll('#jobs-table .tabulator-row').length > 0 })()`
	for b.Loop() {
		tab.Run("render /jobs", chromedp.Navigate(base+"/jobs"), chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
			_, err := chromedp.Poll[bool](rendered, chromedp.WithPollingTimeout(30*time.Second))(ctx, t)
			return err
		}))
		b.StopTimer()
		tab.Run("leave", chromedp.Navigate("about:blank"))
		b.StartTimer()
	}
	var all, vendor int
	if err := fs.WalkDir(console.Assets(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		all += int(info.Size())
		if strings.HasPrefix(p, "vendor/") {
			vendor += int(info.Size())
		}
		return nil
	}); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(all)/1024, "assets-KiB")
	b.ReportMetric(float64(vendor)/1024, "vendor-KiB")
}
