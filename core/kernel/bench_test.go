package kernel_test

// Macro benchmarks of the whole kernel (scheduler + coord + executor +
// trigger) on the embedded registry and on a real ZooKeeper started by
// scripts/zk.sh. They measure with the real clock and report their figures
// with b.ReportMetric; they never fail on a timing. ns/op is the wall time
// of one iteration of the scenario (one trigger, one resharding, ...), not
// a figure to compare. docs/benchmarks.md records the figures and how to
// reproduce them. ZooKeeper variants are skipped with -short.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ejob-io/ejob/core/config"
	"github.com/ejob-io/ejob/core/coord"
	"github.com/ejob-io/ejob/core/executor"
	"github.com/ejob-io/ejob/core/kernel"
	"github.com/ejob-io/ejob/core/node"
	"github.com/ejob-io/ejob/core/reg"
	"github.com/ejob-io/ejob/core/reg/embedded"
	"github.com/ejob-io/ejob/core/reg/regcount"
	"github.com/ejob-io/ejob/core/reg/zktest"
	"github.com/ejob-io/ejob/internal/testkit"
	"github.com/ejob-io/ejob/spi"
)

// backend opens registry clients in one namespace of one registry.
type backend struct {
	name    string
	connect func(tb testing.TB, ns string) reg.Client
	// settle is how long request counts must stay unchanged before a
	// scenario step counts as finished (watch re-arms included).
	settle time.Duration
}

func embeddedBackend() backend {
	srv := embedded.NewServer()
	return backend{
		name: "embedded",
		connect: func(tb testing.TB, ns string) reg.Client {
			c, err := srv.Connect(ns)
			if err != nil {
				tb.Fatal(err)
			}
			tb.Cleanup(func() { _ = c.Close() })
			return c
		},
		settle: 100 * time.Millisecond,
	}
}

// zkBackend starts a ZooKeeper for b (skipped with -short).
func zkBackend(b *testing.B) backend {
	b.Helper()
	if testing.Short() {
		b.Skip("real ZooKeeper benchmarks skipped in -short mode")
	}
	srv := zktest.Start(b, zktest.Options{})
	return backend{
		name: "zookeeper",
		connect: func(tb testing.TB, ns string) reg.Client {
			return zkConnect(tb, srv, ns, 4*time.Second, nil)
		},
		settle: 250 * time.Millisecond,
	}
}

// benchNode is one scheduler (one simulated process) on its own client.
type benchNode struct {
	id     string
	client *regcount.Client
	sched  *kernel.Kernel
	// stop shuts the node down (draining) before the benchmark ends;
	// it is also a cleanup of the benchmark, and may be called twice.
	stop func()
}

// startNode starts a scheduler running jobs on c and waits until every job
// has registered. It stops (draining) when tb ends.
// benchLogLevel is Error, or the level EJOB_BENCH_LOG names (info, debug)
// to see what the nodes do during a benchmark.
func benchLogLevel() hclog.Level {
	if l := hclog.LevelFromString(os.Getenv("EJOB_BENCH_LOG")); l != hclog.NoLevel {
		return l
	}
	return hclog.Error
}

func startNode(tb testing.TB, c reg.Client, ip string, pid int, obs func(regcount.Call), jobs ...kernel.Job) *benchNode {
	tb.Helper()
	id := ip + "@-@" + strconv.Itoa(pid)
	var opts []regcount.Option
	if obs != nil {
		opts = append(opts, regcount.WithObserver(obs))
	}
	cc := regcount.New(c, opts...)
	s, stop := runScheduler(tb, kernel.Options{
		Client: cc, InstanceID: id, ServerIP: ip, Plugins: plugins(),
		Logger:       hclog.New(&hclog.LoggerOptions{Name: id, Level: benchLogLevel(), Output: os.Stderr}),
		DrainTimeout: 5 * time.Second,
		// No reconcile ticks inside a measurement.
		Coord: coord.Options{ReconcileTick: time.Hour},
	}, jobs...)
	return &benchNode{id: id, client: cc, sched: s, stop: stop}
}

// runKernel runs s until tb ends, whose cleanup cancels Run, waits for it
// and reports its error; it returns Run's ctx.
func runKernel(tb testing.TB, s *kernel.Kernel) context.Context {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	tb.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			tb.Error(err)
		}
	})
	return ctx
}

