package golden_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ejob-io/ejob/core/config"
	"github.com/ejob-io/ejob/core/executor"
	"github.com/ejob-io/ejob/core/kernel"
	"github.com/ejob-io/ejob/core/lifecycle"
	"github.com/ejob-io/ejob/core/reg"
	"github.com/ejob-io/ejob/core/reg/zktest"
	"github.com/ejob-io/ejob/core/reg/zookeeper"
	"github.com/ejob-io/ejob/internal/testkit"
	"github.com/ejob-io/ejob/plugins/builtin"
	"github.com/ejob-io/ejob/spi"
)

const (
	goldenFile = "testdata/elasticjob-tree.golden"
	namespace  = "peer"
	jobName    = "javaSimpleJob"
	jobRoot    = "/" + jobName
	// The recorded cluster's instance ids (A=15920, B=15966, C=16020).
	idA = "192.0.2.2@-@15920"
	idB = "192.0.2.2@-@15966"
	idC = "192.0.2.2@-@16020"
)

// ---- the golden file ----

// expect is one golden line.
type expect struct {
	line     int
	optional bool
	kind     string // "P" or "E"
	path     string // literal (snapshots) or pattern (catalogue, must-see)
	pathRE   *regexp.Regexp
	values   []string // alternatives: Go-quoted literals or {tokens}; nil = empty
}

type golden struct {
	config    string
	catalogue []expect
	mustSee   []expect
	snapshots map[string][]expect
}

var pathTokens = strings.NewReplacer(
	`\{i\}`, `(0|[1-9][0-9]*)`,
	`\{id\}`, `[0-9]+\.[0-9]+\.[0-9]+\.[0-9]+@-@[0-9]+`,
	`\{ip\}`, `[0-9]+\.[0-9]+\.[0-9]+\.[0-9]+`,
	`\{latch\}`, `_c_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}-latch-[0-9]{10}`,
)

var idRE = regexp.MustCompile(`^[0-9]+\.[0-9]+\.[0-9]+\.[0-9]+@-@[0-9]+$`)

// stripComment removes a trailing " # ..." outside quotes.
func stripComment(s string) string {
	inQuote := false
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '\\' && inQuote:
			i++
		case s[i] == '"':
			inQuote = !inQuote
		case s[i] == '#' && !inQuote && (i == 0 || s[i-1] == ' ' || s[i-1] == '\t'):
			return strings.TrimSpace(s[:i])
		}
	}
	return strings.TrimSpace(s)
}

func loadGolden(t *testing.T) *golden {
	t.Helper()
	f, err := os.Open(goldenFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	g := &golden{snapshots: map[string][]expect{}}
	var section string
	var cfgLines []string
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		raw := sc.Text()
		if strings.HasPrefix(raw, "#") || strings.TrimSpace(raw) == "" {
			continue
		}
		if strings.HasPrefix(raw, "[") && strings.HasSuffix(raw, "]") {
			section = strings.Trim(raw, "[]")
			continue
		}
		if section == "config" {
			if !strings.HasPrefix(raw, "|") {
				t.Fatalf("%s:%d: config lines start with '|'", goldenFile, n)
			}
			cfgLines = append(cfgLines, strings.TrimPrefix(strings.TrimPrefix(raw, "|"), " "))
			continue
		}
		line := stripComment(raw)
		fields := strings.Fields(line)
		if len(fields) < 2 {
			t.Fatalf("%s:%d: want KIND PATH [VALUE]", goldenFile, n)
		}
		e := expect{line: n, kind: fields[0], path: fields[1]}
		if strings.HasPrefix(e.kind, "?") {
			e.optional, e.kind = true, e.kind[1:]
		}
		if e.kind != "P" && e.kind != "E" {
			t.Fatalf("%s:%d: kind %q", goldenFile, n, e.kind)
		}
		e.pathRE = regexp.MustCompile("^" + pathTokens.Replace(regexp.QuoteMeta(e.path)) + "$")
		if rest := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(strings.TrimPrefix(line, fields[0])), fields[1])); rest != "" {
			for _, alt := range strings.Split(rest, " | ") {
				alt = strings.TrimSpace(alt)
				if strings.HasPrefix(alt, `"`) {
					if _, err := strconv.Unquote(alt); err != nil {
						t.Fatalf("%s:%d: value %s: %v", goldenFile, n, alt, err)
					}
				} else if alt != "{config}" && alt != "{instance}" && alt != "{id}" {
					t.Fatalf("%s:%d: unknown value token %q", goldenFile, n, alt)
				}
				e.values = append(e.values, alt)
			}
		}
		switch {
		case section == "catalogue":
			g.catalogue = append(g.catalogue, e)
		case section == "must-see":
			g.mustSee = append(g.mustSee, e)
		case strings.HasPrefix(section, "snapshot "):
			name := strings.TrimPrefix(section, "snapshot ")
			g.snapshots[name] = append(g.snapshots[name], e)
		default:
			t.Fatalf("%s:%d: line outside a known section (%q)", goldenFile, n, section)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	g.config = strings.Join(cfgLines, "\n")
	return g
}

