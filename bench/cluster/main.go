// Command cluster is the many-host benchmark: real `ejob run` processes
// against a real 3-member ZooKeeper ensemble on loopback (scripts/zk.sh
// ensemble), one namespace per scenario. It prints its figures and never
// judges them; `make bench-cluster` runs it (docs/benchmarks.md, "Many
// hosts on one ensemble").
//
// Idle scenario: -hosts N hosts, -jobs M idle jobs (1 item, cron in 2099)
// per job group, one group per host, each group configured on -replicas
// hosts (the group's own host and the next ones), so a host holds
// M × replicas jobs. It prints the time from starting every host to the
// last "host started" line (every job registered), each host's settled
// RSS (host and plugin process), the registry traffic of the idle jobs
// (ZooKeeper's own counters, 4lw mntr, summed over the members; in 10 s
// slices, as the jobs' minute ticks come in waves) and the ensemble's RSS
// and CPU.
//
// Firing scenario: -fire-jobs jobs of -fire-items items on every host,
// cron every second. With -fire-type SCRIPT each item runs a script that
// appends the host, its start time and its sharding context to a file;
// with -fire-type HTTP each item is a GET to a server in this process,
// which notes when the request arrived and the item's sharding context
// (its shardingContext header; the host is the one whose pid ends the
// context's taskId, since every host's job runs the registry's one
// config). It prints the start delay after each second's fire (p50, p99,
// max; for SCRIPT beside the time `sh -c date` itself takes, alone and
// as many at once as fire each second), the registry
// requests per item-run (ZooKeeper's packet count over the window, less
// the idle sessions' own rate), then kills the host that ran the most
// items (SIGKILL to its process group) and prints how long until every
// item it ran has started on another host.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/ejob-io/ejob/internal/proctree"
	"github.com/ejob-io/ejob/internal/testkit"
)

type options struct {
	hosts, jobs, replicas                int
	fireJobs, fireItems                  int
	fireType                             string
	fireWindow, idleWindow               time.Duration
	settle                               time.Duration
	tick, session                        time.Duration
	ejob, zkScript, dir, zkHeap, zkFlags string
	keep, skipIdle, skipFire             bool
	readyTimeout, reshardWithin          time.Duration
}

