package coord

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ejob-io/ejob/core/config"
	"github.com/ejob-io/ejob/core/executor"
	"github.com/ejob-io/ejob/core/node"
	"github.com/ejob-io/ejob/core/reg"
	"github.com/ejob-io/ejob/core/reg/recipe"
	"github.com/ejob-io/ejob/internal/lazylog"
	"github.com/ejob-io/ejob/spi"
)

// Sentinel errors callers branch on.
var (
	// ErrShutdown: the job was shut down on this instance (Stop, the end of
	// Start's ctx, or the console removed this instance).
	ErrShutdown = errors.New("coord: job is shut down on this instance")
	// ErrNotReady: Start has not completed the startup registration yet.
	ErrNotReady = errors.New("coord: job not started")
	// ErrSessionLost: the registry session the job registered under is gone
	// (or the connection is suspended); nothing was written.
	ErrSessionLost = errors.New("coord: registry session lost")
	// ErrItemRunning: RegisterBegin found an item already running on
	// another instance; nothing was written.
	ErrItemRunning = errors.New("coord: sharding item already running elsewhere")
	// ErrPaused: the registry connection is suspended or the session was
	// lost and not yet re-registered; executions must not start.
	ErrPaused = errors.New("coord: paused: registry connection unavailable")
	// ErrTimeDiff: the host clock differs from registry time by more than
	// maxTimeDiffSeconds.
	ErrTimeDiff = errors.New("coord: time difference with the registry exceeds maxTimeDiffSeconds")
	// ErrConfigInvalid: the job's config node in the registry does not
	// parse or breaks a bound of core/config (config.Decode); the job does
	// not fire until a valid configuration is written (see ConfigError).
	ErrConfigInvalid = errors.New("the job's configuration in the registry is invalid")
)

// Job is one job's coordination on one instance. It implements
// executor.Facade.
type Job struct {
	// s is the registry client and the job's paths (s.c, s.p), which the
	// job's parts use too.
	s           store
	local       *config.JobConfiguration // until setUpConfig is done (nil after)
	class       string
	id          string
	ip          string
	strat       func(string) (spi.ShardingStrategy, error)
	log         hclog.Logger
	poll        time.Duration
	recon       time.Duration
	reconMinute time.Duration
	grace       time.Duration
	hooks       Hooks        // the scheduler's (Options.Hooks or the On* functions)
	onEv        func(string) // Options.OnEvent (nil: none)

	// cache is the job's view of the shared tree cache, set by Start.
	cache *reg.CacheView
	// liveCache is cache while the job runs, for other goroutines (Cache).
	liveCache atomic.Pointer[reg.CacheView]
	guar      guaranteeWaiters

	// unknownStrategy is the last sharding strategy type reported as not
	// served (see strategy), so that each is reported once.
	unknownStrategy atomic.Pointer[string]

	cfg      atomic.Pointer[config.JobConfiguration] // latest known config
	parsed   atomic.Pointer[parsedConfig]            // last config node parsed (parseConfig)
	bad      atomic.Pointer[badConfig]               // the config node refused last, while it is the node's (parseConfig)
	params   atomic.Pointer[parsedParams]            // last shardingItemParameters parsed (itemParameters)
	hot      atomic.Pointer[hotPaths]                // the trigger's paths, from its first (warmPaths)
	running  runFlag                                 // an execution is between RegisterBegin and RegisterCompleted
	shutdown atomic.Bool
	// inProcess: the client serves calls in process (reg.IsInProcess), so
	// the trigger sends its two requests one after the other.
	inProcess bool
	// beginLease is the lease of the current execution's RegisterBegin.
	beginLease atomic.Pointer[lease]
	// pre: running nodes a trigger created with its resharding check,
	// until RegisterBegin adopts them (trigger.go, pipelinedContexts).
	pre preBegin
	// arm estimates the lead of a pre-armed fire (prearm.go); made at the
	// first trigger (armLead).
	arm atomic.Pointer[armLead]
	// fo is the failover protocol and its state (claims, the pump's last
	// trigger, the recovery of cut-off running nodes): failover.go,
	// failoverstate.go. mis is the misfire and catch-up state
	// (misfirestate.go).
	fo  atomic.Pointer[failover]     // made at first use (failover)
	mis atomic.Pointer[misfireState] // made at first use (misfire)
	// verifiedPzxid is the pzxid of leader/sharding at which a fresh read
	// found the tree cache showing the committed assignment (see
	// cachedAssignment).
	verifiedPzxid atomic.Int64
	// accountedZxid is the zxid of this instance's last committed
	// resharding: membership changes older than it are in that assignment
	// or flagged again after it (reshardAgainIfChanged), so their late
	// events flag nothing (see membershipAccounted).
	accountedZxid atomic.Int64
	// elect is the job's leader election (leader/election/instance):
	// campaign, is-leader, resign, and the fence of leader-only writes.
	elect *recipe.Election
	// beforeCommit, if set (tests), runs between taking the leader fence
	// and committing a resharding.
	beforeCommit func()

	// ready: Start has registered this instance (see Ready).
	ready atomic.Bool
	// fresh: setUpConfig found no job root, so Start registers the job in
	// one transaction (registerNew); startUp's own. Nil otherwise.
	fresh *freshStart

	// rg is the registration in the registry's session: session, lease,
	// pause and the connection handling (registration.go).
	rg registration
	// loop is the job's serial queue and its timers (loop.go); life its
	// start and end (lifecycle.go).
	loop jobLoop
	life lifecycle
}

