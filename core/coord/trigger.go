package coord

import (
	"context"
	"errors"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/ejob-io/ejob/core/config"
	"github.com/ejob-io/ejob/core/executor"
	"github.com/ejob-io/ejob/core/node"
	"github.com/ejob-io/ejob/core/reg"
)

// The trigger path (ShardingContexts, MisfireIfRunning, RegisterBegin,
// RegisterCompleted, ExecuteMisfired, FailoverIfNecessary) reads the job's
// tree cache, which watches every node it needs, and goes to the server
// only where the protocol needs a fresh answer. A steady
// trigger makes one read before its running-node transaction: the stat of
// leader/sharding (see settledAssignment). Where a cached value could be
// stale in a way that matters, the comment at its use says why it cannot
// cause a duplicate run: a fence in the transaction, a fresh read, or a
// fallback to the fresh path when the cache disagrees with the server.
//
// Upstream (ElasticJob-Lite 3.0.x) reads node data through its tree cache
// too (ZookeeperRegistryCenter.get prefers the cache): the assignment
// (sharding/{i}/instance), the server status (servers/{ip}) and the config.
// Its existence checks (running, disabled, failover, misfire, necessary)
// go to the server.

// treeCache returns the job's tree cache once its initial load is done,
// else nil (callers then read the registry).
func (j *Job) treeCache() *reg.CacheView {
	c := j.liveCache.Load()
	if c == nil {
		return nil
	}
	select {
	case <-c.Initialized():
		return c
	default:
		return nil
	}
}

// settledAssignment reads the stat of leader/sharding (the parent of the
// necessary and processing flags) from the server: one request, the only
// read a steady trigger makes before its running-node transaction. It
// reports whether a resharding may be pending (either flag exists: the
// caller then takes upstream's path, fresh reads) and the zxid of the last
// creation or deletion of a flag (0 when leader/sharding does not exist:
// no resharding ever committed, and the assignment is read from the
// server).
func (j *Job) settledAssignment(ctx context.Context) (pending bool, pzxid int64, err error) {
	st, ok, err := j.s.c.Exists(ctx, j.flagsPath())
	if err != nil {
		return false, 0, wrap("read resharding flags", err)
	}
	if !ok {
		return false, 0, nil
	}
	return st.NumChildren > 0, st.Pzxid, nil
}

// cachedAssignment returns this instance's items (ascending) from the tree
// cache, when the cache is known to show the assignment committed last,
// whose flags' deletion the server reported at zxid pzxid (see
// settledAssignment); ok is false otherwise, and the caller reads the
// registry (localShardingItems).
//
// Why this is as fresh as a read from the server: a resharding commit, by
// ejob or by a Java leader, creates every item's instance node in the
// transaction that deletes the necessary and processing flags, so those
// nodes have Czxid == pzxid. A cache that shows every item's instance node
// with a Czxid of at least pzxid has therefore applied that commit, and no
// later one exists (a later one would have moved pzxid, and the flag it
// needed would exist until it committed). A pzxid from some other change
// of the flags (a failed commit's clean-up, a leader's lost session)
// makes the check fail until a fresh read finds the cache in agreement
// with the server at that pzxid (verifiedPzxid, set by readAssignment).
// The verification holds while pzxid stays: the instance nodes change
// only in a resharding, which moves pzxid (a Java leader deletes the old
// ones outside its commit, but after creating the processing flag).
func (j *Job) cachedAssignment(cache *reg.CacheView, total int, pzxid int64) ([]int, bool) {
	if cache == nil || j.shutdown.Load() {
		return nil, false
	}
	items, minCzxid, ok := j.assignmentInCache(cache, total)
	if !ok || !j.assignmentSettledAt(minCzxid, pzxid) {
		return nil, false
	}
	return items, true
}

