// Package script implements ElasticJob's SCRIPT job type (upstream's
// ScriptJobExecutor): each item runs the command line in the job's
// script.command.line prop, split exactly as commons-exec 1.3
// CommandLine.parse splits it, run directly (no shell) with the item's
// ShardingContext JSON (byte-identical to upstream's Gson) appended as the
// last argument.
//
// An item fails when the program cannot start or exits non-zero (the error
// carries the exit code and the tail of stderr). When the item's context
// ends (job timeout, shutdown) the whole process group is stopped: SIGTERM,
// then SIGKILL after a grace period. The program's stdout and stderr lines
// go to a Logger, never to this process's stdout. See docs/jobtypes.md for
// the argv quoting quirk of upstream and the script.argv.quirk prop.
//
// The package imports spi and spi/gson only.
package script
