package httpjob_test

// The HTTP job type's cost per item beyond the request itself. Figures are
// reported with b.ReportMetric and recorded in docs/benchmarks.md
// ("Host"); nothing fails on a timing.

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"testing"
	"time"

	httpjob "github.com/ejob-io/ejob/plugins/jobtype/http"
	"github.com/ejob-io/ejob/sdk"
	"github.com/ejob-io/ejob/sdk/sdktest"
	"github.com/ejob-io/ejob/spi"
)

// nopLogger drops the responses.
type nopLogger struct{}

func (nopLogger) Debug(string, ...any) {}
func (nopLogger) Warn(string, ...any)  {}

// BenchmarkExecuteOverhead sends one GET per op to a local httptest server
// (200, body "ok") four ways, interleaved so that they share the machine's
// state: a plain http.Client on a new connection per request (keep-alive
// off, as the executor does and as upstream's HttpURLConnection does
// without keep-alive), a plain http.Client reusing one connection, the
// HTTP executor in process, and the executor behind the real gRPC
// transport (sdktest: an in-memory connection, no process boundary). It
// reports the p50 per item of each (newconn-us, keepalive-us,
// executor-us, grpc-us) and the executor's extra time over the plain
// request on a new connection (extra-us, extra-grpc-us): parsing the
// props, the sharding-context header, a transport per item, reading the
// body, and for grpc-us the RPC. The real out-of-process path (the
// built-in plugin process) is host/daemon's BenchmarkBuiltinPluginExecute.
func BenchmarkExecuteOverhead(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "ok")
	}))
	b.Cleanup(srv.Close)
	newConn := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	keepAlive := &http.Client{Transport: &http.Transport{}}
	b.Cleanup(keepAlive.CloseIdleConnections)
	get := func(c *http.Client) error {
		resp, err := c.Get(srv.URL)
		if err != nil {
			return err
		}
		_, err = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		if err == nil && resp.StatusCode != http.StatusOK {
			err = fmt.Errorf("status %s", resp.Status)
		}
		return err
	}

	ex := httpjob.New(nopLogger{})
	p := sdktest.Connect(b, sdk.Plugins{JobTypes: map[string]spi.JobExecutor{httpjob.TypeName: ex}})
	viaGRPC := p.JobExecutor(httpjob.TypeName)
	ctx := context.Background()
	req := spi.ExecuteRequest{
		Context: spi.ShardingContext{JobName: "bench", TaskID: "bench@-@0@-@READY@-@192.0.2.1@-@1", ShardingTotalCount: 1},
		Props:   map[string]string{httpjob.PropURI: srv.URL, httpjob.PropMethod: "GET"},
	}
	// Warm the gRPC connection and the keep-alive connection.
	if _, err := viaGRPC.Execute(ctx, req); err != nil {
		b.Fatal(err)
	}
	if err := get(keepAlive); err != nil {
		b.Fatal(err)
	}

	var nc, ka, inProc, overGRPC []float64
	for b.Loop() {
		t := time.Now()
		if err := get(newConn); err != nil {
			b.Fatal(err)
		}
		nc = append(nc, micros(time.Since(t)))
		t = time.Now()
		if err := get(keepAlive); err != nil {
			b.Fatal(err)
		}
		ka = append(ka, micros(time.Since(t)))
		t = time.Now()
		if _, err := ex.Execute(ctx, req); err != nil {
			b.Fatal(err)
		}
		inProc = append(inProc, micros(time.Since(t)))
		t = time.Now()
		if _, err := viaGRPC.Execute(ctx, req); err != nil {
			b.Fatal(err)
		}
		overGRPC = append(overGRPC, micros(time.Since(t)))
	}
	n, e, g := median(nc), median(inProc), median(overGRPC)
	b.ReportMetric(n, "newconn-us")
	b.ReportMetric(median(ka), "keepalive-us")
	b.ReportMetric(e, "executor-us")
	b.ReportMetric(g, "grpc-us")
	b.ReportMetric(e-n, "extra-us")
	b.ReportMetric(g-n, "extra-grpc-us")
}

func micros(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return s[len(s)/2]
}