// runScheduler starts a scheduler with opts running jobs and waits until
// every job has registered. The returned stop shuts it down (draining); it
// is also a cleanup of tb, and may be called twice.
func runScheduler(tb testing.TB, opts kernel.Options, jobs ...kernel.Job) (*kernel.Kernel, func()) {
	tb.Helper()
	id := opts.InstanceID
	s, err := kernel.New(opts)
	if err != nil {
		tb.Fatal(err)
	}
	for _, j := range jobs {
		if err := s.Add(context.Background(), j); err != nil {
			tb.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					tb.Errorf("%s: Run: %v", id, err)
				}
			case <-time.After(60 * time.Second):
				tb.Errorf("%s did not shut down", id)
			}
		})
	}
	tb.Cleanup(stop)
	rctx, rcancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer rcancel()
	if err := s.Ready(rctx); err != nil {
		tb.Fatalf("%s not ready: %v", id, err)
	}
	return s, stop
}

// itemLog records item starts.
type itemLog struct {
	mu     sync.Mutex
	starts []time.Time
	n      atomic.Int64
	// onStart, if set, runs at each item start.
	onStart func()
}

func (l *itemLog) runner() kernel.Job {
	return kernel.Job{Runner: executor.SimpleFunc(func(ctx context.Context, sc spi.ShardingContext) error {
		now := time.Now()
		l.mu.Lock()
		l.starts = append(l.starts, now)
		l.mu.Unlock()
		l.n.Add(1)
		if l.onStart != nil {
			l.onStart()
		}
		return nil
	})}
}

func (l *itemLog) since(from time.Time) []time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []time.Time
	for _, s := range l.starts {
		if !s.Before(from) {
			out = append(out, s)
		}
	}
	return out
}

// quiesce waits until the nodes' request counts stop changing for settle
// (every watch re-armed, every cache re-read), and returns their sum.
func quiesce(tb testing.TB, settle time.Duration, nodes []*benchNode) regcount.Counts {
	tb.Helper()
	sum := func() regcount.Counts {
		var c regcount.Counts
		for _, n := range nodes {
			c = c.Add(n.client.Counts())
		}
		return c
	}
	last, stable := sum(), time.Now()
	deadline := time.Now().Add(2 * time.Minute)
	for time.Since(stable) < settle {
		if time.Now().After(deadline) {
			tb.Fatal("registry requests never settled")
		}
		time.Sleep(settle / 10)
		if c := sum(); c != last {
			last, stable = c, time.Now()
		}
	}
	return last
}

// warmUp runs triggers (runOnce) until, once the requests settled, no
// resharding is pending: the first trigger reshards, and a membership
// event handled after it may flag one more (a real change; an instance's
// own registration events do not). obs is a client of the job's
// namespace.
func warmUp(tb testing.TB, obs reg.Client, job string, settle time.Duration, nodes []*benchNode, runOnce func()) {
	tb.Helper()
	for steady := false; !steady; {
		runOnce()
		quiesce(tb, settle, nodes)
		_, ok, err := obs.Exists(tb.Context(), "/"+job+"/leader/sharding/necessary")
		if err != nil {
			tb.Fatal(err)
		}
		steady = !ok
	}
}

func triggerAll(tb testing.TB, job string, nodes []*benchNode) {
	tb.Helper()
	for _, n := range nodes {
		if err := n.sched.Trigger(job); err != nil {
			tb.Fatal(err)
		}
	}
}

func percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(p/100*float64(len(sorted)) + 0.5)
	return sorted[min(max(i-1, 0), len(sorted)-1)]
}

// backends are the registries each benchmark runs on.
var backends = []struct {
	name string
	mk   func(*testing.B) backend
}{
	{"embedded", func(*testing.B) backend { return embeddedBackend() }},
	{"zookeeper", zkBackend},
}

