package cloud

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ejob-io/ejob/core/cron"
	"github.com/ejob-io/ejob/core/reg"
	"github.com/ejob-io/ejob/core/reg/recipe"
	"github.com/ejob-io/ejob/spi"
	"github.com/ejob-io/ejob/spi/gson"
)

// Scheduler is one `ejob cloud` instance: it campaigns for leadership
// and, while it leads, fires TRANSIENT jobs on their crons, launches
// ready and failover items through the launcher and follows them to
// their end. Every instance serves the REST API (see Routes); the state
// it changes lives in ZooKeeper, so the leader acts on writes made
// through any instance. The leader also counts the finished items and,
// with a tracer that keeps them, writes the statistics tables.
type Scheduler struct {
	st        store
	c         reg.Client
	el        *recipe.Election
	launcher  spi.Launcher
	lcfg      map[string]string
	tracer    spi.Tracer
	tcfg      map[string]string
	queueSize int
	poll      time.Duration
	// pause is the first failure pause (see failurePause).
	pause time.Duration
	log   hclog.Logger
	id    string

	wake    chan struct{}
	leading atomic.Bool

	// stats counts the finished items while this instance leads
	// (upstream's in-memory statistics).
	stats *statistics
	guard reconcileGuard

	// mu guards reasons, written by the leader's pass.
	mu      sync.Mutex
	reasons map[fireItem]spi.ItemStatus
}

// Options configure a Scheduler.
type Options struct {
	Client   reg.Client
	Launcher spi.Launcher
	// LauncherConfig travels with every launcher call.
	LauncherConfig map[string]string
	// ID is the participant id ({hostname}:{port}).
	ID                string
	JobStateQueueSize int
	PollInterval      time.Duration
	// FailureBackoff is the pause before a job whose item failed is
	// launched again (DefaultFailureBackoff when 0); it doubles with each
	// further fire that has a failed item, up to MaxFailureBackoff.
	FailureBackoff time.Duration
	// Tracer records the items' status and execution events with
	// TracerConfig (nil: none).
	Tracer       spi.Tracer
	TracerConfig map[string]string
	Logger       hclog.Logger
}

// New returns a Scheduler.
func New(o Options) *Scheduler {
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
	}
	if o.PollInterval <= 0 {
		o.PollInterval = time.Second
	}
	if o.JobStateQueueSize <= 0 {
		o.JobStateQueueSize = 10000
	}
	if o.FailureBackoff <= 0 {
		o.FailureBackoff = DefaultFailureBackoff
	}
	return &Scheduler{st: store{c: o.Client}, c: o.Client, el: recipe.NewElection(o.Client, pathElection, pathLeader, o.ID),
		launcher: o.Launcher, lcfg: o.LauncherConfig, tracer: o.Tracer, tcfg: o.TracerConfig, queueSize: o.JobStateQueueSize, poll: o.PollInterval, pause: o.FailureBackoff,
		log: o.Logger, id: o.ID, wake: make(chan struct{}, 1), reasons: map[fireItem]spi.ItemStatus{}, stats: newStatistics()}
}

// Leading reports whether this instance leads now.
func (s *Scheduler) Leading() bool { return s.leading.Load() }

