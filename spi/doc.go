// Package spi holds ejob's extension contracts: one small interface per
// extension point (sharding strategy, error handler, job executor, thread-pool
// size provider, job listener), plain request/response structs, the sentinel
// errors callers branch on, and Plugins, the one type of a set of
// implementations by kind and type name (what a plugin serves, what the
// built-ins are, what the kernel resolves types in through Resolver).
//
// The same interfaces are implemented in-process (Go programs embedding ejob,
// tests) and out of process (plugin binaries served through package sdk and
// reached by the host over gRPC); the kernel cannot tell which it holds.
// This package imports the standard library only.
//
// Every call is stateless: the job name and the job's props travel in each
// request, so a relaunched plugin process needs no replayed state.
package spi