// BenchmarkTriggerJitter: 3 instances of a 3-item job whose cron fires
// every second (failover and monitorExecution on); after the first full
// trigger each iteration records the next 10 fires, and the benchmark
// reports the delay from the scheduled second to each item's start over
// every iteration: p50, p99 and max (10 fires × 3 items per iteration, so
// with -benchtime 3x p99 is close to the max of 90 samples). The delay
// includes the trigger loop, the executor and every registry round trip
// before the item starts (sharding read, running-node transaction).
func BenchmarkTriggerJitter(b *testing.B) {
	for _, bk := range backends {
		b.Run(bk.name, func(b *testing.B) {
			be := bk.mk(b)
			const fires, items = 10, 3
			cfg := config.New("jitter", items)
			cfg.Cron = "* * * * * ?"
			cfg.Failover = true
			log := &itemLog{}
			var nodes []*benchNode
			for i := range 3 {
				job := log.runner()
				job.Config = cfg.Clone()
				nodes = append(nodes, startNode(b, be.connect(b, "bench"), "10.0.0."+strconv.Itoa(i+1), 100+i, nil, job))
			}
			var (
				lat  []float64
				from time.Time // the first fire of the next iteration
			)
			for b.Loop() {
				if from.IsZero() {
					// Steady state: from the second after the first full
					// trigger once every item has its own instance. The
					// resharding that the later instances' registration asks
					// for delays the fire it runs in (the other instances
					// wait for its commit), so a full trigger the first
					// instance ran alone before it is not yet steady.
					sharded := time.Time{}
					jp := node.New("jitter")
					testkit.Eventually(b, 30*time.Second, "one item an instance", func() bool {
						owners := map[string]bool{}
						for i := range items {
							v, _, err := nodes[0].client.Get(context.Background(), jp.ShardingInstance(i))
							if err != nil {
								return false
							}
							owners[string(v)] = true
						}
						_, pending, err := nodes[0].client.Exists(context.Background(), jp.ShardingNecessary())
						if err != nil || pending || len(owners) != items {
							return false
						}
						sharded = time.Now()
						return true
					})
					testkit.Eventually(b, 30*time.Second, "a full trigger", func() bool {
						per := map[time.Time]int{}
						for _, s := range log.since(sharded) {
							per[s.Truncate(time.Second)]++
						}
						for sec, n := range per {
							if n == items && (from.IsZero() || sec.Before(from)) {
								from = sec
							}
						}
						return !from.IsZero()
					})
					from = from.Add(time.Second)
				}
				until := from.Add(fires * time.Second)
				testkit.Eventually(b, (fires+10)*time.Second, "the measured fires", func() bool {
					return time.Now().After(until.Add(500 * time.Millisecond))
				})
				n := 0
				for _, s := range log.since(from) {
					if s.Before(until) {
						lat = append(lat, float64(s.Sub(s.Truncate(time.Second)))/float64(time.Millisecond))
						n++
					}
				}
				if n != fires*items {
					b.Logf("%d item starts in %d fires (want %d)", n, fires, fires*items)
				}
				from = until
			}
			if len(lat) == 0 {
				b.Fatal("no item started")
			}
			sort.Float64s(lat)
			b.ReportMetric(percentile(lat, 50), "p50-ms")
			b.ReportMetric(percentile(lat, 99), "p99-ms")
			b.ReportMetric(lat[len(lat)-1], "max-ms")
			b.ReportMetric(float64(len(lat)), "samples")
		})
	}
}

// breakdown tallies requests by method and path shape while on.
type breakdown struct {
	on    atomic.Bool
	mu    sync.Mutex
	calls map[string]int
}

func (bd *breakdown) observe(c regcount.Call) {
	if !bd.on.Load() {
		return
	}
	key := c.Method + " " + pathShape(c.Path)
	if c.Kind == regcount.Multi {
		key += fmt.Sprintf(" (%d ops)", c.Ops)
	}
	bd.mu.Lock()
	if bd.calls == nil {
		bd.calls = map[string]int{}
	}
	bd.calls[key]++
	bd.mu.Unlock()
}

// count returns how many calls of method were recorded.
func (bd *breakdown) count(method string) int64 {
	bd.mu.Lock()
	defer bd.mu.Unlock()
	var n int64
	for k, v := range bd.calls {
		if strings.HasPrefix(k, method+" ") {
			n += int64(v)
		}
	}
	return n
}