// valueOK reports whether data is one of e's value alternatives for path.
// Null data never is: every node of the recorded tree has data (Curator writes
// empty data, never ZooKeeper's null, and Java's getDirectly dereferences
// it), so "absent" in the golden file means empty, not null.
func (g *golden) valueOK(e expect, path, data string, null bool) bool {
	if null {
		return false
	}
	if e.values == nil {
		return data == ""
	}
	for _, alt := range e.values {
		switch alt {
		case "{config}":
			if data == g.config {
				return true
			}
		case "{instance}":
			id := path[strings.LastIndex(path, "/")+1:]
			ip, _, _ := strings.Cut(id, "@-@")
			if data == "jobInstanceId: "+id+"\nserverIp: "+ip+"\n" {
				return true
			}
		case "{id}":
			if idRE.MatchString(data) {
				return true
			}
		default:
			if s, _ := strconv.Unquote(alt); data == s {
				return true
			}
		}
	}
	return false
}

// valuesString says what e allows: its alternatives, or empty data.
func valuesString(e expect) string {
	if e.values == nil {
		return `"" (empty, not null)`
	}
	return strings.Join(e.values, " | ")
}

// ---- the tree ----

// znode is one node as a client sees it. null: its data is ZooKeeper's
// null (a nil slice), not empty.
type znode struct {
	path, kind, data string
	null             bool
}

func (n znode) String() string {
	if n.null {
		return fmt.Sprintf("%s %s = null", n.kind, n.path)
	}
	return fmt.Sprintf("%s %s = %q", n.kind, n.path, n.data)
}

func kindOf(st reg.Stat) string {
	if st.EphemeralOwner != 0 {
		return "E"
	}
	return "P"
}

// dump reads the namespace's whole tree (nodes deleted meanwhile are skipped).
func dump(ctx context.Context, c reg.Client) (map[string]znode, error) {
	out := map[string]znode{}
	var walk func(path string) error
	walk = func(path string) error {
		data, st, err := c.Get(ctx, path)
		if errors.Is(err, reg.ErrNoNode) {
			return nil
		}
		if err != nil {
			return err
		}
		out[path] = znode{path, kindOf(st), string(data), data == nil}
		kids, err := c.Children(ctx, path)
		if errors.Is(err, reg.ErrNoNode) {
			return nil
		}
		if err != nil {
			return err
		}
		for _, k := range kids {
			if err := walk(reg.Join(path, k)); err != nil {
				return err
			}
		}
		return nil
	}
	return out, walk("/")
}

// catalogueViolations lists the nodes no catalogue line allows.
func (g *golden) catalogueViolations(nodes []znode) []string {
	var bad []string
	for _, n := range nodes {
		ok := false
		var near []string
		for _, e := range g.catalogue {
			if !e.pathRE.MatchString(n.path) {
				continue
			}
			if e.kind == n.kind && g.valueOK(e, n.path, n.data, n.null) {
				ok = true
				break
			}
			near = append(near, fmt.Sprintf("line %d: %s %s %s", e.line, e.kind, e.path, valuesString(e)))
		}
		if !ok {
			why := "no such node in the spec tree"
			if len(near) > 0 {
				why = "the spec tree has " + strings.Join(near, "; ")
			}
			bad = append(bad, fmt.Sprintf("ejob wrote %s: %s", n, why))
		}
	}
	sort.Strings(bad)
	return slices.Compact(bad)
}

