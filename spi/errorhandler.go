package spi

import "context"

// JobError describes a failure the kernel reports to an error handler.
type JobError struct {
	// Message is the error text.
	Message string
	// Detail is extra diagnostic text (a wrapped-error chain, a stack, a
	// tail of stderr); it may be empty.
	Detail string
}

// HandleErrorRequest reports one failure of a job.
type HandleErrorRequest struct {
	JobName string
	// InstanceID is the reporting instance (ip@-@pid); may be empty.
	InstanceID string
	// TaskID is the execution's task id; empty for failures outside an
	// execution (environment check, listeners).
	TaskID string
	// ShardingItem is the failed item, or -1 when the failure is not
	// tied to one item.
	ShardingItem int
	// Props are the job's props (error handlers read their settings,
	// such as mail or webhook addresses, from them). By convention,
	// alert.test=true (set by `ejob alert test` for one call) asks a
	// handler that sends alerts to send this one at once and return the
	// send's error, so that the caller learns whether it was delivered.
	Props map[string]string
	Error JobError
	// Tries is how many times the failed item ran before this report: 1
	// without retry, up to 1 + the job prop ejob.retry.max with it (fewer
	// when a shutdown, session loss, execution timeout or pending
	// resharding stopped the retries). 0 when the failure is not tied to
	// one item, or from a host that predates the field.
	Tries int
}

// HandleErrorResponse says what the kernel does after the handler ran.
type HandleErrorResponse struct {
	// Propagate asks the kernel to stop the current trigger with the
	// error, as upstream's THROW handler does. The
	// cron schedule itself keeps running.
	Propagate bool
}

// ValidatePropsRequest asks an implementation to check its props.
type ValidatePropsRequest struct {
	JobName string
	Props   map[string]string
}

// ErrorHandler is told about job failures (environment check, listeners,
// each failed item).
//
// Caller: the kernel's execution pipeline, once per failure; Validate once
// when a job is configured, or once for all the jobs of a host that share
// its props (the result must depend on Props alone; JobName is for
// messages). Concurrency: items of one job fail on several
// goroutines, and many jobs share one handler, so implementations must be
// safe for concurrent use.
//
// Contract: HandleError returns an error only when the handler itself
// failed (a mail server down); the kernel logs it and carries on. Whether
// the job's failure stops the trigger is said by Propagate, not by the
// returned error. Validate returns an error wrapping ErrInvalidConfig that
// names the offending property.
type ErrorHandler interface {
	HandleError(ctx context.Context, req HandleErrorRequest) (HandleErrorResponse, error)
	Validate(ctx context.Context, req ValidatePropsRequest) error
}
