package coord

import (
	"bytes"
	"context"
	"errors"
	"sync/atomic"

	"github.com/ejob-io/ejob/core/config"
	"github.com/ejob-io/ejob/core/node"
	"github.com/ejob-io/ejob/core/reg"
	"github.com/ejob-io/ejob/core/reg/recipe"
)

// setUp is the job's startup registration on this instance (upstream's
// SetUpFacade): the config's overwrite rule, the registration of a job new
// to the registry in one transaction, and of a job it has in the steps
// below. It keeps the local configuration until the registry's stands in
// for it, and the fresh registration until Start takes it. The namespace
// (for its batched reads and writes) and the tree cache are passed in.
type setUp struct {
	*jobBase
	class    string
	shutdown *atomic.Bool // the job's (lifecycle.shutdown)
	conf     *configState
	asg      *assignment
	ldr      *leadership
	rsh      *resharding
	rg       *registration
	// local is the configuration given to New, until setUpConfig is done
	// (nil after).
	local *config.JobConfiguration
	// fresh: setUpConfig found no job root, so Start registers the job in
	// one transaction (registerNew); Start's own. Nil otherwise.
	fresh *freshStart
}

// registerStartUp is SetUpFacade.registerStartUpInfo after the listeners
// are on, for a job whose root exists (a restart, or another instance
// registered it first): elect, server status, instance node, remove
// offline servers, flag resharding. It reports whether this instance
// leads, as read after it registered, and then the children of sharding/
// read with it (for the stale-node sweep).
//
// Upstream's steps, each a request or a few; here (3 requests a job when a
// host restarts 1,000 jobs, against ~20 for the steps one by one):
//   - the election keeps every step of the protocol (electLeader): the
//     latch node's create, the latch's listing, the check-and-create of
//     the leader node under the latch, the latch's release; a Java
//     participant may be inside the latch, so none is skipped. When the
//     cache shows no leader node, the create and the release go in one
//     transaction (recipe.ElectVacant);
//   - the server and instance nodes go in one transaction, with the
//     other jobs starting now (Namespace.writes), built from the tree
//     cache loaded before the election: the server node is left as it is
//     when it is ENABLED already (upstream sets it again, which changes
//     nothing but its version and wakes every instance's listener; a
//     DISABLED one is written again, as its event makes this instance
//     abdicate), and the instance node is created (an instance node of
//     this id found in the cache, or a failed transaction, falls back to
//     upstream's steps, which handle both);
//   - what follows reads the registry fresh, in one MultiRead with the
//     other jobs (Namespace.reads): the instances and servers for the
//     offline-server sweep, the leader node for the resharding flag and
//     the stale-node sweep, the flag itself and the items (for a static
//     sharding and the sweep).
func (u *setUp) registerStartUp(ctx context.Context, ns *Namespace, cache *reg.CacheView, enabled bool) (leads bool, items []string, err error) {
	if _, err := u.ldr.electLeader(ctx); err != nil {
		return false, nil, wrap("elect leader", err)
	}
	status := node.ServerEnabled
	if !enabled {
		status = node.ServerDisabled
	}
	sess := u.s.c.Session()
	if err := u.registerNodes(ctx, ns, cache, status); err != nil {
		return false, nil, err
	}
	u.rg.registered(sess)
	return u.afterRegistration(ctx, ns)
}

// registerNodes writes servers/{ip} (status) and the ephemeral
// instances/{id}: in one transaction when the tree cache shows both
// parents and no instance node of this id, else (or if that fails) as
// upstream, step by step.
func (u *setUp) registerNodes(ctx context.Context, ns *Namespace, cache *reg.CacheView, status string) error {
	if ops := u.registrationOps(ns, cache, status); ops != nil {
		err := ns.writes.Multi(ctx, ops...)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		u.log.Debug("registering server and instance in one transaction failed; registering step by step", "error", err)
	}
	if _, err := reg.Persist(ctx, u.s.c, u.s.p.Server(u.ip), ns.values.of(status)); err != nil {
		return wrap("register server", err)
	}
	if err := u.s.persistEphemeral(ctx, u.s.p.Instance(u.id), ns.values.instance(u.id, u.ip)); err != nil {
		return wrap("register instance", err)
	}
	return nil
}

