package httpapi_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ejob-io/ejob/core/reg/zktest"
	"github.com/ejob-io/ejob/core/reg/zookeeper"
	"github.com/ejob-io/ejob/host/httpapi"
	"github.com/ejob-io/ejob/host/metrics"
	"github.com/ejob-io/ejob/internal/testkit"
)

// TestReadyzFollowsZooKeeper: /readyz is 503 until the jobs registered,
// 200 while the session is live, 503 once ZooKeeper stops and 200 again
// after it is back; /healthz stays 200 throughout; /metrics shows the
// session gauge and the reconnect.
func TestReadyzFollowsZooKeeper(t *testing.T) {
	if testing.Short() {
		t.Skip("real ZooKeeper")
	}
	zk := zktest.Start(t, zktest.Options{Tick: 200 * time.Millisecond})
	cfg := zookeeper.DefaultConfig(zk.Addr(), "readyz")
	cfg.SessionTimeoutMilliseconds = 4000
	cfg.Logger = hclog.NewNullLogger()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c, err := zookeeper.Connect(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	mx := metrics.New()
	mx.ExpectJobs()
	srv, err := httpapi.Listen(httpapi.Options{Listen: "127.0.0.1:0", Client: c, Users: defaultUsers(t),
		Metrics: mx.Handler(), Ready: mx.Ready, Logger: hclog.NewNullLogger()})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{}, 2)
	go func() { mx.WatchSession(ctx, c); done <- struct{}{} }()
	go func() { _ = srv.Run(ctx); done <- struct{}{} }()
	defer func() { cancel(); <-done; <-done }()
	base := "http://" + srv.Addr().String()
	get := func(path string) (int, string) {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	readyIs := func(want int, what string) {
		t.Helper()
		testkit.Eventually(t, 30*time.Second, what, func() bool { st, _ := get("/readyz"); return st == want })
		if st, _ := get("/healthz"); st != 200 {
			t.Errorf("/healthz: %d", st)
		}
	}
	if st, body := get("/readyz"); st != 503 || !strings.Contains(body, "no job is registered") {
		t.Errorf("before the jobs registered: %d %q", st, body)
	}
	mx.JobsRegistered()
	readyIs(200, "/readyz 200 with a live session")
	if err := zk.Stop(); err != nil {
		t.Fatal(err)
	}
	readyIs(503, "/readyz 503 after ZooKeeper stopped")
	if _, body := get("/readyz"); !strings.Contains(body, "registry session is not live") {
		t.Errorf("/readyz body: %q", body)
	}
	if _, m := get("/metrics"); !strings.Contains(m, "ejob_registry_session_up 0") {
		t.Errorf("/metrics while ZooKeeper is down:\n%s", grep(m, "ejob_registry"))
	}
	if err := zk.StartAgain(); err != nil {
		t.Fatal(err)
	}
	readyIs(200, "/readyz 200 after ZooKeeper is back")
	_, m := get("/metrics")
	if !strings.Contains(m, "ejob_registry_session_up 1") || !strings.Contains(m, "ejob_registry_reconnects_total{kind=") {
		t.Errorf("/metrics after the reconnect:\n%s", grep(m, "ejob_registry"))
	}
}

func grep(text, prefix string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, prefix) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
