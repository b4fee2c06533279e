package coord

import (
	"context"
	"errors"
	"math"
	"slices"
	"sync/atomic"

	"github.com/ejob-io/ejob/core/node"
	"github.com/ejob-io/ejob/core/reg"
	"github.com/ejob-io/ejob/spi"
)

// assignment is this instance's reading of the job's sharding assignment
// and its zxid accounting, their one owner: whether a resharding is
// pending (the stat of leader/sharding), this instance's items from the
// tree cache when the cache is known to show the assignment committed
// last, else from the server, and the zxids that say which membership
// changes an assignment already accounts for. The resharding itself
// (resharding.go) is the leader's protocol and keeps no state of its own.
type assignment struct {
	*jobBase
	// What the reads of this instance's items stand on: the server's
	// availability (leadership's reads), the config, the shutdown.
	// verifiedPzxid is the pzxid of leader/sharding at which a fresh read
	// found the tree cache showing the committed assignment (see cached).
	// Written by read (a trigger), read by every trigger and pre-arm
	// (settledAt), on the goroutines of their executions: atomic.
	verifiedPzxid atomic.Int64
	// accountedZxid is the zxid of this instance's last committed
	// resharding: membership changes older than it are in that assignment
	// or flagged again after it (reshardAgainIfChanged), so their late
	// events flag nothing (see accounted). Written by the leader's
	// resharding (a trigger) and the startup, read by the event loop:
	// atomic.
	accountedZxid atomic.Int64
}

// batched is how a trigger sends the requests it makes at every fire, the
// stat of leader/sharding and the running-node transaction. On a remote
// registry they go through the Namespace's BatchReader and BatchWriter
// (reads, writes): the jobs of a host fire together (every job whose cron
// names the same second), and their stats then go out in a few multiReads
// and their transactions in a few Multis instead of a request each (with
// 100 jobs of 4 items on 10 hosts, a stat per trigger would be half the
// registry's requests per item-run, and ZooKeeper commits transactions one
// after another, so each one more holds the items back). A batched read is as fresh as a
// plain one, sent after the call began; a batched transaction is sent once
// (BatchWriter.MultiResults), its results are its own, and it fails for
// its own ops only. On an in-process registry (reads and writes nil) a
// request is a function call, which a batch would only hand to another
// goroutine: plain requests.
type batched struct {
	c      reg.Client
	reads  *reg.BatchReader
	writes *reg.BatchWriter
}

// stat returns the stat of path and whether it exists.
func (b batched) stat(ctx context.Context, path string) (reg.Stat, bool, error) {
	if b.reads == nil {
		return b.c.Exists(ctx, path)
	}
	res, err := b.reads.Read(ctx, reg.GetOp(path))
	switch {
	case err != nil:
		return reg.Stat{}, false, err
	case errors.Is(res[0].Err, reg.ErrNoNode):
		return reg.Stat{}, false, nil
	case res[0].Err != nil:
		return reg.Stat{}, false, res[0].Err
	}
	return res[0].Stat, true, nil
}

// multi applies ops in one transaction, as Client.Multi does.
func (b batched) multi(ctx context.Context, ops []reg.Op) ([]reg.OpResult, error) {
	if b.writes == nil {
		return b.c.Multi(ctx, ops...)
	}
	return b.writes.MultiResults(ctx, ops...)
}

// settled reads the stat of leader/sharding (the parent of the
// necessary and processing flags) from the server with bt: one request
// (or a share of a batch), the only read a steady trigger makes before
// its running-node transaction. It
// reports whether a resharding may be pending (either flag exists: the
// caller then takes upstream's path, fresh reads) and the zxid of the last
// creation or deletion of a flag (0 when leader/sharding does not exist:
// no resharding ever committed, and the assignment is read from the
// server).
func (a *assignment) settled(ctx context.Context, bt batched) (pending bool, pzxid int64, err error) {
	st, ok, err := bt.stat(ctx, a.paths.flags())
	if err != nil {
		return false, 0, wrap("read resharding flags", err)
	}
	if !ok {
		return false, 0, nil
	}
	return st.NumChildren > 0, st.Pzxid, nil
}

// cached returns this instance's items (ascending) from the tree
// cache, when the cache is known to show the assignment committed last,
// whose flags' deletion the server reported at zxid pzxid (see
// settled); ok is false otherwise, and the caller reads the
// registry (localItems).
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
// with the server at that pzxid (verifiedPzxid, set by read).
// The verification holds while pzxid stays: the instance nodes change
// only in a resharding, which moves pzxid (a Java leader deletes the old
// ones outside its commit, but after creating the processing flag).
func (a *assignment) cached(cache *reg.CacheView, total int, pzxid int64) ([]int, bool) {
	if cache == nil {
		return nil, false
	}
	items, minCzxid, ok := a.inCache(cache, total)
	if !ok || !a.settledAt(minCzxid, pzxid) {
		return nil, false
	}
	return items, true
}