// registrationOps returns registerNodes' transaction as the tree cache
// shows the nodes, or nil when it needs upstream's steps: a parent
// missing, or an instance node of this id (an earlier session's, which
// persistEphemeral replaces, or this one's, which it keeps).
func (u *setUp) registrationOps(ns *Namespace, cache *reg.CacheView, status string) []reg.Op {
	cv := cache
	if _, _, ok := cv.Peek(u.s.p.Instance(u.id)); ok {
		return nil
	}
	if _, _, ok := cv.Peek(u.s.p.Instances()); !ok {
		return nil
	}
	ops := make([]reg.Op, 0, 2)
	switch cur, _, ok := cv.Peek(u.s.p.Server(u.ip)); {
	case ok && string(cur) == status && status == node.ServerEnabled:
		// Already so: a Set would change nothing but the version. The
		// transaction checks it still exists (the cache may lag behind
		// another instance's offline-server sweep; then the steps below
		// write it). (A DISABLED server is written again: its event makes
		// a leader this election gave us abdicate, as upstream's listener
		// does.)
		ops = append(ops, reg.CheckOp(u.s.p.Server(u.ip), reg.AnyVersion))
	case ok:
		ops = append(ops, reg.SetOp(u.s.p.Server(u.ip), ns.values.of(status), reg.AnyVersion))
	default:
		if _, _, ok := cv.Peek(u.s.p.Servers()); !ok {
			return nil
		}
		ops = append(ops, reg.CreateOp(u.s.p.Server(u.ip), ns.values.of(status), reg.Persistent))
	}
	return append(ops, reg.CreateOp(u.s.p.Instance(u.id), ns.values.instance(u.id, u.ip), reg.Ephemeral))
}

// afterRegistration is the rest of registerStartUp once this instance is
// registered: the offline-server sweep, then, on the leader, the
// resharding flag (serversChanged). The leader's listener would flag
// resharding when it sees this instance join, but only asynchronously: a
// leader that is this very instance flags it now, so that a fire right
// after startup already gets its items (the flag is set on the leader
// only, as upstream). It returns what registerStartUp does.
func (u *setUp) afterRegistration(ctx context.Context, ns *Namespace) (bool, []string, error) {
	rs, err := ns.reads.Read(ctx,
		reg.ChildrenOp(u.s.p.Instances()),
		reg.ChildrenOp(u.s.p.Servers()),
		reg.GetOp(u.s.p.LeaderInstance()),
		reg.GetOp(u.s.p.ShardingNecessary()),
		reg.GetOp(u.s.p.Instance(u.id)),
		reg.ChildrenOp(u.s.p.Sharding()),
	)
	if err == nil {
		for _, r := range rs {
			if r.Err != nil && !errors.Is(r.Err, reg.ErrNoNode) {
				err = r.Err
				break
			}
		}
	}
	if err != nil {
		return false, nil, wrap("read registration", err)
	}
	instances, servers, leader, flag, own, items := rs[0], rs[1], rs[2], rs[3], rs[4], rs[5]
	if err := u.removeOfflineServers(ctx, instances.Children, servers.Children); err != nil {
		u.log.Warn("remove offline servers failed", "error", err)
	}
	if leader.Err != nil {
		// No leader now: upstream's wait for one (isLeaderUntilBlock).
		if err := u.rsh.serversChanged(ctx); err != nil {
			return false, nil, wrap("flag resharding at startup", err)
		}
		return u.leadsNow(ctx)
	}
	if u.shutdown.Load() || !u.ldr.e.Leads(leader.Data, leader.Stat) {
		return false, nil, nil
	}
	cfg, err := u.conf.get(ctx)
	if err != nil {
		return false, nil, err
	}
	if cfg.StaticSharding && len(items.Children) > 0 {
		// A static sharding is not redone for a member joining.
		return true, items.Children, nil
	}
	if flag.Err != nil {
		// setReshardingFlag's create, knowing what its reads would find:
		// this instance leads and the flag is absent (a missing parent
		// fails it, as a removed job, whose root is gone, does).
		err := u.ldr.e.Fenced(ctx, func(f recipe.Fence) error {
			_, err := recipe.FencedMulti(ctx, u.s.c, f, reg.CreateOp(u.s.p.ShardingNecessary(), nil, reg.Persistent))
			return err
		})
		switch {
		case err == nil, errors.Is(err, reg.ErrNodeExists):
		case ctx.Err() != nil:
			return false, nil, context.Cause(ctx)
		default:
			// Leadership lost meanwhile, or leader/sharding missing:
			// upstream's steps.
			u.log.Debug("flagging resharding at startup failed; trying upstream's steps", "error", err)
			if err := u.rsh.serversChanged(ctx); err != nil {
				return false, nil, wrap("flag resharding at startup", err)
			}
			return u.leadsNow(ctx)
		}
	}
	// Flagged (found or set) after this instance registered: the next
	// resharding reads the membership with it. So the membership changes
	// up to its registration (its instance node's Mzxid) need not flag
	// again when their events come (assignment.accounted).
	if own.Err == nil && own.Stat.EphemeralOwner == u.s.c.Session().ID() {
		u.asg.account(own.Stat.Mzxid + 1)
	}
	return true, items.Children, nil
}

