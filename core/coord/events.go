package coord

import (
	"context"
	"errors"
	"fmt"
	"net/netip"

	"strings"
	"sync"
	"time"

	"github.com/ejob-io/ejob/core/reg"
)

// loopState is owned by the event goroutine (runLoop).
type loopState struct {
	curTotal      int // upstream's JobRegistry.currentShardingTotalCount
	cron, tz      string
	lastReconcile time.Time
}

// runLoop waits for the tree cache, registers the instance, then handles
// tree events, re-registrations and reconcile ticks on one goroutine (as
// upstream's ListenerNotify-{job} thread).
func (j *Job) runLoop(ctx context.Context, conn <-chan reg.ConnEvent) error {
	events := j.cache.Events()
	for initialized := false; !initialized; {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-events:
			if !ok {
				return nil
			}
			// Events of the initial load describe the tree as it was; the
			// startup sequence below acts on it directly.
			initialized = ev.Type == reg.TreeInitialized
		}
	}
	j.refreshCachedConfig()
	cfg, err := j.config(ctx)
	if err != nil {
		return err
	}
	if err := j.registerStartUp(ctx, !cfg.Disabled); err != nil {
		return err
	}
	st := &loopState{curTotal: cfg.ShardingTotalCount, cron: cfg.Cron, tz: cfg.TimeZone, lastReconcile: time.Now()}
	j.readyOnce.Do(func() { close(j.ready) })
	j.log.Info("instance registered", "server", j.ip)
	if err := j.cleanStaleIfLeader(ctx); err != nil && ctx.Err() == nil {
		j.log.Warn("stale node sweep at startup failed", "error", err)
	}

	reregister := make(chan struct{}, 1)
	var wg sync.WaitGroup
	defer wg.Wait()
	wctx, wcancel := context.WithCancel(ctx)
	defer wcancel() // runs before wg.Wait
	wg.Add(1)
	go func() {
		defer wg.Done()
		j.watchConnection(wctx, conn, reregister)
	}()

	recon := time.NewTicker(j.recon)
	defer recon.Stop()
	// The pump's timer runs only while there may be something for the
	// pump to do: a tick after any tree event or wake-up (pumpWake), and
	// then again for as long as pumpWanted says so. An idle job has no
	// pump wake-up at all. The first tick covers what startup found.
	pump := time.NewTimer(j.failoverTick())
	defer pump.Stop()
	pumpC := pump.C
	armPump := func() {
		if pumpC == nil {
			pump.Reset(j.failoverTick())
			pumpC = pump.C
		}
	}
	var retry <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-events:
			if !ok {
				return nil
			}
			shut := j.handleEvent(ctx, ev, st)
			j.onEv(ev.Path)
			if shut {
				j.log.Info("instance shut down from the registry")
				j.onShut()
				return nil
			}
			armPump()
		case <-j.pumpWake:
			armPump()
		case <-reregister:
			if err := j.reRegister(ctx); err != nil {
				if ctx.Err() != nil {
					return nil
				}
				j.log.Warn("re-registration failed; retrying", "error", err)
				retry = time.After(j.poll * 5)
			}
			armPump()
		case <-retry:
			retry = nil
			select {
			case reregister <- struct{}{}:
			default:
			}
		case <-pumpC:
			pumpC = nil
			if err := j.pump(ctx); err != nil && ctx.Err() == nil {
				j.log.Warn("failover and misfire pump failed", "error", err)
			}
			if j.pumpWanted() {
				armPump()
			}
		case now := <-recon.C:
			if err := j.reconcile(ctx, st, now); err != nil && ctx.Err() == nil {
				j.log.Warn("reconcile failed", "error", err)
			}
			if paused, _ := j.Paused(); !paused {
				if err := j.cleanStaleIfLeader(ctx); err != nil && ctx.Err() == nil {
					j.log.Warn("stale node sweep failed", "error", err)
				}
			}
		}
	}
}

