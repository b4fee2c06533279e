package kubernetes

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ejob-io/ejob/spi"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// appTarGz is a tar.gz holding bin/start.sh, the script the tests' apps run.
func appTarGz(t testing.TB, script string) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, h := range []*tar.Header{{Name: "bin/", Mode: 0o755, Typeflag: tar.TypeDir}} {
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.WriteHeader(&tar.Header{Name: "bin/start.sh", Mode: 0o755, Size: int64(len(script)), Typeflag: tar.TypeReg}); err != nil {
		t.Fatal(err)
	}
	if _, err := tw.Write([]byte(script)); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// serveApp serves body at /app.tar.gz and returns its URL.
func serveApp(t testing.TB, body []byte) string {
	url, _ := serveCountedApp(t, body)
	return url
}

// serveCountedApp is serveApp that also counts the GETs of the app.
func serveCountedApp(t testing.TB, body []byte) (string, *atomic.Int32) {
	var gets atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/app.tar.gz" {
			http.NotFound(w, r)
			return
		}
		gets.Add(1)
		_, _ = w.Write(body)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/app.tar.gz", &gets
}

// recordScript is an app that records, in the directory given as its
// first argument, its start and end (nanoseconds), node, pid and context
// JSON, sleeps $2 seconds and exits with the code in the file
// exit-<item>-<n> if one exists for its n-th run (else 0).
const recordScript = `#!/bin/sh
out=$1 secs=$2 ctx=$3
item=$EJOB_SHARDING_ITEM
n=$(ls "$out" | grep -c "^run-$item-.*\.start$" || true)
r=$out/run-$item-$n
echo "$$" >"$r.pid"
printf '%s' "$ctx" >"$r.json"
echo "$EJOB_NODE_NAME" >"$r.node"
printf '%s' "$CUSTOM" >"$r.custom"
env | grep -c '^EJOB_ITEM_' >"$r.leak" || true
date +%s%N >"$r.start"
sleep "$secs"
date +%s%N >"$r.end"
if [ -f "$out/exit-$item-$n" ]; then exit "$(cat "$out/exit-$item-$n")"; fi
exit 0
`

type run struct {
	item, n      int
	node, ctx    string
	custom, leak string
	start, end   int64
	pid          int
}

// runs reads what recordScript wrote in dir.
func runs(t testing.TB, dir string) []run {
	t.Helper()
	starts, _ := filepath.Glob(filepath.Join(dir, "run-*.start"))
	var out []run
	for _, s := range starts {
		base := strings.TrimSuffix(s, ".start")
		var r run
		if _, err := fmt.Sscanf(filepath.Base(base), "run-%d-%d", &r.item, &r.n); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		read := func(ext string) string {
			b, _ := os.ReadFile(base + ext)
			return strings.TrimSpace(string(b))
		}
		r.node, r.ctx = read(".node"), read(".json")
		r.custom, r.leak = read(".custom"), read(".leak")
		r.start, _ = strconv.ParseInt(read(".start"), 10, 64)
		r.end, _ = strconv.ParseInt(read(".end"), 10, 64)
		r.pid, _ = strconv.Atoi(read(".pid"))
		out = append(out, r)
	}
	sort.Slice(out, func(a, b int) bool { return out[a].start < out[b].start })
	return out
}

func testFire(t testing.TB, url, out string, secs float64, items int) Fire {
	name := strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-"))
	return Fire{
		App:                App{Name: "test-app", AppURL: url, BootstrapScript: fmt.Sprintf("bin/start.sh %s %v", out, secs)},
		JobName:            name,
		FireID:             strconv.FormatInt(time.Now().UnixNano(), 36),
		ShardingTotalCount: items,
		CPUCount:           0.1,
		MemoryMB:           16,
		TTLAfterFinished:   10 * time.Minute,
		LostAfter:          2 * time.Second,
	}
}

