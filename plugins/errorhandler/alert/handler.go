package alert

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"strings"
	"sync"
	"time"

	"github.com/ejob-io/ejob/spi"
)

// Logger is what the handlers log through; hclog.Logger (sdk.Logger())
// and *slog.Logger satisfy it.
type Logger interface {
	Debug(msg string, args ...any)
	Info(msg string, args ...any)
	Warn(msg string, args ...any)
	Error(msg string, args ...any)
}

// Sender delivers alerts to one destination. Channel.Parse builds one from
// a job's props; the Handler calls Send from its worker goroutines (several
// at once) and in test mode from HandleError's caller.
type Sender interface {
	// Send makes one attempt to deliver m before ctx ends. An error that a
	// later attempt may cure (connection refused, timeout, HTTP 5xx, SMTP
	// 4xx) is wrapped with Transient; the Handler retries those.
	Send(ctx context.Context, m Message) error
	// Target names the destination for log lines and errors, without
	// secrets ("smtp.example.com:465", a URL with its tokens masked).
	Target() string
}

// Env is what Channel.Parse gets besides the props.
type Env struct {
	// Log is the handler's logger with the job's secrets masked in every
	// message and string argument.
	Log Logger
	// Now is the handler's clock (Options.Now): a sender that stamps its
	// requests (a signature's timestamp) reads it.
	Now func() time.Time
}

// Channel describes one alerting handler type.
type Channel struct {
	// Type is the type name (EMAIL).
	Type string
	// Noun names one alert in log lines ("email", "wechat message").
	Noun string
	// SecretProps are props whose values are secret; a name ending in "."
	// covers every prop with that prefix.
	SecretProps []string
	// URLProps are props holding URLs whose tokens are secret (see
	// NewMasker).
	URLProps []string
	// Parse checks the channel's props and returns a Sender for them. It
	// does no I/O. Errors wrap spi.ErrInvalidConfig, name the property,
	// and never quote a secret.
	Parse func(props map[string]string, env Env) (Sender, error)
}

// Options tune a Handler. Zero fields take the defaults.
type Options struct {
	// Logger receives the handler's lines; nil means slog.Default().
	Logger Logger
	// QueueSize bounds the alerts waiting to be sent (default 100). When
	// it is full a new alert is dropped, counted in the job's next alert
	// and logged.
	QueueSize int
	// Workers bounds the sends in flight (default 4).
	Workers int
	// Now is the clock stamped on messages; nil means time.Now.
	Now func() time.Time
}

// The Handler's defaults and retry schedule.
const (
	DefaultQueueSize = 100
	DefaultWorkers   = 4
	// MaxAttempts is how many times one alert is tried when its failures
	// are transient, within alert.timeoutSeconds.
	MaxAttempts = 4
	// FirstBackoff is the wait before the second attempt; it doubles
	// after each further one.
	FirstBackoff = 500 * time.Millisecond
)

// ErrSendFailed is what a test-mode HandleError returns (wrapped, with the
// server's answer) when its alert could not be delivered.
var ErrSendFailed = errors.New("alert not sent")

type transientError struct{ error }

func (e transientError) Unwrap() error { return e.error }

// Transient marks err as one that a later attempt may cure. nil stays nil.
func Transient(err error) error {
	if err == nil {
		return nil
	}
	return transientError{err}
}

// IsTransient reports whether err was marked by Transient.
func IsTransient(err error) bool {
	var t transientError
	return errors.As(err, &t)
}

// Handler is an spi.ErrorHandler that sends each failure through its
// Channel without blocking the caller. HandleError parses the props (once
// per job and props), applies suppression and queues the alert; workers
// send it with a deadline (alert.timeoutSeconds) and retry transient
// failures with backoff. A send failure is logged; it never fails the job
// and never propagates. With alert.test=true HandleError sends at once and
// returns the outcome (ErrSendFailed with the server's answer).
//
// Suppression is per job: after an alert, the job's failures within
// alert.suppressSeconds are counted, and when the window ends one digest
// alert carries the count and the latest of them; the next failure after
// that starts a new window.
//
// It is safe for concurrent use. Its goroutines (workers, digest timers)
// exist only while there is work, so an idle Handler holds none.
type Handler struct {
	ch         Channel
	log        Logger
	now        func() time.Time
	queueSize  int
	maxWorkers int

	mu      sync.Mutex
	jobs    map[string]*jobState
	queue   []task
	workers int
	// idle is closed when the queue is empty and no worker runs; a new
	// one is made when work arrives.
	idle    chan struct{}
	dropped int64
}

