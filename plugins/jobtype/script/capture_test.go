//go:build unix

package script_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ejob-io/ejob/internal/testkit"
	"github.com/ejob-io/ejob/plugins/jobtype/script"
	"github.com/ejob-io/ejob/sdk"
	"github.com/ejob-io/ejob/sdk/sdktest"
	"github.com/ejob-io/ejob/spi"
)

// TestOutputCaptured checks that a script's stdout and stderr lines come
// back in the response, each behind its stream's prefix, a stream's lines
// in their order, an unterminated last line and CRLF endings included.
func TestOutputCaptured(t *testing.T) {
	t.Parallel()
	_, quoted := helperPath(t)
	resp, err := script.New(&recLogger{}).Execute(t.Context(), spi.ExecuteRequest{
		Context: spi.ShardingContext{JobName: "out_job"}, Props: map[string]string{script.PropCommandLine: quoted + " print"}})
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(resp.Output.Text, "\n"), "\n")
	var out, errs []string
	for _, l := range lines {
		switch {
		case strings.HasPrefix(l, spi.StdoutPrefix):
			out = append(out, strings.TrimPrefix(l, spi.StdoutPrefix))
		case strings.HasPrefix(l, spi.StderrPrefix):
			errs = append(errs, strings.TrimPrefix(l, spi.StderrPrefix))
		default:
			t.Errorf("line %q has no stream prefix", l)
		}
	}
	if strings.Join(out, ",") != "out 1,out 2,out tail" || strings.Join(errs, ",") != "err 1" || resp.Output.Cut != 0 {
		t.Errorf("output %q cut %d: stdout %q stderr %q", resp.Output.Text, resp.Output.Cut, out, errs)
	}
}

// TestOutputOfFailedScriptTail checks that a failing script's output comes
// back with its error, capped at spi.MaxOutputBytes with the tail kept and
// the cut counted.
func TestOutputOfFailedScriptTail(t *testing.T) {
	t.Parallel()
	_, quoted := helperPath(t)
	const n = 20_000 // about 360 KB of stdout
	resp, err := script.New(&recLogger{}).Execute(t.Context(), spi.ExecuteRequest{
		Context: spi.ShardingContext{JobName: "flood"}, Props: map[string]string{script.PropCommandLine: fmt.Sprintf("%s flood %d", quoted, n)}})
	var exit *script.ExitError
	if !errors.As(err, &exit) || exit.Code != 1 {
		t.Fatalf("Execute = %v, want exit 1", err)
	}
	o := resp.Output
	if len(o.Text) > spi.MaxOutputBytes || o.Cut == 0 {
		t.Fatalf("output of %d bytes, cut %d: want at most %d bytes and a cut", len(o.Text), o.Cut, spi.MaxOutputBytes)
	}
	if !strings.Contains(o.Text, fmt.Sprintf("%sline %d of %d\n", spi.StdoutPrefix, n, n)) {
		t.Errorf("output's tail %q lacks the last stdout line", o.Text[len(o.Text)-200:])
	}
	// The two streams are two pipes: the stderr line, written last, may be
	// read before up to a pipe's worth (64 KiB) of stdout still unread, and
	// so fall out of the output's cap under load; the failure cause keeps
	// the stderr tail whatever the order.
	if !strings.Contains(o.Text, spi.StderrPrefix+"cannot reach db\n") && !strings.Contains(err.Error(), "cannot reach db") {
		t.Errorf("neither the output's tail %q nor the failure %q holds the stderr line", o.Text[len(o.Text)-200:], err)
	}
	total := 0
	for i := 1; i <= n; i++ {
		total += len(spi.StdoutPrefix) + len(fmt.Sprintf("line %d of %d\n", i, n))
	}
	total += len(spi.StderrPrefix) + len("cannot reach db\n")
	if got := o.Cut + int64(len(o.Text)); got != int64(total) {
		t.Errorf("cut %d + kept %d = %d bytes, want the %d written", o.Cut, len(o.Text), got, total)
	}
	if !strings.HasPrefix(o.String(), fmt.Sprintf("[… %d bytes cut …]\n", o.Cut)) {
		t.Errorf("String() does not start with the cut marker: %q", o.String()[:60])
	}
}

// TestOutputOverGRPC checks that the output crosses the plugin transport,
// a failed item's (carried in the error's status) as a successful one's.
func TestOutputOverGRPC(t *testing.T) {
	t.Parallel()
	_, quoted := helperPath(t)
	p := sdktest.Connect(t, sdk.Plugins{JobTypes: map[string]spi.JobExecutor{script.TypeName: script.New(&recLogger{})}})
	for line, want := range map[string]string{
		quoted + " print":    spi.StdoutPrefix + "out tail\n",
		quoted + " flood 10": spi.StderrPrefix + "cannot reach db\n",
		// The cap's worth of a failed item's output fits its status.
		quoted + " flood 20000": spi.StdoutPrefix + "line 19999 of 20000\n",
	} {
		resp, err := p.JobExecutor("script").Execute(t.Context(), spi.ExecuteRequest{
			Context: spi.ShardingContext{JobName: "grpc"}, Props: map[string]string{script.PropCommandLine: line}})
		if wantErr := strings.Contains(line, "flood"); (err != nil) != wantErr {
			t.Errorf("%s: Execute = %v, want an error: %v", line, err, wantErr)
		}
		if !strings.Contains(resp.Output.Text, want) {
			t.Errorf("%s: output %q lacks %q", line, resp.Output.Text, want)
		}
	}
}

// TestLiveOutputOverGRPC checks that a running script's output so far can
// be read, in process and through the plugin transport, through the
// spi.LiveOutput in the item's ctx, before the script ends.
func TestLiveOutputOverGRPC(t *testing.T) {
	t.Parallel()
	_, quoted := helperPath(t)
	p := sdktest.Connect(t, sdk.Plugins{JobTypes: map[string]spi.JobExecutor{script.TypeName: script.New(&recLogger{})}})
	for name, e := range map[string]spi.JobExecutor{"in process": script.New(&recLogger{}), "gRPC": p.JobExecutor("script")} {
		t.Run(name, func(t *testing.T) {
			live := new(spi.LiveOutput)
			ctx, cancel := context.WithCancel(spi.WithLiveOutput(t.Context(), live))
			defer cancel()
			done := make(chan error, 1)
			go func() {
				_, err := e.Execute(ctx, spi.ExecuteRequest{Context: spi.ShardingContext{JobName: "live"},
					Props: map[string]string{script.PropCommandLine: quoted + " linger"}})
				done <- err
			}()
			testkit.Eventually(t, 20*time.Second, "the running script's first lines", func() bool {
				o, err := live.Snapshot(t.Context())
				return err == nil && strings.Contains(o.Text, spi.StdoutPrefix+"step 1 done\n") &&
					strings.Contains(o.Text, spi.StderrPrefix+"waiting for step 2\n")
			})
			select {
			case err := <-done:
				t.Fatalf("the script ended before it was cancelled: %v", err)
			default:
			}
			cancel()
			if err := <-done; !errors.Is(err, context.Canceled) {
				t.Errorf("Execute after cancel = %v", err)
			}
		})
	}
}