// nudge makes the leader's next pass start now.
func (s *Scheduler) nudge() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Run campaigns and leads until ctx ends.
func (s *Scheduler) Run(ctx context.Context) error {
	for ctx.Err() == nil {
		ok, err := s.el.Campaign(ctx)
		if err != nil {
			s.log.Warn("campaign failed; retrying", "error", err)
		}
		if ok {
			s.lead(ctx)
			continue
		}
		// Wait for the leader node to go (its session ended) or a poll.
		_, exists, ch, err := s.c.ExistsW(ctx, pathLeader)
		if err != nil || !exists {
			sleep(ctx, s.poll)
			continue
		}
		select {
		case <-ctx.Done():
		case <-ch:
		case <-time.After(10 * s.poll):
		}
	}
	if _, err := s.el.Resign(context.WithoutCancel(ctx)); err != nil {
		s.log.Warn("resign failed", "error", err)
	}
	return nil
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// lead runs passes while this instance leads.
func (s *Scheduler) lead(ctx context.Context) {
	sess := s.c.Session()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-sess.Done():
			cancel()
		case <-ctx.Done():
		}
	}()
	s.stats.reset()
	s.leading.Store(true)
	defer s.leading.Store(false)
	s.log.Info("leading the cloud scheduler", "instance", s.id)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	wg.Go(func() { s.statisticsLoop(ctx) })
	l := &leaderState{next: map[string]time.Time{}, configs: map[string]string{}, seen: map[string]spi.ItemState{},
		fires: map[fireItem]fireCount{}, busy: map[fireItem]bool{}, held: map[string]failurePause{}, ev: events{originals: map[fireItem]string{}}}
	for ctx.Err() == nil {
		if err := s.pass(ctx, l); err != nil {
			if errors.Is(err, recipe.ErrFenced) || errors.Is(err, recipe.ErrNotLeader) {
				s.log.Warn("leadership lost", "instance", s.id, "error", err)
				return
			}
			s.log.Warn("scheduling pass failed", "instance", s.id, "error", err)
		}
		if ok, err := s.el.IsLeader(ctx); err == nil && !ok {
			s.log.Warn("leadership lost", "instance", s.id)
			return
		}
		select {
		case <-ctx.Done():
		case <-s.wake:
		case <-time.After(s.poll):
		}
	}
}

// leaderState is what a leader keeps between passes.
type leaderState struct {
	// next is each TRANSIENT job's next fire time.
	next map[string]time.Time
	// configs is each job's stored YAML as last seen: a change stops
	// what runs (upstream's reschedule).
	configs map[string]string
	// seen is each running item's state at the last pass (by eventID),
	// to record its start once.
	seen map[string]spi.ItemState
	// fires and busy are each running DAEMON item's counted fires and
	// whether a fire ran at the last pass.
	fires map[fireItem]fireCount
	busy  map[fireItem]bool
	// held are the jobs whose items failed, paused before their next
	// launch.
	held map[string]failurePause
	ev   events
}

// Failure pauses: a job whose item failed waits DefaultFailureBackoff (or
// Options.FailureBackoff) before its failover items or its next ready
// round are launched, twice as long after each further fire that has a
// failed item (the items of one fire that fail count once), at most
// MaxFailureBackoff (or the first pause, when that is longer). The first
// pause is upstream's: its launch loop runs 10 s after the last ended.
const (
	DefaultFailureBackoff = 10 * time.Second
	MaxFailureBackoff     = 5 * time.Minute
)

// failurePause is a job's run of fires with failed items since its last
// success and the time before which it is not launched again.
type failurePause struct {
	failures int
	// fire is the fire of the last failure counted.
	fire  string
	until time.Time
	// logged tells that the hold until until was logged.
	logged bool
}

// fireCount is what the leader counted of a running DAEMON item's fires:
// the highest count the launcher reported for the item's process started
// at started.
type fireCount struct {
	high    int
	started time.Time
}

// view is one pass's read of the state.
type view struct {
	apps         map[string]App
	jobs         map[string]Job
	disabledApps map[string]bool
	disabledJobs map[string]bool
	ready        map[string]int
	running      map[string]map[int]TaskID
	failover     map[string]map[int]TaskID
}

func (v view) enabled(job string) (Job, App, bool) {
	j, ok := v.jobs[job]
	if !ok {
		return Job{}, App{}, false
	}
	a, ok := v.apps[j.AppName]
	return j, a, ok && !v.disabledJobs[job] && !v.disabledApps[j.AppName]
}

