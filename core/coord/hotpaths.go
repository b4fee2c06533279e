package coord

import (
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
// first trigger (an idle job keeps none): building them was about a tenth
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

// warmPaths builds the job's hotPaths for items 0..total-1 (up to
// maxHotItems) unless it has them.
func (j *Job) warmPaths(total int) {
	n := min(max(total, 0), maxHotItems)
	if h := j.hot.Load(); h != nil && len(h.items) >= n {
		return
	}
	h := &hotPaths{
		flags:     reg.Parent(j.s.p.ShardingNecessary()),
		sharding:  j.s.p.Sharding(),
		instances: j.s.p.Instances(),
		instance:  j.s.p.Instance(j.id),
		server:    j.s.p.Server(j.ip),
		id:        []byte(j.id),
		items:     make([][hotItemNodes]string, n),
	}
	for i := range h.items {
		base := j.s.p.ShardingItem(i) + "/"
		for k := range hotItemNodes {
			h.items[i][k] = base + hotItemName(k)
		}
	}
	j.hot.Store(h)
}

// itemPath is j.s.p.ItemNode(i, name), from hotPaths when they have it.
func (j *Job) itemPath(i int, name string) string {
	if h := j.hot.Load(); h != nil && i >= 0 && i < len(h.items) {
		if k := hotItem(name); k >= 0 {
			return h.items[i][k]
		}
	}
	return j.s.p.ItemNode(i, name)
}

// flagsPath is leader/sharding, the parent of the resharding flags.
func (j *Job) flagsPath() string {
	if h := j.hot.Load(); h != nil {
		return h.flags
	}
	return reg.Parent(j.s.p.ShardingNecessary())
}

// shardingPath is sharding, the parent of the items.
func (j *Job) shardingPath() string {
	if h := j.hot.Load(); h != nil {
		return h.sharding
	}
	return j.s.p.Sharding()
}

// instancesPath is instances.
func (j *Job) instancesPath() string {
	if h := j.hot.Load(); h != nil {
		return h.instances
	}
	return j.s.p.Instances()
}

// instancePath is this instance's node.
func (j *Job) instancePath() string {
	if h := j.hot.Load(); h != nil {
		return h.instance
	}
	return j.s.p.Instance(j.id)
}

// serverPath is this server's node.
func (j *Job) serverPath() string {
	if h := j.hot.Load(); h != nil {
		return h.server
	}
	return j.s.p.Server(j.ip)
}
