package lifecycle_test

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ejob-io/ejob/core/reg"
	"github.com/ejob-io/ejob/core/reg/embedded"
	"github.com/ejob-io/ejob/core/reg/zktest"
	"github.com/ejob-io/ejob/core/reg/zookeeper"
	"github.com/ejob-io/ejob/internal/testkit"
)

// zk is one ZooKeeper shared by every test (each subtest has its own
// namespace); nil in -short mode, where only the embedded registry runs.
var zk *zktest.Server

func TestMain(m *testing.M) {
	flag.Parse()
	if !testing.Short() {
		var err error
		if zk, err = zktest.Launch(zktest.Options{}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	code := testkit.Run(m)
	if zk != nil {
		_ = zk.Close()
	}
	os.Exit(code)
}

var nsSeq atomic.Int64

// registries runs fn once per registry (the embedded one, and a real
// ZooKeeper unless -short), each time with a client on a fresh namespace.
func registries(t *testing.T, fn func(t *testing.T, c reg.Client)) {
	t.Helper()
	t.Run("embedded", func(t *testing.T) {
		c, err := embedded.NewServer().Connect("lifecycle")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		fn(t, c)
	})
	t.Run("zookeeper", func(t *testing.T) {
		if zk == nil {
			t.Skip("real ZooKeeper skipped in -short mode")
		}
		fn(t, connectZK(t, fmt.Sprintf("lifecycle-%d", nsSeq.Add(1))))
	})
}

func connectZK(t testing.TB, namespace string) reg.Client {
	t.Helper()
	cfg := zookeeper.DefaultConfig(zk.Addr(), namespace)
	cfg.SessionTimeoutMilliseconds = 4000
	cfg.ConnectionTimeoutMilliseconds = 5000
	cfg.Logger = hclog.NewNullLogger()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := zookeeper.Connect(ctx, cfg)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func ctxOf(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// tree is every node of a namespace: path -> value.
type tree map[string]string

// snapshot reads the whole namespace.
func snapshot(t *testing.T, c reg.Client) tree {
	t.Helper()
	out := tree{}
	var walk func(path string)
	walk = func(path string) {
		kids, err := c.Children(ctxOf(t), path)
		if err != nil {
			t.Fatalf("children %s: %v", path, err)
		}
		for _, k := range kids {
			p := reg.Join(path, k)
			v, _, err := c.Get(ctxOf(t), p)
			if err != nil {
				t.Fatalf("get %s: %v", p, err)
			}
			out[p] = string(v)
			walk(p)
		}
	}
	walk("/")
	return out
}

// assertDelta fails unless after is before with exactly the nodes of set
// written (created or changed) and those of removed gone.
func assertDelta(t *testing.T, before, after tree, set map[string]string, removed ...string) {
	t.Helper()
	want := maps.Clone(before)
	for _, p := range removed {
		if _, ok := want[p]; !ok {
			t.Fatalf("test bug: %s to be removed is not in the tree before", p)
		}
		delete(want, p)
	}
	maps.Copy(want, set)
	var diffs []string
	for _, p := range slices.Sorted(maps.Keys(want)) {
		if got, ok := after[p]; !ok {
			diffs = append(diffs, fmt.Sprintf("missing %s = %q", p, want[p]))
		} else if got != want[p] {
			diffs = append(diffs, fmt.Sprintf("%s = %q, want %q", p, got, want[p]))
		}
	}
	for _, p := range slices.Sorted(maps.Keys(after)) {
		if _, ok := want[p]; !ok {
			diffs = append(diffs, fmt.Sprintf("unexpected %s = %q", p, after[p]))
		}
	}
	if len(diffs) > 0 {
		t.Errorf("registry after the call differs from spec §8's effect:\n  %s", strings.Join(diffs, "\n  "))
	}
}

// treeNode is one node of a tree written by Java ElasticJob.
type treeNode struct {
	path      string
	value     string
	ephemeral bool
}

var sectionLine = regexp.MustCompile(`^## ([A-Z])\. `)

var treeLine = regexp.MustCompile(`^/peer(/\S+)\s+\[(PERSISTENT|EPHEMERAL)`)

// javaTree returns section A, B or C of the ZooKeeper tree captured from
// Java ElasticJob-Lite 3.0.4 (core/node/testdata/elasticjob-zk-tree.txt,
// from spec/elasticjob-zk-tree.txt), parents first.
func javaTree(t *testing.T, section string) []treeNode {
	t.Helper()
	f, err := os.Open("../node/testdata/elasticjob-zk-tree.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []treeNode
	var value []string
	in := false
	flush := func() {
		if len(out) > 0 && value != nil {
			out[len(out)-1].value = strings.Join(value, "\n")
		}
		value = nil
	}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if m := sectionLine.FindStringSubmatch(line); m != nil {
			flush()
			in = m[1] == section
			continue
		}
		if !in {
			continue
		}
		if m := treeLine.FindStringSubmatch(line); m != nil {
			flush()
			out = append(out, treeNode{path: m[1], ephemeral: m[2] == "EPHEMERAL"})
			continue
		}
		if v, ok := strings.CutPrefix(line, "    |"); ok && len(out) > 0 {
			value = append(value, strings.TrimPrefix(v, " "))
		}
	}
	flush()
	if len(out) == 0 {
		t.Fatalf("no section %s in the tree file", section)
	}
	return out
}

// load writes nodes to the registry: ephemeral ones with c's session, so
// that their instances are live for as long as c is.
func load(t *testing.T, c reg.Client, nodes []treeNode) {
	t.Helper()
	for _, n := range nodes {
		mode := reg.Persistent
		if n.ephemeral {
			mode = reg.Ephemeral
		}
		if _, err := c.Create(ctxOf(t), n.path, []byte(n.value), mode, reg.WithParents()); err != nil {
			t.Fatalf("create %s: %v", n.path, err)
		}
	}
}

// put persists one node (creating parents).
func put(t *testing.T, c reg.Client, path, value string) {
	t.Helper()
	if _, err := reg.Persist(ctxOf(t), c, path, []byte(value)); err != nil {
		t.Fatalf("persist %s: %v", path, err)
	}
}

// del deletes a node and its subtree.
func del(t *testing.T, c reg.Client, path string) {
	t.Helper()
	if err := reg.DeleteRecursive(ctxOf(t), c, path); err != nil {
		t.Fatalf("delete %s: %v", path, err)
	}
}
