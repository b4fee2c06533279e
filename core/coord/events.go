package coord

import (
	"bytes"
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

func (j *Job) refreshCachedConfig() {
	if j.cache == nil {
		return
	}
	// The cache's own bytes (Peek), never modified: what configState.parse keeps
	// of them is then shared with the cache, not a second copy.
	data, _, ok := j.cache.Peek(j.s.p.Config())
	if !ok {
		return
	}
	if p := j.conf.parsed.Load(); p != nil && bytes.Equal(p.data, data) {
		// Parsed already (setUpConfig keeps what it wrote): keep the
		// cache's bytes instead of that copy.
		j.conf.parsed.CompareAndSwap(p, &parsedConfig{data: data, cfg: p.cfg})
		j.conf.cur.Store(p.cfg)
		return
	}
	if c, err := j.conf.parse(data); err == nil {
		j.conf.cur.Store(c)
	}
}

// handleEvent runs upstream's data listeners (the ListenerManager's) for one
// event, in their order. It reports whether the instance was shut down from the
// registry.
func (j *Job) handleEvent(ctx context.Context, ev reg.TreeEvent, st *loopState) (shutdown bool) {
	if j.shutdown.Load() || ev.Type == reg.TreeInitialized {
		return false
	}
	rel, ok := j.s.p.Rel(ev.Path)
	if !ok {
		return false
	}
	logErr := func(what string, err error) {
		if err != nil && ctx.Err() == nil {
			j.log.Warn(what+" failed", "path", ev.Path, "event", ev.Type, "error", err)
		}
	}
	switch {
	case rel == node.ConfigNode:
		logErr("config change", j.onConfigEvent(ctx, ev, st))
	case rel == node.LeaderInstanceNode:
		if ev.Type == reg.NodeDeleted {
			logErr("election", j.electIfAvailable(ctx))
		}
	case strings.HasPrefix(rel, node.ServersNode+"/"):
		ip := strings.TrimPrefix(rel, node.ServersNode+"/")
		if !isIPv4(ip) {
			return false
		}
		if ip == j.ip {
			logErr("election", j.onLocalServerEvent(ctx, ev))
		}
		if !j.asg.accounted(ev) {
			logErr("resharding flag", j.serversChanged(ctx))
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
		if ev.Type == reg.NodeDeleted && id != j.id {
			logErr("crash failover", j.failover().onInstanceCrashed(ctx, id))
		}
		if !j.asg.accounted(ev) {
			logErr("resharding flag", j.serversChanged(ctx))
		}
		if ev.Type == reg.NodeDeleted && id != j.id {
			logErr("stale node sweep", j.stale().sweepIfLeader(ctx))
		}
		// (With failover off it does nothing: the job makes no failover
		// state for it.)
		if cfg := j.conf.cur.Load(); ev.Type == reg.NodeAdded && id == j.id && (cfg == nil || cfg.Failover) {
			logErr("legacy crashed items", j.failover().onOwnInstanceAdded(ctx))
		}
		if ev.Type == reg.NodeDeleted && id == j.id {
			return j.isShutdownByConsole(ctx, ev)
		}
	case rel == node.TriggerNode+"/"+j.id:
		if ev.Type == reg.NodeAdded {
			logErr("trigger", j.onTriggerNode(ctx))
		}
	case rel == node.GuaranteeStartedNode || rel == node.GuaranteeCompletedNode:
		j.onGuaranteeEvent(rel, ev)
	case rel == node.ShardingNecessaryNode:
		if ev.Type == reg.NodeDeleted {
			logErr("misfire after resharding", j.mf.afterResharding(ctx))
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
	cfg, err := j.conf.parse(ev.Data)
	if errors.Is(err, ErrConfigInvalid) {
		return nil // logged once by configState.parse; the job waits for a valid one
	}
	if err != nil {
		return err
	}
	j.conf.cur.Store(cfg)
	var errs []error
	if st.curTotal != 0 && cfg.ShardingTotalCount != st.curTotal {
		j.log.Info("shardingTotalCount changed", "from", st.curTotal, "to", cfg.ShardingTotalCount)
		errs = append(errs, j.rsh.setReshardingFlag(ctx))
	}
	st.curTotal = cfg.ShardingTotalCount
	if ev.Type == reg.NodeUpdated && !cfg.Failover {
		errs = append(errs, j.removeFailoverInfo(ctx))
	}
	if ev.Type == reg.NodeUpdated && !cfg.MonitorExecution {
		for i := 0; i < cfg.ShardingTotalCount; i++ {
			errs = append(errs, reg.DeleteRecursive(ctx, j.s.c, j.s.p.Running(i)))
		}
	}
	if ev.Type == reg.NodeUpdated && (cfg.Cron != st.cron || cfg.TimeZone != st.tz) {
		st.cron, st.tz = cfg.Cron, cfg.TimeZone
		j.log.Info("cron changed; rescheduling", "cron", cfg.Cron, "timeZone", cfg.TimeZone)
		j.hooks.Reschedule(cfg.Cron, cfg.TimeZone)
	}
	return errors.Join(errs...)
}

// removeFailoverInfo deletes sharding/*/failover (failover turned off).
func (j *Job) removeFailoverInfo(ctx context.Context) error {
	names, err := j.s.children(ctx, j.s.p.Sharding())
	if err != nil {
		return err
	}
	for _, n := range names {
		if err := reg.DeleteRecursive(ctx, j.s.c, j.s.p.Full(node.ShardingNode+"/"+n+"/"+node.ItemFailover)); err != nil {
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
		names, err := j.s.children(ctx, j.s.p.Sharding())
		if err != nil || len(names) > 0 {
			return err
		}
	}
	return j.rsh.setReshardingFlag(ctx)
}

// isShutdownByConsole: our own instance node was deleted, not by a session
// loss (paused, or a node of an old session) and not re-created since.
func (j *Job) isShutdownByConsole(ctx context.Context, ev reg.TreeEvent) bool {
	if paused, _ := j.Paused(); paused {
		return false
	}
	sess := j.rg.registeredSession()
	if sess == nil || ev.Stat.EphemeralOwner != sess.ID() || sess.Err() != nil {
		return false
	}
	ok, err := j.s.exists(ctx, j.s.p.Instance(j.id))
	if err != nil || ok {
		return false
	}
	j.shutdown.Store(true)
	if _, err := j.elect.Resign(ctx); err != nil {
		j.log.Warn("shutdown: remove leader node failed", "error", err)
	}
	return true
}

// onTriggerNode: delete trigger/{me}; run once unless running
// (TriggerListenerManager).
func (j *Job) onTriggerNode(ctx context.Context) error {
	if err := j.s.c.Delete(ctx, j.s.p.TriggerInstance(j.id), reg.AnyVersion); err != nil && !errors.Is(err, reg.ErrNoNode) {
		return err
	}
	if j.shutdown.Load() || j.att.running.Load() {
		j.log.Info("trigger dropped: job is running")
		return nil
	}
	j.log.Info("triggered from the registry")
	j.hooks.Trigger()
	return nil
}

// reconcile is ReconcileService's tick.
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
	if ok, err := j.s.exists(ctx, j.s.p.ShardingNecessary()); err != nil || ok {
		return err
	}
	offline, err := j.hasShardingInfoInOfflineServers(ctx, cfg.ShardingTotalCount)
	if err != nil || !offline {
		return err
	}
	if cfg.StaticSharding {
		names, err := j.s.children(ctx, j.s.p.Sharding())
		if err != nil || len(names) > 0 {
			return err
		}
	}
	j.log.Warn("job status node has inconsistent value, start reconciling")
	return j.rsh.setReshardingFlag(ctx)
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
	ids, err := j.s.children(ctx, j.s.p.Instances())
	if err != nil {
		return false, err
	}
	online := map[string]bool{}
	for _, id := range ids {
		online[id] = true
	}
	for i := 0; i < total; i++ {
		v, _, err := j.s.get(ctx, j.s.p.ShardingInstance(i))
		if err != nil {
			return false, err
		}
		if !online[v] {
			return true, nil
		}
	}
	return false, nil
}