// leadsNow is afterRegistration's end after upstream's steps: whether this
// instance leads (fresh) and, if so, the children of sharding/.
func (u *setUp) leadsNow(ctx context.Context) (bool, []string, error) {
	ok, err := u.ldr.isLeader(ctx)
	if err != nil || !ok {
		return false, nil, err
	}
	items, err := u.s.children(ctx, u.s.p.Sharding())
	return err == nil, items, err
}

// setUpConfig applies the startup overwrite rule
// (ConfigurationService.setUpJobConfiguration). When the job root is absent, the
// job enabled and allowNew set, it writes nothing: Start then writes the config
// with the rest of the registration (registerNew).
func (u *setUp) setUpConfig(ctx context.Context, ns *Namespace, allowNew bool) error {
	var st config.RegistryState
	// Both nodes read fresh, in one MultiRead with the other jobs starting
	// now (Namespace.reads).
	rs, err := ns.reads.Read(ctx, reg.GetOp(u.s.p.Root()), reg.GetOp(u.s.p.Config()))
	if err != nil {
		return wrap("read job root and config", err)
	}
	for _, r := range rs {
		if r.Err != nil && !errors.Is(r.Err, reg.ErrNoNode) {
			return wrap("read job root and config", r.Err)
		}
	}
	st.RootExists, st.Root = rs[0].Err == nil, rs[0].Data
	st.ConfigExists, st.Config = rs[1].Err == nil, rs[1].Data
	res, err := ns.marshal.SetUp(u.class, u.local, st)
	if errors.Is(err, config.ErrRegistryConfig) {
		// The registry's config is refused: the job registers and waits,
		// without firing, for a valid one (its tree cache follows the
		// node). The local configuration, validated, stands in for what
		// sizes the job's own work meanwhile (its cron, its count).
		if _, derr := config.Decode(st.Config); derr != nil {
			u.conf.invalid(st.Config, derr)
		}
		u.fresh = nil
		u.conf.cur.Store(u.local)
		u.local = nil
		return nil
	}
	if err != nil {
		return err
	}
	u.fresh = nil
	// The node's bytes and what they parse to: the registry's, or what
	// this process writes (SetUp's Config reads as its ConfigData parses),
	// so that configState.refresh does not parse them again.
	cfg, data := res.Config, st.Config
	if res.Write {
		data = res.ConfigData
	}
	u.conf.parsed.Store(&parsedConfig{data: data, cfg: cfg})
	if allowNew && res.Write && !st.RootExists && !res.Config.Disabled {
		u.fresh = &freshStart{config: res.ConfigData}
		u.conf.cur.Store(cfg)
		return nil
	}
	if res.Write {
		if _, err := reg.Persist(ctx, u.s.c, u.s.p.Config(), res.ConfigData); err != nil {
			return wrap("write job config", err)
		}
		if _, err := reg.Persist(ctx, u.s.c, u.s.p.Root(), ns.values.of(u.class)); err != nil {
			return wrap("write job root", err)
		}
	}
	u.conf.cur.Store(cfg)
	// The local config served only this: from now on the registry's is
	// the job's (a copy is in the tree cache and in conf).
	u.local = nil
	return nil
}

