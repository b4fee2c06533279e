// Package tracing records the execution pipeline's events (upstream's
// event tracing) into a tracing sink (spi.Tracer) without ever slowing a
// trigger: the pipeline hands events to a bounded in-memory queue (never
// blocking; when it is full the event is dropped and counted), and one
// writer goroutine stores them in batches, one sink call per batch,
// retrying with back-off while the store is unreachable. On shutdown the
// queue is flushed within a deadline.
package tracing

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ejob-io/ejob/core/executor"
	"github.com/ejob-io/ejob/core/instance"
	"github.com/ejob-io/ejob/spi"
	"github.com/ejob-io/ejob/spi/redact"
)

// Defaults of Options.
const (
	DefaultQueueSize    = 10_000
	DefaultBatchSize    = 500
	DefaultFlushTimeout = 5 * time.Second
	// DefaultWarnEvery is how often, at most, a WARN reports dropped
	// events.
	DefaultWarnEvery = 10 * time.Second
)

// ErrMutuallyExclusive is upstream's starter error for a filter with both
// lists set.
var ErrMutuallyExclusive = errors.New("[tracing.includeJobNames] and [tracing.excludeJobNames] are mutually exclusive.")

// Filter is the starter's includeJobNames / excludeJobNames: a job is
// traced iff (Include is empty or holds it) and Exclude does not.
type Filter struct {
	Include, Exclude []string
}

// Validate returns ErrMutuallyExclusive when both lists are set.
func (f Filter) Validate() error {
	if len(f.Include) > 0 && len(f.Exclude) > 0 {
		return ErrMutuallyExclusive
	}
	return nil
}

// Traced reports whether job's events are recorded.
func (f Filter) Traced(job string) bool {
	return (len(f.Include) == 0 || slices.Contains(f.Include, job)) && !slices.Contains(f.Exclude, job)
}

// Options configure a Recorder.
type Options struct {
	// Tracer is the sink. Required.
	Tracer spi.Tracer
	// Config is the sink's settings, sent with every call.
	Config map[string]string
	Filter Filter
	// QueueSize bounds the events waiting to be written (default
	// DefaultQueueSize); BatchSize bounds one Write (DefaultBatchSize).
	QueueSize, BatchSize int
	// FlushTimeout bounds the flush when Run's ctx ends (default
	// DefaultFlushTimeout).
	FlushTimeout time.Duration
	// RetryMin and RetryMax bound the back-off between failed writes
	// (defaults 100 ms and 5 s).
	RetryMin, RetryMax time.Duration
	// WarnEvery: at most one WARN about dropped events per period
	// (default DefaultWarnEvery).
	WarnEvery time.Duration
	// Hostname defaults to os.Hostname() ("unknown" when it fails, as
	// upstream).
	Hostname string
	Logger   hclog.Logger
}

// event is one queued event: exactly one of the two is set.
type event struct {
	exec   *spi.ExecutionEvent
	status *spi.StatusEvent
}

// Recorder is an executor.Events that queues events for its writer (Run).
// Its Events methods never block and are safe for concurrent use.
type Recorder struct {
	opts    Options
	log     hclog.Logger
	queue   chan event
	dropped atomic.Int64
	written atomic.Int64
	// failed counts writes that failed (each retried).
	failed atomic.Int64
}

var _ executor.Events = (*Recorder)(nil)

// New returns a Recorder; its writer runs in Run.
func New(opts Options) (*Recorder, error) {
	if opts.Tracer == nil {
		return nil, errors.New("tracing: Tracer is required")
	}
	if err := opts.Filter.Validate(); err != nil {
		return nil, err
	}
	if opts.QueueSize <= 0 {
		opts.QueueSize = DefaultQueueSize
	}
	if opts.BatchSize <= 0 {
		opts.BatchSize = DefaultBatchSize
	}
	if opts.FlushTimeout <= 0 {
		opts.FlushTimeout = DefaultFlushTimeout
	}
	if opts.RetryMin <= 0 {
		opts.RetryMin = 100 * time.Millisecond
	}
	if opts.RetryMax < opts.RetryMin {
		opts.RetryMax = max(5*time.Second, opts.RetryMin)
	}
	if opts.WarnEvery <= 0 {
		opts.WarnEvery = DefaultWarnEvery
	}
	if opts.Hostname == "" {
		h, err := os.Hostname()
		if err != nil || h == "" {
			h = "unknown"
		}
		opts.Hostname = h
	}
	if opts.Logger == nil {
		opts.Logger = hclog.NewNullLogger()
	}
	return &Recorder{opts: opts, log: opts.Logger, queue: make(chan event, opts.QueueSize)}, nil
}

// Dropped returns how many events were dropped: the queue was full, or
// they were still queued when the flush deadline passed.
func (r *Recorder) Dropped() int64 { return r.dropped.Load() }

