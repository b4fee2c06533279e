package trigger

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
)

// Sentinel errors.
var (
	// ErrAlreadyRunning is returned by a second call of Run.
	ErrAlreadyRunning = errors.New("trigger: loop already running")
	// ErrStopped is returned by queries made after Run has returned.
	ErrStopped = errors.New("trigger: loop stopped")
)

// Schedule computes fire times. Next returns the first fire time strictly
// after the given instant, or the zero Time when there is none.
// core/cron's Schedule (a Quartz expression, a crontab or a descriptor)
// satisfies it.
type Schedule interface {
	Next(after time.Time) time.Time
}

// Func runs one execution of a job. ctx is cancelled when the job is
// removed or the loop stops; Func should return soon after. The
// executions of a job share one ctx: it is not cancelled when one returns.
type Func func(ctx context.Context, fire Fire)

// Options configure a Loop. The zero value is usable.
type Options struct {
	// Clock defaults to RealClock.
	Clock Clock
	// Logger defaults to a null logger.
	Logger hclog.Logger
	// MisfireThreshold is how late the next fire time of a job may be,
	// after a fire was dispatched, before the fires in between count as
	// misfired and the schedule jumps to the first fire after now (Quartz's
	// misfireThreshold with policy "do nothing"). Default 1 ms, as
	// ElasticJob configures Quartz.
	MisfireThreshold time.Duration
	// MaxSleep bounds how long the loop sleeps without looking at the clock,
	// so that a wall-clock jump is noticed. Default 1 minute.
	MaxSleep time.Duration
	// WorkerIdle is how long, at least, a goroutine that ran an execution
	// is kept idle (in real time, not on the Clock) for another before it
	// exits; at most twice that. Default 2 s: jobs that fire every second
	// reuse goroutines; a loop whose jobs fire less often keeps none
	// between fires.
	WorkerIdle time.Duration
}

// Entry is one job as Snapshot reports it.
type Entry struct {
	ID string
	// Next is the next scheduled fire time; zero when there is none.
	Next    time.Time
	Paused  bool
	Running bool
}

// Loop fires the jobs of one process from a single goroutine. Its
// methods are safe for concurrent use and never block on the loop: they
// queue a command that Run applies in order, so they may be called before
// Run starts.
type Loop struct {
	clock      Clock
	log        hclog.Logger
	threshold  time.Duration
	maxSleep   time.Duration
	workerIdle time.Duration

	// work hands an execution to an idle worker. It is unbuffered: a send
	// succeeds only when a worker waits (spawn). A nil execution retires
	// the worker that takes it (retireIdle). Run closes it as it returns.
	work chan *execution

	mu   sync.Mutex
	cmds []command
	// spareCmds is the array of the commands applied last, emptied, for
	// the next (none when it grew past maxSpareCmds). Run's.
	spareCmds []command
	started   bool
	stopped   bool

	wake   chan struct{} // capacity 1: commands are queued
	done   doneQueue     // executions that returned
	exited chan struct{} // closed when Run returns

	// Owned by the Run goroutine.
	jobs    map[string]*job
	heap    jobHeap
	seq     uint64
	running int
	// idle are the channels of Idle calls, closed once no job runs.
	idle []chan struct{}
	// pool counts the workers (workers.go).
	pool pool
	// alarm wakes the fires dispatched ahead (PreciseClock), made at the
	// first (alarmOnce); Run closes it as it returns.
	alarm     *alarm
	alarmMade bool
}

type job struct {
	id    string
	seq   uint64
	sched Schedule
	fn    Func
	// misfired receives the fires the job skipped that no execution took
	// (misfire.go); nil drops them.
	misfired MisfireFunc
	next     time.Time
	index    int // in the heap; -1 when not scheduled
	// leadFn (AddAhead) gives lead, how far ahead of next its fire is
	// dispatched (0: at next); see ahead.go.
	leadFn LeadFunc
	lead   time.Duration
	// dueNs is due() in Unix nanoseconds, what the heap orders by; set
	// with lead (setLead), which every change of next in the heap goes
	// through (reposition).
	dueNs int64

	paused        bool
	manualPending bool // TriggerNow while paused
	removed       bool

	running bool
	// ctx is the parent of the job's executions (made at its first, kept
	// across them); cancel ends it when the job is removed.
	ctx    context.Context
	cancel context.CancelFunc
	exec   *execution // the running execution
	// missed is what fires left for later, made when one first does
	// (miss): an idle job carries none (nil reads as none).
	missed  *missed
	waiters []chan struct{} // closed when no execution runs
	// await is the timer of AwaitScheduled when the loop has no alarm
	// (with one, the alarm's backstop serves every fire of a time), made
	// at the job's first fire dispatched ahead and reused (a job's
	// executions never overlap).
	await Timer
}