// TestItemsRunWithTheirShardingContext: a 3-item fire of an appURL app
// (a tar.gz fetched by the init container) runs each item once, as a real
// process, with the ShardingContext JSON of its item as the last argument,
// byte for byte as SCRIPT jobs get it, the task id naming the node.
func TestItemsRunWithTheirShardingContext(t *testing.T) {
	l := newLauncher(t)
	out := t.TempDir()
	f := testFire(t, serveApp(t, appTarGz(t, recordScript)), out, 0, 3)
	f.JobParameter = `p$(HOME)"<x`
	f.ShardingItemParameters = map[int]string{0: "zero", 2: "two"}
	f.ItemEnv = map[int]map[string]string{1: {"CUSTOM": "a $(HOME) b\nline 2 on " + spi.LaunchNodePlaceholder}}
	f.Labels = map[string]string{"team": "t1", LabelJob: "overridden"}
	first, err := l.Launch(context.Background(), f)
	if err != nil {
		t.Fatal(err)
	}
	stopAtEnd(t, l, f)
	if again, err := l.Launch(context.Background(), f); err != nil || again != first {
		t.Fatalf("second launch of the fire = %q, %v; want %q, nil", again, err, first)
	}
	st := awaitDone(t, l, f, 60*time.Second, nil)
	for _, it := range st.Items {
		if it.State != Succeeded {
			t.Errorf("item %d: %s (%s)", it.Item, it.State, it.Reason)
		}
	}
	pods, err := cluster.client.CoreV1().Pods("default").List(context.Background(), metav1.ListOptions{
		LabelSelector: "team=t1," + LabelJob + "=" + f.JobName})
	if err != nil || len(pods.Items) != 3 {
		t.Errorf("pods labelled team=t1 and with the job's own label: %d, %v; want 3", len(pods.Items), err)
	}
	rs := runs(t, out)
	if len(rs) != 3 {
		t.Fatalf("%d runs, want 3: %+v", len(rs), rs)
	}
	for _, r := range rs {
		param := ""
		switch r.item {
		case 0:
			param = `,"shardingParameter":"zero"`
		case 2:
			param = `,"shardingParameter":"two"`
		}
		want := fmt.Sprintf(`{"jobName":%q,"taskId":"%s@-@%d@-@READY@-@node-1@-@%s","shardingTotalCount":3,"jobParameter":"p$(HOME)\"\u003cx","shardingItem":%d%s}`,
			f.JobName, f.JobName, r.item, f.FireID, r.item, param)
		if r.ctx != want {
			t.Errorf("item %d context\n got %s\nwant %s", r.item, r.ctx, want)
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(r.ctx), &m); err != nil {
			t.Errorf("item %d context is not JSON: %v", r.item, err)
		}
		if want := map[int]string{1: "a $(HOME) b\nline 2 on node-1"}[r.item]; r.custom != want {
			t.Errorf("item %d: CUSTOM=%q, want %q", r.item, r.custom, want)
		}
		if r.leak != "0" {
			t.Errorf("item %d sees %s EJOB_ITEM_ variables, want none", r.item, r.leak)
		}
	}
}

// TestRequestsHoldItemsReady: 4 items of 0.5 CPU on the 1-CPU node run 2
// at a time; the others are reported ready with the scheduler's reason.
func TestRequestsHoldItemsReady(t *testing.T) {
	l := newLauncher(t)
	out := t.TempDir()
	f := testFire(t, serveApp(t, appTarGz(t, recordScript)), out, 2, 4)
	f.CPUCount, f.App.CPUCount = 0.4, 0.1
	if _, err := l.Launch(context.Background(), f); err != nil {
		t.Fatal(err)
	}
	stopAtEnd(t, l, f)
	var readyReason string
	maxRunning := 0
	st := awaitDone(t, l, f, 90*time.Second, func(st FireStatus) {
		running := 0
		for _, it := range st.Items {
			switch it.State {
			case Running:
				running++
			case Ready:
				if strings.Contains(it.Reason, "Insufficient cpu") {
					readyReason = it.Reason
				}
			}
		}
		maxRunning = max(maxRunning, running)
	})
	for _, it := range st.Items {
		if it.State != Succeeded {
			t.Errorf("item %d: %s (%s)", it.Item, it.State, it.Reason)
		}
	}
	if readyReason == "" {
		t.Error("no item was reported ready with the scheduler's Insufficient cpu reason")
	}
	if maxRunning > 2 {
		t.Errorf("%d items reported running at once on a 1-CPU node, want <= 2", maxRunning)
	}
	rs := runs(t, out)
	if len(rs) != 4 {
		t.Fatalf("%d runs, want 4", len(rs))
	}
	overlap := 0
	for _, a := range rs {
		n := 0
		for _, b := range rs {
			if b.start <= a.start && a.start < b.end {
				n++
			}
		}
		overlap = max(overlap, n)
	}
	if overlap != 2 {
		t.Errorf("%d processes ran at once, want 2 (0.5 CPU each on 1 CPU)", overlap)
	}
	t.Logf("ready reason: %s", readyReason)
}

