package transport

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/test/bufconn"

	pb "github.com/ejob-io/ejob/internal/transport/pluginpb"
	"github.com/ejob-io/ejob/spi"
)

func TestExecutionsEarlyCancel(t *testing.T) {
	t.Parallel()
	e := newExecutions()
	cause := cancelCause("why")
	if e.cancel("a", cause, false) {
		t.Fatal("cancel of an unknown id reported running")
	}
	ctx, cancel := context.WithCancelCause(t.Context())
	done := e.start("a", execution{cancel: cancel})
	if !errors.Is(context.Cause(ctx), context.Canceled) || context.Cause(ctx).Error() != "context canceled by the host: why" {
		t.Errorf("cause = %v, want the early Cancel's", context.Cause(ctx))
	}
	done()
	ctx, cancel = context.WithCancelCause(t.Context())
	done = e.start("b", execution{cancel: cancel})
	if !e.cancel("b", context.Canceled, false) || ctx.Err() == nil {
		t.Error("cancel of a running id did not cancel it")
	}
	done()
	// A Cancel for the deadline leaves it to the deadline, cancelling only
	// as a backstop once the deadline passed.
	ctx, cancel = context.WithCancelCause(t.Context())
	done = e.start("c", execution{cancel: cancel, deadline: time.Now()})
	e.cancel("c", context.DeadlineExceeded, true)
	if ctx.Err() != nil {
		t.Error("a Cancel for the deadline cancelled at once")
	}
	select {
	case <-ctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the deadline backstop did not cancel")
	}
	done()
	if len(e.running) != 0 || len(e.early) != 0 {
		t.Errorf("left behind: running %v early %v", e.running, e.early)
	}
}

// legacyServer is a plugin built before Cancel existed: Execute waits for
// its ctx, and Cancel is unimplemented.
type legacyServer struct {
	pb.UnimplementedPluginServer
	entered chan struct{}
}

func (s legacyServer) Execute(ctx context.Context, _ *pb.ExecuteRequest) (*pb.ExecuteResponse, error) {
	close(s.entered)
	<-ctx.Done()
	return nil, toStatus(ctx.Err())
}

// legacyConn serves legacyServer in memory and returns a Conn to it and
// the channel closed when its Execute is entered.
func legacyConn(t *testing.T) (*Conn, <-chan struct{}) {
	t.Helper()
	lis := bufconn.Listen(1 << 20)
	srv := grpc.NewServer()
	entered := make(chan struct{})
	pb.RegisterPluginServer(srv, legacyServer{entered: entered})
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	cc, err := grpc.NewClient("passthrough:///bufconn",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cc.Close() })
	return newConn(cc, "legacy", nil, time.Minute), entered
}

// TestCancelLegacyPlugin: against a plugin without Cancel, a cancelled
// Execute returns at once (the RPC is cancelled), as before.
func TestCancelLegacyPlugin(t *testing.T) {
	t.Parallel()
	c, entered := legacyConn(t)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := c.JobExecutor("X").Execute(ctx, spi.ExecuteRequest{})
		done <- err
	}()
	<-entered
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) || errors.Is(err, ErrStopTimeout) {
			t.Errorf("err = %v, want context.Canceled only", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Execute against a legacy plugin did not return after cancel")
	}
}

// TestLeaseLegacyPlugin: a plugin without RenewLease ignores the lease; the
// host stops renewing on that Conn, and the Execute runs on until its ctx
// ends.
func TestLeaseLegacyPlugin(t *testing.T) {
	t.Parallel()
	c, entered := legacyConn(t)
	ctx, cancel := context.WithCancel(t.Context())
	ctx = spi.WithLease(ctx, spi.LeaseFunc(func() time.Time { return time.Now().Add(40 * time.Millisecond) }))
	done := make(chan error, 1)
	go func() {
		_, err := c.JobExecutor("X").Execute(ctx, spi.ExecuteRequest{})
		done <- err
	}()
	<-entered
	deadline := time.Now().Add(10 * time.Second)
	for {
		c.leases.mu.Lock()
		unsupported := c.leases.unsupported
		c.leases.mu.Unlock()
		if unsupported {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the Conn did not notice that the plugin lacks RenewLease")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if ttl, _ := c.leases.add("y", spi.LeaseFunc(time.Now)); ttl != 0 {
		t.Errorf("a Conn to a legacy plugin sent a lease of %v", ttl)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
}

func TestLeaseTimer(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancelCause(t.Context())
	lt := startLease(50*time.Millisecond, cancel)
	for range 5 {
		time.Sleep(20 * time.Millisecond)
		if !lt.renew(50 * time.Millisecond) {
			t.Fatal("renew of a live lease failed")
		}
	}
	if ctx.Err() != nil {
		t.Fatal("a renewed lease expired")
	}
	<-ctx.Done()
	if !errors.Is(context.Cause(ctx), spi.ErrLeaseExpired) {
		t.Errorf("cause = %v", context.Cause(ctx))
	}
	if lt.renew(time.Minute) {
		t.Error("renew of an expired lease succeeded")
	}
}
