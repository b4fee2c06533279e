package joblistenerbuiltin

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/ejob-io/ejob/spi"
)

// The type names the listeners are registered under (matched
// case-insensitively).
const (
	TypeLog     = "LOG"
	TypeLogOnce = "LOG_ONCE"
)

// Props of LOG_ONCE: how long an instance that is not the last waits for
// the last one, in milliseconds; absent, empty or <= 0 means no timeout
// (upstream's default).
const (
	PropStartedTimeoutMillis   = "listener.log-once.started-timeout-milliseconds"
	PropCompletedTimeoutMillis = "listener.log-once.completed-timeout-milliseconds"
)

// Logger is what the listeners write to: Info writes one structured line, a
// message followed by alternating keys and values. hclog.Logger and
// *slog.Logger satisfy it.
type Logger interface {
	Info(msg string, args ...any)
}

// Listeners returns a new instance of every listener in this package, keyed
// by its canonical type name, writing to logger (nil: slog.Default()).
func Listeners(logger Logger) map[string]spi.JobListener {
	return map[string]spi.JobListener{
		TypeLog:     NewLog(logger),
		TypeLogOnce: NewLogOnce(logger),
	}
}

// Log is the LOG listener: on every instance, before and after each
// trigger, one line "Job '<job>' begin." / "Job '<job>' end." with the
// fields job, task_id, items, sharding_total_count and (when set)
// job_parameter. Its order is spi.DefaultListenerOrder. It is safe for
// concurrent use if its Logger is.
type Log struct {
	logger Logger
	once   bool
}

var _ spi.JobListener = (*Log)(nil)

// NewLog returns the LOG listener.
func NewLog(logger Logger) *Log { return &Log{logger: logger} }

// NewLogOnce returns the LOG_ONCE listener: LOG's lines, distribute-once,
// so they are written once per cluster-wide trigger, by the last instance
// to start ("begin") and the last to complete ("end"); the lines carry
// that instance's items. Its timeouts come from PropStartedTimeoutMillis
// and PropCompletedTimeoutMillis.
func NewLogOnce(logger Logger) *Log { return &Log{logger: logger, once: true} }

// Describe implements spi.JobListener.
func (l *Log) Describe(ctx context.Context, req spi.ListenerDescribeRequest) (spi.ListenerDescription, error) {
	d := spi.ListenerDescription{Order: spi.DefaultListenerOrder, DistributeOnce: l.once}
	if !l.once {
		return d, nil
	}
	var err error
	if d.StartedTimeout, err = millis(req.Props, PropStartedTimeoutMillis); err != nil {
		return spi.ListenerDescription{}, err
	}
	if d.CompletedTimeout, err = millis(req.Props, PropCompletedTimeoutMillis); err != nil {
		return spi.ListenerDescription{}, err
	}
	return d, nil
}

func millis(props map[string]string, key string) (time.Duration, error) {
	v := strings.TrimSpace(props[key])
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("property %s: %q is not an integer number of milliseconds: %w", key, v, spi.ErrInvalidConfig)
	}
	if n <= 0 {
		return 0, nil
	}
	return time.Duration(n) * time.Millisecond, nil
}

// BeforeJobExecuted implements spi.JobListener.
func (l *Log) BeforeJobExecuted(ctx context.Context, req spi.ListenerRequest) error {
	l.log(BeginMessage(req.JobName), req)
	return nil
}

// AfterJobExecuted implements spi.JobListener.
func (l *Log) AfterJobExecuted(ctx context.Context, req spi.ListenerRequest) error {
	l.log(EndMessage(req.JobName), req)
	return nil
}

func (l *Log) log(msg string, req spi.ListenerRequest) {
	logger := l.logger
	if logger == nil {
		logger = slog.Default()
	}
	sc := req.Contexts
	args := []any{"job", req.JobName, "task_id", sc.TaskID, "items", itemList(sc.Items), "sharding_total_count", sc.ShardingTotalCount}
	if sc.JobParameter != "" {
		args = append(args, "job_parameter", sc.JobParameter)
	}
	if l.once {
		args = append(args, "distribute_once", true)
	}
	logger.Info(msg, args...)
}

// BeginMessage and EndMessage are the lines written before and after a
// trigger of jobName.
func BeginMessage(jobName string) string { return fmt.Sprintf("Job '%s' begin.", jobName) }

// EndMessage: see BeginMessage.
func EndMessage(jobName string) string { return fmt.Sprintf("Job '%s' end.", jobName) }

// itemList formats items as Java's list printout, "[0, 1]".
func itemList(items []int) string {
	parts := make([]string, len(items))
	for i, it := range items {
		parts[i] = strconv.Itoa(it)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}