var _ spi.ErrorHandler = (*Handler)(nil)

// New returns a Handler for ch.
func New(ch Channel, opts Options) *Handler {
	h := &Handler{
		ch: ch, log: opts.Logger, now: opts.Now, queueSize: opts.QueueSize, maxWorkers: opts.Workers,
		jobs: map[string]*jobState{}, idle: make(chan struct{}),
	}
	close(h.idle)
	if h.log == nil {
		h.log = slog.Default()
	}
	if h.now == nil {
		h.now = time.Now
	}
	if h.queueSize <= 0 {
		h.queueSize = DefaultQueueSize
	}
	if h.maxWorkers <= 0 {
		h.maxWorkers = DefaultWorkers
	}
	return h
}

// destination is one parsed configuration: what a send needs.
type destination struct {
	sender   Sender
	mask     *Masker
	settings Settings
}

// jobState is one job's parsed props and suppression state.
type jobState struct {
	props map[string]string
	dest  *destination
	// lastAlert is when the last alert was queued (zero: never).
	lastAlert time.Time
	// suppressed counts failures not sent since lastAlert; latest is the
	// most recent of them.
	suppressed int
	latest     Message
	// digest is set while a digest is scheduled; gen tells a stale timer
	// from the current one.
	digest *time.Timer
	gen    int
}

type task struct {
	ctx  context.Context
	dest *destination
	msg  Message
}

// Validate implements spi.ErrorHandler: it checks the channel's props and
// the alert.* props. Errors wrap spi.ErrInvalidConfig, name the property
// and carry upstream's message where upstream has one.
func (h *Handler) Validate(ctx context.Context, req spi.ValidatePropsRequest) error {
	_, err := h.parse(req.Props)
	return err
}

func (h *Handler) parse(props map[string]string) (*destination, error) {
	mask := NewMasker(props, h.ch.SecretProps, h.ch.URLProps)
	settings, err := ParseSettings(props)
	if err != nil {
		return nil, err
	}
	sender, err := h.ch.Parse(props, Env{Log: maskedLogger{h.log, mask}, Now: h.now})
	if err != nil {
		if text := mask.Scrub(err.Error()); text != err.Error() {
			return nil, Invalid("%s", strings.TrimPrefix(text, spi.ErrInvalidConfig.Error()+": "))
		}
		return nil, err
	}
	return &destination{sender: sender, mask: mask, settings: settings}, nil
}

// HandleError implements spi.ErrorHandler. It returns at once after
// queuing the alert (or counting it, when suppressed), with no error,
// unless the props are invalid. With alert.test=true it sends the alert
// before returning and returns the send error.
func (h *Handler) HandleError(ctx context.Context, req spi.HandleErrorRequest) (spi.HandleErrorResponse, error) {
	msg := Message{
		JobName: req.JobName, InstanceID: req.InstanceID, TaskID: req.TaskID, Item: req.ShardingItem,
		Error: req.Error, Time: h.now(),
	}
	if test, _ := Bool(req.Props, PropTest, false); test {
		dest, err := h.parse(req.Props)
		if err != nil {
			return spi.HandleErrorResponse{}, err
		}
		msg.Test = true
		return spi.HandleErrorResponse{}, h.deliver(ctx, dest, msg)
	}

	h.mu.Lock()
	st, err := h.stateLocked(req.JobName, req.Props)
	if err != nil {
		h.mu.Unlock()
		h.log.Error(fmt.Sprintf("An exception has occurred in Job '%s' but no %s can be sent: invalid props", req.JobName, h.ch.Noun),
			"job", req.JobName, "instance_id", req.InstanceID, "item", req.ShardingItem, "type", h.ch.Type, "error", err.Error())
		return spi.HandleErrorResponse{}, err
	}
	var dropped int64
	if h.admitLocked(req.JobName, st, &msg) {
		dropped = h.enqueueLocked(ctx, req.JobName, st, msg)
	}
	h.mu.Unlock()
	if dropped > 0 {
		h.logDrop(msg, dropped)
	}
	return spi.HandleErrorResponse{}, nil
}