// freshStart is the registration of a job the registry does not have yet.
type freshStart struct {
	config []byte       // the config node's value
	sess   *reg.Session // the session registerNew registered under (nil: it did not)
}

// registerNew registers a job whose root setUpConfig found absent in one
// transaction, instead of upstream's sequence (config, root, election
// under the latch, server, instance, resharding flag: some 60 requests on
// ZooKeeper): it creates the job root (holding the class name), config,
// the leader node (under leader/ and leader/election, containers as the
// latch's parents are), servers/{ip} ENABLED, instances/{id}, and
// leader/sharding/necessary, the tree upstream's sequence leaves (less
// the latch, a container the server reaps once its transient participant
// node is gone).
//
// Taking the leadership without the latch is safe because the transaction
// also creates the job root: it commits only if the root is still absent,
// so no participant node (under the root) exists then and nobody, Java or
// ejob, is inside the latch's check-and-create; whoever enters it later
// finds this leader node. Any failure (the root exists now: another
// instance registered the job first; a connection loss that leaves the
// outcome unknown) falls back to the usual sequence, config first, which
// handles either outcome (a leader node of this session is ours).
func (u *setUp) registerNew(ctx context.Context, ns *Namespace) error {
	f := u.fresh
	sess := u.s.c.Session()
	leader := u.s.p.LeaderInstance()
	ops := []reg.Op{
		reg.CreateOp(u.s.p.Root(), ns.values.of(u.class), reg.Persistent),
		reg.CreateOp(u.s.p.Config(), f.config, reg.Persistent),
		reg.CreateOp(reg.Parent(reg.Parent(leader)), nil, reg.Container),
		reg.CreateOp(reg.Parent(leader), nil, reg.Container),
		reg.CreateOp(leader, ns.values.of(u.id), reg.Ephemeral),
		reg.CreateOp(u.s.p.Servers(), nil, reg.Persistent),
		reg.CreateOp(u.s.p.Server(u.ip), ns.values.of(node.ServerEnabled), reg.Persistent),
		reg.CreateOp(u.s.p.Instances(), nil, reg.Persistent),
		reg.CreateOp(u.s.p.Instance(u.id), ns.values.instance(u.id, u.ip), reg.Ephemeral),
		reg.CreateOp(reg.Parent(u.s.p.ShardingNecessary()), nil, reg.Persistent),
		reg.CreateOp(u.s.p.ShardingNecessary(), nil, reg.Persistent),
	}
	// With the other new jobs' transactions (Namespace.writes): all of
	// them commit, or each is sent again alone.
	if err := ns.writes.Multi(ctx, ops...); err != nil {
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		u.log.Debug("registering the new job in one transaction failed; registering step by step", "error", err)
		u.fresh = nil
		return u.setUpConfig(ctx, ns, false)
	}
	f.sess = sess
	u.local = nil // kept until now for the step-by-step fallback
	return nil
}

// removeOfflineServers deletes servers/{ip} with a non-blank value whose IP
// is the prefix of no instance id (3.0.5's ServerService.removeOfflineServers),
// given the instance ids and server IPs listed (instances first, as upstream).
func (u *setUp) removeOfflineServers(ctx context.Context, ids, ips []string) error {
	if len(ids) == 0 {
		return nil
	}
	online := map[string]bool{}
	for _, id := range ids {
		online[ipPrefix(id)] = true
	}
	for _, ip := range ips {
		if online[ip] {
			continue
		}
		data, st, err := u.s.c.Get(ctx, u.s.p.Server(ip))
		if errors.Is(err, reg.ErrNoNode) {
			continue
		}
		if err != nil {
			return err
		}
		if len(bytes.TrimSpace(data)) == 0 {
			continue
		}
		if err := u.s.c.Delete(ctx, u.s.p.Server(ip), st.Version); err != nil &&
			!errors.Is(err, reg.ErrNoNode) && !errors.Is(err, reg.ErrBadVersion) && !errors.Is(err, reg.ErrNotEmpty) {
			return err
		}
		u.log.Info("removed offline server", "server", ip)
	}
	return nil
}