// assignmentInCache returns this instance's items (ascending) as the tree
// cache shows the assignment, and the oldest Czxid among the items'
// instance nodes; ok is false when the cache lacks one of them.
func (j *Job) assignmentInCache(cache *reg.CacheView, total int) (items []int, minCzxid int64, ok bool) {
	minCzxid = math.MaxInt64 // no item: nothing to be stale
	for i := range total {
		v, st, found := cache.Peek(j.itemPath(i, "instance"))
		if !found {
			return nil, 0, false
		}
		minCzxid = min(minCzxid, st.Czxid)
		if string(v) == j.id {
			items = append(items, i)
		}
	}
	return items, minCzxid, true
}

// assignmentSettledAt reports whether a cache whose oldest instance node
// has Czxid minCzxid shows the assignment committed last, given the pzxid
// of leader/sharding read from the server (settledAssignment) after the
// cache was read: see cachedAssignment.
func (j *Job) assignmentSettledAt(minCzxid, pzxid int64) bool {
	return pzxid != 0 && (minCzxid >= pzxid || j.verifiedPzxid.Load() == pzxid)
}

// readAssignment reads this instance's items (ascending) from the
// registry, one Get per item (upstream's getLocalShardingItems, without the
// server check, which the caller made). When settledAssignment found no
// flag at pzxid and every node read agrees with the tree cache (data and
// Czxid), later triggers may use the cache while pzxid stays the same
// (verifiedPzxid, see cachedAssignment).
func (j *Job) readAssignment(ctx context.Context, cache *reg.CacheView, total int, pzxid int64) ([]int, error) {
	agree := cache != nil && pzxid != 0
	var items []int
	for i := range total {
		v, st, err := j.s.c.Get(ctx, j.itemPath(i, "instance"))
		if errors.Is(err, reg.ErrNoNode) {
			agree = false
			continue
		}
		if err != nil {
			return nil, err
		}
		if string(v) == j.id {
			items = append(items, i)
		}
		if agree {
			cv, cst, ok := cache.Peek(j.itemPath(i, "instance"))
			agree = ok && string(cv) == string(v) && cst.Czxid == st.Czxid
		}
	}
	if agree {
		j.verifiedPzxid.Store(pzxid)
	}
	return items, nil
}

// availableInCache reports whether this server is available (ENABLED, and
// an instance lives on its IP) as the tree cache shows it; ok is false
// when the cache does not show servers/{ip} with a value (the registry is
// then read, with upstream's retries).
//
// The cache may lag a console's DISABLED by one watch delivery: upstream
// reads this node through its tree cache too. Disabling a server makes
// the leader flag a resharding, which settledAssignment reads fresh.
func (j *Job) availableInCache(cache *reg.CacheView) (available, ok bool) {
	if cache == nil {
		return false, false
	}
	v, _, found := cache.Peek(j.serverPath())
	if !found || len(v) == 0 {
		return false, false
	}
	if string(v) != node.ServerEnabled {
		return false, true
	}
	on := false
	cache.EachChild(j.instancesPath(), func(id string) bool {
		on = ipPrefix(id) == j.ip
		return !on
	})
	return on, true
}

// cachedItemsWith returns the items among items whose node name exists in
// the tree cache.
func (j *Job) cachedItemsWith(cache *reg.CacheView, items []int, name string) []int {
	var out []int
	for _, i := range items {
		if _, _, ok := cache.Peek(j.itemPath(i, name)); ok {
			out = append(out, i)
		}
	}
	return out
}

// runningInCache returns the items among items that the tree cache shows
// running. A running node naming this instance while no execution runs
// here is not counted: it is this instance's own, either just deleted (the
// cache has not seen the deletion yet) or left by a cut-off execution,
// which recoverIfIdle clears and RegisterBegin's fallback replaces.
//
// A running node another instance created a moment ago may be missing:
// the running-node transaction then fails on it (its create finds the
// node), so the item never runs twice at once (RegisterBegin). The
// callers confirm the items it returns on the server (runningItems).
func (j *Job) runningInCache(cache *reg.CacheView, items []int) []int {
	var out []int
	for _, i := range items {
		v, _, ok := cache.Peek(j.itemPath(i, "running"))
		if ok && (string(v) != j.id || j.running.Load()) {
			out = append(out, i)
		}
	}
	return out
}