func (bd *breakdown) reset() {
	bd.mu.Lock()
	bd.calls = map[string]int{}
	bd.mu.Unlock()
}

// lines returns "count  key" lines, most frequent first.
func (bd *breakdown) lines(div int) []string {
	bd.mu.Lock()
	defer bd.mu.Unlock()
	keys := slices.Collect(maps.Keys(bd.calls))
	sort.Slice(keys, func(i, j int) bool {
		if bd.calls[keys[i]] != bd.calls[keys[j]] {
			return bd.calls[keys[i]] > bd.calls[keys[j]]
		}
		return keys[i] < keys[j]
	})
	out := make([]string, 0, len(keys))
	for _, k := range keys {
		out = append(out, fmt.Sprintf("%6.1f  %s", float64(bd.calls[k])/float64(div), k))
	}
	return out
}

// pathShape replaces item numbers, instance ids and IPs with placeholders.
func pathShape(p string) string {
	parts := strings.Split(p, "/")
	for i, s := range parts {
		switch {
		case strings.Contains(s, "@-@"):
			parts[i] = "{id}"
		case strings.Count(s, ".") == 3:
			parts[i] = "{ip}"
		case strings.HasPrefix(s, "_c_"):
			parts[i] = "{latch}"
		default:
			if _, err := strconv.Atoi(s); err == nil {
				parts[i] = "{i}"
			}
		}
	}
	return strings.Join(parts, "/")
}

// BenchmarkRequestsPerTrigger counts registry requests for one steady-state
// trigger (sharding done, nothing pending) of a 3-item job with failover
// and monitorExecution on, on 1, 3 and 10 instances (10: more instances than
// items, so seven hold none and only follow the others' writes). One op is one trigger
// of every instance; the counts include every instance's reactions to the
// others' writes (tree-cache re-reads and watch re-arms) until the counts
// settle, divided by the number of instances. Upstream ElasticJob makes
// about 58 requests for one 3-item trigger. With -v it logs the requests
// of one trigger by method and path.
func BenchmarkRequestsPerTrigger(b *testing.B) {
	for _, bk := range backends {
		for _, ninst := range []int{1, 3, 10} {
			b.Run(fmt.Sprintf("%s/instances=%d", bk.name, ninst), func(b *testing.B) {
				benchRequestsPerTrigger(b, bk.mk(b), ninst)
			})
		}
	}
}

func benchRequestsPerTrigger(b *testing.B, be backend, ninst int) {
	const items = 3
	cfg := config.New("requests", items) // no cron: runs only when triggered
	cfg.Failover = true
	cfg.MonitorExecution = true
	log := &itemLog{}
	bd := &breakdown{}
	var nodes []*benchNode
	for i := range ninst {
		job := log.runner()
		job.Config = cfg.Clone()
		nodes = append(nodes, startNode(b, be.connect(b, "bench"), "10.0.0."+strconv.Itoa(i+1), 100+i, bd.observe, job))
	}
	sum := func() regcount.Counts {
		var c regcount.Counts
		for _, n := range nodes {
			c = c.Add(n.client.Counts())
		}
		return c
	}
	// Requests made before the trigger's first item starts (what the fire
	// waits for: the part of the jitter the registry causes).
	var firstStart atomic.Pointer[regcount.Counts]
	log.onStart = func() {
		c := sum()
		firstStart.CompareAndSwap(nil, &c)
	}
	var want int64
	runOnce := func() {
		want += items
		firstStart.Store(nil)
		triggerAll(b, "requests", nodes)
		testkit.Eventually(b, 30*time.Second, "every item to run", func() bool { return log.n.Load() >= want })
	}
	warmUp(b, be.connect(b, "bench"), "requests", be.settle, nodes, runOnce) // not measured
	var total, toStart regcount.Counts
	for b.Loop() {
		before := quiesce(b, be.settle, nodes)
		bd.reset()
		bd.on.Store(true)
		runOnce()
		toStart = toStart.Add(firstStart.Load().Sub(before))
		total = total.Add(quiesce(b, be.settle, nodes).Sub(before))
		bd.on.Store(false)
	}
	per := func(v int64) float64 { return float64(v) / float64(b.N) / float64(ninst) }
	b.ReportMetric(per(total.Reads), "reads/trig/inst")
	b.ReportMetric(per(total.Writes), "writes/trig/inst")
	b.ReportMetric(per(total.Multis), "multis/trig/inst")
	b.ReportMetric(per(total.Watches), "watches/trig/inst")
	b.ReportMetric(per(total.Total()), "requests/trig/inst")
	if ninst == 1 {
		b.ReportMetric(float64(toStart.Total())/float64(b.N), "requests-before-item")
	}
	if testing.Verbose() {
		b.Logf("requests of the last trigger per instance, by method and path:\n%s", strings.Join(bd.lines(ninst), "\n"))
	}
}

