package transport_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ejob-io/ejob/internal/testkit"
	"github.com/ejob-io/ejob/internal/transport"
	"github.com/ejob-io/ejob/spi"
)

const testLease = 300 * time.Millisecond

// leased starts a "leased" Execute under ctx and returns once the plugin
// has entered it, with the call's result channel and the file the plugin
// writes when its ctx ends.
func leased(t *testing.T, ctx context.Context, c *transport.Conn) (<-chan error, string) {
	t.Helper()
	dir := t.TempDir()
	started, cancelled := filepath.Join(dir, "started"), filepath.Join(dir, "cancelled")
	done := make(chan error, 1)
	go func() {
		_, err := c.JobExecutor("TEST_JOB").Execute(ctx, spi.ExecuteRequest{
			Context: spi.ShardingContext{JobName: "leased"},
			Props:   map[string]string{"started": started, "cancelled": cancelled},
		})
		done <- err
	}()
	testkit.Eventually(t, 10*time.Second, "Execute to start in the plugin", fileExists(started))
	return done, cancelled
}

// TestLeaseExpiresWithoutRenewal: a lease whose deadline never moves (a
// host that stopped renewing) ends the plugin's Execute at the deadline.
func TestLeaseExpiresWithoutRenewal(t *testing.T) {
	t.Parallel()
	p := launchGrace(t, 0)
	deadline := time.Now().Add(testLease)
	ctx := spi.WithLease(t.Context(), spi.LeaseFunc(func() time.Time { return deadline }))
	done, cancelled := leased(t, ctx, p.Conn())
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) || !errors.Is(err, spi.ErrLeaseExpired) {
			t.Errorf("err = %v, want context.Canceled and spi.ErrLeaseExpired", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Execute still running 10 s after its lease expired")
	}
	at, cause := pluginReturn(t, cancelled)
	if !strings.Contains(cause, spi.ErrLeaseExpired.Error()) {
		t.Errorf("plugin's ctx cause = %q, want %q", cause, spi.ErrLeaseExpired)
	}
	if at.Before(deadline) || at.After(deadline.Add(200*time.Millisecond)) {
		t.Errorf("plugin cancelled at deadline%+v, want within 200 ms after it", at.Sub(deadline))
	}
}

// TestLeaseRenewedKeepsRunning: while the host renews the lease, the call
// runs past several lease periods.
//
// The plugin ends a lease that no renewal reached for its whole length,
// as it must for a paused host; a loaded machine can starve the host or
// the plugin that long (at load 30–40 on 2 cores, gaps of 250–340 ms
// between renewals built every 75 ms, or a renewal 250 ms in transit,
// end a 300 ms lease). So an attempt whose lease expired counts only with
// evidence of that starvation: the longest stalls of the host (this
// process) and of the plugin, each measured by a probe ticking every
// millisecond in it, together cover the lease's slack (lease − renewal
// period). Such an attempt is logged and tried again; an expiry without
// that evidence (a host that stops renewing, a plugin that drops
// renewals), or any other end, is a failure.
func TestLeaseRenewedKeepsRunning(t *testing.T) {
	t.Parallel()
	const attempts = 5
	for n := 1; ; n++ {
		starved := renewedAttempt(t)
		if starved == "" {
			return
		}
		if n == attempts {
			t.Fatalf("every attempt starved (%d): %s", attempts, starved)
		}
		t.Logf("attempt %d: lease expired on a starved machine (%s); trying again", n, starved)
	}
}