func (s *Scheduler) read(ctx context.Context) (view, error) {
	v := view{apps: map[string]App{}, jobs: map[string]Job{}, disabledApps: map[string]bool{}, disabledJobs: map[string]bool{}}
	apps, err := s.st.Apps(ctx)
	if err != nil {
		return v, err
	}
	for _, a := range apps {
		v.apps[a.AppName] = a
	}
	jobs, err := s.st.Jobs(ctx)
	if err != nil {
		return v, err
	}
	for _, j := range jobs {
		v.jobs[j.JobName] = j
	}
	for path, set := range map[string]map[string]bool{pathDisableApp: v.disabledApps, pathDisableJob: v.disabledJobs} {
		names, err := children(ctx, s.c, path)
		if err != nil {
			return v, err
		}
		for _, n := range names {
			set[n] = true
		}
	}
	if v.ready, err = s.st.Ready(ctx); err != nil {
		return v, err
	}
	if v.running, err = s.st.Running(ctx); err != nil {
		return v, err
	}
	v.failover, err = s.st.Failover(ctx)
	return v, err
}

// fenced commits ops only while this instance leads.
func (s *Scheduler) fenced(ctx context.Context, ops ...reg.Op) error {
	if len(ops) == 0 {
		return nil
	}
	return s.el.Fenced(ctx, func(f recipe.Fence) error {
		_, err := recipe.FencedMulti(ctx, s.c, f, ops...)
		return err
	})
}

type fireKey struct{ job, fire string }

// byFire indexes the launcher's items by fire and item.
func byFire(items []spi.ItemStatus) map[fireKey]map[int]spi.ItemStatus {
	out := map[fireKey]map[int]spi.ItemStatus{}
	for _, it := range items {
		k := fireKey{it.JobName, it.FireID}
		if out[k] == nil {
			out[k] = map[int]spi.ItemStatus{}
		}
		out[k][it.Item] = it
	}
	return out
}