var _ executor.Facade = (*Job)(nil)

// New checks opts and returns a Job; Start starts it.
func New(opts Options) (*Job, error) {
	switch {
	case opts.Client == nil:
		return nil, errors.New("coord: nil Client")
	case opts.Config == nil:
		return nil, errors.New("coord: nil Config")
	case opts.Config.JobName == "":
		return nil, errors.New("coord: empty job name")
	case opts.InstanceID == "" || opts.ServerIP == "":
		return nil, errors.New("coord: empty instance id or server IP")
	case opts.Strategies == nil:
		return nil, errors.New("coord: nil Strategies")
	}
	log := opts.Logger
	if log == nil {
		log = hclog.NewNullLogger()
	}
	p := node.New(opts.Config.JobName)
	j := &Job{
		s: store{c: opts.Client, p: p}, inProcess: reg.IsInProcess(opts.Client),
		local: opts.Config, class: opts.JobClassName, id: opts.InstanceID, ip: opts.ServerIP,
		strat: opts.Strategies,
		log:   lazylog.With(log, lazylog.JobInstance, opts.Config.JobName, opts.InstanceID),
		poll:  opts.PollInterval, recon: opts.ReconcileTick, reconMinute: opts.ReconcileUnit, grace: opts.ShutdownGrace,
		hooks: opts.hooks(), onEv: opts.OnEvent,
	}
	j.rg = registration{margin: opts.ExpiryMargin, job: j, cq: newSerialQueue()}
	j.loop.q = newSerialQueue()
	j.life = lifecycle{ns: opts.Namespace,
		startupDone: make(chan struct{})}
	j.elect = recipe.NewElection(opts.Client, p.LeaderLatch(), p.LeaderInstance(), opts.InstanceID)
	if j.poll <= 0 {
		j.poll = 100 * time.Millisecond
	}
	if j.grace <= 0 {
		j.grace = 10 * time.Second
	}
	if j.recon <= 0 {
		j.recon = time.Minute
	}
	return j, nil
}

// failover returns the job's failover protocol and state, made now if
// need be: an idle job carries none. The reads that find nothing claimed
// and nothing to recover on a job without one go through foState.
func (j *Job) failover() *failover {
	if f := j.fo.Load(); f != nil {
		return f
	}
	j.fo.CompareAndSwap(nil, &failover{s: &j.s, id: j.id, log: j.log, poll: j.poll, hooks: j.hooks, job: j})
	return j.fo.Load()
}

// foState returns the failover state, or nil while the job has made none
// (failoverState's reads work on nil).
func (j *Job) foState() *failoverState {
	if f := j.fo.Load(); f != nil {
		return &f.failoverState
	}
	return nil
}

// stale is the sweep of nodes gone instances left (stale.go). It keeps no
// state, so an idle job does not carry one.
func (j *Job) stale() *staleSweeper {
	return &staleSweeper{s: j.s, id: j.id, log: j.log, job: j, fo: j.failover()}
}

// InstanceID returns this instance's id.
func (j *Job) InstanceID() string { return j.id }

