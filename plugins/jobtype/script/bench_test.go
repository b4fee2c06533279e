//go:build unix

package script_test

// The SCRIPT job type's cost per item beyond the command itself. Figures
// are reported with b.ReportMetric and recorded in docs/benchmarks.md
// ("Host"); nothing fails on a timing.

import (
	"context"
	"os/exec"
	"sort"
	"testing"
	"time"

	"github.com/ejob-io/ejob/plugins/jobtype/script"
	"github.com/ejob-io/ejob/sdk"
	"github.com/ejob-io/ejob/sdk/sdktest"
	"github.com/ejob-io/ejob/spi"
)

// nopLogger drops the scripts' output (/bin/true writes none).
type nopLogger struct{}

func (nopLogger) Info(string, ...any) {}
func (nopLogger) Warn(string, ...any) {}

// BenchmarkExecuteOverhead runs /bin/true once per op three ways,
// interleaved so that they share the machine's state: directly with
// exec.Command("/bin/true").Run(), through the SCRIPT executor in process,
// and through the executor behind the real gRPC transport (sdktest: an
// in-memory connection, no process boundary). It reports the p50 per item
// of each (direct-us, executor-us, grpc-us) and the executor's extra time
// over the direct run (extra-us, extra-grpc-us): parsing the command line,
// the sharding-context JSON argument, a new process group, output pipes
// read line by line, and for grpc-us the RPC. The real out-of-process path
// (the built-in plugin process) is host/daemon's
// BenchmarkBuiltinPluginExecute.
func BenchmarkExecuteOverhead(b *testing.B) {
	ex := script.New(nopLogger{})
	p := sdktest.Connect(b, sdk.Plugins{JobTypes: map[string]spi.JobExecutor{script.TypeName: ex}})
	viaGRPC := p.JobExecutor(script.TypeName)
	ctx := context.Background()
	req := spi.ExecuteRequest{
		Context: spi.ShardingContext{JobName: "bench", TaskID: "bench@-@0@-@READY@-@192.0.2.1@-@1", ShardingTotalCount: 1},
		Props:   map[string]string{script.PropCommandLine: "/bin/true"},
	}
	if _, err := viaGRPC.Execute(ctx, req); err != nil { // warm the connection
		b.Fatal(err)
	}
	var direct, inProc, overGRPC []float64
	for b.Loop() {
		t := time.Now()
		if err := exec.Command("/bin/true").Run(); err != nil {
			b.Fatal(err)
		}
		direct = append(direct, micros(time.Since(t)))
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
	d, e, g := median(direct), median(inProc), median(overGRPC)
	b.ReportMetric(d, "direct-us")
	b.ReportMetric(e, "executor-us")
	b.ReportMetric(g, "grpc-us")
	b.ReportMetric(e-d, "extra-us")
	b.ReportMetric(g-d, "extra-grpc-us")
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
