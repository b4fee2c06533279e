// Package spitest holds conformance suites for the spi contracts, in the
// spirit of testing/fstest: any implementation, in-process or reached over
// gRPC, can be run through TestShardingStrategy, TestErrorHandler,
// TestJobExecutor, TestThreadPoolSizeProvider, TestJobListener,
// TestTracer and TestLauncher.
//
// Each suite is a list of named checks (ShardingStrategyChecks and friends)
// that return an error naming the failing case, so the checks can also be
// run outside package testing and proven to catch broken implementations.
// This package imports the standard library and spi only.
package spitest
