package coord_test

import (
	"context"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ejob-io/ejob/core/config"
	"github.com/ejob-io/ejob/core/coord"
	"github.com/ejob-io/ejob/core/executor"
	"github.com/ejob-io/ejob/core/reg"
	"github.com/ejob-io/ejob/core/reg/embedded"
	shardingbuiltin "github.com/ejob-io/ejob/plugins/sharding/builtin"
	"github.com/ejob-io/ejob/spi"
)

const (
	testJob   = "test_job"
	testClass = "com.example.TestJob"
	waitFor   = 10 * time.Second
	fastPoll  = 10 * time.Millisecond
)

func avg(string) (spi.ShardingStrategy, error) { return shardingbuiltin.NewAverageAllocation(), nil }

// cluster is several simulated instances of one job on one registry, with
// the invariant checker: no item is ever executed by two live owners, and
// each run of an item (monitorExecution on) carries a fencing token higher
// than every earlier run's of that item, on any instance.
type cluster struct {
	t       *testing.T
	connect func(t *testing.T) reg.Client
	admin   reg.Client

	mu      sync.Mutex
	owners  map[int]claim
	tokens  map[int][]int64 // each item's runs' fencing tokens, in begin order
	members []*instance
	barrier int
}

type claim struct {
	id   string
	ctx  context.Context
	sess *reg.Session
}

func (c claim) live() bool { return c.ctx.Err() == nil && c.sess.Err() == nil }

// instance is one simulated instance: its client, Job, Run goroutine and a
// minimal execution pipeline (the shape of core/executor's flow).
type instance struct {
	cl     *cluster
	id, ip string
	c      reg.Client
	job    *coord.Job
	cancel context.CancelFunc
	done   chan error

	seen        sync.Map // barrier paths seen by the event loop
	triggers    chan struct{}
	reschedules chan string
	shutdowns   chan struct{}

	mu   sync.Mutex
	ran  [][]int // items of each completed run
	hold chan struct{}
	// holding counts the executions that reached their hold (setHold).
	holding atomic.Int32
	runMu   sync.Mutex // one trigger at a time per instance (Facade contract)

	// dropBusy models a scheduler that drops an OnTrigger arriving while
	// a run of this instance is in progress (core/kernel keeps it: see
	// trigger.TriggerSoon); the pump must then ask again.
	dropBusy atomic.Bool
	inRun    atomic.Bool
	// stubborn: a held execution ignores the cancellation of its ctx (a
	// script that takes long to stop) and ends only when released.
	stubborn atomic.Bool
}