// TestFailedItemRetriedAndReported: item 1 fails its first run and is
// retried (backoffLimitPerIndex), item 2 fails every run and is reported
// failed with its exit code; item 0 succeeds.
func TestFailedItemRetriedAndReported(t *testing.T) {
	l := newLauncher(t)
	out := t.TempDir()
	for name, code := range map[string]string{"exit-1-0": "3", "exit-2-0": "7", "exit-2-1": "9"} {
		if err := os.WriteFile(filepath.Join(out, name), []byte(code), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	f := testFire(t, serveApp(t, appTarGz(t, recordScript)), out, 0, 3)
	f.RetriesPerItem = 1
	if _, err := l.Launch(context.Background(), f); err != nil {
		t.Fatal(err)
	}
	stopAtEnd(t, l, f)
	st := awaitDone(t, l, f, 90*time.Second, nil)
	want := []State{Succeeded, Succeeded, Failed}
	for i, it := range st.Items {
		if it.State != want[i] {
			t.Errorf("item %d: %s (%s), want %s", it.Item, it.State, it.Reason, want[i])
		}
	}
	if st.Items[1].Failures != 1 {
		t.Errorf("item 1: %d failures, want 1", st.Items[1].Failures)
	}
	if it := st.Items[2]; it.Failures != 2 || it.ExitCode == nil || *it.ExitCode != 9 || it.LastLost {
		t.Errorf("item 2: %d failures, exit code %v, lost %v; want 2, 9, false", it.Failures, it.ExitCode, it.LastLost)
	}
	count := map[int]int{}
	for _, r := range runs(t, out) {
		count[r.item]++
	}
	if count[0] != 1 || count[1] != 2 || count[2] != 2 {
		t.Errorf("runs per item %v, want 0:1 1:2 2:2", count)
	}
}

// TestLostNodeItemsRerunElsewhere: two items of 0.6 CPU land on two
// nodes; the agent of one is killed mid-run (a node's death); its item is
// reported lost, then re-run on the surviving node, and succeeds there.
// The item that ran on the survivor is not run again.
func TestLostNodeItemsRerunElsewhere(t *testing.T) {
	l := newLauncher(t)
	k8s(t, "node", cluster.Dir, "doomed", "--cpu", "1", "--memory", "1Gi")
	t.Cleanup(func() {
		_ = cluster.client.CoreV1().Nodes().Delete(context.Background(), "doomed", metav1.DeleteOptions{})
	})
	out := t.TempDir()
	f := testFire(t, serveApp(t, appTarGz(t, recordScript)), out, 6, 2)
	f.CPUCount = 0.6
	f.RetriesPerItem = 1
	if _, err := l.Launch(context.Background(), f); err != nil {
		t.Fatal(err)
	}
	stopAtEnd(t, l, f)
	deadline := time.Now().Add(60 * time.Second)
	victim := -1
	for victim < 0 && time.Now().Before(deadline) {
		for _, r := range runs(t, out) {
			if r.node == "doomed" {
				victim = r.item
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	if victim < 0 {
		t.Fatalf("no item started on node doomed: %+v", runs(t, out))
	}
	k8s(t, "kill-node", cluster.Dir, "doomed")
	killed := time.Now()
	sawLost := false
	st := awaitDone(t, l, f, 120*time.Second, func(st FireStatus) {
		if st.Items[victim].State == Lost {
			sawLost = true
		}
	})
	t.Logf("fire done %.1f s after the node was killed", time.Since(killed).Seconds())
	for _, it := range st.Items {
		if it.State != Succeeded {
			t.Errorf("item %d: %s (%s)", it.Item, it.State, it.Reason)
		}
	}
	if !sawLost {
		t.Errorf("item %d was never reported lost", victim)
	}
	if it := st.Items[victim]; !it.LastLost || it.Failures != 1 {
		t.Errorf("item %d: last failure lost %v, %d failures; want true, 1", victim, it.LastLost, it.Failures)
	}
	perItem := map[int][]string{}
	for _, r := range runs(t, out) {
		perItem[r.item] = append(perItem[r.item], r.node)
	}
	if got := perItem[victim]; len(got) != 2 || got[0] != "doomed" || got[1] != "node-1" {
		t.Errorf("item %d ran on %v, want [doomed node-1]", victim, got)
	}
	if got := perItem[1-victim]; len(got) != 1 {
		t.Errorf("item %d ran on %v, want once", 1-victim, got)
	}
}

// TestStopDeletesEverything: stopping a running fire deletes its Job and
// pods and ends its processes; List no longer shows it.
func TestStopDeletesEverything(t *testing.T) {
	l := newLauncher(t)
	out := t.TempDir()
	f := testFire(t, serveApp(t, appTarGz(t, recordScript)), out, 600, 3)
	ctx := context.Background()
	name, err := l.Launch(ctx, f)
	if err != nil {
		t.Fatal(err)
	}
	stopAtEnd(t, l, f)
	deadline := time.Now().Add(60 * time.Second)
	for len(runs(t, out)) < 3 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	rs := runs(t, out)
	if len(rs) != 3 {
		t.Fatalf("%d items started, want 3", len(rs))
	}
	items, err := l.ListItems(ctx, f.JobName)
	if err != nil || len(items) != 3 {
		t.Fatalf("ListItems = %+v, %v; want 3 items", items, err)
	}
	for _, it := range items {
		if it.JobName != f.JobName || it.FireID != f.FireID || it.State != Running || it.Started.IsZero() || it.Node != "node-1" {
			t.Errorf("listed item %+v, want running on node-1 since a known time, of fire %s", it, f.FireID)
		}
	}
	listed, err := l.List(ctx, f.JobName)
	if err != nil || len(listed) != 1 || listed[0].Name != name || listed[0].FireID != f.FireID {
		t.Fatalf("List = %+v, %v; want the one fire %s", listed, err, name)
	}
	began := time.Now()
	if err := l.Stop(ctx, f.JobName, f.FireID); err != nil {
		t.Fatal(err)
	}
	t.Logf("stop took %.2f s", time.Since(began).Seconds())
	for _, r := range rs {
		if processLives(r.pid) {
			t.Errorf("item %d's process %d still runs after stop", r.item, r.pid)
		}
	}
	if listed, err := l.List(ctx, f.JobName); err != nil || len(listed) != 0 {
		t.Errorf("List after stop = %+v, %v; want none", listed, err)
	}
	pods, err := cluster.client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: LabelFire + "=" + name})
	if err != nil || len(pods.Items) != 0 {
		t.Errorf("pods after stop: %d, %v; want none", len(pods.Items), err)
	}
	if _, err := l.Status(ctx, f.JobName, f.FireID); !errors.Is(err, ErrNotFound) {
		t.Errorf("Status after stop: %v, want ErrNotFound", err)
	}
}

// processLives tells whether pid runs (a zombie, whose reaping is up to
// its new parent, does not count).
func processLives(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] != 'Z'
	}
	return true
}

// liveRuns maps each item to the shardingTotalCount its live process (if
// any) was started with.
func liveRuns(t *testing.T, dir string) map[int][]int {
	out := map[int][]int{}
	for _, r := range runs(t, dir) {
		if !processLives(r.pid) {
			continue
		}
		var sc struct{ ShardingTotalCount int }
		if err := json.Unmarshal([]byte(r.ctx), &sc); err != nil {
			t.Fatalf("item %d context %q: %v", r.item, r.ctx, err)
		}
		out[r.item] = append(out[r.item], sc.ShardingTotalCount)
	}
	return out
}

// await polls cond until it holds or within has passed.
func await(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %v: %s", within, what)
		}
		time.Sleep(150 * time.Millisecond)
	}
}

