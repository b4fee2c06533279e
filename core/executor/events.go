package executor

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"time"

	"github.com/ejob-io/ejob/spi"
)

// State is a task status of the status trace (upstream's
// JobStatusTraceEvent.State).
type State string

// The states the lite pipeline posts.
const (
	TaskStaging  State = "TASK_STAGING"
	TaskRunning  State = "TASK_RUNNING"
	TaskFinished State = "TASK_FINISHED"
	TaskError    State = "TASK_ERROR"
)

// Source is what caused one run of the items (upstream's ExecutionSource).
type Source int

// The sources. Upstream's lite only ever uses NormalTrigger and Misfire
// (failover runs are recorded as NORMAL_TRIGGER); ejob records a run of
// failover items (ShardingContexts.Failover) as Failover.
const (
	NormalTrigger Source = iota
	Misfire
	Failover
)

// String returns upstream's enum name.
func (s Source) String() string {
	switch s {
	case NormalTrigger:
		return "NORMAL_TRIGGER"
	case Misfire:
		return "MISFIRE"
	case Failover:
		return "FAILOVER"
	}
	return "UNKNOWN"
}

// StatusEvent is one status-trace event (upstream's JobStatusTraceEvent).
type StatusEvent struct {
	JobName    string
	TaskID     string
	InstanceID string
	Source     Source
	Items      []int
	State      State
	// Message is upstream's exact text (ElasticJobExecutor.execute and
	// executeOnce).
	Message string
}

// ItemEvent is one per-item execution event (upstream's
// JobExecutionEvent): posted at start (Complete zero) and at completion.
type ItemEvent struct {
	// ID is a random UUID shared by the item's start and completion.
	ID         string
	JobName    string
	TaskID     string
	InstanceID string
	Source     Source
	Item       int
	Start      time.Time
	Complete   time.Time
	Success    bool
	// FailureCause is the item's error text when it failed.
	FailureCause string
	// Output is the completed item's output (an OutputRunner's, of its
	// last try), as the job type returned it: not masked yet.
	Output spi.Output
	// FencingToken is the run's fencing token for the item (0: none).
	FencingToken int64
}

// Events receives the pipeline's tracing events. The pipeline calls it
// synchronously, item events from the goroutine running the item, so an
// implementation must be safe for concurrent use and must not block
// (buffer and store elsewhere). Embed NopEvents to implement only some.
type Events interface {
	// TaskStaging: "Job '<job>' execute begin."
	TaskStaging(ctx context.Context, ev StatusEvent)
	// TaskRunning: "" once the items are registered running.
	TaskRunning(ctx context.Context, ev StatusEvent)
	// TaskFinished: "" after a clean run, "Sharding item for job '<job>'
	// is empty." for no items, or the "Previous job ... is still running"
	// text of the misfire guard.
	TaskFinished(ctx context.Context, ev StatusEvent)
	// TaskError: the failed items' messages in Java map form,
	// "{0=<cause>, 1=<cause>}" (ascending items).
	TaskError(ctx context.Context, ev StatusEvent)
	ItemStarted(ctx context.Context, ev ItemEvent)
	ItemCompleted(ctx context.Context, ev ItemEvent)
}

// NopEvents ignores every event.
type NopEvents struct{}

var _ Events = NopEvents{}

func (NopEvents) TaskStaging(context.Context, StatusEvent)  {}
func (NopEvents) TaskRunning(context.Context, StatusEvent)  {}
func (NopEvents) TaskFinished(context.Context, StatusEvent) {}
func (NopEvents) TaskError(context.Context, StatusEvent)    {}
func (NopEvents) ItemStarted(context.Context, ItemEvent)    {}
func (NopEvents) ItemCompleted(context.Context, ItemEvent)  {}

// NewEventID returns a random (version 4) UUID, the id of tracing events.
func NewEventID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	var out [36]byte
	hex.Encode(out[0:8], b[0:4])
	out[8] = '-'
	hex.Encode(out[9:13], b[4:6])
	out[13] = '-'
	hex.Encode(out[14:18], b[6:8])
	out[18] = '-'
	hex.Encode(out[19:23], b[8:10])
	out[23] = '-'
	hex.Encode(out[24:36], b[10:16])
	return string(out[:])
}

// MultiEvents posts every event to each of its members in order (a host's
// tracing recorder and its metrics, say); nil members are skipped.
type MultiEvents []Events

var _ Events = MultiEvents(nil)

func (m MultiEvents) each(f func(Events)) {
	for _, e := range m {
		if e != nil {
			f(e)
		}
	}
}

func (m MultiEvents) TaskStaging(ctx context.Context, ev StatusEvent) {
	m.each(func(e Events) { e.TaskStaging(ctx, ev) })
}

func (m MultiEvents) TaskRunning(ctx context.Context, ev StatusEvent) {
	m.each(func(e Events) { e.TaskRunning(ctx, ev) })
}

func (m MultiEvents) TaskFinished(ctx context.Context, ev StatusEvent) {
	m.each(func(e Events) { e.TaskFinished(ctx, ev) })
}

func (m MultiEvents) TaskError(ctx context.Context, ev StatusEvent) {
	m.each(func(e Events) { e.TaskError(ctx, ev) })
}

func (m MultiEvents) ItemStarted(ctx context.Context, ev ItemEvent) {
	m.each(func(e Events) { e.ItemStarted(ctx, ev) })
}

func (m MultiEvents) ItemCompleted(ctx context.Context, ev ItemEvent) {
	m.each(func(e Events) { e.ItemCompleted(ctx, ev) })
}
