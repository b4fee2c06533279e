package lazylog_test

import (
	"bytes"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/ejob-io/ejob/internal/lazylog"
)

func newBase(buf *bytes.Buffer, level hclog.Level) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{Name: "base", Level: level, Output: buf, DisableTime: true})
}

// The lazy logger writes exactly what base.With writes.
func TestSameOutputAsWith(t *testing.T) {
	var want, got bytes.Buffer
	w := newBase(&want, hclog.Debug).With("job", "j1", "instance", "i1")
	z := lazylog.With(newBase(&got, hclog.Debug), lazylog.JobInstance, "j1", "i1")
	for _, l := range []hclog.Logger{w, z} {
		l.Trace("dropped")
		l.Debug("debug", "k", 1)
		l.Info("info")
		l.Log(hclog.Warn, "warn", "e", "x")
		l.Named("sub").Error("error")
		l.With("more", 2).Info("with")
	}
	if want.String() != got.String() {
		t.Fatalf("output differs:\nWith:\n%s\nlazy:\n%s", want.String(), got.String())
	}
	if z.Name() != w.Name() || z.IsTrace() || !z.IsDebug() || z.GetLevel() != hclog.Debug {
		t.Fatalf("name %q level %v", z.Name(), z.GetLevel())
	}
}

// The executor's keys.
func TestJobInstanceID(t *testing.T) {
	var buf bytes.Buffer
	lazylog.With(newBase(&buf, hclog.Info), lazylog.JobInstanceID, "j1", "i1").Info("m")
	if got := buf.String(); got != "[INFO]  base: m: instance_id=i1 job=j1\n" {
		t.Fatalf("got %q", got)
	}
}

// The level follows the base's until the With is made, and SetLevel on
// the lazy logger sets the shared level as the With's would.
func TestLevelShared(t *testing.T) {
	var buf bytes.Buffer
	base := newBase(&buf, hclog.Error)
	z := lazylog.With(base, lazylog.JobInstance, "j1", "i1")
	z.Info("dropped")
	base.SetLevel(hclog.Info)
	z.Info("kept")
	if got := buf.String(); got != "[INFO]  base: kept: instance=i1 job=j1\n" {
		t.Fatalf("got %q", got)
	}
	z.SetLevel(hclog.Warn)
	if base.GetLevel() != hclog.Warn {
		t.Fatalf("base level %v, want warn", base.GetLevel())
	}
}

// Below the level the message still reaches an InterceptLogger's sinks.
func TestInterceptSinks(t *testing.T) {
	var out, sink bytes.Buffer
	base := hclog.NewInterceptLogger(&hclog.LoggerOptions{Level: hclog.Error, Output: &out, DisableTime: true})
	base.RegisterSink(hclog.NewSinkAdapter(&hclog.LoggerOptions{Level: hclog.Debug, Output: &sink, DisableTime: true}))
	lazylog.With(base, lazylog.JobInstance, "j1", "i1").Debug("to the sink")
	if out.Len() != 0 || sink.String() != "[DEBUG] to the sink: instance=i1 job=j1\n" {
		t.Fatalf("out %q sink %q", out.String(), sink.String())
	}
}