// launchDaemon launches f as a DAEMON job, stopped when the test ends.
func launchDaemon(t *testing.T, l *Launcher, f Fire) {
	t.Helper()
	ctx := context.Background()
	t.Cleanup(func() {
		if err := l.StopJob(ctx, f.JobName); err != nil {
			t.Errorf("stop: %v", err)
		}
	})
	if _, err := l.LaunchDaemon(ctx, f); err != nil {
		t.Fatal(err)
	}
}

// TestDaemonReshardedFrom2To3: a DAEMON job runs as a StatefulSet, one
// long-running process per item; launched again with 3 items instead of
// 2, every item runs with the new count and no process of the old count
// is left; stopping the job ends them all.
func TestDaemonReshardedFrom2To3(t *testing.T) {
	l := newLauncher(t)
	out := t.TempDir()
	f := testFire(t, serveApp(t, appTarGz(t, recordScript)), out, 600, 2)
	ctx := context.Background()
	launchDaemon(t, l, f)
	exactly := func(count int) func() bool {
		return func() bool {
			live := liveRuns(t, out)
			if len(live) != count {
				return false
			}
			for i := 0; i < count; i++ {
				if len(live[i]) != 1 || live[i][0] != count {
					return false
				}
			}
			return true
		}
	}
	await(t, 60*time.Second, "items 0 and 1 running with shardingTotalCount 2", exactly(2))
	st, err := l.DaemonStatus(ctx, f.JobName)
	if err != nil || len(st.Items) != 2 || st.Items[0].State != Running || st.Items[1].State != Running {
		t.Fatalf("DaemonStatus = %+v, %v; want 2 running items", st, err)
	}
	f.ShardingTotalCount = 3
	if _, err := l.LaunchDaemon(ctx, f); err != nil {
		t.Fatal(err)
	}
	await(t, 90*time.Second, "items 0, 1 and 2 running with shardingTotalCount 3, nothing of 2 left", exactly(3))
	items, err := l.ListItems(ctx, f.JobName)
	if err != nil || len(items) != 3 {
		t.Fatalf("ListItems = %+v, %v; want the 3 daemon items", items, err)
	}
	for _, it := range items {
		if it.FireID != f.FireID || it.JobName != f.JobName {
			t.Errorf("daemon item %+v, want job %s fire %s", it, f.JobName, f.FireID)
		}
	}
	if err := l.StopJob(ctx, f.JobName); err != nil {
		t.Fatal(err)
	}
	if live := liveRuns(t, out); len(live) != 0 {
		t.Errorf("processes left after stop: %v", live)
	}
	if _, err := l.DaemonStatus(ctx, f.JobName); !errors.Is(err, ErrNotFound) {
		t.Errorf("DaemonStatus after stop: %v, want ErrNotFound", err)
	}
}