// watchConnection pauses at once on Suspended/Lost (no new executions),
// presumes the session expired when the connection stays down until its
// ExpiryDeadline less the margin (cancelling running items), and asks the
// loop to re-register after a new session or after a presumed expiry the
// session survived (spec §14).
func (j *Job) watchConnection(ctx context.Context, conn <-chan reg.ConnEvent, reregister chan<- struct{}) {
	var presume *time.Timer
	var presumeC <-chan time.Time
	var suspended *reg.Session
	disarm := func() {
		if presume != nil {
			presume.Stop()
		}
		presume, presumeC, suspended = nil, nil, nil
	}
	defer disarm()
	ask := func() {
		select {
		case reregister <- struct{}{}:
		default:
		}
	}
	for {
		var ce reg.ConnEvent
		var ok bool
		select {
		case <-ctx.Done():
			return
		case <-presumeC:
			sess := suspended
			presume, presumeC = nil, nil
			j.presumeExpired(sess)
			continue
		case ce, ok = <-conn:
			if !ok {
				return
			}
		}
		j.log.Debug("connection state", "state", ce.State, "session", ce.Session)
		switch ce.State {
		case reg.StateSuspended:
			j.log.Warn("registry connection suspended; pausing executions (running items continue)")
			j.setPaused(true)
			disarm()
			if ce.Session != nil {
				suspended = ce.Session
				if presume = j.presumeTimer(ce.Session); presume != nil {
					presumeC = presume.C
				}
			}
		case reg.StateLost:
			disarm()
			j.log.Warn("registry session lost; pausing executions and cancelling running items")
			j.mu.Lock()
			if j.sess == ce.Session {
				j.sess = nil
			}
			if j.lease != nil && j.lease.sess == ce.Session {
				j.lease.end(fmt.Errorf("%w: %w", ErrSessionLost, ce.Session.Err()))
			}
			j.mu.Unlock()
			j.setPaused(true)
		case reg.StateConnected, reg.StateReconnected:
			disarm()
			j.mu.Lock()
			same := j.sess != nil && j.sess == ce.Session && ce.Session.Err() == nil
			intact := same && j.lease.live() && j.lease.sess == ce.Session
			j.mu.Unlock()
			if intact {
				if paused, _ := j.Paused(); paused {
					j.log.Info("registry connection back with the same session; resuming")
				}
				j.setPaused(false)
				continue
			}
			if ce.State == reg.StateConnected && !same {
				continue
			}
			// A new session, or the same one after its lease was cut by a
			// presumed expiry: the loop clears what the cut-off execution
			// left and renews the lease before resuming.
			ask()
		case reg.StateNewSession:
			disarm()
			ask()
		}
	}
}

// reRegister re-creates what the lost session took (spec §14, better than
// upstream): server status, instance node, clears this instance's stale
// running nodes (before resuming, so no new execution's nodes are taken
// for stale ones), elects if there is no leader, then resumes. After a
// presumed expiry that the session survived it only does the clearing and
// renews the lease.
func (j *Job) reRegister(ctx context.Context) error {
	if j.shutdown.Load() {
		return nil
	}
	sess := j.c.Session()
	if sess.Err() != nil {
		return ErrSessionLost
	}
	j.mu.Lock()
	already := j.sess == sess
	intact := already && j.lease.live() && j.lease.sess == sess
	j.mu.Unlock()
	if intact {
		j.setPaused(false)
		return nil
	}
	if !already {
		status := serverDisabled
		if v, ok, err := j.s.get(ctx, j.p.server(j.ip)); err != nil {
			return err
		} else if ok && v == serverEnabled {
			status = serverEnabled
		}
		if _, err := reg.Persist(ctx, j.c, j.p.server(j.ip), []byte(status)); err != nil {
			return wrap("re-register server", err)
		}
		if err := j.s.persistEphemeral(ctx, j.p.instance(j.id), instanceYAML(j.id, j.ip)); err != nil {
			return wrap("re-register instance", err)
		}
		if sess != j.c.Session() || sess.Err() != nil {
			return ErrSessionLost
		}
	}
	j.setNeedRecover()
	flagged, err := j.recoverIfIdle(ctx)
	if err != nil {
		j.log.Warn("recover running items after the session interruption failed", "error", err)
	}
	j.mu.Lock()
	j.setLeaseLocked(sess)
	j.mu.Unlock()
	if !already {
		if has, err := j.elect.HasLeader(ctx); err == nil && !has {
			if ok, err := j.isAvailableServer(ctx, j.ip); err == nil && ok {
				if err := j.electAndCheck(ctx); err != nil {
					j.log.Warn("election after new session failed", "error", err)
				}
			}
		}
		j.log.Info("re-registered in a new registry session; resuming", "session", sess)
	} else {
		j.log.Info("registry connection back with the same session after a presumed expiry; resuming", "session", sess)
	}
	j.setPaused(false)
	if flagged {
		if err := j.failoverIfNecessary(ctx); err != nil {
			j.log.Warn("failover after the session interruption failed", "error", err)
		}
	}
	return nil
}

