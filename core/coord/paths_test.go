package coord

import (
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