// pass is one round of the leader's work.
func (s *Scheduler) pass(ctx context.Context, l *leaderState) error {
	defer s.flush(ctx, &l.ev)
	// The launcher is asked first: a fire is recorded before it is
	// launched, so every fire in the list has its record in the read
	// that follows, and none is taken for a leftover.
	list, err := s.launcher.List(ctx, spi.LaunchListRequest{Config: s.lcfg})
	if err != nil {
		return fmt.Errorf("launcher list: %w", err)
	}
	v, err := s.read(ctx)
	if err != nil {
		return err
	}
	launched := byFire(list.Items)
	reasons := map[fireItem]spi.ItemStatus{}
	seen := map[string]spi.ItemState{}
	fires, busy := map[fireItem]fireCount{}, map[fireItem]bool{}
	defer func() { l.seen, l.fires, l.busy = seen, fires, busy }()

	changed := map[string]bool{}
	for name, j := range v.jobs {
		y := string(marshalYAML(j))
		changed[name] = l.configs[name] != "" && l.configs[name] != y
		l.configs[name] = y
		if _, _, ok := v.enabled(name); !ok || changed[name] {
			// A changed or disabled job starts afresh when it runs again.
			delete(l.held, name)
		}
	}
	for name := range l.held {
		if _, ok := v.jobs[name]; !ok {
			delete(l.held, name)
		}
	}
	// Jobs gone, disabled or changed: stop what runs, forget their items.
	for name := range v.running {
		_, _, ok := v.enabled(name)
		if ok && !changed[name] {
			continue
		}
		s.log.Info("stopping the job's items", "job", name, "reason", map[bool]string{true: "configuration changed", false: "job disabled or removed"}[changed[name]])
		if _, err := s.launcher.Stop(ctx, spi.LaunchStopRequest{Config: s.lcfg, JobName: name}); err != nil {
			return fmt.Errorf("launcher stop %s: %w", name, err)
		}
		var ops []reg.Op
		for item := range v.running[name] {
			ops = append(ops, reg.DeleteOp(pathRunning+"/"+name+"/"+itemNode(name, item), reg.AnyVersion))
		}
		if err := s.fenced(ctx, ops...); err != nil {
			return err
		}
		delete(v.running, name)
	}
	for name := range v.failover {
		if _, _, ok := v.enabled(name); !ok {
			if err := s.st.remove(ctx, pathFailover+"/"+name); err != nil {
				return err
			}
			delete(v.failover, name)
		}
	}
	for name := range v.ready {
		if _, ok := v.jobs[name]; !ok {
			if err := s.st.remove(ctx, pathReady+"/"+name); err != nil {
				return err
			}
			delete(v.ready, name)
		}
	}

	// Follow the running items.
	referenced := map[fireKey]bool{}
	relaunch := map[fireKey][]int{}
	for name, items := range v.running {
		j := v.jobs[name]
		for item, tid := range items {
			k := fireKey{name, tid.Fire}
			referenced[k] = true
			fire, known := launched[k]
			st, ok := fire[item]
			switch {
			case !known:
				relaunch[k] = append(relaunch[k], item)
				continue
			case !ok:
				// The launcher holds the fire but not this item: it is gone.
				st = spi.ItemStatus{JobName: name, FireID: tid.Fire, Item: item, State: spi.ItemLost, Reason: "not held by the launcher"}
			}
			node := pathRunning + "/" + name + "/" + itemNode(name, item)
			// Once the cluster has placed the item, its task id names the
			// node (as the item's own sharding context does).
			placed := st.Node != "" && st.Node != tid.Slave
			if placed {
				tid.Slave = st.Node
			}
			switch st.State {
			case spi.ItemReady, spi.ItemRunning:
				key := eventID(tid)
				if placed {
					if err := s.fenced(ctx, reg.SetOp(node, []byte(tid.String()), reg.AnyVersion)); err != nil {
						return err
					}
				}
				if st.State == spi.ItemRunning && l.seen[key] != spi.ItemRunning {
					l.ev.status(tid, "TASK_RUNNING", "")
					l.ev.started(tid, st)
				}
				seen[key] = st.State
				fi := fireItem{name, tid.Fire, item}
				reasons[fi] = st
				if j.JobExecutionType == Daemon && st.State == spi.ItemRunning {
					s.followFires(l, fi, tid, st, fires, busy)
				}
			case spi.ItemSucceeded:
				if err := s.fenced(ctx, reg.DeleteOp(node, reg.AnyVersion)); err != nil {
					return err
				}
				delete(l.held, name)
				s.stats.count(true)
				l.ev.finished(tid, st, l.seen[eventID(tid)] == spi.ItemRunning)
				s.log.Info("item succeeded", "job", name, "item", item, "task", tid.String())
			case spi.ItemFailed, spi.ItemLost:
				ops := []reg.Op{reg.DeleteOp(node, reg.AnyVersion)}
				fo := j.Failover || j.JobExecutionType == Daemon
				if fo {
					if err := s.st.room(ctx, pathFailover, name, s.queueSize); errors.Is(err, ErrConflict) {
						s.log.Warn("item not queued for failover", "job", name, "item", item, "error", err)
						fo = false
					} else if err != nil {
						return err
					}
				}
				if fo {
					if _, err := s.st.c.Create(ctx, pathFailover+"/"+name, nil, reg.Persistent, reg.WithParents()); err != nil && !errors.Is(err, reg.ErrNodeExists) {
						return fmt.Errorf("create %s/%s: %w", pathFailover, name, err)
					}
					ops = append(ops, reg.CreateOp(pathFailover+"/"+name+"/"+itemNode(name, item), []byte(tid.String()), reg.Persistent))
					if v.failover[name] == nil {
						v.failover[name] = map[int]TaskID{}
					}
					v.failover[name][item] = tid
				}
				if err := s.fenced(ctx, ops...); err != nil && !errors.Is(err, reg.ErrNodeExists) {
					return err
				}
				s.stats.count(false)
				l.ev.finished(tid, st, l.seen[eventID(tid)] == spi.ItemRunning)
				s.log.Warn("item ended without success", "job", name, "item", item, "task", tid.String(), "state", st.State,
					"reason", st.Reason, "exitCode", st.ExitCode, "failover", fo)
				if st.State == spi.ItemFailed {
					s.failed(l, name, tid.Fire, time.Now())
				}
			}
			if st.State.Final() {
				delete(items, item)
			}
		}
		if len(items) == 0 {
			delete(v.running, name)
			_ = s.c.Delete(ctx, pathRunning+"/"+name, reg.AnyVersion)
		}
	}
	s.mu.Lock()
	s.reasons = reasons
	s.mu.Unlock()

	// Fires the launcher runs that no running item names: left over by a
	// leader that died, or of a stopped job. A job gone takes its
	// finished fires with it too: nothing of it stays on the cluster.
	gone := map[string]bool{}
	for k, items := range launched {
		if referenced[k] {
			continue
		}
		if _, ok := v.jobs[k.job]; !ok {
			gone[k.job] = true
			continue
		}
		for _, it := range items {
			if !it.State.Final() {
				s.log.Warn("stopping a fire the scheduler does not know", "job", k.job, "fire", k.fire)
				if _, err := s.launcher.Stop(ctx, spi.LaunchStopRequest{Config: s.lcfg, JobName: k.job, FireID: k.fire}); err != nil {
					return fmt.Errorf("launcher stop %s fire %s: %w", k.job, k.fire, err)
				}
				break
			}
		}
	}
	for job := range gone {
		s.log.Info("removing the fires of a job gone", "job", job)
		if _, err := s.launcher.Stop(ctx, spi.LaunchStopRequest{Config: s.lcfg, JobName: job}); err != nil {
			return fmt.Errorf("launcher stop %s: %w", job, err)
		}
	}
	// Fires recorded but unknown to the launcher: launch them again
	// (Launch is idempotent per fire).
	for k, items := range relaunch {
		j, a, ok := v.enabled(k.job)
		if !ok {
			continue
		}
		typ := v.running[k.job][items[0]].Type
		if err := s.launch(ctx, j, a, k.fire, typ, items); err != nil {
			return err
		}
	}

	// Failover first, then ready rounds.
	for name, items := range v.failover {
		j, a, ok := v.enabled(name)
		if !ok || s.holding(l, name, time.Now()) {
			continue
		}
		var todo []int
		var ops []reg.Op
		for item := range items {
			if _, runs := v.running[name][item]; !runs {
				todo = append(todo, item)
				ops = append(ops, reg.DeleteOp(pathFailover+"/"+name+"/"+itemNode(name, item), reg.AnyVersion))
			}
		}
		if len(todo) == 0 {
			continue
		}
		if err := s.start(ctx, l, v, j, a, "FAILOVER", todo, ops, items); err != nil {
			return err
		}
		_ = s.c.Delete(ctx, pathFailover+"/"+name, reg.AnyVersion)
	}
	now := time.Now()
	for name, j := range v.jobs {
		if _, _, ok := v.enabled(name); !ok {
			delete(l.next, name)
			continue
		}
		if j.JobExecutionType == Transient && j.Cron != "" {
			expr, err := cron.Parse(j.Cron)
			if err != nil {
				continue
			}
			next, ok := l.next[name]
			if !ok || changed[name] {
				next = expr.Next(now)
			}
			if !next.IsZero() && !now.Before(next) {
				if err := s.st.AddRound(ctx, name, j.Misfire, s.queueSize); err != nil {
					s.log.Warn("fire not queued", "job", name, "error", err)
				} else {
					if _, runs := v.running[name]; runs {
						s.log.Info("fire while the previous round runs: queued to run right after", "job", name, "misfire", j.Misfire)
					}
					v.ready[name] = max(v.ready[name], 0) + 1
				}
				next = expr.Next(now)
			}
			l.next[name] = next
		}
		if _, runs := v.running[name]; runs {
			continue
		}
		if _, fo := v.failover[name]; fo {
			continue
		}
		daemonIdle := j.JobExecutionType == Daemon
		if v.ready[name] == 0 && !daemonIdle || s.holding(l, name, now) {
			continue
		}
		j, a, _ := v.enabled(name)
		items := make([]int, j.ShardingTotalCount)
		for i := range items {
			items[i] = i
		}
		ops, err := s.st.readyOp(ctx, name)
		if err != nil {
			return err
		}
		if err := s.start(ctx, l, v, j, a, "READY", items, ops, nil); err != nil {
			return err
		}
	}
	return nil
}

