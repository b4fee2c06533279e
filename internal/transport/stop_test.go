package transport_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ejob-io/ejob/internal/testkit"
	"github.com/ejob-io/ejob/internal/transport"
	"github.com/ejob-io/ejob/spi"
)

// launchGrace starts the test plugin with the given stop grace.
func launchGrace(t *testing.T, grace time.Duration) *transport.Process {
	t.Helper()
	p, err := transport.Launch(t.Context(), transport.LaunchConfig{
		Path:      bins.plugin,
		Name:      "testplugin",
		Logger:    hclog.NewNullLogger(),
		StopGrace: grace,
	})
	if err != nil {
		t.Fatalf("Launch: %v", err)
	}
	t.Cleanup(p.Kill)
	return p
}

// slowStop starts a "slowstop" Execute under ctx and returns once the
// plugin has entered it, with the call's result channel and the file the
// plugin writes just before it returns.
func slowStop(t *testing.T, ctx context.Context, c *transport.Conn) (<-chan error, string) {
	t.Helper()
	dir := t.TempDir()
	started, returned := filepath.Join(dir, "started"), filepath.Join(dir, "returned")
	done := make(chan error, 1)
	go func() {
		_, err := c.JobExecutor("TEST_JOB").Execute(ctx, spi.ExecuteRequest{
			Context: spi.ShardingContext{JobName: "slowstop"},
			Props:   map[string]string{"started": started, "returned": returned},
		})
		done <- err
	}()
	testkit.Eventually(t, 10*time.Second, "Execute to start in the plugin", fileExists(started))
	return done, returned
}

// pluginReturn reads what slowstop wrote before returning; it fails the
// test when the file is missing, i.e. when the host's Execute returned
// before the plugin's.
func pluginReturn(t *testing.T, path string) (time.Time, string) {
	t.Helper()
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("the host's Execute returned before the plugin's: %v", err)
	}
	// The file exists, so the plugin is returning; its record may still be
	// being written (create, then write): wait briefly for it.
	var at time.Time
	var rest string
	testkit.Eventually(t, 2*time.Second, "a complete return record in "+path, func() bool {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		ns, r, _ := strings.Cut(string(b), " ")
		n, err := strconv.ParseInt(ns, 10, 64)
		at, rest = time.Unix(0, n), r
		return err == nil && r != ""
	})
	return at, rest
}

func TestCancelWaitsForPluginStop(t *testing.T) {
	t.Parallel()
	p := launchGrace(t, 0)
	cause := errors.New("resharding pending (test)")
	ctx, cancel := context.WithCancelCause(t.Context())
	done, returned := slowStop(t, ctx, p.Conn())
	cancelled := time.Now()
	cancel(cause)
	err := <-done
	hostReturn := time.Now()
	pluginAt, pluginSaw := pluginReturn(t, returned)
	if hostReturn.Before(pluginAt) {
		t.Errorf("host returned at %v, before the plugin at %v", hostReturn, pluginAt)
	}
	if took := hostReturn.Sub(cancelled); took < 500*time.Millisecond {
		t.Errorf("host returned %v after cancel, before the plugin's 500 ms stop", took)
	}
	if !errors.Is(err, context.Canceled) || !errors.Is(err, cause) {
		t.Errorf("err = %v, want context.Canceled and the cause", err)
	}
	if errors.Is(err, transport.ErrStopTimeout) || errors.Is(err, spi.ErrPluginExited) {
		t.Errorf("err = %v, want no ErrStopTimeout / ErrPluginExited", err)
	}
	if want := "context canceled: context canceled by the host: " + cause.Error(); pluginSaw != want {
		t.Errorf("plugin's ctx: %q, want %q", pluginSaw, want)
	}
	if _, err := p.Conn().ThreadPoolSizeProvider("TEST_POOL").PoolSize(t.Context(), spi.PoolSizeRequest{JobName: "2"}); err != nil {
		t.Errorf("call after a stopped Execute: %v", err)
	}
}

func TestDeadlineWaitsForPluginStop(t *testing.T) {
	t.Parallel()
	p := launchGrace(t, 0)
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	done, returned := slowStop(t, ctx, p.Conn())
	err := <-done
	hostReturn := time.Now()
	pluginAt, pluginSaw := pluginReturn(t, returned)
	if hostReturn.Before(pluginAt) {
		t.Errorf("host returned at %v, before the plugin at %v", hostReturn, pluginAt)
	}
	if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, transport.ErrStopTimeout) {
		t.Errorf("err = %v, want context.DeadlineExceeded only", err)
	}
	if !strings.HasPrefix(pluginSaw, "context deadline exceeded") {
		t.Errorf("plugin's ctx: %q, want the deadline (it travels in the request)", pluginSaw)
	}
}

func TestStopTimeout(t *testing.T) {
	t.Parallel()
	const grace = 300 * time.Millisecond
	p := launchGrace(t, grace)
	started := filepath.Join(t.TempDir(), "started")
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := p.Conn().JobExecutor("TEST_JOB").Execute(ctx, spi.ExecuteRequest{
			Context: spi.ShardingContext{JobName: "ignore"},
			Props:   map[string]string{"started": started},
		})
		done <- err
	}()
	testkit.Eventually(t, 10*time.Second, "Execute to start in the plugin", fileExists(started))
	cancelled := time.Now()
	cancel()
	var err error
	select {
	case err = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Execute did not return after the stop grace")
	}
	if took := time.Since(cancelled); took < grace {
		t.Errorf("returned %v after cancel, before the %v grace", took, grace)
	}
	if !errors.Is(err, transport.ErrStopTimeout) || !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want ErrStopTimeout and context.Canceled", err)
	}
	// The transport leaves the decision to the host: the process lives on.
	if p.Exited() {
		t.Error("process exited")
	}
}

func TestCancelledBeforeExecute(t *testing.T) {
	t.Parallel()
	p := launchGrace(t, 0)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := p.Conn().JobExecutor("TEST_JOB").Execute(ctx, spi.ExecuteRequest{Context: spi.ShardingContext{JobName: "hang"}})
	if !errors.Is(err, context.Canceled) || errors.Is(err, spi.ErrPluginExited) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
}