// BenchmarkReshard1000Items: 10 instances (10 IPs) of a 1,000-item job.
// Each op sets leader/sharding/necessary (as the leader does when an
// instance joins or leaves), triggers every instance at once (resharding is
// lazy: it happens at the next trigger) and measures until an observer sees
// the flag deleted, which the leader does in the same transaction that
// commits the new assignment. The 1,000 items then run and the caches
// settle before the next op (not measured). first-ms is the very first
// sharding (which also creates the 1,000 sharding/{i} nodes).
// leader-requests-to-commit counts the leader's requests from setting the
// flag to seeing the commit (its resharding, plus whatever its tree cache
// re-read meanwhile).
func BenchmarkReshard1000Items(b *testing.B) {
	for _, bk := range backends {
		b.Run(bk.name, func(b *testing.B) {
			be := bk.mk(b)
			const items, ninst = 1000, 10
			cfg := config.New("reshard", items)
			cfg.Failover = true
			log := &itemLog{}
			var leaderCalls regcount.Counts
			var nodes []*benchNode
			for i := range ninst {
				job := log.runner()
				job.Config = cfg.Clone()
				nodes = append(nodes, startNode(b, be.connect(b, "bench"), "10.0.1."+strconv.Itoa(i+1), 200+i, nil, job))
			}
			obs := be.connect(b, "bench")
			ctx := b.Context()
			const necessary = "/reshard/leader/sharding/necessary"
			var want int64
			var leader *benchNode // known after the first sharding
			reshard := func() time.Duration {
				var before regcount.Counts
				if leader != nil {
					before = leader.client.Counts()
				}
				start := time.Now()
				// Startup already set the flag before the first sharding.
				if _, err := obs.Create(ctx, necessary, nil, reg.Persistent, reg.WithParents()); err != nil && !errors.Is(err, reg.ErrNodeExists) {
					b.Fatalf("set the necessary flag: %v", err)
				}
				_, ok, ch, err := obs.ExistsW(ctx, necessary)
				if err != nil {
					b.Fatal(err)
				}
				triggerAll(b, "reshard", nodes)
				if ok {
					select {
					case <-ch:
					case <-time.After(2 * time.Minute):
						b.Fatal("resharding did not commit")
					}
				}
				d := time.Since(start)
				if leader != nil {
					leaderCalls = leaderCalls.Add(leader.client.Counts().Sub(before))
				}
				want += items
				testkit.Eventually(b, 2*time.Minute, "every item to run", func() bool { return log.n.Load() >= want })
				quiesce(b, be.settle, nodes)
				return d
			}
			first := reshard()
			leader = nodes[0] // elected first: it started first
			if v, _, err := obs.Get(ctx, "/reshard/leader/election/instance"); err != nil || string(v) != leader.id {
				b.Fatalf("leader = %q, %v; want %s", v, err, leader.id)
			}
			var total time.Duration
			for b.Loop() {
				total += reshard()
			}
			b.ReportMetric(float64(first)/float64(time.Millisecond), "first-ms")
			b.ReportMetric(float64(total)/float64(b.N)/float64(time.Millisecond), "reshard-ms")
			b.ReportMetric(float64(leaderCalls.Total())/float64(b.N), "leader-requests-to-commit")
		})
	}
}

