package webhook_test

// What alerting costs a failing item, and how many alerts one handler
// sends per second. Figures are reported with b.ReportMetric and recorded
// in docs/benchmarks.md ("Alerting"); nothing fails on a timing.

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/ejob-io/ejob/plugins/errorhandler/alert"
	"github.com/ejob-io/ejob/plugins/errorhandler/alert/alerttest"
	errorhandlerbuiltin "github.com/ejob-io/ejob/plugins/errorhandler/builtin"
	"github.com/ejob-io/ejob/plugins/errorhandler/webhook"
	"github.com/ejob-io/ejob/sdk"
	"github.com/ejob-io/ejob/sdk/sdktest"
	"github.com/ejob-io/ejob/spi"
)

// nop drops every line.
type nop struct{}

func (nop) Debug(string, ...any) {}
func (nop) Info(string, ...any)  {}
func (nop) Warn(string, ...any)  {}
func (nop) Error(string, ...any) {}

// pct returns the q-quantile of d in µs.
func pct(d []time.Duration, q float64) float64 {
	slices.Sort(d)
	return float64(d[int(q*float64(len(d)-1))].Nanoseconds()) / 1e3
}

// BenchmarkHandleErrorSlowReceiver is the time a failing item spends in
// its error handler when the receiver hangs (it answers after 10 minutes).
// Suppression is off, so every call queues an alert or, once the queue
// (100) is full, drops it with a WARN line. Two cases: the same job
// failing again and again (its parsed props are reused), and a new job on
// every call (props parsed, a new HTTP client built: the worst case). Each
// op makes one call three ways, interleaved: the WEBHOOK handler in
// process (direct-us), through the real gRPC transport over an in-memory
// connection (grpc-us), and the LOG handler through the same transport
// (grpc-log-us), the floor any handler call pays. It reports the p50s,
// extra-grpc-us = grpc-us - grpc-log-us, and the p99s of the first two.
func BenchmarkHandleErrorSlowReceiver(b *testing.B) {
	for _, newJob := range []bool{false, true} {
		name := "same-job"
		if newJob {
			name = "new-job-each-call"
		}
		b.Run(name, func(b *testing.B) { benchSlowReceiver(b, newJob) })
	}
}

func benchSlowReceiver(b *testing.B, newJob bool) {
	rc := alerttest.NewReceiver(b, alerttest.Always(alerttest.Response{Delay: 10 * time.Minute}))
	direct := webhook.New(alert.Options{Logger: nop{}})
	remote := webhook.New(alert.Options{Logger: nop{}})
	p := sdktest.Connect(b, sdk.Plugins{Version: "bench", ErrorHandlers: map[string]spi.ErrorHandler{
		webhook.TypeName: remote, errorhandlerbuiltin.TypeLog: errorhandlerbuiltin.NewLog(nop{}),
	}})
	overGRPC, logGRPC := p.ErrorHandler(webhook.TypeName), p.ErrorHandler(errorhandlerbuiltin.TypeLog)
	props := map[string]string{"webhook.url": rc.URL + "/hook?token=t", "alert.suppressSeconds": "0", "alert.timeoutSeconds": "1"}
	req := spi.HandleErrorRequest{JobName: "job", InstanceID: "10.0.0.5@-@4242", ShardingItem: 0, Props: props, Error: spi.JobError{Message: "boom"}}
	var dd, dg, dl []time.Duration
	i := 0
	for b.Loop() {
		if newJob {
			i++
			req.JobName = fmt.Sprint("job-", i)
		}
		for _, c := range []struct {
			h spi.ErrorHandler
			d *[]time.Duration
		}{{direct, &dd}, {overGRPC, &dg}, {logGRPC, &dl}} {
			start := time.Now()
			if _, err := c.h.HandleError(b.Context(), req); err != nil {
				b.Fatal(err)
			}
			*c.d = append(*c.d, time.Since(start))
		}
	}
	b.StopTimer()
	g, l := pct(dg, 0.5), pct(dl, 0.5)
	b.ReportMetric(pct(dd, 0.5), "direct-us")
	b.ReportMetric(pct(dd, 0.99), "direct-p99-us")
	b.ReportMetric(pct(dg, 0.99), "grpc-p99-us")
	b.ReportMetric(g, "grpc-us")
	b.ReportMetric(l, "grpc-log-us")
	b.ReportMetric(g-l, "extra-grpc-us")
	b.ReportMetric(float64(direct.Dropped()), "dropped")
	for _, h := range []*alert.Handler{direct, remote} {
		if err := h.Wait(b.Context()); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAlertsPerSecond is how many alerts one WEBHOOK handler delivers
// per second to a local receiver that answers 204 at once: b.N alerts
// (suppression off) are queued, then the benchmark waits until all are
// sent by the default 4 workers. It reports alerts/s.
func BenchmarkAlertsPerSecond(b *testing.B) {
	rc := alerttest.NewReceiver(b, alerttest.Always(alerttest.Response{Status: 204}))
	h := webhook.New(alert.Options{Logger: nop{}, QueueSize: b.N + 1})
	props := map[string]string{"webhook.url": rc.URL + "/hook", "alert.suppressSeconds": "0"}
	req := spi.HandleErrorRequest{JobName: "j", InstanceID: "10.0.0.5@-@4242", Props: props, Error: spi.JobError{Message: "boom"}}
	b.ResetTimer()
	start := time.Now()
	for range b.N {
		if _, err := h.HandleError(b.Context(), req); err != nil {
			b.Fatal(err)
		}
	}
	if err := h.Wait(b.Context()); err != nil {
		b.Fatal(err)
	}
	elapsed := time.Since(start)
	b.StopTimer()
	if got := len(rc.Requests()); got != b.N || h.Dropped() != 0 {
		b.Fatalf("%d of %d delivered, %d dropped", got, b.N, h.Dropped())
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "alerts/s")
}