// beginFast is RegisterBegin's transaction with the fence taken from the
// tree cache: the instance node's version as the cache shows it, provided
// the cache shows it owned by the current session. The check op makes the
// server verify it, so a stale cache can only make the transaction fail,
// never pass: the caller then takes the fresh path, which also reports
// any other failure (a lost connection: ErrSessionLost). It
// reports whether it committed, and the transaction's results.
func (j *Job) beginFast(ctx context.Context, sess *reg.Session, ops []reg.Op) ([]reg.OpResult, bool) {
	cache := j.treeCache()
	if cache == nil {
		return nil, false
	}
	fence, ok := j.fastFence(cache, sess)
	if !ok {
		return nil, false
	}
	res, err := j.s.c.Multi(ctx, append([]reg.Op{fence}, ops...)...)
	return res, err == nil
}

// completeFast deletes the items' running nodes (and, with failover,
// their failover and failovering nodes naming this instance) in one
// transaction, from what the tree cache and this process know. It reports
// whether it did; when it did not (the cache does not know enough, or the
// transaction failed because a node is gone or changed), the caller takes
// the fresh path, which reads each node and deletes only this instance's
// (and reports a failure that is not about the nodes).
//
// The running nodes were created by this execution's RegisterBegin at
// version 0; the cache may not have seen them yet. A node the cache shows
// naming another instance sends the caller to the fresh path: the cache
// may not have seen this execution replace it. Another instance can only replace
// this instance's running node after its instance node is gone (the stale sweep,
// crash handling), i.e. after its session ended; RegisterCompleted handles that
// case before (the execution's lease is dead).
func (j *Job) completeFast(ctx context.Context, items []int, monitor, failover bool) bool {
	cache := j.treeCache()
	if cache == nil {
		return false
	}
	var ops []reg.Op
	blind := false // a running node deleted at version 0, unseen by the cache
	for _, i := range items {
		if monitor {
			v, st, ok := cache.Peek(j.itemPath(i, "running"))
			switch {
			case !ok:
				// Not in the cache yet (a run shorter than the cache's
				// round): deleted at version 0, fenced below.
				blind = true
				ops = append(ops, reg.DeleteOp(j.itemPath(i, "running"), 0))
			case string(v) == j.id:
				ops = append(ops, reg.DeleteOp(j.itemPath(i, "running"), st.Version))
			default:
				// Another instance's node in the cache may be stale: a
				// failover run's begin replaced the crashed owner's node
				// a moment ago and the cache has not caught up. Leaving
				// it would leave this run's node behind for good (a
				// stuck running node blocks resharding): read it fresh.
				return false
			}
		}
		if !failover {
			continue
		}
		if j.foState().claimed(i) {
			return false // a claim the cache may not show yet
		}
		for _, n := range []string{"failover", "failovering"} {
			v, st, ok := cache.Peek(j.itemPath(i, n))
			switch {
			case ok && string(v) == j.id:
				ops = append(ops, reg.DeleteOp(j.itemPath(i, n), st.Version))
			case ok:
				return false // possibly stale, as above
			}
		}
	}
	if len(ops) == 0 {
		return true
	}
	if blind {
		// A version-0 delete matches any node created at that path:
		// fenced on this instance's node of the current session as the
		// cache shows it, so that it cannot land after the session ended
		// and another instance's node replaced ours.
		sess := j.s.c.Session()
		if sess == nil {
			return false
		}
		fence, ok := j.fastFence(cache, sess)
		if !ok {
			return false
		}
		ops = append([]reg.Op{fence}, ops...)
	}
	_, err := j.s.c.Multi(ctx, ops...)
	return err == nil
}