// missed is a job's pending misfires and the fires held while it ran.
type missed struct {
	misfire Misfire
	// deferred is the first schedule fire that came due after the running
	// execution's final TakeMissed; it starts when that execution returns.
	deferred time.Time
	// soon is the time of a TriggerSoon that came while the job ran
	// (zero: none); it starts when the running execution returns.
	soon time.Time
}

// miss returns j.missed, made now if need be.
func (j *job) miss() *missed {
	if j.missed == nil {
		j.missed = &missed{}
	}
	return j.missed
}

type opKind int

const (
	opAdd opKind = iota
	opRemove
	opReschedule
	opPause
	opResume
	opTriggerNow
	opTriggerSoon
	opSnapshot
	opIdle
)

type command struct {
	op     opKind
	id     string
	sched  Schedule
	fn     Func
	mf     MisfireFunc
	at     time.Time
	waiter chan struct{}
	reply  chan []Entry
	lead   LeadFunc
}

// New returns a Loop; call Run to start it.
func New(opts Options) *Loop {
	s := &Loop{
		clock:      opts.Clock,
		log:        opts.Logger,
		threshold:  opts.MisfireThreshold,
		maxSleep:   opts.MaxSleep,
		workerIdle: opts.WorkerIdle,
		work:       make(chan *execution),
		wake:       make(chan struct{}, 1),
		done:       newDoneQueue(),
		exited:     make(chan struct{}),
		jobs:       make(map[string]*job),
	}
	if s.clock == nil {
		s.clock = RealClock{}
	}
	if s.log == nil {
		s.log = hclog.NewNullLogger()
	}
	if s.threshold <= 0 {
		s.threshold = time.Millisecond
	}
	if s.maxSleep <= 0 {
		s.maxSleep = time.Minute
	}
	if s.workerIdle <= 0 {
		s.workerIdle = 2 * time.Second
	}
	return s
}

// Add schedules fn under id; misfired receives the job's fires that were
// skipped and that no execution took (misfire.go; nil drops them). An
// existing job with that id is replaced (schedule and functions; a paused
// job is resumed); if it is running, the running execution still counts,
// so the replacement does not overlap it.
func (s *Loop) Add(id string, sched Schedule, fn Func, misfired MisfireFunc) {
	s.enqueue(command{op: opAdd, id: id, sched: sched, fn: fn, mf: misfired})
}

// Reschedule gives job id a new schedule, counted from now (as Quartz's
// rescheduleJob). Unknown ids are ignored.
func (s *Loop) Reschedule(id string, sched Schedule) {
	s.enqueue(command{op: opReschedule, id: id, sched: sched})
}

// Remove unschedules job id and cancels the ctx of its running execution,
// if any. The returned channel is closed once no execution of the job is
// running (at once when none is, or when the loop has stopped).
func (s *Loop) Remove(id string) <-chan struct{} {
	w := make(chan struct{})
	if !s.enqueue(command{op: opRemove, id: id, waiter: w}) {
		close(w)
	}
	return w
}

// Pause stops the fires of job id; a running execution goes on. Fires that
// come due while paused are reported as a misfire on Resume.
func (s *Loop) Pause(id string) { s.enqueue(command{op: opPause, id: id}) }

// Resume undoes Pause. If fires came due while paused, the schedule jumps
// to the next fire after now and one misfire is reported ("do nothing").
func (s *Loop) Resume(id string) { s.enqueue(command{op: opResume, id: id}) }

// TriggerNow runs job id once as soon as possible. If the job is running,
// the request is dropped and reported as a Manual misfire; if it is paused,
// it runs on Resume.
func (s *Loop) TriggerNow(id string) {
	s.enqueue(command{op: opTriggerNow, id: id, at: s.clock.Now()})
}

// TriggerSoon runs job id once as soon as possible: now when it is idle,
// else right after its running execution returns (several requests while
// it runs collapse into one run; a schedule fire deferred to that moment
// serves them too), which is what Quartz does with ElasticJob's one-shot
// triggerJob (failover claims). If it is paused, it runs on Resume.
func (s *Loop) TriggerSoon(id string) {
	s.enqueue(command{op: opTriggerSoon, id: id, at: s.clock.Now()})
}