// failed records a failed item of job's fire at now: the job's next
// launch waits (see failurePause). Another failed item of the fire last
// counted changes nothing.
func (s *Scheduler) failed(l *leaderState, job, fire string, now time.Time) {
	p := l.held[job]
	if p.failures > 0 && p.fire == fire {
		return
	}
	p.failures++
	p.fire = fire
	limit := max(MaxFailureBackoff, s.pause)
	d := s.pause
	for i := 1; i < p.failures && d < limit; i++ {
		d *= 2
	}
	p.until, p.logged = now.Add(min(d, limit)), false
	l.held[job] = p
}

// holding tells whether job is paused at now after failed items, and
// logs the pause once.
func (s *Scheduler) holding(l *leaderState, job string, now time.Time) bool {
	p, ok := l.held[job]
	if !ok || !now.Before(p.until) {
		return false
	}
	if !p.logged {
		s.log.Warn("the job's items failed: its next launch waits", "job", job, "failures", p.failures,
			"until", p.until.Format(time.RFC3339), "pause", p.until.Sub(now).Round(time.Millisecond).String())
		p.logged = true
		l.held[job] = p
	}
	return true
}

// followFires records a running DAEMON item's fires (upstream's BEGIN and
// COMPLETE updates): a status event when a fire starts and when one ends,
// and each completed fire counted as a success. The fires an item
// completed before this leader first saw it are not counted again.
//
// A launcher's count can go down (a pod recreated with a new fire log, a
// report read from an older pod): each fire counts once, so a count only
// counts above the highest one seen for the item's process. A lower count
// from a process started later than the one counted so far is a new
// process's count from zero, all of it new fires; a report from a process
// started earlier than that one is stale and counts nothing.
func (s *Scheduler) followFires(l *leaderState, fi fireItem, tid TaskID, st spi.ItemStatus, fires map[fireItem]fireCount, busy map[fireItem]bool) {
	prev, known := l.fires[fi]
	if !known {
		fires[fi], busy[fi] = fireCount{high: st.Fires, started: st.Started}, !st.Idle
		return
	}
	if !prev.started.IsZero() && st.Started.Before(prev.started) {
		// A stale report: it changes nothing.
		fires[fi], busy[fi] = prev, l.busy[fi]
		return
	}
	busy[fi] = !st.Idle
	cur, added := prev, 0
	switch {
	case st.Fires >= prev.high:
		added, cur = st.Fires-prev.high, fireCount{high: st.Fires, started: st.Started}
	case st.Started.After(prev.started):
		added, cur = st.Fires, fireCount{high: st.Fires, started: st.Started}
	}
	fires[fi] = cur
	if !st.Idle && !l.busy[fi] {
		l.ev.status(tid, "TASK_RUNNING", "BEGIN")
	}
	for range added {
		s.stats.count(true)
	}
	if added > 0 || st.Idle && l.busy[fi] {
		l.ev.status(tid, "TASK_RUNNING", "COMPLETE")
	}
}