// snapshotDiff compares a dump with a snapshot section.
func (g *golden) snapshotDiff(name string, tree map[string]znode) []string {
	var diff []string
	want := map[string]expect{}
	for _, e := range g.snapshots[name] {
		want[e.path] = e
		n, ok := tree[e.path]
		switch {
		case !ok && !e.optional:
			diff = append(diff, fmt.Sprintf("missing (golden line %d): %s %s %s", e.line, e.kind, e.path, valuesString(e)))
		case !ok:
		case n.kind != e.kind:
			diff = append(diff, fmt.Sprintf("kind (golden line %d): %s is %s, the spec tree has %s", e.line, e.path, n.kind, e.kind))
		case !g.valueOK(e, n.path, n.data, n.null):
			diff = append(diff, fmt.Sprintf("value (golden line %d): %s, the spec tree has %s", e.line, n, valuesString(e)))
		}
	}
	for p, n := range tree {
		if _, ok := want[p]; !ok {
			diff = append(diff, "unexpected: "+n.String())
		}
	}
	sort.Strings(diff)
	return diff
}

func sortedNodes(tree map[string]znode) []znode {
	out := make([]znode, 0, len(tree))
	for _, n := range tree {
		out = append(out, n)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].path < out[j].path })
	return out
}

// ---- the scenario ----

// recorder keeps every node version a tree cache over the namespace saw.
type recorder struct {
	mu   sync.Mutex
	seen map[znode]bool
}

func (r *recorder) add(n znode) {
	r.mu.Lock()
	r.seen[n] = true
	r.mu.Unlock()
}

func (r *recorder) nodes() []znode {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]znode, 0, len(r.seen))
	for n := range r.seen {
		out = append(out, n)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}

type run struct {
	id    string
	item  int
	start time.Time
}

// control holds item executions at will and records them.
type control struct {
	mu       sync.Mutex
	gate     chan struct{} // non-nil: every run waits for it
	failGate chan struct{} // non-nil: item 1 on a survivor (a failover run) waits for it
	held     int
	runs     []run
}

func (c *control) runner(id string) executor.SimpleFunc {
	return func(ctx context.Context, sc spi.ShardingContext) error {
		c.mu.Lock()
		c.runs = append(c.runs, run{id, sc.ShardingItem, time.Now()})
		g := c.gate
		if c.failGate != nil && sc.ShardingItem == 1 && id != idB {
			g = c.failGate
		}
		if g != nil {
			c.held++
		}
		c.mu.Unlock()
		if g != nil {
			select {
			case <-g:
			case <-ctx.Done():
			}
			c.mu.Lock()
			c.held--
			c.mu.Unlock()
		}
		return nil
	}
}

func (c *control) heldCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.held
}