// misfireCandidates are the items among items that may have a misfire
// flag: the tree cache shows one, or this process set one. With no
// candidate, ExecuteMisfired answers without a request. It is used for
// this instance's own items only (ownInCache): their flags are set by this
// process (a fire skipped while they ran). The flags of a failover run's
// items are set by their owner, whose fire found them running here
// (ShardingContexts), possibly a moment before the run ends: those are
// read from the server, so that the run catches the fire up at once.
// A flag on an own item that another instance set a moment ago (its
// assignment was stale) is served by the pump (runPendingMisfires), as a
// flag that arrives just after a fresh read would be.
func (j *Job) misfireCandidates(cache *reg.CacheView, items []int) []int {
	return j.mis.Load().withSet(j.cachedItemsWith(cache, items, "misfire"), items)
}

// ownInCache reports whether the tree cache shows every item of items
// assigned to this instance.
func (j *Job) ownInCache(cache *reg.CacheView, items []int) bool {
	for _, i := range items {
		if v, _, ok := cache.Peek(j.itemPath(i, "instance")); !ok || string(v) != j.id {
			return false
		}
	}
	return true
}

// failoverQueuedInCache reports whether the tree cache shows queued
// failover items (leader/failover/items has children).
func (j *Job) failoverQueuedInCache(cache *reg.CacheView) bool {
	names, _ := cache.Children(j.s.p.FailoverItems())
	return len(names) > 0
}

// A steady trigger's two requests before its first item, the stat of
// leader/sharding (settledAssignment) and the running-node transaction
// (beginFast), are sent together: pipelinedContexts computes the whole
// trigger from the tree cache, sends both, and keeps the running nodes
// only when the stat confirms what the cache showed (no resharding
// pending, the assignment the cache showed is the one committed last).
// Otherwise it deletes them again (undoBegin) and the trigger takes the
// sequential path, which reads the stat afresh and, with a resharding
// pending, waits for it as upstream does. RegisterBegin then adopts the
// running nodes instead of writing them (adoptPreBegun).
//
// Why this keeps every guarantee of docs/guarantees.md:
//
//   - No item starts before the stat has confirmed the assignment: the
//     running nodes are kept only then, and the items run after
//     ShardingContexts returns. The confirmation is the one the sequential
//     path makes (cachedAssignment's argument) on a cache read before the
//     stat was sent rather than after its answer: the assignment the
//     cache showed is no newer than the state the stat describes, and a
//     commit after it would have moved pzxid past the Czxid of the
//     instance nodes it showed.
//   - Never two instances running one item at once: the transaction is
//     the same one, fenced on this instance's node in its current session
//     (the fence from the cache, checked by the server), and creating a
//     node fails on another instance's node.
//   - The server answers one session's requests in the order it received
//     them, and go-zookeeper writes the requests of one connection in the
//     order they were queued (one send loop over one channel), but this
//     client queues each call from a goroutine of its own, so either may
//     come first. Nothing relies on the order: when the stat confirms the
//     cache, no flag existed from the commit the cache showed until the
//     stat; a transaction applied before the stat applied in that
//     interval, one applied after it is the sequential path's order.
//   - What others can observe in between, when the stat shows a
//     resharding pending (or the cache out of date): this instance's
//     running nodes of the items the cache assigned it appear and vanish
//     within a round trip, their items never having started. A Java peer
//     or the console cannot tell them from an execution of items that
//     return at once. A leader that read the running nodes while they
//     existed waits one more poll before committing; one that read before
//     they appeared may commit while they exist, and then they vanish
//     without a run. Upstream already does more in that race: an
//     instance whose check of the flag came just before the flag was set
//     goes on to create its running nodes and run its old items while the
//     leader reshards. A resharding commit never conflicts with the nodes
//     (it does not touch running nodes), and the undo deletes only the
//     nodes that name this instance (undoBegin), so it never deletes
//     another instance's node, whatever became of the session meanwhile.
//   - Between ShardingContexts and RegisterBegin the executor posts the
//     staging event, asks MisfireIfRunning (the pre-begun items are this
//     execution's: false) and runs the before-listeners; the running
//     nodes exist during those, where upstream creates them after the
//     before-listeners: to an observer the execution's nodes appear
//     earlier by that time, and a crash in that window leaves them to
//     failover as a crash right after RegisterBegin does. An execution
//     abandoned in that window (a listener's error propagated) has them
//     deleted after preBeginTimeout. From just before the transaction this instance
//     counts as running (j.running), so the pump, a console trigger and
//     the recovery of its running nodes leave them alone, as they leave
//     a run's; it stops counting when they are deleted again. When the
//     deletion fails (the connection is lost), the nodes are left to that
//     recovery (needRecover), as a cut-off run's are.