// BenchmarkIdleJobs: one scheduler on the embedded registry with N idle
// jobs (a cron that next fires in 2099). It reports the heap in use and the
// goroutine stacks (runtime.ReadMemStats after GC) and the goroutines per
// job, all of it: the scheduler, the coordination layer (the jobs' shared
// Namespace: one tree cache and one connection subscription; a job itself
// is data until something happens) and the embedded registry's own tree
// and watches, which a ZooKeeper deployment would keep in the ZooKeeper
// server instead. goroutines is the difference from before the scheduler
// started (the constant part). setup-s is the time to register all N jobs,
// setup-cpu-s the process's CPU time meanwhile (user + system: steadier
// than the wall time on a shared machine).
func BenchmarkIdleJobs(b *testing.B) {
	for _, n := range []int{1_000, 10_000} {
		b.Run("jobs="+strconv.Itoa(n), func(b *testing.B) {
			for b.Loop() {
				benchIdleJobs(b, n)
			}
		})
	}
}

func benchIdleJobs(b *testing.B, njobs int) {
	runtime.GC()
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	g0 := runtime.NumGoroutine()
	idle := startIdleJobs(b, njobs)
	runtime.GC()
	runtime.ReadMemStats(&m1)
	b.StopTimer()
	if f := os.Getenv("EJOB_HEAPPROFILE"); f != "" {
		w, err := os.Create(f)
		if err != nil {
			b.Fatal(err)
		}
		_ = pprof.Lookup("heap").WriteTo(w, 0)
		_ = w.Close()
	}
	heap := float64(int64(m1.HeapInuse)-int64(m0.HeapInuse)) / float64(njobs)
	stack := float64(int64(m1.StackInuse)-int64(m0.StackInuse)) / float64(njobs)
	b.ReportMetric(heap, "heap-B/job")
	b.ReportMetric(float64(int64(m1.HeapAlloc)-int64(m0.HeapAlloc))/float64(njobs), "live-B/job")
	b.ReportMetric(float64(int64(m1.HeapObjects)-int64(m0.HeapObjects))/float64(njobs), "objects/job")
	b.ReportMetric(stack, "stack-B/job")
	b.ReportMetric(heap+stack, "B/job")
	b.ReportMetric(float64(idle.goroutines-g0)/float64(njobs), "goroutines/job")
	b.ReportMetric(float64(idle.goroutines-g0), "goroutines")
	b.ReportMetric(idle.setup.Seconds(), "setup-s")
	b.ReportMetric(idle.setupCPU.Seconds(), "setup-cpu-s")
	idle.stop()
	b.StartTimer()
}

// idleJobs is one scheduler running N idle jobs on an embedded registry.
type idleJobs struct {
	setup      time.Duration // to register every job
	setupCPU   time.Duration // the process's CPU time meanwhile
	goroutines int           // of the whole process once settled
	client     *regcount.Client
	stop       func()
}

// startIdleJobs starts one scheduler on a new embedded registry with
// njobs idle jobs (1 item, a cron that next fires in 2099) and waits until
// every job has registered and the registry requests and the number of
// goroutines have settled.
func startIdleJobs(b *testing.B, njobs int) idleJobs {
	srv := embedded.NewServer()
	c, err := srv.Connect("idle")
	if err != nil {
		b.Fatal(err)
	}
	cc := regcount.New(c)
	s := newIdleScheduler(b, cc, hclog.Error, njobs)
	start, cpu0 := time.Now(), processCPU(b)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	if err := s.Ready(ctx); err != nil {
		b.Fatal(err)
	}
	setup, setupCPU := time.Since(start), processCPU(b)-cpu0
	// Let every job's startup settle (resharding flags, cache loads).
	quiesce(b, 500*time.Millisecond, []*benchNode{{client: cc}})
	var g1 int
	for range 50 {
		g := runtime.NumGoroutine()
		if g == g1 {
			break
		}
		g1 = g
		time.Sleep(100 * time.Millisecond)
	}
	return idleJobs{setup: setup, setupCPU: setupCPU, goroutines: g1, client: cc, stop: func() {
		cancel()
		if err := <-done; err != nil {
			b.Fatal(err)
		}
		_ = c.Close()
		runtime.KeepAlive(srv)
	}}
}

// newIdleScheduler returns a scheduler on c (instance 10.0.2.1@-@1) with
// njobs idle jobs "idle-N" (1 item, a cron that next fires in 2099), not
// yet running.
func newIdleScheduler(b testing.TB, c reg.Client, level hclog.Level, njobs int) *kernel.Kernel {
	b.Helper()
	return newIdleSchedulerAs(b, c, level, "10.0.2.1@-@1", njobs)
}