// TestAppCacheKeepsTheFetch: with CacheEnable, the second fire of a job
// runs its items from the node's cache of the app, without fetching it
// again (the HTTP server counts the GETs); without it every pod fetches.
func TestAppCacheKeepsTheFetch(t *testing.T) {
	l := newLauncher(t)
	for _, cache := range []bool{true, false} {
		t.Run(fmt.Sprintf("cache=%v", cache), func(t *testing.T) {
			url, gets := serveCountedApp(t, appTarGz(t, recordScript))
			out := t.TempDir()
			fire := func() {
				t.Helper()
				f := testFire(t, url, out, 0, 2)
				f.App.CacheEnable = cache
				if _, err := l.Launch(context.Background(), f); err != nil {
					t.Fatal(err)
				}
				stopAtEnd(t, l, f)
				for _, it := range awaitDone(t, l, f, 60*time.Second, nil).Items {
					if it.State != Succeeded {
						t.Fatalf("item %d: %s (%s)", it.Item, it.State, it.Reason)
					}
				}
			}
			fire()
			first := gets.Load()
			if first < 1 || first > 2 {
				t.Fatalf("first fire of 2 items: %d GETs of the app, want 1 or 2", first)
			}
			fire()
			if rs := runs(t, out); len(rs) != 4 {
				t.Fatalf("%d runs after two fires of 2 items, want 4: %+v", len(rs), rs)
			}
			switch second := gets.Load() - first; {
			case cache && second != 0:
				t.Errorf("second fire with the app cache fetched the app %d time(s), want none", second)
			case !cache && second != 2:
				t.Errorf("second fire without the app cache fetched the app %d time(s), want 2 (once per pod)", second)
			}
		})
	}
}