func main() {
	var o options
	flag.IntVar(&o.hosts, "hosts", 3, "number of `ejob run` hosts")
	flag.IntVar(&o.jobs, "jobs", 500, "idle jobs per job group (one group per host)")
	flag.IntVar(&o.replicas, "replicas", 2, "hosts that configure each idle job group")
	flag.IntVar(&o.fireJobs, "fire-jobs", 50, "jobs firing every second, on every host")
	flag.IntVar(&o.fireItems, "fire-items", 4, "sharding items of each firing job")
	flag.StringVar(&o.fireType, "fire-type", "SCRIPT", "the firing jobs' type: SCRIPT (a fork and exec an item) or HTTP (a GET an item to this process)")
	flag.DurationVar(&o.fireWindow, "fire-window", 15*time.Second, "how long the firing jobs are measured")
	flag.DurationVar(&o.idleWindow, "idle-window", 20*time.Second, "how long steady idle traffic is counted")
	flag.DurationVar(&o.settle, "settle", 30*time.Second, "the wait after every host started before a window is counted (hosts joining one after another reshard every job each time, and the catch-ups of the fires those reshardings missed go on for about 15 s after the last with 10 hosts × 100 jobs)")
	flag.DurationVar(&o.tick, "tick", 500*time.Millisecond, "the ensemble's tickTime")
	flag.DurationVar(&o.session, "session", 2*time.Second, "the hosts' sessionTimeoutMilliseconds")
	flag.StringVar(&o.ejob, "ejob", "", "the ejob binary (default: built from this module into -dir)")
	flag.StringVar(&o.zkScript, "zk", "scripts/zk.sh", "scripts/zk.sh")
	flag.StringVar(&o.zkFlags, "zk-flags", "", "more JVM flags for each ensemble member, space-separated, after the others")
	flag.StringVar(&o.zkHeap, "zk-heap", "1g", "each ensemble member's Java heap (-Xmx): 100,000 jobs hold about 1.2 million znodes")
	flag.StringVar(&o.dir, "dir", "", "working directory (default: a new temporary one)")
	flag.BoolVar(&o.keep, "keep", false, "keep the working directory (it is always kept when the run fails)")
	flag.BoolVar(&o.skipIdle, "skip-idle", false, "skip the idle scenario")
	flag.BoolVar(&o.skipFire, "skip-fire", false, "skip the firing scenario")
	flag.DurationVar(&o.readyTimeout, "ready-timeout", 5*time.Minute, "how long to wait for every host to start")
	flag.DurationVar(&o.reshardWithin, "reshard-timeout", time.Minute, "how long to wait for a killed host's items elsewhere")
	flag.Parse()
	if err := o.check(); err != nil {
		fmt.Fprintln(os.Stderr, "cluster:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "cluster:", err)
		stop()
		os.Exit(1)
	}
}

func (o options) check() error {
	switch {
	case o.hosts < 2:
		return fmt.Errorf("-hosts %d: at least 2 (one is killed)", o.hosts)
	case o.jobs < 0 || o.fireJobs < 0:
		return errors.New("-jobs and -fire-jobs must not be negative")
	case o.replicas < 1 || o.replicas > o.hosts:
		return fmt.Errorf("-replicas %d: between 1 and -hosts (%d)", o.replicas, o.hosts)
	case o.fireItems < 1:
		return fmt.Errorf("-fire-items %d: at least 1", o.fireItems)
	case o.fireType != "SCRIPT" && o.fireType != "HTTP":
		return fmt.Errorf("-fire-type %q: SCRIPT or HTTP", o.fireType)
	case o.session < time.Second:
		return fmt.Errorf("-session %v: at least 1s", o.session)
	}
	return nil
}

func run(ctx context.Context, o options) (err error) {
	if o.dir == "" {
		d, err := os.MkdirTemp("", "ejob-cluster-")
		if err != nil {
			return err
		}
		o.dir = d
	}
	defer func() {
		switch {
		case err != nil:
			fmt.Fprintf(os.Stderr, "cluster: the hosts' logs and configs are kept in %s\n", o.dir)
		case !o.keep:
			_ = os.RemoveAll(o.dir)
		}
	}()
	if o.ejob == "" {
		o.ejob = filepath.Join(o.dir, "ejob")
		fmt.Println("building ejob (no -race) ...")
		if out, err := exec.CommandContext(ctx, "go", "build", "-o", o.ejob, "./cmd/ejob").CombinedOutput(); err != nil {
			return fmt.Errorf("build ejob: %w\n%s", err, out)
		}
	}
	zkDir := filepath.Join(o.dir, "zk")
	// zk.sh passes each member's jvm.flags to java after its own
	// defaults (the tests' serial collector and C1-only JIT): the heap
	// (-zk-heap: with a million znodes, a 2 GB serial heap's full
	// collections stop a member for 2-2.5 s, past the hosts' 2 s
	// sessions, where 3 GB has none; G1 has no such pauses but costs
	// about half as much CPU again); ZooKeeper's own container check
	// interval (a minute) instead of the tests' 500 ms, which at 100,000
	// jobs has the leader scan 200,000 election containers twice a
	// second; then -zk-flags.
	flags := "-Xmx" + o.zkHeap + "\n-Dznode.container.checkIntervalMs=60000\n"
	for _, f := range strings.Fields(o.zkFlags) {
		flags += f + "\n"
	}
	for n := 1; n <= 3; n++ {
		nd := filepath.Join(zkDir, "node"+strconv.Itoa(n))
		if err := os.MkdirAll(nd, 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(nd, "jvm.flags"), []byte(flags), 0o644); err != nil {
			return err
		}
	}
	out, err := exec.CommandContext(ctx, "bash", o.zkScript, "ensemble", zkDir,
		"--tick", strconv.FormatInt(o.tick.Milliseconds(), 10)).Output()
	if err != nil {
		return fmt.Errorf("start the ensemble: %w", err)
	}
	defer func() { _ = exec.Command("bash", o.zkScript, "stop", zkDir).Run() }()
	ens := &ensemble{addr: strings.TrimSpace(string(out))}
	for n := 1; n <= 3; n++ {
		b, err := os.ReadFile(filepath.Join(zkDir, "node"+strconv.Itoa(n), "pid"))
		if err != nil {
			return fmt.Errorf("ensemble member %d: %w", n, err)
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil {
			return fmt.Errorf("ensemble member %d pid: %w", n, err)
		}
		ens.pids = append(ens.pids, pid)
	}
	fmt.Printf("ensemble %s (tickTime %v, heap %s each, JVM flags %q), hosts' session %v, load average %s\n", ens.addr, o.tick, o.zkHeap, o.zkFlags, o.session, loadAvg())
	var pingRate float64 // packets a second the hosts' sessions send while idle
	if !o.skipIdle {
		if pingRate, err = idleScenario(ctx, o, ens); err != nil {
			return fmt.Errorf("idle scenario: %w", err)
		}
	}
	if !o.skipFire {
		if err := fireScenario(ctx, o, ens, pingRate); err != nil {
			return fmt.Errorf("firing scenario: %w", err)
		}
	}
	return nil
}

// idleSlice is the length of the slices of the idle window whose packet
// rates are printed.
const idleSlice = 10 * time.Second

// idleScenario runs the idle hosts and returns the ensemble's packet rate
// per host in the quietest slice of the window (their sessions' pings).
func idleScenario(ctx context.Context, o options, ens *ensemble) (float64, error) {
	fmt.Printf("\n== idle: %d hosts, %d groups of %d idle jobs, each group on %d hosts (%d jobs, %d job instances)\n",
		o.hosts, o.hosts, o.jobs, o.replicas, o.hosts*o.jobs, o.hosts*o.jobs*o.replicas)
	hosts := make([]*host, o.hosts)
	for i := range hosts {
		var groups []int
		for r := range o.replicas {
			groups = append(groups, (i-r+o.hosts)%o.hosts)
		}
		cfg := hostConfig(ens.addr, "idle", o.session, func(w io.Writer) {
			for _, g := range groups {
				for j := range o.jobs {
					fmt.Fprintf(w, "    idle-%d-%d:\n      elasticJobType: SCRIPT\n      cron: \"0 0 0 1 1 ? 2099\"\n      shardingTotalCount: 1\n      props:\n        script.command.line: /bin/true\n", g, j)
				}
			}
		})
		hosts[i] = &host{name: "idle-" + strconv.Itoa(i), dir: filepath.Join(o.dir, "idle-"+strconv.Itoa(i)), config: cfg}
	}
	defer stopAll(hosts)
	cpu0 := ens.cpu()
	if err := startAll(ctx, o, hosts); err != nil {
		return 0, err
	}
	startCPU := ens.cpu() - cpu0
	// The hosts' CPU from their start (each started now).
	startHosts, startPlugins := hostsCPU(hosts)
	settle(ctx, o.settle) // the start-up's tail and the pages' release
	p0, t0, c0 := ens.packets(), time.Now(), ens.cpu()
	// The rate in slices of the window: the jobs' minute ticks come in a
	// wave, the sessions' pings alone between the waves.
	var rates, znodes []string
	pings := -1.0 // the lowest slice's rate
	for prev, left := p0, o.idleWindow; left > 0 && ctx.Err() == nil; left -= idleSlice {
		d := min(idleSlice, left)
		settle(ctx, d)
		p := ens.packets()
		r := float64(p-prev) / d.Seconds()
		rates = append(rates, fmt.Sprintf("%.1f", r))
		znodes = append(znodes, ens.znodes())
		if pings < 0 || r < pings {
			pings = r
		}
		prev = p
	}
	p1, t1, c1 := ens.packets(), time.Now(), ens.cpu()
	fmt.Printf("registry packets a second, by %v of the window: %s\n", idleSlice, strings.Join(rates, " "))
	fmt.Printf("znodes at the end of each slice (the election containers ZooKeeper reaps): %s\n", strings.Join(znodes, " "))
	secs := t1.Sub(t0).Seconds()
	rate := float64(p1-p0) / secs
	fmt.Printf("registry traffic over %.0f s: %d packets (%.1f a second, %.2f a second a host, %.2f a minute a job; the sessions' pings included)\n",
		secs, p1-p0, rate, rate/float64(o.hosts), 60*rate/float64(o.hosts*o.jobs))
	printHosts(hosts)
	fmt.Printf("CPU while the hosts started: hosts %.2f s, their plugin processes %.2f s, ZooKeeper %.2f s\n",
		startHosts.Seconds(), pluginCPU(nil, startPlugins).Seconds(), startCPU.Seconds())
	fmt.Printf("ZooKeeper: RSS %s; CPU %.2f s while the hosts started, %.1f %% of a core while idle\n",
		ens.rss(), startCPU.Seconds(), 100*(c1-c0).Seconds()/secs)
	fmt.Printf("ZooKeeper: %s\n", ens.summary())
	fmt.Printf("load average %s\n", loadAvg())
	return max(pings, 0) / float64(o.hosts), nil
}

func fireScenario(ctx context.Context, o options, ens *ensemble, pingRate float64) error {
	fmt.Printf("\n== firing: %d hosts, %d %s jobs × %d items every second on each (%d item-runs a second)\n",
		o.hosts, o.fireJobs, o.fireType, o.fireItems, o.fireJobs*o.fireItems)
	var rec fireRecorder
	if o.fireType == "HTTP" {
		hr, err := newHTTPRecorder()
		if err != nil {
			return err
		}
		defer hr.close()
		rec = hr
	} else {
		sr, err := newScriptRecorder(o.dir)
		if err != nil {
			return err
		}
		rec = sr
	}
	hosts := make([]*host, o.hosts)
	for i := range hosts {
		cfg := hostConfig(ens.addr, "fire", o.session, func(w io.Writer) {
			for j := range o.fireJobs {
				fmt.Fprintf(w, "    fire-%d:\n      elasticJobType: %s\n      cron: \"* * * * * ?\"\n      shardingTotalCount: %d\n      props:\n%s",
					j, o.fireType, o.fireItems, rec.props(i))
			}
		})
		h := &host{name: "fire-" + strconv.Itoa(i), dir: filepath.Join(o.dir, "fire-"+strconv.Itoa(i)), config: cfg}
		h.env = rec.env(i, h.dir)
		hosts[i] = h
	}
	defer stopAll(hosts)
	if err := startAll(ctx, o, hosts); err != nil {
		return err
	}
	rec.bind(hosts)
	settle(ctx, o.settle) // the first shardings, the pages' release
	p0, c0, t0 := ens.packets(), ens.cpu(), time.Now()
	h0, k0 := hostsCPU(hosts)
	settle(ctx, o.fireWindow)
	p1, c1, t1 := ens.packets(), ens.cpu(), time.Now()
	h1, k1 := hostsCPU(hosts)
	runs, err := rec.runs(-1)
	if err != nil {
		return err
	}
	var delays []float64
	window := 0
	for _, r := range runs {
		if r.at.Before(t0) || !r.at.Before(t1) {
			continue
		}
		window++
		delays = append(delays, float64(r.at.Sub(r.at.Truncate(time.Second)).Microseconds())/1000)
	}
	secs := t1.Sub(t0).Seconds()
	expected := int(secs) * o.fireJobs * o.fireItems
	fmt.Printf("item-runs in %.1f s: %d (%d expected)\n", secs, window, expected)
	floor := ""
	if o.fireType == "SCRIPT" {
		floor = "; `sh -c date` alone: " + shFloor() + "; " + shBurstFloor(o.fireJobs*o.fireItems)
	}
	fmt.Printf("start delay after the fire, ms (%s, from its second): p50 %.2f, p99 %.2f, max %.2f%s\n",
		rec.clock(), percentile(delays, 50), percentile(delays, 99), percentile(delays, 100), floor)
	packets := float64(p1 - p0)
	if window > 0 {
		fmt.Printf("registry requests per item-run: %.2f (%d packets, less %.0f of idle sessions' pings)\n",
			(packets-pingRate*float64(o.hosts)*secs)/float64(window), p1-p0, pingRate*float64(o.hosts)*secs)
	}
	printHosts(hosts)
	if window > 0 {
		hc, kc, zc := (h1 - h0).Seconds(), pluginCPU(k0, k1).Seconds(), (c1 - c0).Seconds()
		fmt.Printf("CPU while firing, %% of a core: hosts %.1f, their plugin processes %.1f, ZooKeeper %.1f; per item-run %.0f µs (hosts %.0f, plugins %.0f, ZooKeeper %.0f)\n",
			100*hc/secs, 100*kc/secs, 100*zc/secs, 1e6*(hc+kc+zc)/float64(window), 1e6*hc/float64(window), 1e6*kc/float64(window), 1e6*zc/float64(window))
	}
	fmt.Printf("ZooKeeper: RSS %s; CPU %.1f %% of a core while firing; %s; load average %s\n", ens.rss(), 100*(c1-c0).Seconds()/secs, ens.summary(), loadAvg())

	// Kill the host that ran the most items in the last 2 s (with more
	// hosts than items, AVG_ALLOCATION gives every job's items to the same
	// first hosts); every item it ran then must start elsewhere.
	ran := map[int]map[string]bool{}
	for _, r := range runs {
		if r.at.After(t1.Add(-2 * time.Second)) {
			if ran[r.host] == nil {
				ran[r.host] = map[string]bool{}
			}
			ran[r.host][r.item] = true
		}
	}
	v := -1
	for h, items := range ran {
		if v < 0 || len(items) > len(ran[v]) {
			v = h
		}
	}
	if v < 0 {
		fmt.Println("no host ran an item in the last 2 s: nothing to reshard")
		return nil
	}
	victim, mine := hosts[v], ran[v]
	killed := time.Now()
	victim.kill()
	fmt.Printf("killed %s (SIGKILL to its process group), which ran %d items\n", victim.name, len(mine))
	moved := map[string]time.Duration{}
	deadline := killed.Add(o.reshardWithin)
	for len(moved) < len(mine) && time.Now().Before(deadline) && ctx.Err() == nil {
		settle(ctx, 100*time.Millisecond)
		rs, err := rec.runs(-1)
		if err != nil {
			return err
		}
		for _, r := range rs {
			if r.host != v && mine[r.item] && r.at.After(killed) {
				if _, ok := moved[r.item]; !ok {
					moved[r.item] = r.at.Sub(killed)
				}
			}
		}
	}
	var ds []float64
	for _, d := range moved {
		ds = append(ds, d.Seconds())
	}
	fmt.Printf("its items running elsewhere: %d of %d; kill to item start p50 %.2f s, max %.2f s (session %v); load average %s\n",
		len(moved), len(mine), percentile(ds, 50), percentile(ds, 100), o.session, loadAvg())
	return nil
}

// fireRecorder notes the firing jobs' item-runs: it gives each host's jobs
// their props and the host its environment, and returns the runs noted.
type fireRecorder interface {
	// props is the props of host i's firing jobs, YAML indented for a
	// job's props (the registry keeps the first host's config).
	props(i int) string
	// env is the environment host i (working directory dir) runs with
	// besides the bench's own.
	env(i int, dir string) []string
	// bind tells it the hosts' processes, once they are started.
	bind(hosts []*host)
	// runs returns every item-run noted so far (all hosts' when i < 0).
	runs(i int) ([]itemRun, error)
	// clock says whose clock an item-run's start is.
	clock() string
}

// scriptRecorder: each item runs record.sh, which appends a line to its
// host's runs.txt.
type scriptRecorder struct {
	script string
	outs   map[int]string
}

func newScriptRecorder(dir string) (*scriptRecorder, error) {
	script := filepath.Join(dir, "record.sh")
	// One line per item-run: the host, when the script started (ns) and
	// its sharding context (the JSON ejob appends as the last argument).
	if err := os.WriteFile(script, []byte("#!/bin/sh\nprintf '%s %s %s\\n' \"$EJOB_BENCH_HOST\" \"$(date +%s%N)\" \"$1\" >>\"$EJOB_BENCH_OUT\"\n"), 0o755); err != nil {
		return nil, err
	}
	return &scriptRecorder{script: script, outs: map[int]string{}}, nil
}

func (r *scriptRecorder) props(int) string {
	return "        script.command.line: " + r.script + "\n"
}

func (r *scriptRecorder) env(i int, dir string) []string {
	r.outs[i] = filepath.Join(dir, "runs.txt")
	return []string{"EJOB_BENCH_HOST=" + strconv.Itoa(i), "EJOB_BENCH_OUT=" + r.outs[i]}
}

func (r *scriptRecorder) bind([]*host) {}

func (r *scriptRecorder) runs(i int) ([]itemRun, error) {
	var out []itemRun
	for h, path := range r.outs {
		if i >= 0 && h != i {
			continue
		}
		rs, err := readRuns(h, path)
		if err != nil {
			return nil, err
		}
		out = append(out, rs...)
	}
	return out, nil
}

func (r *scriptRecorder) clock() string { return "the script's clock" }

// httpRecorder: each item is a GET to /run on a server in this process,
// which notes when the request arrived and the pid in its taskId.
type httpRecorder struct {
	ln  net.Listener
	srv *http.Server

	mu     sync.Mutex
	seen   []itemRun // host: the pid until runs resolves it
	hostOf map[int]int
	bad    int // requests whose sharding context did not parse
}

func newHTTPRecorder() (*httpRecorder, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("http recorder: %w", err)
	}
	r := &httpRecorder{ln: ln}
	r.srv = &http.Server{Handler: http.HandlerFunc(r.serve), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = r.srv.Serve(ln) }()
	return r, nil
}

func (r *httpRecorder) serve(w http.ResponseWriter, req *http.Request) {
	at := time.Now()
	item, pid, ok := itemOf(req.Header.Get("shardingContext"))
	r.mu.Lock()
	if !ok {
		r.bad++
	} else {
		r.seen = append(r.seen, itemRun{host: pid, item: item, at: at})
	}
	r.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

func (r *httpRecorder) props(i int) string {
	return fmt.Sprintf("        http.uri: \"http://%s/run\"\n        http.method: GET\n", r.ln.Addr())
}

func (r *httpRecorder) bind(hosts []*host) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.hostOf = map[int]int{}
	for i, h := range hosts {
		r.hostOf[h.cmd.Process.Pid] = i
	}
}

func (r *httpRecorder) env(int, string) []string { return nil }

func (r *httpRecorder) runs(i int) ([]itemRun, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.bad > 0 {
		return nil, fmt.Errorf("http recorder: %d requests without a host or a sharding context", r.bad)
	}
	var out []itemRun
	for _, run := range r.seen {
		h, ok := r.hostOf[run.host]
		if !ok {
			return nil, fmt.Errorf("http recorder: a request of %s from pid %d, no host's", run.item, run.host)
		}
		if run.host = h; i < 0 || h == i {
			out = append(out, run)
		}
	}
	return out, nil
}

func (r *httpRecorder) clock() string { return "the request's arrival at this process" }

func (r *httpRecorder) close() { _ = r.srv.Close() }

// hostConfig is an ejob.yaml on the ensemble at addr, namespace ns, with
// the jobs jobs writes (indented under elasticjob.jobs).
func hostConfig(addr, ns string, session time.Duration, jobs func(io.Writer)) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "elasticjob:\n  regCenter:\n    serverLists: %s\n    namespace: %s\n    sessionTimeoutMilliseconds: %d\n  jobs:\n",
		addr, ns, session.Milliseconds())
	jobs(&b)
	b.WriteString("ejob:\n  drainTimeout: 5s\n")
	return b.Bytes()
}