// newIdleSchedulerAs is newIdleScheduler as instance id (on 10.0.2.1).
func newIdleSchedulerAs(b testing.TB, c reg.Client, level hclog.Level, id string, njobs int) *kernel.Kernel {
	b.Helper()
	s, err := kernel.New(kernel.Options{
		Client: c, InstanceID: id, ServerIP: "10.0.2.1", Plugins: plugins(),
		Logger: hclog.New(&hclog.LoggerOptions{Level: level, Output: os.Stderr}),
	})
	if err != nil {
		b.Fatal(err)
	}
	noop := executor.SimpleFunc(func(context.Context, spi.ShardingContext) error { return nil })
	for i := range njobs {
		cfg := config.New("idle-"+strconv.Itoa(i), 1)
		cfg.Cron = "0 0 0 1 1 ? 2099"
		if err := s.Add(context.Background(), kernel.Job{Config: cfg, Runner: noop}); err != nil {
			b.Fatal(err)
		}
	}
	return s
}

// BenchmarkIdleCPU: one scheduler on the embedded registry with N idle
// jobs, as BenchmarkIdleJobs. Once everything has settled it measures the
// CPU time the whole process (user + system, getrusage) spends over a
// fixed idle interval of 5 s in which nothing fires, and the registry
// requests made meanwhile. An idle job should cost nothing: no timer and
// no request.
func BenchmarkIdleCPU(b *testing.B) {
	const interval = 5 * time.Second
	for _, n := range []int{1_000} {
		b.Run("jobs="+strconv.Itoa(n), func(b *testing.B) {
			var cpu time.Duration
			var g int
			var reqs int64
			for b.Loop() {
				b.StopTimer()
				idle := startIdleJobs(b, n)
				b.StartTimer()
				c0, r0 := processCPU(b), idle.client.Counts()
				time.Sleep(interval) // the measured idle interval, not a synchronisation
				cpu += processCPU(b) - c0
				reqs += idle.client.Counts().Sub(r0).Total()
				b.StopTimer()
				g = idle.goroutines
				idle.stop()
				b.StartTimer()
			}
			b.ReportMetric(float64(cpu)/float64(b.N)/float64(time.Millisecond)/interval.Seconds(), "cpu-ms/s")
			b.ReportMetric(float64(g), "goroutines")
			b.ReportMetric(float64(reqs)/float64(b.N)/interval.Seconds(), "requests/s")
		})
	}
}

// processCPU is the user + system CPU time this process has used.
func processCPU(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkExecutionCPU: the CPU time (user + system, the whole process)
// of one execution of a 1-item job on 1 instance on the embedded registry
// (default settings: monitorExecution on), from the trigger to the
// tree-cache re-reads that follow it. Each op triggers until the item
// starts: a trigger that comes while the previous execution still ends is
// dropped (Quartz's semantics), so it is sent again every 20 ms. The
// counts settle at the end, and the CPU is divided by the item starts.
func BenchmarkExecutionCPU(b *testing.B) {
	be := embeddedBackend()
	started := make(chan struct{}, 1)
	log := &itemLog{onStart: func() { started <- struct{}{} }}
	job := log.runner()
	job.Config = config.New("exec", 1)
	nodes := []*benchNode{startNode(b, be.connect(b, "bench"), "10.0.3.1", 300, nil, job)}
	run := func() {
		deadline := time.After(30 * time.Second)
		for {
			triggerAll(b, "exec", nodes)
			select {
			case <-started:
				return
			case <-time.After(20 * time.Millisecond):
			case <-deadline:
				b.Fatal("the item did not start")
			}
		}
	}
	run() // the first trigger reshards: not measured
	quiesce(b, be.settle, nodes)
	b.ReportAllocs()
	c0, n0 := processCPU(b), log.n.Load()
	for b.Loop() {
		run()
	}
	quiesce(b, be.settle, nodes)
	b.ReportMetric(float64(processCPU(b)-c0)/float64(log.n.Load()-n0)/float64(time.Microsecond), "cpu-µs/exec")
}