// inCache returns this instance's items (ascending) as the tree
// cache shows the assignment, and the oldest Czxid among the items'
// instance nodes; ok is false when the cache lacks one of them.
func (a *assignment) inCache(cache *reg.CacheView, total int) (items []int, minCzxid int64, ok bool) {
	minCzxid = math.MaxInt64 // no item: nothing to be stale
	for i := range total {
		v, st, found := cache.Peek(a.paths.item(i, "instance"))
		if !found {
			return nil, 0, false
		}
		minCzxid = min(minCzxid, st.Czxid)
		if string(v) == a.id {
			items = append(items, i)
		}
	}
	return items, minCzxid, true
}

// settledAt reports whether a cache whose oldest instance node
// has Czxid minCzxid shows the assignment committed last, given the pzxid
// of leader/sharding read from the server (settled) after the
// cache was read: see cached.
func (a *assignment) settledAt(minCzxid, pzxid int64) bool {
	return pzxid != 0 && (minCzxid >= pzxid || a.verifiedPzxid.Load() == pzxid)
}

// read reads this instance's items (ascending) from the
// registry, one Get per item (upstream's getLocalShardingItems, without the
// server check, which the caller made). When settled found no
// flag at pzxid and every node read agrees with the tree cache (data and
// Czxid), later triggers may use the cache while pzxid stays the same
// (verifiedPzxid, see cached).
func (a *assignment) read(ctx context.Context, cache *reg.CacheView, total int, pzxid int64) ([]int, error) {
	agree := cache != nil && pzxid != 0
	var items []int
	for i := range total {
		v, st, err := a.s.c.Get(ctx, a.paths.item(i, "instance"))
		if errors.Is(err, reg.ErrNoNode) {
			agree = false
			continue
		}
		if err != nil {
			return nil, err
		}
		if string(v) == a.id {
			items = append(items, i)
		}
		if agree {
			cv, cst, ok := cache.Peek(a.paths.item(i, "instance"))
			agree = ok && string(cv) == string(v) && cst.Czxid == st.Czxid
		}
	}
	if agree {
		a.verifiedPzxid.Store(pzxid)
	}
	return items, nil
}

// noteCommit records the zxid of the commit of result just made (the
// Czxid of an instance node it created) in accountedZxid. One read per
// resharding.
func (a *assignment) noteCommit(ctx context.Context, result []spi.Assignment) {
	for _, r := range result {
		if len(r.Items) == 0 {
			continue
		}
		st, ok, err := a.s.c.Exists(ctx, a.s.p.ShardingInstance(r.Items[0]))
		if err != nil || !ok {
			return
		}
		a.account(st.Czxid)
		return
	}
}

// account raises accountedZxid to z: the membership changes older than z
// are in an assignment this instance committed or flagged for.
func (a *assignment) account(z int64) {
	if z > a.accountedZxid.Load() {
		a.accountedZxid.Store(z)
	}
}

// accounted reports whether ev, the addition or change of an
// instances/ or servers/ node, happened before this instance's last
// committed resharding (its Mzxid is older). That commit read the
// membership after it, and reshardAgainIfChanged compared it again after
// the commit, so the change needs no new resharding. Without this, the
// late events of an instance's own registration (its instance and server
// nodes, written before the first resharding but seen by the event loop
// after it) flagged one more resharding right after the first, and a
// trigger of the non-leaders then waited for the leader's next one.
// Deletions carry no zxid of their own and always flag.
func (a *assignment) accounted(ev reg.TreeEvent) bool {
	return ev.Type != reg.NodeDeleted && ev.Stat.Mzxid != 0 && ev.Stat.Mzxid < a.accountedZxid.Load()
}

// triggerItems are this instance's items for a trigger: from the tree
// cache when shardingIfNecessary found the assignment settled and the
// cache shows it (assignment.cached, cacheReads.available), else read from the
// registry as upstream does.
func (a *assignment) triggerItems(ctx context.Context, cache *reg.CacheView, total int, settled bool, pzxid int64) ([]int, error) {
	if !settled || cache == nil {
		return a.localItems(ctx)
	}
	if a.job.life.shutdown.Load() {
		return nil, nil
	}
	avail, ok := cacheReads{jobBase: a.jobBase}.available(cache)
	if !ok {
		if avail, err := a.job.ldr.isAvailableServer(ctx, a.ip); err != nil || !avail {
			return nil, err
		}
	} else if !avail {
		return nil, nil
	}
	if items, ok := a.cached(cache, total, pzxid); ok && !a.job.life.shutdown.Load() {
		return items, nil
	}
	return a.read(ctx, cache, total, pzxid)
}

// availableInstances lists instance ids (descending) whose server is
// ENABLED, skipping nodes without data
// (InstanceService.getAvailableJobInstances), from a fresh read
// (readMembership).
func (a *assignment) availableInstances(ctx context.Context) ([]string, error) {
	m, err := a.readMembership(ctx, "")
	if err != nil {
		return nil, err
	}
	return m.available(ctx, a.job)
}

