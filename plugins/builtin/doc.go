// Package builtin gathers every built-in SPI implementation (sharding
// strategies, error handlers, the SCRIPT and HTTP job types, thread-pool
// size providers, job listeners) into one spi.Plugins, so that a single
// plugin process (the ejob binary under a hidden subcommand) can serve them
// all and a Go program can run them in-process. It does not import sdk.
package builtin