// renewedAttempt runs one renewed execution for 5 leases. It returns ""
// when it ran through, or the evidence that the machine starved the
// renewals when its lease expired; it fails the test otherwise.
func renewedAttempt(t *testing.T) (starved string) {
	t.Helper()
	p := launchGrace(t, 0)
	ctx, cancel := context.WithCancelCause(t.Context())
	defer cancel(nil)
	probeCtx, stopProbe := context.WithCancel(t.Context())
	defer stopProbe()
	hostStall := testkit.StallProbe(probeCtx)
	ctx = spi.WithLease(ctx, spi.LeaseFunc(func() time.Time { return time.Now().Add(testLease) }))
	done, cancelled := leased(t, ctx, p.Conn())
	select {
	case err := <-done:
		stopProbe()
		host := hostStall()
		_, rest := pluginReturn(t, cancelled)
		cause, plugin := leasedReturn(t, rest)
		if !strings.Contains(cause, spi.ErrLeaseExpired.Error()) {
			t.Fatalf("renewed execution ended: %v (plugin's cause %q)", err, cause)
		}
		slack := testLease - transport.LeasePeriod(testLease)
		evidence := fmt.Sprintf("host stalled %v, plugin stalled %v, lease slack %v", host, plugin, slack)
		if host+plugin < slack {
			t.Fatalf("the plugin let a renewed lease expire: %v; %s", err, evidence)
		}
		return evidence
	case <-time.After(5 * testLease):
	}
	if fileExists(cancelled)() {
		t.Fatal("the plugin cancelled a renewed execution")
	}
	cancel(errors.New("test over"))
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Execute did not return after cancel")
	}
	if _, rest := pluginReturn(t, cancelled); strings.Contains(rest, spi.ErrLeaseExpired.Error()) {
		t.Errorf("cause = %q, want the host's", rest)
	}
	return ""
}

// leasedReturn splits the rest of a "leased" return record into the
// plugin's ctx cause and its longest stall.
func leasedReturn(t *testing.T, rest string) (cause string, stall time.Duration) {
	t.Helper()
	cause, s, ok := strings.Cut(rest, "\tstall=")
	n, err := strconv.ParseInt(s, 10, 64)
	if !ok || err != nil {
		t.Fatalf("leased return record %q: no stall", rest)
	}
	return cause, time.Duration(n)
}

// TestLeaseWithoutDeadline: a lease that knows no deadline is no lease.
func TestLeaseWithoutDeadline(t *testing.T) {
	t.Parallel()
	p := launchGrace(t, 0)
	ctx, cancel := context.WithCancel(t.Context())
	ctx = spi.WithLease(ctx, spi.LeaseFunc(func() time.Time { return time.Time{} }))
	done, cancelled := leased(t, ctx, p.Conn())
	select {
	case err := <-done:
		t.Fatalf("execution without a lease deadline ended: %v", err)
	case <-time.After(2 * testLease):
	}
	cancel()
	<-done
	if _, cause := pluginReturn(t, cancelled); strings.Contains(cause, spi.ErrLeaseExpired.Error()) {
		t.Errorf("cause = %q, want the host's", cause)
	}
}

// TestLeaseFrozenHostProcess: a real host process stopped with SIGSTOP
// renews nothing; its plugin process, still running, cancels the
// execution on its own, with cause spi.ErrLeaseExpired, while the host is
// stopped. (TestLeaseFrozenHost checks the timing on synctest's clock.)
// Nothing else bounds an item by its session while the host is paused:
// without the lease, the chaos suite's sigstop-host-only fault finds the
// item still running beside the instance that took it over once the
// session expired.
func TestLeaseFrozenHostProcess(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	host := exec.Command(bins.host, "lease", bins.plugin, dir)
	host.Stderr = os.Stderr
	if err := host.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = host.Process.Kill(); _ = host.Wait() })
	started, cancelled := filepath.Join(dir, "started"), filepath.Join(dir, "cancelled")
	testkit.Eventually(t, 20*time.Second, "the host's Execute to start in the plugin", fileExists(started))
	if err := host.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = host.Process.Signal(syscall.SIGCONT) })
	testkit.Eventually(t, 10*time.Second, "the plugin to cancel the frozen host's execution", fileExists(cancelled))
	if _, cause := pluginReturn(t, cancelled); !strings.Contains(cause, spi.ErrLeaseExpired.Error()) {
		t.Errorf("plugin's ctx cause = %q, want %q", cause, spi.ErrLeaseExpired)
	}
}