// membership is a fresh read of the job's instances and of the servers
// they are on (readMembership).
type membership struct {
	ids []string // the instance ids, descending
	ips []string // each one's server IP, from its value ("" without data)
	// servers are the values of the servers read, by IP ("" for a
	// missing node).
	servers map[string]string
}

// readMembership reads the instance ids, then in one read the instance
// nodes and the servers of the IPs the ids name (an id is "{ip}@-@{pid}")
// and of extra (if not ""), and the servers of IPs only an instance's
// value names (an id whose prefix is not its serverIp) in one more: two
// round trips where upstream makes two reads per instance.
func (a *assignment) readMembership(ctx context.Context, extra string) (*membership, error) {
	ids, err := a.s.children(ctx, a.s.p.Instances())
	if err != nil {
		return nil, err
	}
	m := &membership{ids: ids, ips: make([]string, len(ids)), servers: make(map[string]string, 2)}
	paths := make([]string, len(ids), 2*len(ids)+1)
	for i, id := range ids {
		paths[i] = a.s.p.Instance(id)
	}
	var guessed []string // the IPs of the servers read with the instances
	guess := func(ip string) {
		if ip != "" && !slices.Contains(guessed, ip) {
			guessed = append(guessed, ip)
			paths = append(paths, a.s.p.Server(ip))
		}
	}
	for _, id := range ids {
		guess(ipPrefix(id))
	}
	guess(extra)
	// getMany reads a missing node as "".
	data, ok, err := a.s.getMany(ctx, paths)
	if err != nil {
		return nil, err
	}
	for i, ip := range guessed {
		m.servers[ip] = data[len(ids)+i]
	}
	var more []string // IPs the values name, not read yet
	for i, id := range ids {
		if !ok[i] || data[i] == "" {
			continue
		}
		ip := node.InstanceServerIP(id, []byte(data[i]))
		m.ips[i] = ip
		if _, read := m.servers[ip]; !read && !slices.Contains(more, ip) {
			more = append(more, ip)
		}
	}
	if len(more) > 0 {
		paths = paths[:0]
		for _, ip := range more {
			paths = append(paths, a.s.p.Server(ip))
		}
		status, _, err := a.s.getMany(ctx, paths)
		if err != nil {
			return nil, err
		}
		for i, ip := range more {
			m.servers[ip] = status[i]
		}
	}
	return m, nil
}

// enabled reports whether the server of ip is ENABLED as m read it; a
// server found missing or empty (not read, too) is read again as upstream
// does (isEnableServer), and its answer kept.
func (m *membership) enabled(ctx context.Context, j *Job, ip string) (bool, error) {
	if v := m.servers[ip]; v != "" {
		return v == node.ServerEnabled, nil
	}
	ok, err := j.ldr.isEnableServer(ctx, ip)
	if err != nil {
		return false, err
	}
	if ok {
		m.servers[ip] = node.ServerEnabled
	} else {
		m.servers[ip] = node.ServerDisabled
	}
	return ok, nil
}

// available is availableInstances of m.
func (m *membership) available(ctx context.Context, j *Job) ([]string, error) {
	var out []string
	for i, id := range m.ids {
		if m.ips[i] == "" {
			continue
		}
		ok, err := m.enabled(ctx, j, m.ips[i])
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, id)
		}
	}
	return out, nil
}

// serverAvailable is isAvailableServer(ip) of m: the server ENABLED and
// some instance id on ip.
func (m *membership) serverAvailable(ctx context.Context, j *Job, ip string) (bool, error) {
	ok, err := m.enabled(ctx, j, ip)
	if err != nil || !ok {
		return false, err
	}
	for _, id := range m.ids {
		if ipPrefix(id) == ip {
			return true, nil
		}
	}
	return false, nil
}

// localItems are the items assigned to this instance, ascending
// (ShardingService.getLocalShardingItems); none when this server is not
// available.
func (a *assignment) localItems(ctx context.Context) ([]int, error) {
	if a.job.life.shutdown.Load() {
		return nil, nil
	}
	if ok, err := a.job.ldr.isAvailableServer(ctx, a.ip); err != nil || !ok {
		return nil, err
	}
	cfg, err := a.job.conf.get(ctx)
	if err != nil {
		return nil, err
	}
	var items []int
	for i := 0; i < cfg.ShardingTotalCount; i++ {
		v, _, err := a.s.get(ctx, a.s.p.ShardingInstance(i))
		if err != nil {
			return nil, err
		}
		if v == a.id {
			items = append(items, i)
		}
	}
	return items, nil
}

func without(items, drop []int) []int {
	if len(drop) == 0 {
		return items
	}
	out := items[:0:0]
	for _, i := range items {
		if !slices.Contains(drop, i) {
			out = append(out, i)
		}
	}
	return out
}