// recoverIfIdle clears this instance's leftover running nodes when
// needRecover is set and no execution runs here; it reports whether items
// were queued for failover.
func (j *Job) recoverIfIdle(ctx context.Context) (bool, error) {
	if !j.needRecover.Load() || j.running.Load() {
		return false, nil
	}
	flagged, err := j.recoverOwnRunning(ctx, nil)
	if err == nil {
		j.needRecover.Store(false)
	}
	return flagged, err
}

// recoverOwnRunning handles running nodes that name this instance (of the
// given items, or of all when items is nil): they belong to executions cut
// off by a session loss or a presumed one. Upstream deletes them on
// reconnect (losing the interrupted work); ejob queues them for failover
// when failover is on (unless another instance already did, or the item is
// still claimed by this instance's failover node, which re-runs it at its
// next fire), and deletes them, so they never block resharding. It reports
// whether items were queued; the caller runs failoverIfNecessary once
// executions may start.
func (j *Job) recoverOwnRunning(ctx context.Context, items []int) (bool, error) {
	cfg, err := j.config(ctx)
	if err != nil {
		return false, err
	}
	if items == nil {
		names, err := j.s.children(ctx, j.p.of(nodeSharding))
		if err != nil {
			return false, err
		}
		items = itemNumbers(names)
	}
	flagged := false
	for _, i := range items {
		v, ok, err := j.s.get(ctx, j.p.itemNode(i, "running"))
		if err != nil {
			return flagged, err
		}
		if !ok || v != j.id {
			continue
		}
		if cfg.Failover {
			fo, _, err := j.s.get(ctx, j.p.itemNode(i, "failover"))
			if err != nil {
				return flagged, err
			}
			if fo != j.id {
				j.log.Info("item was running when the session was interrupted; queuing it for failover", "item", i)
				if err := j.setCrashedFailoverFlag(ctx, i, j.id); err != nil {
					return flagged, err
				}
				flagged = true
			}
		}
		if _, err := j.s.deleteIfValue(ctx, j.p.itemNode(i, "running"), j.id); err != nil {
			return flagged, err
		}
	}
	return flagged, nil
}

func (j *Job) refreshCachedConfig() {
	if j.cache == nil {
		return
	}
	data, _, ok := j.cache.Get(j.p.of(nodeConfig))
	if !ok {
		return
	}
	if c, err := j.parseConfig(data); err == nil {
		j.cfg.Store(c)
	}
}