func (c *control) runsSince(t time.Time) []run {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []run
	for _, r := range c.runs {
		if !r.start.Before(t) {
			out = append(out, r)
		}
	}
	return out
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

type node struct {
	id     string
	client *zookeeper.Client
	cancel context.CancelFunc
	done   chan error
}

// TestZooKeeperTreeMatchesElasticJob runs the recorded cluster on a real
// ZooKeeper (three instances, failover on, triggers, a disabled item, a
// console trigger, a misfire, a crash with failover and resharding) and
// compares the tree ejob writes with the tree ElasticJob 3.0.4 wrote
// (testdata/elasticjob-tree.golden): at four checkpoints the whole tree must
// equal the recorded one, and every node seen at any moment must have a kind
// and value format the recorded tree has.
func TestZooKeeperTreeMatchesElasticJob(t *testing.T) {
	if testing.Short() {
		t.Skip("real ZooKeeper scenario skipped in -short mode")
	}
	g := loadGolden(t)
	srv := zktest.Start(t, zktest.Options{})
	logger := hclog.New(&hclog.LoggerOptions{Level: hclog.Warn, Output: testWriter{t}})
	connect := func() *zookeeper.Client {
		cfg := zookeeper.DefaultConfig(srv.Addr(), namespace)
		cfg.SessionTimeoutMilliseconds = 4000
		cfg.ConnectionTimeoutMilliseconds = 4000
		cfg.BaseSleepTimeMilliseconds = 50
		cfg.MaxSleepTimeMilliseconds = 200
		cfg.MaxRetries = 10
		cfg.Logger = logger.Named("zk")
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		c, err := zookeeper.Connect(ctx, cfg)
		if err != nil {
			t.Fatalf("connect: %v", err)
		}
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	ctx := t.Context()
	obs := connect()
	java := newJavaReader(t, srv.Addr(), namespace)

	// Record every node version from the start.
	rec := &recorder{seen: map[znode]bool{}}
	cache := reg.NewTreeCache(obs, "/")
	cctx, stopCache := context.WithCancel(context.Background())
	cacheDone := make(chan struct{})
	go func() {
		defer close(cacheDone)
		_ = cache.Run(cctx)
	}()
	go func() {
		for ev := range cache.Events() {
			if ev.Type == reg.NodeAdded || ev.Type == reg.NodeUpdated {
				rec.add(znode{ev.Path, kindOf(ev.Stat), string(ev.Data), ev.Data == nil})
			}
		}
	}()
	t.Cleanup(func() { stopCache(); <-cacheDone })
	<-cache.Initialized()

	// The recorded cluster's job: the config of javaSimpleJob.
	cfg := config.New(jobName, 3)
	cfg.Cron = "0/2 * * * * ?"
	cfg.Description = "java reference peer simple job"
	cfg.Failover = true
	cfg.Overwrite = true
	cfg.ShardingItemParameters = "0=A,1=B,2=C"
	plugins := builtin.New(builtin.Options{Logger: hclog.NewNullLogger()})
	ctl := &control{}
	start := func(id string) *node {
		c := connect()
		s, err := kernel.New(kernel.Options{
			Client: c, InstanceID: id, ServerIP: "192.0.2.2", Plugins: plugins,
			Logger: logger.Named(id), DrainTimeout: 2 * time.Second,
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Add(context.Background(), kernel.Job{Config: cfg.Clone(), Runner: ctl.runner(id), ClassName: "peer.PeerMain$JavaSimpleJob"}); err != nil {
			t.Fatal(err)
		}
		rctx, cancel := context.WithCancel(context.Background())
		n := &node{id: id, client: c, cancel: cancel, done: make(chan error, 1)}
		go func() { n.done <- s.Run(rctx) }()
		t.Cleanup(func() {
			cancel()
			select {
			case <-n.done:
			case <-time.After(30 * time.Second):
				t.Errorf("%s did not shut down", id)
			}
		})
		wctx, wcancel := context.WithTimeout(ctx, 20*time.Second)
		defer wcancel()
		if err := s.Ready(wctx); err != nil {
			t.Fatalf("%s not ready: %v", id, err)
		}
		return n
	}
	var dumps []znode
	// matches waits until the tree equals the named snapshot; it fails with
	// the last difference.
	matches := func(name string, d time.Duration) map[string]znode {
		t.Helper()
		var last []string
		var tree map[string]znode
		deadline := time.Now().Add(d)
		for {
			var err error
			tree, err = dump(ctx, obs)
			if err != nil {
				t.Fatal(err)
			}
			dumps = append(dumps, sortedNodes(tree)...)
			if last = g.snapshotDiff(name, tree); len(last) == 0 {
				java.check(t, "checkpoint "+name)
				return tree
			}
			if time.Now().After(deadline) {
				var b strings.Builder
				for _, n := range sortedNodes(tree) {
					fmt.Fprintf(&b, "  %s\n", n)
				}
				t.Fatalf("checkpoint %q: the tree differs from ElasticJob's after %s:\n  %s\ntree:\n%s", name, d, strings.Join(last, "\n  "), b.String())
			}
			time.Sleep(50 * time.Millisecond)
		}
	}

	// 1. Three instances in the recorded order; A leads. Between executions.
	start(idA)
	b := start(idB)
	start(idC)
	matches("between-executions", 15*time.Second)

	// 2. Console: disable item 1 and trigger every instance. The node is
	// written in an odd second, half-way between two fires (the cron fires
	// on even seconds), and runs are checked from the moment the write
	// returned: a fire that read the sharding state before the write
	// committed may legitimately still start item 1.
	testkit.Eventually(t, 3*time.Second, "the first half of an odd second", func() bool {
		now := time.Now()
		return now.Second()%2 == 1 && now.Nanosecond() < int(500*time.Millisecond)
	})
	if _, err := reg.Persist(ctx, obs, jobRoot+"/sharding/1/disabled", nil); err != nil {
		t.Fatal(err)
	}
	disabledAt := time.Now()
	triggeredAt := time.Now()
	if _, err := lifecycle.TriggerAll(ctx, obs, jobName); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 10*time.Second, "the triggered items 0 and 2", func() bool {
		got := map[int]bool{}
		for _, r := range ctl.runsSince(triggeredAt) {
			got[r.item] = true
		}
		return got[0] && got[2]
	})
	matches("disabled-item-after-trigger", 10*time.Second)
	for _, r := range ctl.runsSince(disabledAt) {
		if r.item == 1 {
			t.Errorf("disabled item 1 ran on %s at %s", r.id, r.start.Format(time.TimeOnly))
		}
	}
	if err := obs.Delete(ctx, jobRoot+"/sharding/1/disabled", reg.AnyVersion); err != nil {
		t.Fatal(err)
	}

	// 3. Executions hold across a fire, which misfires: as upstream's
	// recorded run, the misfire flags are written when the held run ends and
	// stay while the next run runs; the snapshot is taken during that run.
	gate1 := make(chan struct{})
	ctl.mu.Lock()
	ctl.gate = gate1
	ctl.mu.Unlock()
	testkit.Eventually(t, 10*time.Second, "three held items", func() bool { return ctl.heldCount() == 3 })
	heldAt := time.Now()
	// The cron fires on even seconds: wait until one has passed (observed on
	// the clock, the cron's own input).
	testkit.Eventually(t, 5*time.Second, "a fire during the held run", func() bool {
		return time.Now().After(heldAt.Truncate(2 * time.Second).Add(2*time.Second + 200*time.Millisecond))
	})
	gate := make(chan struct{})
	ctl.mu.Lock()
	ctl.gate = gate
	ctl.mu.Unlock()
	close(gate1)
	testkit.Eventually(t, 10*time.Second, "the next run held on every item", func() bool {
		return len(ctl.runsSince(heldAt)) >= 3 && ctl.heldCount() == 3
	})
	matches("running-and-misfire", 10*time.Second)

	// 4. B crashes while running item 1 (its session ends: its ephemeral
	// nodes go, as after kill -9 and a session timeout); a survivor takes
	// item 1 over once idle, then the leader reshards.
	failGate := make(chan struct{})
	ctl.mu.Lock()
	ctl.failGate = failGate
	ctl.mu.Unlock()
	crashedAt := time.Now()
	_ = b.client.Close()
	go b.cancel()
	testkit.Eventually(t, 10*time.Second, "leader/failover/items/1", func() bool {
		_, ok, err := obs.Exists(ctx, jobRoot+"/leader/failover/items/1")
		return err == nil && ok
	})
	ctl.mu.Lock()
	ctl.gate = nil
	ctl.mu.Unlock()
	close(gate)
	var claimer string
	testkit.Eventually(t, 15*time.Second, "the failover run of item 1", func() bool {
		for _, r := range ctl.runsSince(crashedAt) {
			if r.item == 1 && r.id != idB {
				claimer = r.id
			}
		}
		return claimer != "" && ctl.heldCount() == 1
	})
	tree, err := dump(ctx, obs)
	if err != nil {
		t.Fatal(err)
	}
	dumps = append(dumps, sortedNodes(tree)...)
	java.check(t, "during the failover run")
	for path, kind := range map[string]string{"failover": "E", "failovering": "P", "running": "P"} {
		n, ok := tree[jobRoot+"/sharding/1/"+path]
		if !ok || n.kind != kind || n.data != claimer {
			t.Errorf("during the failover run: sharding/1/%s = %+v (present %v), want %s = %q (spec 330-334)", path, n, ok, kind, claimer)
		}
	}
	ctl.mu.Lock()
	ctl.failGate = nil
	ctl.mu.Unlock()
	close(failGate)
	matches("after-failover-and-resharding", 20*time.Second)

	// Every node seen at any moment has a kind and value the recorded tree has.
	all := append(rec.nodes(), dumps...)
	for _, v := range g.catalogueViolations(all) {
		t.Error(v)
	}
	for _, e := range g.mustSee {
		ok := false
		for _, n := range all {
			if e.pathRE.MatchString(n.path) && n.kind == e.kind {
				ok = true
				break
			}
		}
		if !ok {
			t.Errorf("never saw %s %s (golden line %d), which the spec tree has", e.kind, e.path, e.line)
		}
	}
}
