package errorhandlerbuiltin

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/ejob-io/ejob/spi"
)

// The type names the handlers are registered under. Lookups are
// case-insensitive (spi.NormalizeType); these are the canonical spellings.
const (
	TypeLog    = "LOG"
	TypeThrow  = "THROW"
	TypeIgnore = "IGNORE"
)

// Logger is what the LOG handler writes to: Error writes one structured
// line at ERROR level, a message followed by alternating keys and values.
// hclog.Logger and *slog.Logger satisfy it.
type Logger interface {
	Error(msg string, args ...any)
}

// Handlers returns a new instance of every handler in this package, keyed
// by its canonical type name; the LOG handler writes to logger (see NewLog).
func Handlers(logger Logger) map[string]spi.ErrorHandler {
	return map[string]spi.ErrorHandler{
		TypeLog:    NewLog(logger),
		TypeThrow:  NewThrow(),
		TypeIgnore: NewIgnore(),
	}
}

// Log is the LOG handler, upstream's default. For each failure it writes
// one line at ERROR: "Job '<jobName>' exception occur in job processing"
// with the fields job, instance_id, task_id, item and error (and detail
// when the failure has one). It never propagates. It is safe for
// concurrent use if its Logger is.
type Log struct {
	logger Logger
}

var _ spi.ErrorHandler = (*Log)(nil)

// NewLog returns the LOG handler writing to logger; a nil logger means
// slog.Default().
func NewLog(logger Logger) *Log { return &Log{logger: logger} }

// HandleError implements spi.ErrorHandler. It logs even when ctx is done:
// a failure caused by cancellation is still worth a line.
func (l *Log) HandleError(ctx context.Context, req spi.HandleErrorRequest) (spi.HandleErrorResponse, error) {
	logger := l.logger
	if logger == nil {
		logger = slog.Default()
	}
	args := []any{
		"job", req.JobName,
		"instance_id", req.InstanceID,
		"task_id", req.TaskID,
		"item", req.ShardingItem,
		"error", req.Error.Message,
	}
	if req.Error.Detail != "" {
		args = append(args, "detail", req.Error.Detail)
	}
	logger.Error(LogMessage(req.JobName), args...)
	return spi.HandleErrorResponse{}, nil
}

// Validate implements spi.ErrorHandler; LOG accepts any props.
func (*Log) Validate(ctx context.Context, req spi.ValidatePropsRequest) error { return nil }

// LogMessage is the line the LOG handler writes for jobName, upstream's
// text: Job '<jobName>' exception occur in job processing.
func LogMessage(jobName string) string {
	return fmt.Sprintf("Job '%s' exception occur in job processing", jobName)
}

// Throw is the THROW handler: it answers Propagate, so the kernel stops the
// current trigger with the error (ThrowJobErrorHandler); the cron schedule
// keeps running. It is safe for concurrent use.
type Throw struct{}

var _ spi.ErrorHandler = (*Throw)(nil)

// NewThrow returns the THROW handler.
func NewThrow() *Throw { return &Throw{} }

// HandleError implements spi.ErrorHandler.
func (*Throw) HandleError(ctx context.Context, req spi.HandleErrorRequest) (spi.HandleErrorResponse, error) {
	return spi.HandleErrorResponse{Propagate: true}, nil
}

// Validate implements spi.ErrorHandler; THROW accepts any props.
func (*Throw) Validate(ctx context.Context, req spi.ValidatePropsRequest) error { return nil }

// Ignore is the IGNORE handler: it does nothing and never propagates. It is
// safe for concurrent use.
type Ignore struct{}

var _ spi.ErrorHandler = (*Ignore)(nil)

// NewIgnore returns the IGNORE handler.
func NewIgnore() *Ignore { return &Ignore{} }

// HandleError implements spi.ErrorHandler.
func (*Ignore) HandleError(ctx context.Context, req spi.HandleErrorRequest) (spi.HandleErrorResponse, error) {
	return spi.HandleErrorResponse{}, nil
}

// Validate implements spi.ErrorHandler; IGNORE accepts any props.
func (*Ignore) Validate(ctx context.Context, req spi.ValidatePropsRequest) error { return nil }