// stateLocked returns the job's state, parsing props when they differ
// from the last ones seen for the job.
func (h *Handler) stateLocked(job string, props map[string]string) (*jobState, error) {
	st := h.jobs[job]
	if st != nil && maps.Equal(st.props, props) {
		return st, nil
	}
	dest, err := h.parse(props)
	if err != nil {
		return nil, err
	}
	if st == nil {
		st = &jobState{}
		h.jobs[job] = st
	}
	st.props, st.dest = maps.Clone(props), dest
	return st, nil
}

// admitLocked decides whether msg is sent now. If not, it is counted and a
// digest is scheduled for the end of the window. If so, msg takes the
// count of what was held back, and a new window starts.
func (h *Handler) admitLocked(job string, st *jobState, msg *Message) bool {
	window := st.dest.settings.Suppress
	msg.Window = window
	if window > 0 && !st.lastAlert.IsZero() && msg.Time.Sub(st.lastAlert) < window {
		st.suppressed++
		st.latest = *msg
		h.scheduleDigestLocked(job, st, st.lastAlert.Add(window).Sub(msg.Time))
		return false
	}
	msg.Suppressed, msg.Previous = st.suppressed, st.lastAlert
	st.suppressed, st.latest, st.lastAlert = 0, Message{}, msg.Time
	if st.digest != nil {
		st.digest.Stop()
		st.digest = nil
	}
	return true
}

func (h *Handler) scheduleDigestLocked(job string, st *jobState, after time.Duration) {
	if st.digest != nil {
		return
	}
	st.gen++
	gen := st.gen
	st.digest = time.AfterFunc(after, func() { h.sendDigest(job, gen) })
}

// sendDigest runs when a suppression window ends with failures held back:
// it queues one alert with their count and the latest of them.
func (h *Handler) sendDigest(job string, gen int) {
	h.mu.Lock()
	st := h.jobs[job]
	if st == nil || st.gen != gen || st.digest == nil {
		h.mu.Unlock()
		return
	}
	st.digest = nil
	if st.suppressed == 0 {
		h.mu.Unlock()
		return
	}
	msg := st.latest
	msg.Suppressed, msg.Previous, msg.Digest, msg.Window = st.suppressed, st.lastAlert, true, st.dest.settings.Suppress
	st.suppressed, st.latest, st.lastAlert = 0, Message{}, h.now()
	// The digest has no caller: the timer is the root of this work.
	dropped := h.enqueueLocked(context.Background(), job, st, msg)
	h.mu.Unlock()
	if dropped > 0 {
		h.logDrop(msg, dropped)
	}
}

// enqueueLocked queues msg for the workers, starting one if fewer than the
// maximum run. When the queue is full, msg is dropped and counted for the
// job's next alert; it then returns the handler's total of drops.
func (h *Handler) enqueueLocked(ctx context.Context, job string, st *jobState, msg Message) (dropped int64) {
	if len(h.queue) >= h.queueSize {
		h.dropped++
		st.suppressed += 1 + msg.Suppressed
		msg.Suppressed, msg.Digest = 0, false
		st.latest = msg
		if w := st.dest.settings.Suppress; w > 0 {
			h.scheduleDigestLocked(job, st, st.lastAlert.Add(w).Sub(h.now()))
		}
		return h.dropped
	}
	h.queue = append(h.queue, task{ctx: context.WithoutCancel(ctx), dest: st.dest, msg: msg})
	if h.workers < h.maxWorkers {
		if h.workers == 0 {
			h.idle = make(chan struct{})
		}
		h.workers++
		go h.work()
	}
	return 0
}

func (h *Handler) logDrop(msg Message, total int64) {
	h.log.Warn(fmt.Sprintf("An exception has occurred in Job '%s' but the %s queue is full: alert dropped (counted in the job's next alert)", msg.JobName, h.ch.Noun),
		"job", msg.JobName, "instance_id", msg.InstanceID, "item", msg.Item, "type", h.ch.Type, "queue_size", h.queueSize, "dropped_total", total)
}

func (h *Handler) work() {
	for {
		h.mu.Lock()
		if len(h.queue) == 0 {
			h.workers--
			if h.workers == 0 {
				close(h.idle)
			}
			h.mu.Unlock()
			return
		}
		t := h.queue[0]
		h.queue[0] = task{}
		h.queue = h.queue[1:]
		h.mu.Unlock()
		_ = h.deliver(t.ctx, t.dest, t.msg)
	}
}