// Idle returns a channel closed once no job runs, as Snapshot reports
// them (the executions of removed jobs are not waited for), or once the
// loop has stopped. It applies earlier commands first: after Pause of
// every job, it is closed when the last execution returns, without
// polling.
func (s *Loop) Idle() <-chan struct{} {
	w := make(chan struct{})
	if !s.enqueue(command{op: opIdle, waiter: w}) {
		close(w)
	}
	return w
}

// Snapshot returns every job, ordered by next fire time (jobs without one
// last), then by id. It waits for the loop to apply earlier commands.
func (s *Loop) Snapshot(ctx context.Context) ([]Entry, error) {
	reply := make(chan []Entry, 1)
	if !s.enqueue(command{op: opSnapshot, reply: reply}) {
		return nil, ErrStopped
	}
	select {
	case es := <-reply:
		return es, nil
	case <-s.exited:
		return nil, ErrStopped
	case <-ctx.Done():
		return nil, fmt.Errorf("trigger: snapshot: %w", ctx.Err())
	}
}

func (s *Loop) enqueue(c command) bool {
	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		return false
	}
	s.cmds = append(s.cmds, c)
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
	return true
}

// Run runs the loop until ctx is done, then cancels running executions and
// returns nil once every execution and misfire callback has returned.
func (s *Loop) Run(ctx context.Context) error {
	s.mu.Lock()
	if s.started {
		s.mu.Unlock()
		return ErrAlreadyRunning
	}
	s.started = true
	s.mu.Unlock()
	defer close(s.exited)
	// The idle workers exit as Run returns: spawn runs on the loop, so
	// nothing sends on work after it.
	defer close(s.work)
	defer func() { s.alarm.close() }()

	timer := s.clock.NewTimer(s.maxSleep)
	defer timer.Stop()
	// armed is when timer fires; zero once it has fired (received).
	armed := s.clock.Now().Add(s.maxSleep)
	reap := s.pool.start()
	defer reap.Stop()
	for {
		s.apply(ctx)
		s.releaseIdle()
		now := s.clock.Now()
		s.fireDue(ctx, now)

		// The timer is re-armed only when its time is not the next
		// fire's (or it has fired): the loop wakes for every returned
		// execution, and re-arming a timer for the time it is armed for
		// costs a lock and heap work of the runtime each time. A timer
		// armed for the longest sleep is left early: it only bounds it.
		want := now.Add(s.maxSleep)
		byFire := false
		if len(s.heap) > 0 {
			if due := s.heap[0].due(); due.Before(want) {
				want, byFire = due, true
			}
			if want.Before(now) {
				want = now
			}
		}
		if armed.IsZero() || armed.After(want) || (byFire && armed.Before(want)) {
			timer.Stop()
			timer.Reset(want.Sub(now))
			armed = want
		}

		select {
		case <-ctx.Done():
			s.shutdown()
			return nil
		case <-s.wake:
		case j := <-s.done.c:
			s.finished(ctx, j)
			s.drainDone(ctx)
		case <-timer.C():
			armed = time.Time{}
		case <-reap.C:
			s.retireIdle()
		}
	}
}

// drainDone takes the executions that returned meanwhile, so that a burst
// of returns costs one turn of the loop rather than one each.
func (s *Loop) drainDone(ctx context.Context) {
	for {
		select {
		case j := <-s.done.c:
			s.finished(ctx, j)
		default:
			return
		}
	}
}

// shutdown waits for running executions (their ctx derives from Run's, so
// they are cancelled) and releases every waiter.
func (s *Loop) shutdown() {
	for s.running > 0 {
		j := <-s.done.c
		j.running = false
		j.exec = nil
		s.running--
		closeAll(j.waiters)
		j.waiters = nil
	}
	s.mu.Lock()
	s.stopped = true
	cmds := s.cmds
	s.cmds = nil
	s.mu.Unlock()
	for _, c := range cmds {
		if c.waiter != nil {
			close(c.waiter)
		}
	}
	for _, j := range s.jobs {
		closeAll(j.waiters)
	}
	closeAll(s.idle)
	s.idle = nil
}

// releaseIdle closes the Idle channels when no job runs (removed ones
// aside, as in snapshot).
func (s *Loop) releaseIdle() {
	if len(s.idle) == 0 {
		return
	}
	for _, j := range s.jobs {
		if j.running && !j.removed {
			return
		}
	}
	closeAll(s.idle)
	s.idle = nil
}

func closeAll(ws []chan struct{}) {
	for _, w := range ws {
		close(w)
	}
}

