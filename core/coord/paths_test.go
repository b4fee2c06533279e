package coord

import (
	"strings"
	"testing"

	"github.com/ejob-io/ejob/core/reg"
)

// TestPathsOfIsJoin: paths.of builds the same paths as reg.Join.
func TestPathsOfIsJoin(t *testing.T) {
	for _, root := range []string{"/job", "/a-b.c", "/"} {
		p := paths{root: root}
		for _, elem := range [][]string{
			nil, {""}, {nodeSharding, "0", "running"}, {nodeNecessary}, {"/x/", "", "y"}, {"leader/", "/sharding"},
		} {
			want := reg.Join(append([]string{root}, elem...)...)
			if got := p.of(elem...); got != want {
				t.Errorf("paths{%q}.of(%q) = %q, want %q", root, elem, got, want)
			}
		}
		if got, want := p.itemNode(3, "misfire"), reg.Join(root, nodeSharding, "3", "misfire"); got != want {
			t.Errorf("itemNode = %q, want %q", got, want)
		}
	}
}

// TestIsItemLeaf: a leaf is sharding/{i}/{one of itemLeaves}, exactly as
// splitting the relative path in three says.
func TestIsItemLeaf(t *testing.T) {
	p := paths{root: "/job"}
	for _, path := range []string{
		"/job/sharding/0/running", "/job/sharding/12/instance", "/job/sharding/0/misfire", "/job/sharding//running",
		"/job/sharding/0", "/job/sharding", "/job", "/job/sharding/0/running/x", "/job/sharding/0/other",
		"/job/servers/0/running", "/jobx/sharding/0/running", "/other/sharding/0/running",
	} {
		r, ok := p.rel(path)
		parts := strings.Split(r, "/")
		want := ok && len(parts) == 3 && parts[0] == nodeSharding && itemLeaves[parts[2]]
		if got := p.isItemLeaf(path); got != want {
			t.Errorf("isItemLeaf(%q) = %v, want %v", path, got, want)
		}
	}
}