// preBeginTimeout bounds how long running nodes sent with a trigger's
// resharding check wait for RegisterBegin to adopt them.
const preBeginTimeout = time.Second

// preBegin is the running-node transaction a trigger sent with its
// resharding check (pipelinedContexts), until RegisterBegin adopts it.
type preBegin struct {
	mu  sync.Mutex // held across an undo: adoption and undo never overlap
	rec *begun
	// timer calls expirePreBegun preBeginTimeout after the last record;
	// made at the job's first, re-armed by the next ones.
	timer *time.Timer
}

// begun is a committed running-node transaction not yet adopted.
type begun struct {
	items []int
	lease *lease
	res   []reg.OpResult // the transaction's (putFencingTokens)
	// deadline is when RegisterBegin is given up on (expirePreBegun).
	deadline time.Time
}

// pipelinedContexts is ShardingContexts for a steady trigger: when the
// tree cache shows everything the trigger needs (no resharding flag, no
// failover work of this instance, its items with no failover, disabled or
// running flag), it sends the stat of leader/sharding and the running-node
// transaction at once and returns the contexts with the running nodes
// created (ok). ok is false when the cache does not suffice or the stat
// did not confirm it (the running nodes are then deleted again); the
// caller takes the sequential path. An error is one of the undo, which
// left running nodes behind.
func (j *Job) pipelinedContexts(ctx context.Context, cfg *config.JobConfiguration, cache *reg.CacheView) (executor.ShardingContexts, bool, error) {
	var none executor.ShardingContexts
	items, minCzxid, ok := j.steadyItemsInCache(cfg, cache)
	if !ok {
		return none, false, nil
	}
	sess, l, err := j.sessionLease()
	if err != nil {
		return none, false, nil
	}
	fence, ok := j.fastFence(cache, sess)
	if !ok {
		return none, false, nil
	}
	sc, running, err := j.contexts(ctx, cache, items)
	if err != nil || len(running) > 0 || len(sc.Items) == 0 {
		return none, false, nil
	}
	// From here this instance counts as running (see above), before its
	// running nodes can be seen.
	j.running.Store(true)
	sent := time.Now()
	f, res, merr := j.statAndBegin(ctx, j.runningOps(cfg, sc.Items, fence))
	j.armLead().record(time.Since(sent)) // the lead of a pre-arm (prearm.go)
	settled := f.err == nil && f.exists && f.st.NumChildren == 0 && j.assignmentSettledAt(minCzxid, f.st.Pzxid)
	var me *reg.MultiError
	switch {
	case merr == nil && settled:
		j.recordPreBegun(sc.Items, l, res)
		return sc, true, j.handOverCatchUp(ctx, sc.Items)
	case merr == nil || !errors.As(merr, &me):
		// Created, or maybe (the outcome of a transaction cut off by a
		// lost connection is unknown): delete them again.
		j.log.Debug("resharding pending or assignment unconfirmed at the trigger; running nodes undone", "items", sc.Items, "error", merr)
		if err := j.undoBegin(ctx, sc.Items); err != nil {
			// Left to the recovery of this instance's running nodes,
			// once this trigger has ended (as after a cut-off run).
			j.failover().needRecover.Store(true)
			j.running.Store(false)
			return none, false, wrap("undo running nodes", err)
		}
	}
	j.running.Store(false)
	return none, false, nil
}

// flagsStat is the answer to the stat of leader/sharding.
type flagsStat struct {
	st     reg.Stat
	exists bool
	err    error
}