// maxSpareCmds bounds the array of commands the loop keeps for reuse.
const maxSpareCmds = 256

func (s *Loop) apply(ctx context.Context) {
	s.mu.Lock()
	cmds := s.cmds
	s.cmds, s.spareCmds = s.spareCmds, nil
	s.mu.Unlock()
	defer func() {
		if cap(cmds) <= maxSpareCmds {
			clear(cmds)
			s.spareCmds = cmds[:0]
		}
	}()
	for _, c := range cmds {
		now := s.clock.Now()
		j := s.jobs[c.id]
		switch c.op {
		case opAdd:
			s.add(c, j, now)
		case opRemove:
			s.remove(j, c.waiter)
		case opReschedule:
			if j == nil || j.removed {
				continue
			}
			s.abandonAhead(j)
			j.sched = c.sched
			j.next = nextOf(c.sched, now)
			s.reposition(j)
		case opPause:
			if j == nil || j.removed || j.paused {
				continue
			}
			if at := s.abandonAhead(j); !at.IsZero() {
				j.next = at // the fire did not happen
			}
			j.paused = true
			s.unschedule(j)
		case opResume:
			s.resume(ctx, j, now)
		case opTriggerNow:
			s.triggerNow(ctx, j, c.at, now)
		case opTriggerSoon:
			if j != nil && !j.removed && j.running && !j.paused {
				if m := j.miss(); m.soon.IsZero() {
					m.soon = c.at
				}
				continue
			}
			s.triggerNow(ctx, j, c.at, now)
		case opSnapshot:
			c.reply <- s.snapshot()
		case opIdle:
			s.idle = append(s.idle, c.waiter)
		}
	}
}

func nextOf(sched Schedule, after time.Time) time.Time {
	if sched == nil {
		return time.Time{}
	}
	return sched.Next(after)
}

func (s *Loop) add(c command, j *job, now time.Time) {
	if j == nil {
		j = &job{id: c.id, index: -1}
		s.jobs[c.id] = j
	}
	s.abandonAhead(j)
	j.leadFn = c.lead
	s.seq++
	j.seq = s.seq
	j.sched, j.fn, j.misfired = c.sched, c.fn, c.mf
	j.paused, j.removed, j.manualPending = false, false, false
	j.next = nextOf(c.sched, now)
	s.reposition(j)
}

func (s *Loop) remove(j *job, w chan struct{}) {
	if j == nil {
		close(w)
		return
	}
	s.unschedule(j)
	s.abandonAhead(j)
	j.removed = true
	if j.cancel != nil {
		j.cancel()
	}
	if !j.running {
		delete(s.jobs, j.id)
		closeAll(j.waiters)
		close(w)
		return
	}
	j.waiters = append(j.waiters, w)
}

func (s *Loop) resume(ctx context.Context, j *job, now time.Time) {
	if j == nil || j.removed || !j.paused {
		return
	}
	j.paused = false
	if !j.next.IsZero() && j.next.Before(now.Add(-s.threshold)) {
		j.miss().misfire.addScheduled(j.next)
		j.next = nextOf(j.sched, now)
	}
	s.reposition(j)
	if j.manualPending {
		j.manualPending = false
		s.triggerNow(ctx, j, now, now)
	}
	if !j.running {
		s.reportMisfire(ctx, j)
	}
}

func (s *Loop) triggerNow(ctx context.Context, j *job, at, now time.Time) {
	switch {
	case j == nil || j.removed:
		s.log.Debug("trigger now for unknown job ignored", "job", idOf(j))
	case j.paused:
		j.manualPending = true
	case j.running:
		j.miss().misfire.Manual++
	default:
		s.start(ctx, j, fireAt{scheduled: at, actual: now, manual: true})
	}
}

func idOf(j *job) string {
	if j == nil {
		return ""
	}
	return j.id
}

// reposition puts j where its next time says: in the heap or out of it.
func (s *Loop) reposition(j *job) {
	if j.paused || j.removed || j.next.IsZero() {
		s.unschedule(j)
		return
	}
	j.planLead()
	if j.index >= 0 {
		heap.Fix(&s.heap, j.index)
		return
	}
	heap.Push(&s.heap, j)
}

func (s *Loop) unschedule(j *job) {
	if j.index >= 0 {
		heap.Remove(&s.heap, j.index)
	}
}