// start records the items of a new fire as running (with extra ops, in
// one fenced transaction), then launches it. originals are the task ids
// a FAILOVER fire's items run again.
func (s *Scheduler) start(ctx context.Context, l *leaderState, v view, j Job, a App, typ string, items []int, extra []reg.Op, originals map[int]TaskID) error {
	fire := newFireID()
	if _, err := s.st.c.Create(ctx, pathRunning+"/"+j.JobName, nil, reg.Persistent, reg.WithParents()); err != nil && !errors.Is(err, reg.ErrNodeExists) {
		return fmt.Errorf("create %s/%s: %w", pathRunning, j.JobName, err)
	}
	ops := append([]reg.Op(nil), extra...)
	for _, item := range items {
		tid := TaskID{Job: j.JobName, Item: item, Type: typ, Slave: unassignedSlave, Fire: fire}
		ops = append(ops, reg.CreateOp(pathRunning+"/"+j.JobName+"/"+itemNode(j.JobName, item), []byte(tid.String()), reg.Persistent))
	}
	if err := s.fenced(ctx, ops...); err != nil {
		return fmt.Errorf("record fire %s of %s: %w", fire, j.JobName, err)
	}
	if v.running[j.JobName] == nil {
		v.running[j.JobName] = map[int]TaskID{}
	}
	for _, item := range items {
		tid := TaskID{Job: j.JobName, Item: item, Type: typ, Slave: unassignedSlave, Fire: fire}
		v.running[j.JobName][item] = tid
		if orig, ok := originals[item]; ok {
			l.ev.originals[fireItem{j.JobName, fire, item}] = orig.String()
		}
		l.ev.status(tid, "TASK_STAGING", "")
	}
	return s.launch(ctx, j, a, fire, typ, items)
}

