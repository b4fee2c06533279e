package httpapi_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ejob-io/ejob/core/lifecycle/lifecycletest"
	"github.com/ejob-io/ejob/core/reg/zktest"
	"github.com/ejob-io/ejob/core/reg/zookeeper"
	"github.com/ejob-io/ejob/host/httpapi"
)

const benchJobs = 1000

// BenchmarkGetAllJobsBriefInfo measures GET /api/jobs/getAllJobsBriefInfo
// over HTTP on a ZooKeeper namespace of 1,000 jobs (a host's server and
// `ejob serve` alike read the registry per request). request-ms is one
// request.
func BenchmarkGetAllJobsBriefInfo(b *testing.B) {
	if testing.Short() {
		b.Skip("real ZooKeeper")
	}
	zk := zktest.Start(b, zktest.Options{})
	cfg := zookeeper.DefaultConfig(zk.Addr(), "bench-api")
	cfg.Logger = hclog.NewNullLogger()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c, err := zookeeper.Connect(ctx, cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	lifecycletest.FillJobs(b, c, benchJobs)
	users := []httpapi.User{{Name: "admin", PasswordHash: hashB(b), Role: httpapi.RoleAdmin}}
	opts := httpapi.Options{Listen: "127.0.0.1:0", Client: c, Users: users, Logger: hclog.NewNullLogger()}
	srv, err := httpapi.Listen(opts)
	if err != nil {
		b.Fatal(err)
	}
	sctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { _ = srv.Run(sctx); close(done) }()
	defer func() { stop(); <-done }()
	base := "http://" + srv.Addr().String()
	resp, err := http.Post(base+"/api/login", "application/json", strings.NewReader(`{"username":"admin","password":"bench-pw"}`))
	if err != nil {
		b.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	token := strings.Split(strings.Split(string(body), `"accessToken":"`)[1], `"`)[0]
	req, _ := http.NewRequest("GET", base+"/api/jobs/getAllJobsBriefInfo", nil)
	req.Header.Set(httpapi.TokenHeader, token)
	start := time.Now()
	for b.Loop() {
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || strings.Count(string(data), `"status":"OK"`) != benchJobs {
			b.Fatalf("%d %.200s", resp.StatusCode, data)
		}
	}
	b.ReportMetric(float64(time.Since(start).Microseconds())/1000/float64(b.N), "request-ms")
}

func hashB(b *testing.B) string {
	b.Helper()
	h, err := bcryptHash("bench-pw")
	if err != nil {
		b.Fatal(err)
	}
	return h
}