func (s *Loop) fireDue(ctx context.Context, now time.Time) {
	for len(s.heap) > 0 && !s.heap[0].due().After(now) {
		j := s.heap[0]
		if j.next.After(now) {
			s.fireAhead(ctx, j, now)
			continue
		}
		at := j.next
		next := nextOf(j.sched, at)
		if !next.IsZero() && next.Before(now.Add(-s.threshold)) {
			// The loop fell behind by more than a period (process
			// stalled, clock jumped): do nothing, as Quartz.
			j.miss().misfire.addScheduled(next)
			next = nextOf(j.sched, now)
		}
		j.next = next
		s.reposition(j)
		if j.running {
			if !j.exec.skip(at) {
				if m := j.miss(); m.deferred.IsZero() {
					m.deferred = at
				}
			}
			continue
		}
		s.start(ctx, j, fireAt{scheduled: at, actual: now})
	}
}

func (s *Loop) start(ctx context.Context, j *job, fire fireAt) {
	s.spawn(ctx, j, &execution{fn: j.fn, at: fire})
}

// spawn starts e as j's execution. Executions of a job share one ctx (the
// job's, cancelled by Remove), made at its first.
func (s *Loop) spawn(ctx context.Context, j *job, e *execution) {
	if j.ctx == nil || j.ctx.Err() != nil {
		j.ctx, j.cancel = context.WithCancel(ctx)
	}
	e.job, e.ctx = j, j.ctx
	j.running = true
	j.exec = e
	s.running++
	select {
	case s.work <- e:
	default:
		s.pool.started(s.workerIdle)
		go s.worker(e)
	}
	s.pool.busy(s.running)
}

// worker runs e, then the executions spawn hands it, until the loop
// retires it (a nil execution: retireIdle) or Run has returned. Reusing a
// goroutine saves an execution the start of one and the growth of its
// stack (workerStack); it keeps no state between executions. Executions
// still never wait for one another: spawn starts a worker when none is
// idle. A worker has no timer of its own: one timer of the loop retires
// the workers that stayed idle (workers.go).
func (s *Loop) worker(e *execution) {
	for ok := true; ok && e != nil; e, ok = <-s.work {
		workerStack{}.prime(0)
		s.execute(e)
	}
}

// execute runs e, a job's execution, recovers a panic of it, and hands the
// job back to the loop.
func (s *Loop) execute(e *execution) {
	j := e.job
	defer func() {
		if r := recover(); r != nil {
			s.log.Error("job execution panicked", "job", j.id, "panic", fmt.Sprint(r),
				"stack", strings.TrimSpace(string(debug.Stack())))
		}
		s.done.c <- j
	}()
	if e.fn != nil {
		e.fn(e.ctx, Fire{e})
		return
	}
	j.misfired(e.ctx, e.misfire)
}

func (s *Loop) finished(ctx context.Context, j *job) {
	j.running = false
	if lo := j.exec.leftover(); !lo.empty() {
		j.miss().misfire.merge(lo)
	}
	j.exec = nil
	var deferred, soon time.Time
	if m := j.missed; m != nil {
		deferred, soon = m.deferred, m.soon
		m.deferred, m.soon = time.Time{}, time.Time{}
	}
	s.running--
	if j.removed {
		if s.jobs[j.id] == j {
			delete(s.jobs, j.id)
		}
		closeAll(j.waiters)
		j.waiters = nil
		return
	}
	closeAll(j.waiters)
	j.waiters = nil
	s.replanLead(j, s.clock.Now())
	if j.paused {
		if !deferred.IsZero() {
			j.miss().misfire.addScheduled(deferred)
		}
		j.manualPending = j.manualPending || !soon.IsZero()
	} else if !deferred.IsZero() || !soon.IsZero() {
		// Misfires pending, if any, are reported when this fire returns.
		fire := fireAt{scheduled: deferred, actual: s.clock.Now()}
		if deferred.IsZero() {
			fire.scheduled, fire.manual = soon, true
		}
		s.start(ctx, j, fire)
		return
	}
	s.reportMisfire(ctx, j)
}

func (s *Loop) snapshot() []Entry {
	es := make([]Entry, 0, len(s.jobs))
	for _, j := range s.jobs {
		if j.removed {
			continue
		}
		e := Entry{ID: j.id, Paused: j.paused, Running: j.running}
		if !j.paused {
			e.Next = j.next
		}
		es = append(es, e)
	}
	slices.SortFunc(es, func(a, b Entry) int {
		switch {
		case a.Next.IsZero() != b.Next.IsZero():
			if a.Next.IsZero() {
				return 1
			}
			return -1
		case !a.Next.Equal(b.Next):
			return a.Next.Compare(b.Next)
		}
		return strings.Compare(a.ID, b.ID)
	})
	return es
}