// Wait blocks until no alert is queued or being sent, or ctx ends. Digests
// that suppression holds for later are not waited for.
func (h *Handler) Wait(ctx context.Context) error {
	h.mu.Lock()
	idle := h.idle
	h.mu.Unlock()
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Dropped returns how many alerts a full queue has refused so far.
func (h *Handler) Dropped() int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.dropped
}

// deliver sends msg within the alert's deadline, retrying transient
// failures with backoff, and logs the outcome. The error it returns names
// the target and carries the last failure, secrets masked.
func (h *Handler) deliver(ctx context.Context, dest *destination, msg Message) error {
	sendCtx, cancel := context.WithTimeout(ctx, dest.settings.Timeout)
	defer cancel()
	target := dest.mask.Scrub(dest.sender.Target())
	attempts := 0
	var err error
	for backoff := FirstBackoff; ; backoff *= 2 {
		attempts++
		err = attempt(sendCtx, dest.sender, msg)
		if err == nil || !IsTransient(err) || attempts == MaxAttempts || sendCtx.Err() != nil {
			break
		}
		if dl, ok := sendCtx.Deadline(); ok && time.Until(dl) < backoff {
			break
		}
		wait := time.NewTimer(backoff)
		select {
		case <-wait.C:
		case <-sendCtx.Done():
			wait.Stop()
		}
		if sendCtx.Err() != nil {
			break
		}
	}
	args := []any{"job", msg.JobName, "instance_id", msg.InstanceID, "item", msg.Item, "type", h.ch.Type,
		"target", target, "attempts", attempts}
	if msg.Suppressed > 0 {
		args = append(args, "suppressed", msg.Suppressed)
	}
	if msg.Test {
		args = append(args, "test", true)
	}
	if err == nil {
		h.log.Info(fmt.Sprintf("An exception has occurred in Job '%s', %s has been sent successfully.", msg.JobName, withArticle(h.ch.Noun)), args...)
		return nil
	}
	text := dest.mask.Scrub(err.Error())
	switch {
	case ctx.Err() != nil:
		text += " (the caller gave up)"
	case sendCtx.Err() != nil:
		text += fmt.Sprintf(" (gave up at the deadline, %s=%d)", PropTimeoutSeconds, int(dest.settings.Timeout/time.Second))
	}
	h.log.Error(fmt.Sprintf("An exception has occurred in Job '%s' but failed to send %s", msg.JobName, h.ch.Noun), append(args, "error", text)...)
	return fmt.Errorf("%w: %s to %s failed after %d attempt(s): %s", ErrSendFailed, h.ch.Noun, target, attempts, text)
}

// attempt is one Send; a panic in it becomes an error, not a dead plugin.
func attempt(ctx context.Context, s Sender, msg Message) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic while sending: %v", r)
		}
	}()
	return s.Send(ctx, msg)
}

func withArticle(noun string) string {
	if noun != "" && strings.ContainsRune("aeiou", rune(noun[0])) {
		return "an " + noun
	}
	return "a " + noun
}

// maskedLogger masks a job's secrets in what it logs.
type maskedLogger struct {
	l Logger
	m *Masker
}

func (l maskedLogger) Debug(msg string, args ...any) { l.l.Debug(l.m.Scrub(msg), l.args(args)...) }
func (l maskedLogger) Info(msg string, args ...any)  { l.l.Info(l.m.Scrub(msg), l.args(args)...) }
func (l maskedLogger) Warn(msg string, args ...any)  { l.l.Warn(l.m.Scrub(msg), l.args(args)...) }
func (l maskedLogger) Error(msg string, args ...any) { l.l.Error(l.m.Scrub(msg), l.args(args)...) }

func (l maskedLogger) args(args []any) []any {
	out := make([]any, len(args))
	for i, a := range args {
		switch v := a.(type) {
		case string:
			out[i] = l.m.Scrub(v)
		case error:
			out[i] = l.m.Scrub(v.Error())
		case fmt.Stringer:
			out[i] = l.m.Scrub(v.String())
		default:
			out[i] = a
		}
	}
	return out
}
