package coord

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"time"

	"github.com/ejob-io/ejob/core/node"
	"github.com/ejob-io/ejob/core/reg"
)

// loopState is owned by the job's queue (loop.go).
type loopState struct {
	curTotal      int // upstream's JobRegistry.currentShardingTotalCount
	cron, tz      string
	lastReconcile time.Time
}

// listeners are upstream's data listeners (the ListenerManager's) and its
// reconcile service on this instance: handle runs them for one event of
// the job's tree, reconcile for one tick, both on the job's queue. They
// keep no state but the queue's loopState, passed in; the owners they act
// on are wired in by New.
type listeners struct {
	*jobBase
	reconMinute time.Duration
}

// handle runs upstream's data listeners (the ListenerManager's) for one
// event, the seq-th posted to the job's queue, in their order. It reports
// whether the instance was shut down from the registry.
func (l *listeners) handle(ctx context.Context, ev reg.TreeEvent, seq uint32, st *loopState) (shutdown bool) {
	if l.job.life.shutdown.Load() || ev.Type == reg.TreeInitialized {
		return false
	}
	rel, ok := l.s.p.Rel(ev.Path)
	if !ok {
		return false
	}
	logErr := func(what string, err error) {
		if err != nil && ctx.Err() == nil {
			l.log.Warn(what+" failed", "path", ev.Path, "event", ev.Type, "error", err)
		}
	}
	switch {
	case rel == node.ConfigNode:
		logErr("config change", l.onConfigEvent(ctx, ev, st))
	case rel == node.LeaderInstanceNode:
		if ev.Type == reg.NodeDeleted {
			logErr("election", l.job.ldr.electIfAvailable(ctx))
		}
	case strings.HasPrefix(rel, node.ServersNode+"/"):
		ip := strings.TrimPrefix(rel, node.ServersNode+"/")
		if !isIPv4(ip) {
			return false
		}
		if ip == l.ip {
			logErr("election", l.job.ldr.onLocalServerEvent(ctx, ev))
		}
		if !l.job.asg.accounted(ev) {
			logErr("resharding flag", l.job.rsh.serversChangedSince(ctx, seq))
		}
	case strings.HasPrefix(rel, node.InstancesNode+"/"):
		id := strings.TrimPrefix(rel, node.InstancesNode+"/")
		if strings.Contains(id, "/") || ev.Type == reg.NodeUpdated {
			return false
		}
		// Crash handling first (upstream flags resharding first): the
		// items of the dead instance with a pending misfire (no running
		// node, so resharding does not wait for them) are queued for
		// failover before a resharding can give them to a live owner.
		if ev.Type == reg.NodeDeleted && id != l.id {
			logErr("crash failover", l.job.fo.get().onInstanceCrashed(ctx, id))
		}
		if !l.job.asg.accounted(ev) {
			logErr("resharding flag", l.job.rsh.serversChangedSince(ctx, seq))
		}
		if ev.Type == reg.NodeDeleted && id != l.id {
			logErr("stale node sweep", l.job.sw.stale().sweepIfLeader(ctx))
		}
		// (With failover off it does nothing: the job makes no failover
		// state for it.)
		if cfg := l.job.conf.cur.Load(); ev.Type == reg.NodeAdded && id == l.id && (cfg == nil || cfg.Failover) {
			logErr("legacy crashed items", l.job.fo.get().onOwnInstanceAdded(ctx))
		}
		if ev.Type == reg.NodeDeleted && id == l.id {
			return l.isShutdownByConsole(ctx, ev)
		}
	case rel == node.TriggerNode+"/"+l.id:
		if ev.Type == reg.NodeAdded {
			logErr("trigger", l.onTriggerNode(ctx))
		}
	case rel == node.GuaranteeStartedNode || rel == node.GuaranteeCompletedNode:
		l.job.guar.onEvent(rel, ev)
	case rel == node.ShardingNecessaryNode:
		if ev.Type == reg.NodeDeleted {
			logErr("misfire after resharding", l.job.mf.afterResharding(ctx))
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
func (l *listeners) onConfigEvent(ctx context.Context, ev reg.TreeEvent, st *loopState) error {
	if ev.Type == reg.NodeDeleted {
		return nil
	}
	cfg, err := l.job.conf.parse(ev.Data)
	if errors.Is(err, ErrConfigInvalid) {
		return nil // logged once by configState.parse; the job waits for a valid one
	}
	if err != nil {
		return err
	}
	l.job.conf.cur.Store(cfg)
	var errs []error
	if st.curTotal != 0 && cfg.ShardingTotalCount != st.curTotal {
		l.log.Info("shardingTotalCount changed", "from", st.curTotal, "to", cfg.ShardingTotalCount)
		errs = append(errs, l.job.rsh.setReshardingFlag(ctx))
	}
	st.curTotal = cfg.ShardingTotalCount
	if ev.Type == reg.NodeUpdated && !cfg.Failover {
		errs = append(errs, l.removeFailoverInfo(ctx))
	}
	if ev.Type == reg.NodeUpdated && !cfg.MonitorExecution {
		for i := 0; i < cfg.ShardingTotalCount; i++ {
			errs = append(errs, reg.DeleteRecursive(ctx, l.s.c, l.s.p.Running(i)))
		}
	}
	if ev.Type == reg.NodeUpdated && (cfg.Cron != st.cron || cfg.TimeZone != st.tz) {
		st.cron, st.tz = cfg.Cron, cfg.TimeZone
		l.log.Info("cron changed; rescheduling", "cron", cfg.Cron, "timeZone", cfg.TimeZone)
		l.hooks.Reschedule(cfg.Cron, cfg.TimeZone)
	}
	return errors.Join(errs...)
}

// removeFailoverInfo deletes sharding/*/failover (failover turned off).
func (l *listeners) removeFailoverInfo(ctx context.Context) error {
	names, err := l.s.children(ctx, l.s.p.Sharding())
	if err != nil {
		return err
	}
	for _, n := range names {
		if err := reg.DeleteRecursive(ctx, l.s.c, l.s.p.Full(node.ShardingNode+"/"+n+"/"+node.ItemFailover)); err != nil {
			return err
		}
	}
	return nil
}

// isShutdownByConsole: our own instance node was deleted, not by a session
// loss (paused, or a node of an old session) and not re-created since.
func (l *listeners) isShutdownByConsole(ctx context.Context, ev reg.TreeEvent) bool {
	if paused, _ := l.job.rg.isPaused(); paused {
		return false
	}
	sess := l.job.rg.registeredSession()
	if sess == nil || ev.Stat.EphemeralOwner != sess.ID() || sess.Err() != nil {
		return false
	}
	ok, err := l.s.exists(ctx, l.s.p.Instance(l.id))
	if err != nil || ok {
		return false
	}
	l.job.life.shutdown.Store(true)
	if _, err := l.job.ldr.e.Resign(ctx); err != nil {
		l.log.Warn("shutdown: remove leader node failed", "error", err)
	}
	return true
}

// onTriggerNode: delete trigger/{me}; run once unless running
// (TriggerListenerManager).
func (l *listeners) onTriggerNode(ctx context.Context) error {
	if err := l.s.c.Delete(ctx, l.s.p.TriggerInstance(l.id), reg.AnyVersion); err != nil && !errors.Is(err, reg.ErrNoNode) {
		return err
	}
	if l.job.life.shutdown.Load() || l.job.att.running.Load() {
		l.log.Info("trigger dropped: job is running")
		return nil
	}
	l.log.Info("triggered from the registry")
	l.hooks.Trigger()
	return nil
}

// reconcile is ReconcileService's tick. Its registry reads are made
// only when the tree cache (nil: none) does not show every item assigned
// to a live instance (offlineInCache).
func (l *listeners) reconcile(ctx context.Context, st *loopState, cache *reg.CacheView, now time.Time) error {
	cfg, err := l.job.conf.get(ctx)
	if err != nil {
		return err
	}
	iv := cfg.ReconcileIntervalMinutes
	if iv <= 0 || now.Sub(st.lastReconcile) < time.Duration(iv)*l.reconUnit() {
		return nil
	}
	st.lastReconcile = now
	if cache != nil && !l.offlineInCache(cache, cfg.ShardingTotalCount) {
		return nil
	}
	if ok, err := l.s.exists(ctx, l.s.p.ShardingNecessary()); err != nil || ok {
		return err
	}
	offline, err := l.hasShardingInfoInOfflineServers(ctx, cfg.ShardingTotalCount)
	if err != nil || !offline {
		return err
	}
	if cfg.StaticSharding {
		names, err := l.s.children(ctx, l.s.p.Sharding())
		if err != nil || len(names) > 0 {
			return err
		}
	}
	l.log.Warn("job status node has inconsistent value, start reconciling")
	return l.job.rsh.setReshardingFlag(ctx)
}

func (l *listeners) reconUnit() time.Duration {
	if l.reconMinute > 0 {
		return l.reconMinute
	}
	return time.Minute
}

// offlineInCache is hasShardingInfoInOfflineServers on the tree cache:
// some item has no instance value, or one the cache shows no instances/
// node of. An assignment the cache has not shown yet is seen at a later
// tick.
func (l *listeners) offlineInCache(cache *reg.CacheView, total int) bool {
	for i := 0; i < total; i++ {
		v, _, ok := cache.Peek(l.s.p.ShardingInstance(i))
		if !ok || len(v) == 0 {
			return true
		}
		if _, _, ok := cache.Peek(l.s.p.Instance(string(v))); !ok {
			return true
		}
	}
	return false
}

// hasShardingInfoInOfflineServers: some item's instance value is not an
// instance child (a missing value counts).
func (l *listeners) hasShardingInfoInOfflineServers(ctx context.Context, total int) (bool, error) {
	ids, err := l.s.children(ctx, l.s.p.Instances())
	if err != nil {
		return false, err
	}
	online := map[string]bool{}
	for _, id := range ids {
		online[id] = true
	}
	for i := 0; i < total; i++ {
		v, _, err := l.s.get(ctx, l.s.p.ShardingInstance(i))
		if err != nil {
			return false, err
		}
		if !online[v] {
			return true, nil
		}
	}
	return false, nil
}
