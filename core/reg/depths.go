package reg

import "strings"

// maxDepth is the deepest depth Depths tells apart; deeper paths share it.
const maxDepth = 15

// Depths counts a set of paths by depth (how many elements each has: "/"
// 0, "/a" 1, "/a/b" 2), so that a walk up a path's ancestors looking for
// members of the set looks up only the depths the set has. A shared cache
// (its job roots are all one level down) and the embedded registry's
// recursive watches (one per namespace) each walk up every changed path,
// and each look-up hashes the ancestor's path. The zero value is empty;
// it is not safe for concurrent use.
type Depths struct {
	n [maxDepth + 1]int32
}

// PathDepth is the depth of an absolute path.
func PathDepth(p string) int {
	if p == "/" {
		return 0
	}
	return strings.Count(p, "/")
}

// Add counts p.
func (d *Depths) Add(p string) { d.n[min(PathDepth(p), maxDepth)]++ }

// Remove uncounts p, added before.
func (d *Depths) Remove(p string) { d.n[min(PathDepth(p), maxDepth)]-- }

// Has reports whether a path of depth k may be in the set.
func (d *Depths) Has(k int) bool { return d.n[min(k, maxDepth)] > 0 }
