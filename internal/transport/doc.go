// Package transport is all of ejob's go-plugin and gRPC glue: the
// handshake (Handshake, ProtocolVersion), the plugin side (Serve, NewServer:
// type routing, error-to-status mapping, panic recovery, parent-death
// watching) and the host side (Launch, Process, Conn: spawn with AutoMTLS,
// version checks, status-to-error mapping, plugin logs re-levelled).
//
// The host sees a plugin only through spi interfaces (Conn's accessors), so
// the kernel cannot tell an out-of-process plugin from an in-process one.
// Errors are mapped in one place (errors.go); see Conn for the table.
package transport