func newEmbeddedCluster(t *testing.T) *cluster {
	srv := embedded.NewServer()
	connect := func(t *testing.T) reg.Client {
		c, err := srv.Connect("ns")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	return newCluster(t, connect)
}

func newCluster(t *testing.T, connect func(t *testing.T) reg.Client) *cluster {
	cl := &cluster{t: t, connect: connect, owners: map[int]claim{}, tokens: map[int][]int64{}}
	cl.admin = connect(t)
	return cl
}

func testConfig(total int) *config.JobConfiguration {
	cfg := config.New(testJob, total)
	cfg.Cron = "0/5 * * * * ?"
	return cfg
}

func testLogger(t *testing.T, name string) hclog.Logger {
	// Info: a failing test shows the kernel's decisions (test logs are
	// printed only for failed tests).
	level := hclog.Info
	if os.Getenv("COORD_DEBUG") != "" {
		level = hclog.Debug
	}
	return hclog.New(&hclog.LoggerOptions{Name: name, Level: level, Output: testWriter{t}})
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(string(p))
	return len(p), nil
}

// start starts an instance "ip@-@pid" and waits until it is registered.
func (cl *cluster) start(ip string, pid int, cfg *config.JobConfiguration) *instance {
	t := cl.t
	t.Helper()
	in := cl.startAsync(ip, pid, cfg, nil)
	select {
	case <-in.job.Ready():
	case err := <-in.done:
		t.Fatalf("instance %s stopped during startup: %v", in.id, err)
	case <-time.After(waitFor):
		t.Fatalf("instance %s not ready", in.id)
	}
	return in
}

type optsT = coord.Options

type sessKey struct{}

// startAsyncOpts starts an instance with modified options and waits for it.
func (cl *cluster) startAsyncOpts(ip string, pid int, cfg *config.JobConfiguration, mod func(*optsT)) *instance {
	cl.t.Helper()
	in := cl.startWith(ip, pid, cfg, nil, mod)
	select {
	case <-in.job.Ready():
	case <-time.After(waitFor):
		cl.t.Fatalf("instance %s not ready", in.id)
	}
	return in
}

func (cl *cluster) startAsync(ip string, pid int, cfg *config.JobConfiguration, c reg.Client) *instance {
	cl.t.Helper()
	return cl.startWith(ip, pid, cfg, c, nil)
}

func (cl *cluster) startWith(ip string, pid int, cfg *config.JobConfiguration, c reg.Client, mod func(*optsT)) *instance {
	t := cl.t
	t.Helper()
	if c == nil {
		c = cl.connect(t)
	}
	in := &instance{
		cl: cl, id: ip + "@-@" + strconv.Itoa(pid), ip: ip, c: c,
		done:        make(chan error, 1),
		triggers:    make(chan struct{}, 64),
		reschedules: make(chan string, 16),
		shutdowns:   make(chan struct{}, 1),
	}
	opts := coord.Options{
		Client: c, Config: cfg.Clone(), JobClassName: testClass, InstanceID: in.id, ServerIP: ip,
		Strategies: avg, Logger: testLogger(t, in.id),
		OnTrigger: func() {
			if in.dropBusy.Load() && in.inRun.Load() {
				in.cl.t.Logf("%s: trigger dropped (run in progress)", in.id)
				return
			}
			in.triggers <- struct{}{}
		},
		OnReschedule: func(cron, tz string) { in.reschedules <- cron + "|" + tz },
		OnShutdown:   func() { in.shutdowns <- struct{}{} },
		OnEvent:      func(p string) { in.seen.Store(p, true) },
		PollInterval: fastPoll,
	}
	if mod != nil {
		mod(&opts)
	}
	job, err := coord.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	in.job = job
	cl.mu.Lock()
	cl.members = append(cl.members, in)
	cl.mu.Unlock()
	ctx, cancel := context.WithCancel(context.Background())
	in.cancel = cancel
	go func() { in.done <- job.Run(ctx) }()
	t.Cleanup(func() { in.stop() })
	return in
}

// stop is a clean shutdown: Run returns after its goroutines exit.
func (in *instance) stop() {
	in.cancel()
	select {
	case err := <-in.done:
		if err != nil {
			in.cl.t.Errorf("instance %s Run: %v", in.id, err)
		}
		in.done <- nil
	case <-time.After(waitFor):
		in.cl.t.Errorf("instance %s Run did not return", in.id)
	}
}

func (cl *cluster) acquire(items []int, id string, ctx context.Context, sess *reg.Session) {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	for _, i := range items {
		if prev, ok := cl.owners[i]; ok && prev.id != id && prev.live() {
			cl.t.Errorf("INVARIANT: item %d executed by %s while %s still runs it", i, id, prev.id)
		}
		cl.owners[i] = claim{id: id, ctx: ctx, sess: sess}
	}
}

// fence checks the fencing token each item of a run that just began
// received: with monitorExecution, above every earlier run's of the item
// (the Czxid of the running node the begin created); without, 0.
func (cl *cluster) fence(sc executor.ShardingContexts, id string, monitor bool) {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	for _, i := range sc.Items {
		tok := sc.ShardingContext(i).FencingToken
		switch runs := cl.tokens[i]; {
		case !monitor && tok != 0:
			cl.t.Errorf("item %d run by %s without monitorExecution has fencing token %d, want 0", i, id, tok)
		case monitor && tok <= 0:
			cl.t.Errorf("INVARIANT: item %d run by %s has no fencing token (%d)", i, id, tok)
		case monitor && len(runs) > 0 && tok <= runs[len(runs)-1]:
			cl.t.Errorf("INVARIANT: item %d run by %s has fencing token %d, not above the last run's %d", i, id, tok, runs[len(runs)-1])
		}
		if monitor {
			cl.tokens[i] = append(cl.tokens[i], tok)
		}
	}
}

// fencingTokens returns the fencing tokens of item's runs so far.
func (cl *cluster) fencingTokens(item int) []int64 {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	return slices.Clone(cl.tokens[item])
}

func (cl *cluster) release(items []int, id string) {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	for _, i := range items {
		if cl.owners[i].id == id {
			delete(cl.owners, i)
		}
	}
}

// setHold makes the next runs block until the returned func is called.
func (in *instance) setHold() (release func()) {
	ch := make(chan struct{})
	in.mu.Lock()
	in.hold = ch
	in.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			in.mu.Lock()
			if in.hold == ch {
				in.hold = nil
			}
			in.mu.Unlock()
			close(ch)
		})
	}
}