// handleEvent runs upstream's data listeners (spec §13) for one event, in
// their order. It reports whether the instance was shut down from the
// registry.
func (j *Job) handleEvent(ctx context.Context, ev reg.TreeEvent, st *loopState) (shutdown bool) {
	if j.shutdown.Load() || ev.Type == reg.TreeInitialized {
		return false
	}
	rel, ok := j.p.rel(ev.Path)
	if !ok {
		return false
	}
	logErr := func(what string, err error) {
		if err != nil && ctx.Err() == nil {
			j.log.Warn(what+" failed", "path", ev.Path, "event", ev.Type, "error", err)
		}
	}
	switch {
	case rel == nodeConfig:
		logErr("config change", j.onConfigEvent(ctx, ev, st))
	case rel == nodeLeaderInstance:
		if ev.Type == reg.NodeDeleted {
			logErr("election", j.electIfAvailable(ctx))
		}
	case strings.HasPrefix(rel, nodeServers+"/"):
		ip := strings.TrimPrefix(rel, nodeServers+"/")
		if !isIPv4(ip) {
			return false
		}
		if ip == j.ip {
			logErr("election", j.onLocalServerEvent(ctx, ev))
		}
		if !j.membershipAccounted(ev) {
			logErr("resharding flag", j.serversChanged(ctx))
		}
	case strings.HasPrefix(rel, nodeInstances+"/"):
		id := strings.TrimPrefix(rel, nodeInstances+"/")
		if strings.Contains(id, "/") || ev.Type == reg.NodeUpdated {
			return false
		}
		// Crash handling first (upstream flags resharding first): the
		// items of the dead instance with a pending misfire (no running
		// node, so resharding does not wait for them) are queued for
		// failover before a resharding can give them to a live owner.
		if ev.Type == reg.NodeDeleted && id != j.id {
			logErr("crash failover", j.onInstanceCrashed(ctx, id))
		}
		if !j.membershipAccounted(ev) {
			logErr("resharding flag", j.serversChanged(ctx))
		}
		if ev.Type == reg.NodeDeleted && id != j.id {
			logErr("stale node sweep", j.cleanStaleIfLeader(ctx))
		}
		if ev.Type == reg.NodeAdded && id == j.id {
			logErr("legacy crashed items", j.onOwnInstanceAdded(ctx))
		}
		if ev.Type == reg.NodeDeleted && id == j.id {
			return j.isShutdownByConsole(ctx, ev)
		}
	case rel == nodeTrigger+"/"+j.id:
		if ev.Type == reg.NodeAdded {
			logErr("trigger", j.onTriggerNode(ctx))
		}
	case rel == nodeGuaranteeStarted || rel == nodeGuaranteeCompleted:
		j.onGuaranteeEvent(rel, ev)
	case rel == nodeNecessary:
		if ev.Type == reg.NodeDeleted {
			logErr("misfire after resharding", j.misfireAfterResharding(ctx))
		}
	}
	return false
}

func isIPv4(s string) bool {
	a, err := netip.ParseAddr(s)
	return err == nil && a.Is4()
}

// onConfigEvent: ShardingTotalCountChanged, FailoverSettingsChanged,
// MonitorExecutionSettingsChanged and CronSettingChanged listeners.
func (j *Job) onConfigEvent(ctx context.Context, ev reg.TreeEvent, st *loopState) error {
	if ev.Type == reg.NodeDeleted {
		return nil
	}
	cfg, err := j.parseConfig(ev.Data)
	if err != nil {
		return err
	}
	j.cfg.Store(cfg)
	var errs []error
	if st.curTotal != 0 && cfg.ShardingTotalCount != st.curTotal {
		j.log.Info("shardingTotalCount changed", "from", st.curTotal, "to", cfg.ShardingTotalCount)
		errs = append(errs, j.setReshardingFlag(ctx))
	}
	st.curTotal = cfg.ShardingTotalCount
	if ev.Type == reg.NodeUpdated && !cfg.Failover {
		errs = append(errs, j.removeFailoverInfo(ctx))
	}
	if ev.Type == reg.NodeUpdated && !cfg.MonitorExecution {
		for i := 0; i < cfg.ShardingTotalCount; i++ {
			errs = append(errs, reg.DeleteRecursive(ctx, j.c, j.p.itemNode(i, "running")))
		}
	}
	if ev.Type == reg.NodeUpdated && (cfg.Cron != st.cron || cfg.TimeZone != st.tz) {
		st.cron, st.tz = cfg.Cron, cfg.TimeZone
		j.log.Info("cron changed; rescheduling", "cron", cfg.Cron, "timeZone", cfg.TimeZone)
		j.onRes(cfg.Cron, cfg.TimeZone)
	}
	return errors.Join(errs...)
}

