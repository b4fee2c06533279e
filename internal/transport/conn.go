package transport

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/grpc"

	pb "github.com/ejob-io/ejob/internal/transport/pluginpb"
	"github.com/ejob-io/ejob/spi"
)

// Conn is a connected plugin, over any gRPC connection. Its accessors (and
// NewClient) return spi implementations that forward each call, with its
// ctx (cancellation and deadline cross the process boundary), to the
// plugin. They do not check that the plugin serves the type; a call for a
// type it does not serve fails with an error wrapping spi.ErrUnknownType
// that lists the types it serves.
//
// Every error a Conn call returns is mapped in one place (see errors.go):
//
//	plugin process gone / connection unavailable -> wraps spi.ErrPluginExited
//	codes.Unimplemented                          -> wraps spi.ErrUnsupported
//	codes.InvalidArgument                        -> wraps spi.ErrInvalidConfig
//	codes.NotFound (unknown type)                -> wraps spi.ErrUnknownType
//	codes.Canceled / DeadlineExceeded            -> wraps context.Canceled / context.DeadlineExceeded
//	anything else                                -> the plugin's message
//
// each wrapped with the plugin's name, the operation and the type name. The
// plugin's own error text is kept. A panic inside a plugin method arrives as
// an error "plugin panicked: <value>"; the plugin keeps serving.
//
// JobExecutor's Execute is the exception to "cancellation crosses the
// boundary at once": when its ctx ends, it asks the plugin to stop and
// returns only once the plugin's Execute has returned, up to the stop grace
// (see stop.go). Its error then wraps ctx's error and cause, or also
// ErrStopTimeout when the grace passed first. Every other call returns as
// soon as its ctx ends: they are short and the host bounds them with a call
// timeout, and nothing relies on them having stopped in the plugin.
//
// When Execute's ctx carries an spi.Lease, the plugin stops the call at
// the lease's deadline unless the Conn renews it (see lease.go), so that an
// item ends with its session even while the host process is paused; the
// error then wraps context.Canceled and spi.ErrLeaseExpired.
//
// A Conn is safe for concurrent use.
type Conn struct {
	name      string
	client    pb.PluginClient
	done      <-chan struct{}
	stopGrace time.Duration
	leases    leaseRenewer
}

// NewConn returns a Conn over cc. name labels errors (the plugin's name or
// path). done, if not nil, is closed when the plugin process has exited;
// calls then fail at once with spi.ErrPluginExited. A cancelled Execute
// waits up to DefaultStopGrace for the plugin to stop.
func NewConn(cc grpc.ClientConnInterface, name string, done <-chan struct{}) *Conn {
	return newConn(cc, name, done, 0)
}

func newConn(cc grpc.ClientConnInterface, name string, done <-chan struct{}, stopGrace time.Duration) *Conn {
	if stopGrace <= 0 {
		stopGrace = DefaultStopGrace
	}
	c := &Conn{name: name, client: pb.NewPluginClient(cc), done: done, stopGrace: stopGrace}
	c.leases.c = c
	return c
}

func (c *Conn) exited() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// precheck fails fast when the process is known to be gone.
func (c *Conn) precheck(op, typeName string) error {
	if c.exited() {
		return c.wrap(op, typeName, &remoteError{msg: spi.ErrPluginExited.Error(), sentinel: spi.ErrPluginExited})
	}
	return nil
}

func (c *Conn) wrap(op, typeName string, err error) error {
	if typeName == "" {
		return fmt.Errorf("plugin %s: %s: %w", c.name, op, err)
	}
	return fmt.Errorf("plugin %s: %s %q: %w", c.name, op, typeName, err)
}

func (c *Conn) fail(ctx context.Context, op, typeName string, err error) error {
	return c.wrap(op, typeName, fromStatus(ctx, err, c.exited()))
}

// Info asks the plugin what it serves. It does not check APIVersion
// (Process.Info does).
func (c *Conn) Info(ctx context.Context) (spi.Info, error) {
	if err := c.precheck("info", ""); err != nil {
		return spi.Info{}, err
	}
	resp, err := c.client.Info(ctx, &pb.InfoRequest{})
	if err != nil {
		return spi.Info{}, c.fail(ctx, "info", "", err)
	}
	return infoFromProto(resp), nil
}

// Call implements Connector: it runs fn on c.
func (c *Conn) Call(ctx context.Context, _ Call, fn func(context.Context, *Conn) error) error {
	return fn(ctx, c)
}
