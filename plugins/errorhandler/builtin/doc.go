// Package errorhandlerbuiltin implements ElasticJob's built-in error
// handlers: LOG logs the failure at ERROR (the
// default), THROW asks the kernel to stop the current trigger, IGNORE does
// nothing. It imports spi only; the LOG handler writes to a Logger, an
// interface that hclog.Logger and *slog.Logger satisfy.
package errorhandlerbuiltin
