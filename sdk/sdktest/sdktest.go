package sdktest

import (
	"context"
	"net"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/test/bufconn"

	"github.com/ejob-io/ejob/internal/transport"
	"github.com/ejob-io/ejob/sdk"
	"github.com/ejob-io/ejob/spi"
)

// Plugin is a connected plugin served in-process over gRPC. Its accessors
// return spi implementations that go through the transport; errors are
// mapped as the host maps them (sentinels survive errors.Is, a panic
// becomes an error "plugin panicked: ...").
type Plugin struct {
	conn *transport.Conn
}

// Connect serves p on an in-memory gRPC connection and connects to it.
// Invalid p fails the test. The server and connection are closed by
// t.Cleanup.
func Connect(t testing.TB, p sdk.Plugins) *Plugin {
	t.Helper()
	srv, err := transport.NewServer(p, nil)
	if err != nil {
		t.Fatalf("sdktest: %v", err)
	}
	lis := bufconn.Listen(1 << 20)
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = srv.Serve(lis)
	}()
	cc, err := grpc.NewClient("passthrough:///sdktest",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
	)
	if err != nil {
		srv.Stop()
		<-served
		t.Fatalf("sdktest: dial: %v", err)
	}
	t.Cleanup(func() {
		_ = cc.Close()
		srv.Stop()
		<-served
	})
	return &Plugin{conn: transport.NewConn(cc, "sdktest", nil)}
}

// Info returns what the plugin reports to the host.
func (p *Plugin) Info(ctx context.Context) (spi.Info, error) { return p.conn.Info(ctx) }

// ShardingStrategy returns the sharding strategy typeName, through gRPC.
func (p *Plugin) ShardingStrategy(typeName string) spi.ShardingStrategy {
	return p.conn.ShardingStrategy(typeName)
}

// ErrorHandler returns the error handler typeName, through gRPC.
func (p *Plugin) ErrorHandler(typeName string) spi.ErrorHandler {
	return p.conn.ErrorHandler(typeName)
}

// JobExecutor returns the job type typeName, through gRPC.
func (p *Plugin) JobExecutor(typeName string) spi.JobExecutor {
	return p.conn.JobExecutor(typeName)
}

// ThreadPoolSizeProvider returns the thread-pool size provider typeName,
// through gRPC.
func (p *Plugin) ThreadPoolSizeProvider(typeName string) spi.ThreadPoolSizeProvider {
	return p.conn.ThreadPoolSizeProvider(typeName)
}

// JobListener returns the job listener typeName, through gRPC.
func (p *Plugin) JobListener(typeName string) spi.JobListener {
	return p.conn.JobListener(typeName)
}

// Launcher returns the launcher typeName, through gRPC.
func (p *Plugin) Launcher(typeName string) spi.Launcher {
	return p.conn.Launcher(typeName)
}

// Tracer returns the tracing sink typeName, through gRPC.
func (p *Plugin) Tracer(typeName string) spi.Tracer {
	return p.conn.Tracer(typeName)
}
