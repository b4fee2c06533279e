// Package sdktest runs a plugin author's implementations through ejob's
// real gRPC transport (protobuf conversion, type routing, error mapping,
// panic recovery, cancellation) inside the test process, and hands back
// spi interfaces, so a test sees exactly what the host will see.
package sdktest