// Written returns how many events the sink accepted (stored or rejected
// one by one).
func (r *Recorder) Written() int64 { return r.written.Load() }

// FailedWrites returns how many sink calls failed (and were retried).
func (r *Recorder) FailedWrites() int64 { return r.failed.Load() }

func (r *Recorder) push(ev event) {
	select {
	case r.queue <- ev:
	default:
		r.dropped.Add(1)
	}
}

// javaList formats items as Java's List toString: "[0, 1]".
func javaList(items []int) string {
	parts := make([]string, len(items))
	for i, it := range items {
		parts[i] = strconv.Itoa(it)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// ipOf returns the IP of an instance id (ip@-@pid).
func ipOf(instanceID string) string {
	ip, _ := instance.ServerIP(instanceID)
	return ip
}

func (r *Recorder) status(ev executor.StatusEvent) {
	if !r.opts.Filter.Traced(ev.JobName) {
		return
	}
	slave := ipOf(ev.InstanceID)
	if t, err := instance.ParseTaskID(ev.TaskID); err == nil {
		slave = t.Instance.IP
	}
	r.push(event{status: &spi.StatusEvent{
		ID: executor.NewEventID(), JobName: ev.JobName, TaskID: ev.TaskID, SlaveID: slave,
		ExecutionType: instance.ExecutionTypeReady, ShardingItems: javaList(ev.Items),
		State: string(ev.State), Message: ev.Message, CreationTime: time.Now(),
	}})
}

func (r *Recorder) item(ev executor.ItemEvent) {
	if !r.opts.Filter.Traced(ev.JobName) {
		return
	}
	id := ev.ID
	if id == "" {
		id = executor.NewEventID()
	}
	r.push(event{exec: &spi.ExecutionEvent{
		ID: id, Hostname: r.opts.Hostname, IP: ipOf(ev.InstanceID), TaskID: ev.TaskID, JobName: ev.JobName,
		Source: ev.Source.String(), ShardingItem: ev.Item, StartTime: ev.Start, CompleteTime: ev.Complete,
		Success: ev.Success, FailureCause: ev.FailureCause, Output: ev.Output, FencingToken: ev.FencingToken,
	}})
}

// Mask returns e with the secrets of its output and failure cause masked
// (redact.Text), the output capped at spi.MaxOutputBytes: what leaves the
// host process of an execution.
func Mask(e spi.ExecutionEvent) spi.ExecutionEvent {
	if e.FailureCause != "" {
		e.FailureCause = redact.Text(e.FailureCause)
	}
	e.Output = MaskOutput(e.Output)
	return e
}

// MaskOutput returns o with its secrets masked (redact.Text), capped at
// spi.MaxOutputBytes (the tail kept). Only the lines that may hold a
// secret (redact.MayHoldSecret) go through redact.Text, with the lines
// after them (maskGap), so that a value spanning lines is masked as a
// whole: redact.Text costs ~0.5 µs a byte, and most output has no
// secret.
func MaskOutput(o spi.Output) spi.Output {
	if o.IsZero() {
		return o
	}
	m := spi.TailOutput(maskLines(o.Text), spi.MaxOutputBytes)
	m.Cut += o.Cut
	return m
}

// maskGap is how many lines after a suspect line are masked with it (a
// value may continue there), and so how many lines without a suspect word
// may separate two suspect lines masked as one text.
const maskGap = 8

// maskLines masks the runs of s's lines around suspect lines.
func maskLines(s string) string {
	var b strings.Builder
	done := 0          // s[:done] is written
	from, to := -1, -1 // the pending run of lines, s[from:to]
	gap := 0
	flush := func() {
		if from < 0 {
			return
		}
		b.WriteString(s[done:from])
		b.WriteString(redact.Text(s[from:to]))
		done, from = to, -1
	}
	for pos := 0; pos < len(s); {
		end := strings.IndexByte(s[pos:], '\n')
		if end < 0 {
			end = len(s)
		} else {
			end += pos + 1
		}
		switch {
		case redact.MayHoldSecret(s[pos:end]):
			if from < 0 {
				from = pos
			}
			to, gap = end, 0
		case from >= 0:
			// The lines after a suspect one may continue its value.
			if gap++; gap > maskGap {
				flush()
			} else {
				to = end
			}
		}
		pos = end
	}
	flush()
	if done == 0 {
		return s
	}
	b.WriteString(s[done:])
	return b.String()
}

// TaskStaging implements executor.Events.
func (r *Recorder) TaskStaging(_ context.Context, ev executor.StatusEvent) { r.status(ev) }

// TaskRunning implements executor.Events.
func (r *Recorder) TaskRunning(_ context.Context, ev executor.StatusEvent) { r.status(ev) }

// TaskFinished implements executor.Events.
func (r *Recorder) TaskFinished(_ context.Context, ev executor.StatusEvent) { r.status(ev) }

// TaskError implements executor.Events.
func (r *Recorder) TaskError(_ context.Context, ev executor.StatusEvent) { r.status(ev) }

// ItemStarted implements executor.Events.
func (r *Recorder) ItemStarted(_ context.Context, ev executor.ItemEvent) { r.item(ev) }

// ItemCompleted implements executor.Events.
func (r *Recorder) ItemCompleted(_ context.Context, ev executor.ItemEvent) { r.item(ev) }

// Run is the writer: it stores queued events in batches until ctx ends,
// then flushes what is queued within FlushTimeout (what is left then is
// counted as dropped) and returns nil.
func (r *Recorder) Run(ctx context.Context) error {
	var (
		pending   []event
		lastWarn  int64
		warnTick  = time.NewTicker(r.opts.WarnEvery)
		backoff   time.Duration
		failing   bool
		retryWait <-chan time.Time
	)
	defer warnTick.Stop()
	for {
		// Wait for the first event of a batch, or for the retry of the
		// failed one.
		var next <-chan event
		if len(pending) == 0 {
			next = r.queue
		}
		if next != nil || retryWait != nil {
			select {
			case <-ctx.Done():
				r.flush(pending)
				r.warnDropped(&lastWarn)
				return nil
			case <-warnTick.C:
				r.warnDropped(&lastWarn)
				continue
			case ev := <-next:
				pending = append(pending, ev)
			case <-retryWait:
				retryWait = nil
			}
		}
		pending = r.fill(pending)
		if err := r.write(ctx, pending); err != nil {
			if ctx.Err() != nil {
				// Cancelled during the write: flush on a ctx of its own.
				r.flush(pending)
				r.warnDropped(&lastWarn)
				return nil
			}
			if errors.Is(err, spi.ErrInvalidConfig) || errors.Is(err, spi.ErrUnknownType) {
				r.log.Error("tracing: the sink refuses its configuration; dropping the batch", "events", len(pending), "error", err)
				r.dropped.Add(int64(len(pending)))
				pending = pending[:0]
				continue
			}
			if !failing {
				r.log.Error("tracing: cannot write events; retrying (jobs are not affected)", "events", len(pending), "error", err)
			}
			failing = true
			backoff = min(max(backoff*2, r.opts.RetryMin), r.opts.RetryMax)
			retryWait = time.After(backoff)
			continue
		}
		if failing {
			r.log.Info("tracing: writing events again", "events", len(pending))
		}
		failing, backoff = false, 0
		pending = pending[:0]
	}
}

// fill tops pending up from the queue without waiting.
func (r *Recorder) fill(pending []event) []event {
	for len(pending) < r.opts.BatchSize {
		select {
		case ev := <-r.queue:
			pending = append(pending, ev)
		default:
			return pending
		}
	}
	return pending
}

// write stores one batch.
func (r *Recorder) write(ctx context.Context, batch []event) error {
	req := spi.TraceWriteRequest{Config: r.opts.Config}
	for _, ev := range batch {
		if ev.exec != nil {
			// Masked here, on the writer, off the items' goroutines.
			req.Executions = append(req.Executions, Mask(*ev.exec))
		} else {
			req.Statuses = append(req.Statuses, *ev.status)
		}
	}
	resp, err := r.opts.Tracer.Write(ctx, req)
	if err != nil {
		r.failed.Add(1)
		return err
	}
	r.written.Add(int64(len(batch)))
	if resp.Rejected > 0 {
		r.log.Warn("tracing: the store refused some events", "rejected", resp.Rejected, "problems", strings.Join(resp.Problems, "; "))
	}
	return nil
}

// flush writes pending and the queue within FlushTimeout, on a ctx of its
// own (Run's has ended); what cannot be written is counted as dropped.
func (r *Recorder) flush(pending []event) {
	ctx, cancel := context.WithTimeout(context.Background(), r.opts.FlushTimeout)
	defer cancel()
	for {
		pending = r.fill(pending)
		if len(pending) == 0 {
			return
		}
		if err := r.write(ctx, pending); err != nil {
			lost := int64(len(pending) + len(r.queue))
			r.dropped.Add(lost)
			r.log.Error("tracing: cannot flush events at shutdown; they are lost", "events", lost, "error", err)
			return
		}
		pending = pending[:0]
	}
}

// warnDropped logs the events dropped since the last WARN.
func (r *Recorder) warnDropped(last *int64) {
	if d := r.dropped.Load(); d > *last {
		r.log.Warn(fmt.Sprintf("tracing: dropped %d events (queue of %d full, or the store unreachable at shutdown)", d-*last, r.opts.QueueSize),
			"dropped_total", d)
		*last = d
	}
}