// statAndBegin sends the stat of leader/sharding and the running-node
// transaction ops together (pipelinedContexts): the stat from a goroutine
// of its own, so that both round trips overlap; on an in-process registry
// (reg.IsInProcess) the stat, then the transaction, from this goroutine.
func (j *Job) statAndBegin(ctx context.Context, ops []reg.Op) (flagsStat, []reg.OpResult, error) {
	stat := func() flagsStat {
		st, exists, err := j.s.c.Exists(ctx, j.flagsPath())
		return flagsStat{st, exists, err}
	}
	if j.inProcess {
		f := stat()
		res, err := j.s.c.Multi(ctx, ops...)
		return f, res, err
	}
	flags := make(chan flagsStat, 1)
	go func() { flags <- stat() }()
	res, err := j.s.c.Multi(ctx, ops...)
	return <-flags, res, err
}

// steadyItemsInCache returns this instance's items for a steady trigger
// from the tree cache, and the oldest Czxid of the instance nodes the
// cache showed (for assignmentSettledAt); ok is false when a step of
// ShardingContexts would need the server: a resharding flag, a recovery
// or failover work of this instance, an unavailable server, a catch-up
// moving away, a failover, disabled or running flag on an item, or no
// monitorExecution (no transaction to pipeline).
func (j *Job) steadyItemsInCache(cfg *config.JobConfiguration, cache *reg.CacheView) (items []int, minCzxid int64, ok bool) {
	if cache == nil || !cfg.MonitorExecution || j.shutdown.Load() || j.foState().recovering() || j.running.Load() {
		return nil, 0, false
	}
	j.warmPaths(cfg.ShardingTotalCount)
	flagged := false
	if found := cache.EachChild(j.flagsPath(), func(string) bool { flagged = true; return false }); !found || flagged {
		return nil, 0, false
	}
	if cfg.Failover && (j.foState().hasClaims() || j.claimedInCache()) {
		return nil, 0, false
	}
	if avail, found := j.availableInCache(cache); !found || !avail {
		return nil, 0, false
	}
	items, minCzxid, ok = j.assignmentInCache(cache, cfg.ShardingTotalCount)
	if !ok || len(items) == 0 {
		return nil, 0, false
	}
	if len(j.mis.Load().catchUpMoved(items)) > 0 {
		return nil, 0, false
	}
	if cfg.Failover && len(j.cachedItemsWith(cache, items, "failover")) > 0 {
		return nil, 0, false
	}
	if len(j.cachedItemsWith(cache, items, "disabled")) > 0 || len(j.runningInCache(cache, items)) > 0 {
		return nil, 0, false
	}
	return items, minCzxid, true
}

// runningOps are first, then the creations of the items' running nodes
// (persistent with failover, so that a crash leaves them for the
// survivors).
func (j *Job) runningOps(cfg *config.JobConfiguration, items []int, first ...reg.Op) []reg.Op {
	mode := reg.Ephemeral
	if cfg.Failover {
		mode = reg.Persistent
	}
	ops := make([]reg.Op, len(first), len(first)+len(items))
	copy(ops, first)
	var id []byte
	if h := j.hot.Load(); h != nil {
		id = h.id // shared: no client modifies an op's data
	} else {
		id = []byte(j.id)
	}
	for _, i := range items {
		ops = append(ops, reg.CreateOp(j.itemPath(i, "running"), id, mode))
	}
	return ops
}

// recordPreBegun keeps a committed running-node transaction for
// RegisterBegin, and arms its undo should RegisterBegin not come.
func (j *Job) recordPreBegun(items []int, l *lease, res []reg.OpResult) {
	rec := &begun{items: slices.Clone(items), lease: l, res: res, deadline: time.Now().Add(preBeginTimeout)}
	j.pre.mu.Lock()
	defer j.pre.mu.Unlock()
	j.pre.rec = rec
	if j.pre.timer == nil {
		j.pre.timer = time.AfterFunc(preBeginTimeout, j.expirePreBegun)
	} else {
		j.pre.timer.Reset(preBeginTimeout)
	}
}