// host is one `ejob run -c DIR/ejob.yaml` process.
type host struct {
	name, dir string
	config    []byte
	env       []string

	cmd     *exec.Cmd
	started chan time.Duration // the "host started" line, from the process's start
	start   time.Time
	exited  chan struct{}
}

func (h *host) launch(bin string) error {
	if err := os.MkdirAll(h.dir, 0o755); err != nil {
		return err
	}
	cfg := filepath.Join(h.dir, "ejob.yaml")
	if err := os.WriteFile(cfg, h.config, 0o644); err != nil {
		return err
	}
	logf, err := os.Create(filepath.Join(h.dir, "host.log"))
	if err != nil {
		return err
	}
	h.cmd = exec.Command(bin, "run", "-c", cfg)
	h.cmd.Env = append(os.Environ(), h.env...)
	h.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	pr, pw := io.Pipe()
	h.cmd.Stderr = pw
	h.cmd.Stdout = logf
	h.started = make(chan time.Duration, 1)
	h.exited = make(chan struct{})
	h.start = time.Now()
	if err := h.cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("%s: %w", h.name, err)
	}
	go func() {
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		seen := false
		for sc.Scan() {
			if !seen && strings.Contains(sc.Text(), "host started") {
				seen = true
				h.started <- time.Since(h.start)
			}
			fmt.Fprintln(logf, sc.Text())
		}
		_, _ = io.Copy(logf, pr)
		logf.Close()
	}()
	go func() {
		_ = h.cmd.Wait()
		pw.Close()
		close(h.exited)
	}()
	return nil
}