// TestAppCachePath: the cache of an app is named by the app and its
// AppURL, so a changed AppURL is fetched afresh.
func TestAppCachePath(t *testing.T) {
	l, err := NewWithClient(nil, Config{AppCacheDir: "/c/"})
	if err != nil {
		t.Fatal(err)
	}
	a := l.appCachePath(App{Name: "my app", AppURL: "http://h/a.tgz"})
	b := l.appCachePath(App{Name: "my app", AppURL: "http://h/b.tgz"})
	if a == b || !strings.HasPrefix(a, "/c/my_app-") || !strings.HasPrefix(b, "/c/my_app-") {
		t.Errorf("cache paths %q and %q: want two paths under /c/ named by the app", a, b)
	}
	for _, bad := range []string{"relative", "/"} {
		if _, err := NewWithClient(nil, Config{AppCacheDir: bad}); err == nil {
			t.Errorf("AppCacheDir %q accepted", bad)
		}
	}
}

// fireScript is a DAEMON item whose fires the test paces (its first
// argument is the directory $out): fire n begins when $out/begin-n exists
// and completes when $out/end-n exists, each
// reported in EJOB_FIRE_LOG (BEGIN, COMPLETE) as upstream's executor
// reports its fires.
const fireScript = `#!/bin/sh
out=$1
n=0
while :; do
	while [ ! -e "$out/begin-$n" ]; do sleep 0.1; done
	echo BEGIN >>"$EJOB_FIRE_LOG"
	while [ ! -e "$out/end-$n" ]; do sleep 0.1; done
	echo COMPLETE >>"$EJOB_FIRE_LOG"
	n=$((n+1))
done
`

// TestDaemonReportsFires: a DAEMON item is idle with no fire until its
// first fire begins, busy while it runs, and idle with one completed
// fire after it, then two; DaemonStatus and ListItems both report it.
func TestDaemonReportsFires(t *testing.T) {
	l := newLauncher(t)
	out := t.TempDir()
	f := testFire(t, serveApp(t, appTarGz(t, fireScript)), out, 0, 1)
	ctx := context.Background()
	launchDaemon(t, l, f)
	var last ItemStatus
	reports := func(idle bool, fires int) func() bool {
		return func() bool {
			st, err := l.DaemonStatus(ctx, f.JobName)
			if err != nil || len(st.Items) != 1 {
				return false
			}
			last = st.Items[0]
			return last.State == Running && last.Idle == idle && last.Fires == fires
		}
	}
	step := func(file string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(out, file), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for n := 0; n < 2; n++ {
		await(t, 60*time.Second, fmt.Sprintf("the item idle after %d fires", n), reports(true, n))
		step(fmt.Sprintf("begin-%d", n))
		await(t, 30*time.Second, fmt.Sprintf("the item busy in fire %d", n), reports(false, n))
		step(fmt.Sprintf("end-%d", n))
	}
	await(t, 30*time.Second, "the item idle after 2 fires", reports(true, 2))
	items, err := l.ListItems(ctx, f.JobName)
	if err != nil || len(items) != 1 || !items[0].Idle || items[0].Fires != 2 {
		t.Errorf("ListItems = %+v, %v; want the item idle after 2 fires", items, err)
	}
}