// Ready is closed once Start has registered this instance.
func (j *Job) Ready() <-chan struct{} {
	if j.ready.Load() {
		return closedChan // the scheduler's check at each fire: no lock
	}
	l := &j.life
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.readyCh == nil {
		if j.ready.Load() {
			return closedChan
		}
		l.readyCh = make(chan struct{})
	}
	return l.readyCh
}

// setReady marks the instance registered (Ready).
func (j *Job) setReady() {
	l := &j.life
	l.mu.Lock()
	defer l.mu.Unlock()
	j.ready.Store(true)
	if l.readyCh != nil {
		close(l.readyCh)
	}
}

// Paused reports whether executions must not start now: the registry
// connection is suspended, or the session was lost and this instance is
// not yet registered again. The returned channel is closed when the pause
// ends (it is already closed when not paused).
func (j *Job) Paused() (bool, <-chan struct{}) { return j.rg.isPaused() }

func (j *Job) setPaused(p bool) { j.rg.setPaused(p) }

// session returns the live session this instance is registered under, or
// ErrSessionLost.
func (j *Job) session() (*reg.Session, error) {
	s, _, err := j.rg.sessionLease()
	return s, err
}

// sessionLease is session plus the live lease executions start under.
func (j *Job) sessionLease() (*reg.Session, *lease, error) { return j.rg.sessionLease() }

// SessionContext returns a context cancelled when the session this instance
// is registered under is lost, or presumed expired by the client's clock
// while the connection is down (cause ErrSessionPresumedLost; see
// Options.ExpiryMargin), or when parent ends. Executions run under it. The
// executions under one parent and lease share it: it is not cancelled
// when one returns, and the returned CancelFunc does nothing (it is kept
// for callers that defer it).
func (j *Job) SessionContext(parent context.Context) (context.Context, context.CancelFunc) {
	return j.rg.sessionContext(parent)
}

// ShuttingDown reports whether the job is shutting down or shut down on
// this instance: no new execution may start.
func (j *Job) ShuttingDown() bool { return j.shutdown.Load() }

// Cache returns the cache of the job's subtree (/{job}) this instance
// keeps while the job runs here (upstream's regCenter cache of the job,
// which the dump port compares the registry with), or nil before Start and
// once the job is shut down here.
func (j *Job) Cache() reg.TreeView {
	if v := j.liveCache.Load(); v != nil {
		return v
	}
	return nil
}

// regClient and logger implement registrant.
func (j *Job) regClient() reg.Client { return j.s.c }
func (j *Job) logger() hclog.Logger  { return j.log }

// IsRunning reports whether an execution is registered as running locally.
func (j *Job) IsRunning() bool { return j.running.Load() }

