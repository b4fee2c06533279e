package coord

import (
	"sync/atomic"

	"github.com/ejob-io/ejob/core/node"
	"github.com/ejob-io/ejob/core/reg"
)

// hotItemNodes is how many nodes under sharding/{i} a trigger reads or
// writes; hotItem names them in the order of hotPaths.items' entries (a
// switch, not a package-level table: no package-level mutable state).
const hotItemNodes = 6

// hotItem returns the index of name in hotPaths.items' entries, or -1.
func hotItem(name string) int {
	switch name {
	case node.ItemInstance:
		return 0
	case node.ItemRunning:
		return 1
	case node.ItemMisfire:
		return 2
	case node.ItemDisabled:
		return 3
	case node.ItemFailover:
		return 4
	case node.ItemFailovering:
		return 5
	}
	return -1
}

// hotItemName is hotItem's inverse.
func hotItemName(k int) string {
	return [hotItemNodes]string{node.ItemInstance, node.ItemRunning, node.ItemMisfire, node.ItemDisabled, node.ItemFailover, node.ItemFailovering}[k]
}

// maxHotItems bounds the items whose paths hotPaths keeps.
const maxHotItems = 64

// hotPaths are the paths every trigger of the job uses, built once at its
// first trigger (an idle job keeps none): building them is about a tenth
// of the allocations of a no-op execution (BenchmarkFire100Jobs).
type hotPaths struct {
	flags     string // leader/sharding, the parent of the resharding flags
	sharding  string // sharding, the parent of the items
	instances string // instances
	instance  string // instances/{this instance}
	server    string // servers/{this server's IP}
	id        []byte // this instance's id, a running node's data
	items     [][hotItemNodes]string
}

// jobPaths is the job's paths as one instance uses them: node.Job's, and
// the hotPaths of its triggers once the first trigger built them. The
// zero hot pointer answers from node.Job.
type jobPaths struct {
	// b is the jobBase that holds them: node.Job (b.s.p), this instance's
	// id and its server's IP.
	b *jobBase
	// hot is written by a steady trigger (warm: the first, and one that
	// finds more items) on its worker goroutine, and read by every
	// trigger, the pump, the pump's clock and the event loop: atomic, so
	// that readers take no lock.
	hot atomic.Pointer[hotPaths]
}

// warm builds the hotPaths for items 0..total-1 (up to maxHotItems)
// unless they exist.
func (jp *jobPaths) warm(total int) {
	n := min(max(total, 0), maxHotItems)
	if h := jp.hot.Load(); h != nil && len(h.items) >= n {
		return
	}
	h := &hotPaths{
		flags:     reg.Parent(jp.b.s.p.ShardingNecessary()),
		sharding:  jp.b.s.p.Sharding(),
		instances: jp.b.s.p.Instances(),
		instance:  jp.b.s.p.Instance(jp.b.id),
		server:    jp.b.s.p.Server(jp.b.ip),
		id:        []byte(jp.b.id),
		items:     make([][hotItemNodes]string, n),
	}
	for i := range h.items {
		base := jp.b.s.p.ShardingItem(i) + "/"
		for k := range hotItemNodes {
			h.items[i][k] = base + hotItemName(k)
		}
	}
	jp.hot.Store(h)
}

// item is p.ItemNode(i, name), from hotPaths when they have it.
func (jp *jobPaths) item(i int, name string) string {
	if h := jp.hot.Load(); h != nil && i >= 0 && i < len(h.items) {
		if k := hotItem(name); k >= 0 {
			return h.items[i][k]
		}
	}
	return jp.b.s.p.ItemNode(i, name)
}

// flags is leader/sharding, the parent of the resharding flags.
func (jp *jobPaths) flags() string {
	if h := jp.hot.Load(); h != nil {
		return h.flags
	}
	return reg.Parent(jp.b.s.p.ShardingNecessary())
}

// sharding is sharding, the parent of the items.
func (jp *jobPaths) sharding() string {
	if h := jp.hot.Load(); h != nil {
		return h.sharding
	}
	return jp.b.s.p.Sharding()
}

// instances is instances.
func (jp *jobPaths) instances() string {
	if h := jp.hot.Load(); h != nil {
		return h.instances
	}
	return jp.b.s.p.Instances()
}

// instance is this instance's node.
func (jp *jobPaths) instance() string {
	if h := jp.hot.Load(); h != nil {
		return h.instance
	}
	return jp.b.s.p.Instance(jp.b.id)
}

// server is this server's node.
func (jp *jobPaths) server() string {
	if h := jp.hot.Load(); h != nil {
		return h.server
	}
	return jp.b.s.p.Server(jp.b.ip)
}

// idData is this instance's id as a running node's data (shared: no
// client modifies an op's data).
func (jp *jobPaths) idData() []byte {
	if h := jp.hot.Load(); h != nil {
		return h.id
	}
	return []byte(jp.b.id)
}
