// Package sdk is what plugin authors import: Serve turns a set of spi
// implementations into an ejob plugin binary in one call, Logger gives the
// structured stderr logger the host re-levels, Output the writer of a job
// type's item output (stored with the run and shown by the console and
// `ejob history --output`), and ShardingContextJSON produces upstream
// ElasticJob's exact JSON for a sharding context.
//
// Test an implementation through the real gRPC transport with package
// sdk/sdktest.
package sdk
