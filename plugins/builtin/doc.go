// Package builtin gathers every built-in SPI implementation (sharding
// strategies, error handlers, the SCRIPT and HTTP job types, thread-pool
// size providers) into one Set keyed by kind and type name, so
// that a single plugin process (the ejob binary under a hidden subcommand)
// can serve them all. It uses plain spi maps and does not import sdk.
package builtin