// setUpConfig applies the startup overwrite rule
// (ConfigurationService.setUpJobConfiguration). When the job root is absent, the
// job enabled and allowNew set, it writes nothing: Start then writes the config
// with the rest of the registration (registerNew).
func (j *Job) setUpConfig(ctx context.Context, allowNew bool) error {
	var st config.RegistryState
	// Both nodes read fresh, in one MultiRead with the other jobs starting
	// now (Namespace.reads).
	rs, err := j.life.ns.reads.Read(ctx, reg.GetOp(j.s.p.Root()), reg.GetOp(j.s.p.Config()))
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
	res, err := config.SetUp(j.class, j.local, st)
	if errors.Is(err, config.ErrRegistryConfig) {
		// The registry's config is refused: the job registers and waits,
		// without firing, for a valid one (its tree cache follows the
		// node). The local configuration, validated, stands in for what
		// sizes the job's own work meanwhile (its cron, its count).
		if _, derr := config.Decode(st.Config); derr != nil {
			j.configInvalid(st.Config, derr)
		}
		j.fresh = nil
		j.cfg.Store(j.local)
		j.local = nil
		return nil
	}
	if err != nil {
		return err
	}
	j.fresh = nil
	// The node's bytes and what they parse to: the registry's, or what
	// this process writes (SetUp's Config reads as its ConfigData parses),
	// so that refreshCachedConfig does not parse them again.
	cfg, data := res.Config, st.Config
	if res.Write {
		data = res.ConfigData
	}
	j.parsed.Store(&parsedConfig{data: data, cfg: cfg})
	if allowNew && res.Write && !st.RootExists && !res.Config.Disabled {
		j.fresh = &freshStart{config: res.ConfigData}
		j.cfg.Store(cfg)
		return nil
	}
	if res.Write {
		if _, err := reg.Persist(ctx, j.s.c, j.s.p.Config(), res.ConfigData); err != nil {
			return wrap("write job config", err)
		}
		if _, err := reg.Persist(ctx, j.s.c, j.s.p.Root(), []byte(j.class)); err != nil {
			return wrap("write job root", err)
		}
	}
	j.cfg.Store(cfg)
	// The local config served only this: from now on the registry's is
	// the job's (a copy is in the tree cache and in j.cfg).
	j.local = nil
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
func (j *Job) registerNew(ctx context.Context) error {
	f := j.fresh
	sess := j.s.c.Session()
	leader := j.s.p.LeaderInstance()
	ops := []reg.Op{
		reg.CreateOp(j.s.p.Root(), []byte(j.class), reg.Persistent),
		reg.CreateOp(j.s.p.Config(), f.config, reg.Persistent),
		reg.CreateOp(reg.Parent(reg.Parent(leader)), nil, reg.Container),
		reg.CreateOp(reg.Parent(leader), nil, reg.Container),
		reg.CreateOp(leader, []byte(j.id), reg.Ephemeral),
		reg.CreateOp(j.s.p.Servers(), nil, reg.Persistent),
		reg.CreateOp(j.s.p.Server(j.ip), []byte(node.ServerEnabled), reg.Persistent),
		reg.CreateOp(j.s.p.Instances(), nil, reg.Persistent),
		reg.CreateOp(j.s.p.Instance(j.id), node.InstanceValue(j.id, j.ip), reg.Ephemeral),
		reg.CreateOp(reg.Parent(j.s.p.ShardingNecessary()), nil, reg.Persistent),
		reg.CreateOp(j.s.p.ShardingNecessary(), nil, reg.Persistent),
	}
	// With the other new jobs' transactions (Namespace.writes): all of
	// them commit, or each is sent again alone.
	if err := j.life.ns.writes.Multi(ctx, ops...); err != nil {
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		j.log.Debug("registering the new job in one transaction failed; registering step by step", "error", err)
		j.fresh = nil
		return j.setUpConfig(ctx, false)
	}
	f.sess = sess
	j.local = nil // kept until now for the step-by-step fallback
	return nil
}

// removeOfflineServers deletes servers/{ip} with a non-blank value whose IP
// is the prefix of no instance id (3.0.5's ServerService.removeOfflineServers),
// given the instance ids and server IPs listed (instances first, as upstream).
func (j *Job) removeOfflineServers(ctx context.Context, ids, ips []string) error {
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
		data, st, err := j.s.c.Get(ctx, j.s.p.Server(ip))
		if errors.Is(err, reg.ErrNoNode) {
			continue
		}
		if err != nil {
			return err
		}
		if len(bytes.TrimSpace(data)) == 0 {
			continue
		}
		if err := j.s.c.Delete(ctx, j.s.p.Server(ip), st.Version); err != nil &&
			!errors.Is(err, reg.ErrNoNode) && !errors.Is(err, reg.ErrBadVersion) && !errors.Is(err, reg.ErrNotEmpty) {
			return err
		}
		j.log.Info("removed offline server", "server", ip)
	}
	return nil
}

// cleanShutdown is the graceful shutdown: leader node and instance node of
// this session are deleted (upstream's JobShutdownHookPlugin). Best effort with
// a short deadline.
func (j *Job) cleanShutdown() {
	j.shutdown.Store(true)
	// Wait for the local execution to end first (bounded).
	grace := time.NewTimer(j.grace)
	defer grace.Stop()
	select {
	case <-j.running.Idle():
	case <-grace.C:
		j.log.Warn("shutdown: execution still running after the grace period", "grace", j.grace)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	sess := j.s.c.Session()
	if sess.Err() != nil {
		return
	}
	if _, err := j.elect.Resign(ctx); err != nil {
		j.log.Warn("shutdown: delete failed", "path", j.elect.LeaderPath(), "error", err)
	}
	if _, st, err := j.s.c.Get(ctx, j.s.p.Instance(j.id)); err == nil && st.EphemeralOwner == sess.ID() {
		if err := j.s.c.Delete(ctx, j.s.p.Instance(j.id), st.Version); err != nil && !errors.Is(err, reg.ErrNoNode) {
			j.log.Warn("shutdown: delete failed", "path", j.s.p.Instance(j.id), "error", err)
		}
	}
	j.log.Info("job coordination stopped")
}

// poll waits one poll interval or until ctx ends.
func (j *Job) sleep(ctx context.Context) error {
	t := time.NewTimer(j.poll)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-t.C:
		return nil
	}
}