func (h *host) kill() {
	if h.cmd == nil || h.cmd.Process == nil {
		return
	}
	_ = syscall.Kill(-h.cmd.Process.Pid, syscall.SIGKILL)
	<-h.exited
}

// stop sends SIGTERM and waits (SIGKILL after 20 s).
func (h *host) stop() {
	if h.cmd == nil || h.cmd.Process == nil {
		return
	}
	select {
	case <-h.exited:
		return
	default:
	}
	_ = h.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-h.exited:
	case <-time.After(20 * time.Second):
		h.kill()
	}
}

func stopAll(hosts []*host) {
	var wg sync.WaitGroup
	for _, h := range hosts {
		wg.Go(h.stop)
	}
	wg.Wait()
}

// startAll starts every host at once and waits for each one's "host
// started"; it prints the time until the last.
func startAll(ctx context.Context, o options, hosts []*host) error {
	t0 := time.Now()
	for _, h := range hosts {
		if err := h.launch(o.ejob); err != nil {
			return err
		}
	}
	var each []float64
	timeout := time.After(o.readyTimeout)
	for _, h := range hosts {
		select {
		case d := <-h.started:
			each = append(each, d.Seconds())
		case <-h.exited:
			return fmt.Errorf("%s exited before it started; see %s", h.name, filepath.Join(h.dir, "host.log"))
		case <-timeout:
			return fmt.Errorf("%s not started after %v; see %s", h.name, o.readyTimeout, filepath.Join(h.dir, "host.log"))
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	fmt.Printf("all %d hosts ready (\"host started\") %.2f s after the first was started; each host %.2f–%.2f s\n",
		len(hosts), time.Since(t0).Seconds(), percentile(each, 0), percentile(each, 100))
	return nil
}

// printHosts prints each host's settled RSS: host, plugin process.
func printHosts(hosts []*host) {
	var sb strings.Builder
	var max float64
	for _, h := range hosts {
		hk := statusKB(h.cmd.Process.Pid, "VmRSS")
		var ck int64
		for _, c := range children(h.cmd.Process.Pid) {
			ck += statusKB(c, "VmRSS")
		}
		t := float64(hk+ck) / 1024
		max = maxf(max, t)
		fmt.Fprintf(&sb, " %s %.1f (%.1f + %.1f)", h.name, t, float64(hk)/1024, float64(ck)/1024)
	}
	fmt.Printf("host RSS, MiB (host + plugin process), largest %.1f:%s\n", max, sb.String())
}

// hostsCPU is the CPU time the hosts' processes have used so far, and
// each of their children's (the plugin processes), by pid.
func hostsCPU(hosts []*host) (own time.Duration, plugins map[int]time.Duration) {
	plugins = map[int]time.Duration{}
	for _, h := range hosts {
		own += procCPU(h.cmd.Process.Pid)
		for _, c := range children(h.cmd.Process.Pid) {
			plugins[c] = procCPU(c)
		}
	}
	return own, plugins
}

// pluginCPU is the plugin processes' CPU time between two hostsCPU
// samples: a process started in between counts in full, one that ended
// is not counted (its last time is gone with it).
func pluginCPU(before, after map[int]time.Duration) time.Duration {
	var t time.Duration
	for pid, c := range after {
		t += c - before[pid]
	}
	return t
}

func maxf(a, b float64) float64 {
	if b > a {
		return b
	}
	return a
}

type itemRun struct {
	host int
	item string // "job/item"
	at   time.Time
}

// readRuns parses host's record.sh output file; a missing file has no runs.
func readRuns(host int, path string) ([]itemRun, error) {
	b, err := testkit.ReadLines(path) // a line being written is read once complete
	if err != nil {
		return nil, err
	}
	var out []itemRun
	for line := range strings.Lines(string(b)) {
		f := strings.SplitN(strings.TrimSpace(line), " ", 3)
		if len(f) != 3 {
			return nil, fmt.Errorf("%s: bad line %q", path, line)
		}
		ns, err := strconv.ParseInt(f[1], 10, 64)
		item, _, ok := itemOf(f[2])
		if err != nil || !ok {
			return nil, fmt.Errorf("%s: bad line %q", path, line)
		}
		out = append(out, itemRun{host: host, item: item, at: time.Unix(0, ns)})
	}
	return out, nil
}

// itemOf returns "job/item" of a sharding context's JSON, and the pid
// that ends its taskId (JOB@-@ITEMS@-@TYPE@-@IP@-@PID: the instance's).
func itemOf(contextJSON string) (item string, pid int, ok bool) {
	var sc struct {
		JobName      string `json:"jobName"`
		TaskID       string `json:"taskId"`
		ShardingItem *int   `json:"shardingItem"`
	}
	if err := json.Unmarshal([]byte(contextJSON), &sc); err != nil || sc.JobName == "" || sc.ShardingItem == nil {
		return "", 0, false
	}
	at := strings.LastIndex(sc.TaskID, "@-@")
	if at < 0 {
		return "", 0, false
	}
	pid, err := strconv.Atoi(sc.TaskID[at+len("@-@"):])
	if err != nil {
		return "", 0, false
	}
	return sc.JobName + "/" + strconv.Itoa(*sc.ShardingItem), pid, true
}

// ensemble is the 3-member ZooKeeper.
type ensemble struct {
	addr string
	pids []int
}

// fourLetter sends a 4lw command to one member.
func fourLetter(addr, cmd string) (string, error) {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, cmd); err != nil {
		return "", err
	}
	b, err := io.ReadAll(c)
	return string(b), err
}

func mntr(addr string) map[string]string {
	out, err := fourLetter(addr, "mntr")
	if err != nil {
		return nil
	}
	m := map[string]string{}
	for line := range strings.Lines(out) {
		k, v, ok := strings.Cut(strings.TrimSpace(line), "\t")
		if ok {
			m[k] = v
		}
	}
	return m
}

// packets is the client packets received, summed over the members.
func (e *ensemble) packets() int64 {
	var n int64
	for _, a := range strings.Split(e.addr, ",") {
		v, _ := strconv.ParseInt(mntr(a)["zk_packets_received"], 10, 64)
		n += v
	}
	return n
}

// summary is the leader's znode count, data size and largest proposal
// (a transaction: jute.maxbuffer bounds it), the largest response any
// member sent a client, and the watches and client connections summed
// over the members.
func (e *ensemble) summary() string {
	var watches, conns, resp int64
	leader := "no leader answered mntr"
	for _, a := range strings.Split(e.addr, ",") {
		m := mntr(a)
		w, _ := strconv.ParseInt(m["zk_watch_count"], 10, 64)
		c, _ := strconv.ParseInt(m["zk_num_alive_connections"], 10, 64)
		r, _ := strconv.ParseInt(m["zk_max_client_response_size"], 10, 64)
		watches, conns, resp = watches+w, conns+c, max(resp, r)
		if m["zk_server_state"] == "leader" {
			leader = fmt.Sprintf("%s znodes, %s bytes of data tree, largest proposal %s bytes", m["zk_znode_count"], m["zk_approximate_data_size"], m["zk_max_proposal_size"])
		}
	}
	return fmt.Sprintf("%s; largest client response %d bytes; %d watches and %d client connections on the members", leader, resp, watches, conns)
}

// znodes is the leader's znode count ("?" when no leader answers).
func (e *ensemble) znodes() string {
	for _, a := range strings.Split(e.addr, ",") {
		if m := mntr(a); m["zk_server_state"] == "leader" {
			return m["zk_znode_count"]
		}
	}
	return "?"
}

func (e *ensemble) cpu() time.Duration {
	var t time.Duration
	for _, p := range e.pids {
		t += procCPU(p)
	}
	return t
}

func (e *ensemble) rss() string {
	var parts []string
	var sum int64
	for _, p := range e.pids {
		kb := statusKB(p, "VmRSS")
		sum += kb
		parts = append(parts, fmt.Sprintf("%.0f", float64(kb)/1024))
	}
	return fmt.Sprintf("%.0f MiB (%s)", float64(sum)/1024, strings.Join(parts, " + "))
}

// statusKB is a field of /proc/PID/status in kB, 0 when unreadable.
func statusKB(pid int, field string) int64 {
	kb, _ := testkit.ProcStatusKB(pid, field)
	return kb
}

func procCPU(pid int) time.Duration {
	t, _ := testkit.ProcCPU(pid)
	return t
}

// children lists the processes whose parent is pid.
func children(pid int) []int {
	var out []int
	for _, p := range proctree.Children(pid) {
		out = append(out, p.PID)
	}
	return out
}

// shFloor is the p50 and p99 of `sh -c 'date +%s%N'` from fork to exit, the
// floor of record.sh's start delay.
func shFloor() string {
	var ds []float64
	for range 50 {
		t := time.Now()
		if err := exec.Command("/bin/sh", "-c", "date +%s%N >/dev/null").Run(); err != nil {
			return "not measured: " + err.Error()
		}
		ds = append(ds, float64(time.Since(t).Microseconds())/1000)
	}
	return fmt.Sprintf("p50 %.2f ms, p99 %.2f ms", percentile(ds, 50), percentile(ds, 99))
}

// shBurstFloor starts n `sh -c 'date +%s%N'` at once, as every host's
// firing jobs start their items at one fire, 10 times, and returns the
// p50, p99 and max from the start to each date's time: the floor of the
// start delay when the machine forks the whole second's scripts at once.
func shBurstFloor(n int) string {
	var ds []float64
	for range 10 {
		time.Sleep(200 * time.Millisecond) // idle between bursts, as between fires
		times := make([]time.Time, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		start := time.Now()
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				out, err := exec.Command("/bin/sh", "-c", "date +%s%N").Output()
				if err == nil {
					var ns int64
					ns, err = strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64)
					times[i] = time.Unix(0, ns)
				}
				errs[i] = err
			}()
		}
		wg.Wait()
		for i, t := range times {
			if errs[i] != nil {
				return "burst not measured: " + errs[i].Error()
			}
			ds = append(ds, float64(t.Sub(start).Microseconds())/1000)
		}
	}
	return fmt.Sprintf("%d at once: p50 %.2f ms, p99 %.2f ms, max %.2f ms", n, percentile(ds, 50), percentile(ds, 99), percentile(ds, 100))
}

func percentile(v []float64, p float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	i := int(p/100*float64(len(s))+0.5) - 1
	return s[min(max(i, 0), len(s)-1)]
}

func settle(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	return strings.Join(strings.Fields(string(b))[:3], " ")
}
