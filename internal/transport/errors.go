package transport

import (
	"context"
	"errors"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/ejob-io/ejob/internal/transport/pluginpb"
	"github.com/ejob-io/ejob/spi"
)

// Launch errors callers branch on. Each is wrapped in an error that names
// the plugin executable.
var (
	// ErrNotPlugin means the executable is not an ejob plugin: it could not
	// be executed, is a native executable not built with the SDK, exited
	// before the handshake, printed something other than an ejob plugin's
	// handshake, or did not complete the handshake within the start
	// timeout. The error says which. Relaunching does not help.
	ErrNotPlugin = errors.New("not a valid ejob plugin")
	// ErrProtocolVersion means the plugin speaks another go-plugin
	// handshake protocol version than ProtocolVersion (or another go-plugin
	// core protocol). The plugin must be rebuilt against this ejob release.
	ErrProtocolVersion = errors.New("plugin protocol version mismatch")
	// ErrAPIVersion means the plugin's Info reports an spi.APIVersion other
	// than the host's. The plugin must be rebuilt against this ejob release.
	ErrAPIVersion = errors.New("plugin API version mismatch")
)

// This file is the one place where errors cross the process boundary.
//
// Plugin side (toStatus), the first match wins:
//
//	wraps context.Canceled          -> codes.Canceled
//	wraps context.DeadlineExceeded  -> codes.DeadlineExceeded
//	wraps spi.ErrUnknownType        -> codes.NotFound
//	wraps spi.ErrInvalidConfig      -> codes.InvalidArgument
//	wraps spi.ErrUnsupported        -> codes.Unimplemented
//	anything else                   -> codes.Unknown
//
// always with the error's full text as the status message. A panic becomes
// codes.Internal "plugin panicked: <value>" (see recoverInterceptor).
//
// Host side (fromStatus):
//
//	codes.Canceled / DeadlineExceeded, caller's ctx done  -> ctx.Err()
//	codes.Unavailable, codes.Canceled while the caller's
//	ctx is live (connection closing), or any other code
//	not listed below once the process is known gone       -> spi.ErrPluginExited
//	codes.DeadlineExceeded, caller's ctx live (the plugin's own
//	timeout)                                              -> context.DeadlineExceeded
//	codes.NotFound                                        -> spi.ErrUnknownType
//	codes.InvalidArgument                                 -> spi.ErrInvalidConfig
//	codes.Unimplemented (also: RPC unknown to the plugin) -> spi.ErrUnsupported
//	anything else                                         -> the message, no sentinel
//
// Errors from the plugin keep its message verbatim; Conn wraps them with
// the plugin's name, the operation and the type name. A JobExecutor's
// Execute whose caller's ctx ended is the exception: its error wraps the
// ctx's error and cause, plus the plugin's own error or ErrStopTimeout
// (see stop.go).

// toStatus converts an implementation's error into a gRPC status error.
func toStatus(err error) error {
	if err == nil {
		return nil
	}
	// A status error from the implementation's own gRPC clients is not
	// passed through: its Unavailable would read as "plugin exited".
	return status.Error(codeOf(err), err.Error())
}

func codeOf(err error) codes.Code {
	switch {
	case errors.Is(err, context.Canceled):
		return codes.Canceled
	case errors.Is(err, context.DeadlineExceeded):
		return codes.DeadlineExceeded
	case errors.Is(err, spi.ErrUnknownType):
		return codes.NotFound
	case errors.Is(err, spi.ErrInvalidConfig):
		return codes.InvalidArgument
	case errors.Is(err, spi.ErrUnsupported):
		return codes.Unimplemented
	default:
		return codes.Unknown
	}
}

// withOutput attaches a failed Execute's output to its status error as a
// detail (an ExecuteResponse), so that the host keeps what the item
// printed before it failed.
func withOutput(err error, out spi.Output) error {
	m := outputToProto(out)
	if m == nil {
		return err
	}
	st, derr := status.Convert(err).WithDetails(&pb.ExecuteResponse{Output: m})
	if derr != nil {
		return err
	}
	return st.Err()
}

// outputOf returns the output a failed Execute's status error carries
// (see withOutput).
func outputOf(err error) spi.Output {
	for _, d := range status.Convert(err).Details() {
		if r, ok := d.(*pb.ExecuteResponse); ok {
			return outputFromProto(r.GetOutput())
		}
	}
	return spi.Output{}
}

// remoteError is an error that came over the wire: Error is the text to
// show, Unwrap the sentinel (if any) callers branch on.
type remoteError struct {
	msg      string
	sentinel error
}

func (e *remoteError) Error() string { return e.msg }
func (e *remoteError) Unwrap() error { return e.sentinel }

// fromStatus converts the error of a gRPC call into an error wrapping the
// matching sentinel. ctx is the caller's ctx; exited reports whether the
// plugin process is known to be gone.
func fromStatus(ctx context.Context, err error, exited bool) error {
	if err == nil {
		return nil
	}
	st := status.Convert(err)
	transportErr := func(sentinel error) error {
		msg := sentinel.Error()
		if m := st.Message(); m != "" && !strings.Contains(m, msg) {
			msg += ": " + m
		}
		return &remoteError{msg: msg, sentinel: sentinel}
	}
	switch st.Code() {
	case codes.Canceled, codes.DeadlineExceeded:
		if ctxErr := ctx.Err(); ctxErr != nil {
			return transportErr(ctxErr)
		}
		if st.Code() == codes.Canceled || exited {
			// Canceled without the caller cancelling: the connection is
			// closing because the plugin is being killed or has exited.
			return transportErr(spi.ErrPluginExited)
		}
		return &remoteError{msg: st.Message(), sentinel: context.DeadlineExceeded}
	case codes.Unavailable:
		return transportErr(spi.ErrPluginExited)
	// The plugin's own answers stand even if it exited right after.
	case codes.NotFound:
		return &remoteError{msg: st.Message(), sentinel: spi.ErrUnknownType}
	case codes.InvalidArgument:
		return &remoteError{msg: st.Message(), sentinel: spi.ErrInvalidConfig}
	case codes.Unimplemented:
		return &remoteError{msg: st.Message(), sentinel: spi.ErrUnsupported}
	}
	if exited {
		return transportErr(spi.ErrPluginExited)
	}
	return &remoteError{msg: st.Message()}
}