// expirePreBegun deletes the running nodes recorded by recordPreBegun
// when RegisterBegin has not adopted them by their deadline. A call for a
// record adopted since (the timer's func may start just as it is
// stopped) finds the next record before its deadline, or none.
func (j *Job) expirePreBegun() {
	j.pre.mu.Lock()
	rec := j.pre.rec
	j.pre.mu.Unlock()
	if rec == nil || time.Now().Before(rec.deadline) {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), preBeginTimeout)
	defer cancel()
	if j.dropPreBegun(ctx, rec) {
		j.log.Warn("running nodes of a trigger whose execution did not begin were deleted", "items", rec.items)
	}
}

// adoptPreBegun reports whether RegisterBegin of sc finds its running
// nodes created by the trigger (pipelinedContexts) under the live lease
// it would use; the execution then runs under that lease. Running nodes
// of another set of items, or of a lease that ended, are deleted first
// (the caller then takes its own path).
func (j *Job) adoptPreBegun(ctx context.Context, sc executor.ShardingContexts) bool {
	j.pre.mu.Lock()
	rec := j.pre.rec
	if rec == nil {
		j.pre.mu.Unlock()
		return false
	}
	_, l, err := j.sessionLease()
	if err == nil && l == rec.lease && slices.Equal(rec.items, sc.Items) {
		j.pre.timer.Stop()
		j.pre.rec = nil
		j.beginLease.Store(l)
		j.pre.mu.Unlock()
		putFencingTokens(sc, rec.res)
		return true
	}
	j.pre.mu.Unlock()
	j.dropPreBegun(ctx, rec)
	return false
}

// preBegunFor reports whether items are those whose running nodes this
// trigger created and RegisterBegin has not adopted yet.
func (j *Job) preBegunFor(items []int) bool {
	j.pre.mu.Lock()
	defer j.pre.mu.Unlock()
	return j.pre.rec != nil && slices.Equal(j.pre.rec.items, items)
}

// dropPreBegun deletes the running nodes of rec (or of whatever is
// recorded, when rec is nil) unless RegisterBegin adopted them, and
// reports whether it did. A failed deletion is left to the recovery of
// this instance's running nodes (needRecover).
func (j *Job) dropPreBegun(ctx context.Context, rec *begun) bool {
	j.pre.mu.Lock()
	defer j.pre.mu.Unlock()
	if j.pre.rec == nil || (rec != nil && j.pre.rec != rec) {
		return false
	}
	rec, j.pre.rec = j.pre.rec, nil
	j.pre.timer.Stop()
	if err := j.undoBegin(ctx, rec.items); err != nil {
		j.log.Warn("cannot delete the running nodes of a trigger that did not begin; left to recovery", "items", rec.items, "error", err)
		j.failover().needRecover.Store(true)
	}
	j.running.Store(false)
	return true
}

// undoBegin deletes the running nodes of items that name this instance,
// one by one. A transaction deleting them at version 0, fenced on this
// instance's node at the version the begin saw, would prove nothing once
// the session the begin ran in has ended: the instance node of the next
// session has the same version (0), and a running node another instance
// created meanwhile has the same version as ours (0). Such an undo, made
// in the next session for a begin whose outcome a lost connection left
// unknown, deletes the node of the instance that took the item over, and
// the item then runs on both (TestUndoBeginInALaterSession).
func (j *Job) undoBegin(ctx context.Context, items []int) error {
	for _, i := range items {
		if _, err := j.s.deleteIfValue(ctx, j.itemPath(i, "running"), j.id); err != nil {
			return err
		}
	}
	return nil
}

// fastFence is the check of this instance's node at the version the tree
// cache shows, provided the cache shows it owned by sess, the current
// session; ok is false otherwise.
func (j *Job) fastFence(cache *reg.CacheView, sess *reg.Session) (reg.Op, bool) {
	_, st, ok := cache.Peek(j.instancePath())
	if !ok || st.EphemeralOwner != sess.ID() || sess.Err() != nil || j.s.c.Session() != sess {
		return reg.Op{}, false
	}
	return reg.CheckOp(j.instancePath(), st.Version), true
}