// config returns the cached configuration (the tree's latest), else reads
// it directly.
func (j *Job) config(ctx context.Context) (*config.JobConfiguration, error) {
	if c := j.cfg.Load(); c != nil {
		return c, nil
	}
	return j.loadConfig(ctx)
}

// loadConfig reads the config node directly (load(false)). The result is
// shared (see parseConfig): callers must not modify it.
func (j *Job) loadConfig(ctx context.Context) (*config.JobConfiguration, error) {
	data, ok, err := j.s.get(ctx, j.s.p.Config())
	if err != nil {
		return nil, wrap("read config", err)
	}
	if !ok {
		if c := j.cfg.Load(); c != nil {
			return c, nil
		}
		return nil, fmt.Errorf("read config: %w", reg.ErrNoNode)
	}
	return j.parseConfig([]byte(data))
}

// parsedConfig is the bytes of a config node and the config they parse to
// (as Equal compares: setUpConfig stores what this process wrote with the
// config it wrote, whose wire state, never marshalled here, may differ).
type parsedConfig struct {
	data []byte // never modified (see parseConfig)
	cfg  *config.JobConfiguration
}

// parseConfig parses a config node's bytes, or returns the config parsed
// last time when the bytes are the same (every execution reads the node:
// parsing its YAML each time was about a quarter of the kernel's CPU per
// run). The result is shared: callers must not modify it (Config hands
// out a copy). It keeps data: the caller must not modify it afterwards
// (it is a copy of its own or a tree event's, which no one modifies).
//
// A node that does not parse or breaks a bound (config.Decode) is an error
// wrapping ErrConfigInvalid; it is logged once (the same bytes again give
// the same error without a log line), and ConfigError reports it until a
// valid node is parsed.
func (j *Job) parseConfig(data []byte) (*config.JobConfiguration, error) {
	if p := j.parsed.Load(); p != nil && bytes.Equal(p.data, data) {
		j.configValid()
		return p.cfg, nil
	}
	if b := j.bad.Load(); b != nil && bytes.Equal(b.data, data) {
		return nil, b.err
	}
	c, err := config.Decode(data)
	if err != nil {
		j.configInvalid(data, err)
		return nil, j.bad.Load().err
	}
	j.parsed.Store(&parsedConfig{data: data, cfg: c})
	j.configValid()
	return c, nil
}

// badConfig is a config node's bytes that parseConfig refused, and why.
type badConfig struct {
	data []byte
	err  error // wraps ErrConfigInvalid
}

// configInvalid records data, the config node's bytes, as refused for
// cause (a config.Decode error), and logs it unless it was refused last.
func (j *Job) configInvalid(data []byte, cause error) {
	err := fmt.Errorf("%w: %w", ErrConfigInvalid, cause)
	if prev := j.bad.Swap(&badConfig{data: data, err: err}); prev != nil && bytes.Equal(prev.data, data) {
		return // refused and logged already (a concurrent parse, or the start)
	}
	j.log.Error("the job's configuration in the registry is invalid; the job does not fire until a valid one is written "+
		"(PUT /api/jobs/config; for a node that parses, also the console or `ejob job set`)", "error", cause)
}

// configValid clears a refusal of the config node once a valid node was
// parsed.
func (j *Job) configValid() {
	if j.bad.Load() == nil {
		return
	}
	if j.bad.Swap(nil) != nil {
		j.log.Info("the job's configuration in the registry is valid again; the job fires again")
	}
}

// ConfigError is nil while the job's config node in the registry is
// valid, else why it is not (an error wrapping ErrConfigInvalid and the
// config package's ErrMalformed or ErrInvalid): the job then does not fire.
func (j *Job) ConfigError() error {
	if b := j.bad.Load(); b != nil {
		return b.err
	}
	return nil
}
