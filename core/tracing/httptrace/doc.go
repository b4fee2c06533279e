// Package httptrace carries the read side of an execution history over
// HTTP: Handler serves an spi.Tracer's QueryExecutions, QueryStatuses,
// QueryOutput, Distinct and Purge as JSON requests, and New returns an
// spi.Tracer that sends those calls to such a handler. A standalone host
// without elasticjob.tracing serves its in-memory history this way on its
// control socket, so that `ejob history` and `ejob job show` read it as
// they read a tracing database.
//
// Events are not written through it (Write fails with spi.ErrUnsupported):
// the store behind the handler is the serving host's, filled by its own
// executions. The handler answers with the store's settings, whatever
// Config a request carries.
package httptrace