// removeFailoverInfo deletes sharding/*/failover (failover turned off).
func (j *Job) removeFailoverInfo(ctx context.Context) error {
	names, err := j.s.children(ctx, j.p.of(nodeSharding))
	if err != nil {
		return err
	}
	for _, n := range names {
		if err := reg.DeleteRecursive(ctx, j.c, j.p.of(nodeSharding, n, "failover")); err != nil {
			return err
		}
	}
	return nil
}

// serversChanged is ListenServersChangedJobListener's action.
func (j *Job) serversChanged(ctx context.Context) error {
	cfg, err := j.config(ctx)
	if err != nil {
		return err
	}
	if cfg.StaticSharding {
		names, err := j.s.children(ctx, j.p.of(nodeSharding))
		if err != nil || len(names) > 0 {
			return err
		}
	}
	return j.setReshardingFlag(ctx)
}

// isShutdownByConsole: our own instance node was deleted, not by a session
// loss (paused, or a node of an old session) and not re-created since.
func (j *Job) isShutdownByConsole(ctx context.Context, ev reg.TreeEvent) bool {
	if paused, _ := j.Paused(); paused {
		return false
	}
	j.mu.Lock()
	sess := j.sess
	j.mu.Unlock()
	if sess == nil || ev.Stat.EphemeralOwner != sess.ID() || sess.Err() != nil {
		return false
	}
	ok, err := j.s.exists(ctx, j.p.instance(j.id))
	if err != nil || ok {
		return false
	}
	j.shutdown.Store(true)
	if _, err := j.elect.Resign(ctx); err != nil {
		j.log.Warn("shutdown: remove leader node failed", "error", err)
	}
	return true
}

// onTriggerNode: delete trigger/{me}; run once unless running (spec §12.2).
func (j *Job) onTriggerNode(ctx context.Context) error {
	if err := j.c.Delete(ctx, j.p.trigger(j.id), reg.AnyVersion); err != nil && !errors.Is(err, reg.ErrNoNode) {
		return err
	}
	if j.shutdown.Load() || j.running.Load() {
		j.log.Info("trigger dropped: job is running")
		return nil
	}
	j.log.Info("triggered from the registry")
	j.onTrig()
	return nil
}

// reconcile is ReconcileService's tick (spec §12.6).
func (j *Job) reconcile(ctx context.Context, st *loopState, now time.Time) error {
	cfg, err := j.config(ctx)
	if err != nil {
		return err
	}
	iv := cfg.ReconcileIntervalMinutes
	if iv <= 0 || now.Sub(st.lastReconcile) < time.Duration(iv)*j.reconUnit() {
		return nil
	}
	st.lastReconcile = now
	if ok, err := j.s.exists(ctx, j.p.of(nodeNecessary)); err != nil || ok {
		return err
	}
	offline, err := j.hasShardingInfoInOfflineServers(ctx, cfg.ShardingTotalCount)
	if err != nil || !offline {
		return err
	}
	if cfg.StaticSharding {
		names, err := j.s.children(ctx, j.p.of(nodeSharding))
		if err != nil || len(names) > 0 {
			return err
		}
	}
	j.log.Warn("job status node has inconsistent value, start reconciling")
	return j.setReshardingFlag(ctx)
}

func (j *Job) reconUnit() time.Duration {
	if j.reconMinute > 0 {
		return j.reconMinute
	}
	return time.Minute
}

// hasShardingInfoInOfflineServers: some item's instance value is not an
// instance child (a missing value counts).
func (j *Job) hasShardingInfoInOfflineServers(ctx context.Context, total int) (bool, error) {
	ids, err := j.s.children(ctx, j.p.of(nodeInstances))
	if err != nil {
		return false, err
	}
	online := map[string]bool{}
	for _, id := range ids {
		online[id] = true
	}
	for i := 0; i < total; i++ {
		v, _, err := j.s.get(ctx, j.p.itemNode(i, "instance"))
		if err != nil {
			return false, err
		}
		if !online[v] {
			return true, nil
		}
	}
	return false, nil
}