func newFireID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return "f" + hex.EncodeToString(b)
}

// launch hands a fire to the launcher.
func (s *Scheduler) launch(ctx context.Context, j Job, a App, fire, typ string, items []int) error {
	params, _ := j.ItemParameters()
	req := spi.LaunchRequest{Config: s.lcfg, FireID: fire, ExecutionType: typ,
		App: spi.LaunchApp{Name: a.AppName, Image: a.Image, AppURL: a.AppURL, BootstrapScript: a.BootstrapScript,
			AppCacheEnable: a.AppCacheEnable, CPUCount: a.CPUCount, MemoryMB: a.MemoryMB},
		Job: spi.LaunchJob{Name: j.JobName, ExecutionType: j.JobExecutionType, Cron: j.Cron, ShardingTotalCount: j.ShardingTotalCount,
			CPUCount: j.CPUCount, MemoryMB: j.MemoryMB, JobParameter: j.JobParameter, ShardingItemParameters: params, Props: j.Props},
		Labels: map[string]string{"ejob.io/app": a.AppName, "ejob.io/job": j.JobName, "ejob.io/fire": fire}}
	for _, item := range items {
		// The item's own task id names the node it runs on, filled in by
		// the launcher once the cluster has placed it.
		tid := TaskID{Job: j.JobName, Item: item, Type: typ, Slave: spi.LaunchNodePlaceholder, Fire: fire}
		req.Items = append(req.Items, spi.LaunchItem{Item: item, Env: ItemEnv(j, params, item, tid)})
	}
	if _, err := s.launcher.Launch(ctx, req); err != nil {
		return fmt.Errorf("launch %s fire %s: %w", j.JobName, fire, err)
	}
	s.log.Info("fire launched", "job", j.JobName, "fire", fire, "type", typ, "items", fmt.Sprint(items))
	return nil
}

// ItemEnv is the environment an item runs with: its sharding context as
// the JSON SCRIPT jobs receive (EJOB_SHARDING_CONTEXT) and field by field.
func ItemEnv(j Job, params map[int]string, item int, tid TaskID) map[string]string {
	sc := spi.ShardingContext{JobName: j.JobName, TaskID: tid.String(), ShardingTotalCount: j.ShardingTotalCount,
		JobParameter: j.JobParameter, ShardingItem: item}
	env := map[string]string{
		"EJOB_SHARDING_CONTEXT":     "",
		"EJOB_JOB_NAME":             j.JobName,
		"EJOB_TASK_ID":              tid.String(),
		"EJOB_SHARDING_ITEM":        strconv.Itoa(item),
		"EJOB_SHARDING_TOTAL_COUNT": strconv.Itoa(j.ShardingTotalCount),
		"EJOB_JOB_PARAMETER":        j.JobParameter,
		"EJOB_EXECUTION_TYPE":       j.JobExecutionType,
	}
	if p, ok := params[item]; ok {
		sc.ShardingParameter = &p
		env["EJOB_SHARDING_PARAMETER"] = p
	}
	if j.JobExecutionType == Daemon {
		env["EJOB_CRON"] = j.Cron
	}
	env["EJOB_SHARDING_CONTEXT"] = string(gson.ShardingContext(sc))
	return env
}