// run is one trigger through the pipeline (upstream ElasticJobExecutor's
// order): it returns the items executed (nil when none or skipped).
func (in *instance) run(ctx context.Context) ([]int, error) {
	in.runMu.Lock()
	defer in.runMu.Unlock()
	in.inRun.Store(true)
	defer in.inRun.Store(false)
	// The execution depends on the session it starts in (context tree:
	// session -> execution).
	sess := in.c.Session()
	ctx, cancel := in.job.SessionContext(ctx)
	defer cancel()
	ctx = context.WithValue(ctx, sessKey{}, sess)
	f := executor.Facade(in.job)
	if err := f.CheckEnvironment(ctx); err != nil {
		return nil, err
	}
	sc, err := f.ShardingContexts(ctx)
	if err != nil {
		return nil, err
	}
	if len(sc.Items) == 0 {
		return nil, f.FailoverIfNecessary(ctx)
	}
	if mis, err := f.MisfireIfRunning(ctx, sc.Items); err != nil || mis {
		return nil, err
	}
	if err := in.execute(ctx, sc); err != nil {
		return nil, err
	}
	for {
		mis, err := f.ExecuteMisfired(ctx, sc.Items)
		if err != nil {
			return nil, err
		}
		if !mis {
			break
		}
		if err := f.ClearMisfire(ctx, sc.Items); err != nil {
			return nil, err
		}
		if err := in.execute(ctx, sc); err != nil {
			return nil, err
		}
	}
	return sc.Items, f.FailoverIfNecessary(ctx)
}

func (in *instance) execute(ctx context.Context, sc executor.ShardingContexts) error {
	f := executor.Facade(in.job)
	if err := f.RegisterBegin(ctx, sc); err != nil {
		return err
	}
	cfg, err := f.Config(ctx)
	if err != nil {
		return err
	}
	in.cl.fence(sc, in.id, cfg.MonitorExecution)
	sctx := ctx
	sess, _ := ctx.Value(sessKey{}).(*reg.Session)
	in.cl.acquire(sc.Items, in.id, sctx, sess)
	in.mu.Lock()
	hold := in.hold // one-shot: only this execution blocks
	in.hold = nil
	in.mu.Unlock()
	if hold != nil {
		in.holding.Add(1)
		if in.stubborn.Load() {
			<-hold
		} else {
			select {
			case <-hold:
			case <-sctx.Done():
			}
		}
	}
	in.cl.release(sc.Items, in.id)
	in.mu.Lock()
	in.ran = append(in.ran, slices.Clone(sc.Items))
	in.mu.Unlock()
	return f.RegisterCompleted(context.WithoutCancel(ctx), sc, nil)
}

// runs returns a copy of the completed runs.
func (in *instance) runs() [][]int {
	in.mu.Lock()
	defer in.mu.Unlock()
	return slices.Clone(in.ran)
}
