// Package sharding holds the kernel's sharding logic around the
// spi.ShardingStrategy: the order in which instances are handed to a
// strategy and the checks applied to a strategy's answer before it is
// written to the registry.
package sharding
