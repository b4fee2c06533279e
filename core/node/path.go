package node

import (
	"regexp"
	"strconv"
	"strings"
)

// Node names under the job root, as upstream's *Node classes spell them.
const (
	ConfigNode            = "config"
	ServersNode           = "servers"
	InstancesNode         = "instances"
	TriggerNode           = "trigger"
	ShardingNode          = "sharding"
	LeaderNode            = "leader"
	GuaranteeNode         = "guarantee"
	SystemTimeNode        = "systemTime/current"
	NextJobInstanceIPNode = "next-job-instance-ip"

	// Children of sharding/{item}.
	ItemInstance    = "instance"
	ItemRunning     = "running"
	ItemFailover    = "failover"
	ItemFailovering = "failovering"
	ItemMisfire     = "misfire"
	ItemDisabled    = "disabled"

	LeaderInstanceNode     = "leader/election/instance"
	LeaderLatchNode        = "leader/election/latch"
	ShardingNecessaryNode  = "leader/sharding/necessary"
	ShardingProcessingNode = "leader/sharding/processing"
	FailoverItemsNode      = "leader/failover/items"
	FailoverLatchNode      = "leader/failover/latch"

	GuaranteeStartedNode        = "guarantee/started"
	GuaranteeCompletedNode      = "guarantee/completed"
	GuaranteeStartedLatchNode   = "guarantee/started-latch"
	GuaranteeCompletedLatchNode = "guarantee/completed-latch"
)

// Job builds and parses the paths of one job. The zero value is not
// usable; use New.
type Job struct {
	name string
	root string // "/" + name
}

// New returns the path builder of a job. The name is used as is; config
// validation rejects names that are not valid node names.
func New(jobName string) Job {
	return Job{name: jobName, root: "/" + jobName}
}

// Name returns the job name.
func (j Job) Name() string { return j.name }

// Root is the job root node "/{job}"; its value is the job class name.
func (j Job) Root() string { return j.root }

// Full returns "/{job}/{node}" for a node path relative to the job root,
// as upstream's JobNodePath.getFullPath.
func (j Job) Full(node string) string { return j.root + "/" + node }

// Rel returns the path relative to the job root ("sharding/0/running"),
// and false when path is not strictly under this job's root.
func (j Job) Rel(path string) (string, bool) {
	rest, ok := strings.CutPrefix(path, j.root+"/")
	return rest, ok && rest != ""
}

// Config is "/{job}/config".
func (j Job) Config() string { return j.Full(ConfigNode) }

// Servers is "/{job}/servers".
func (j Job) Servers() string { return j.Full(ServersNode) }

// Server is "/{job}/servers/{ip}".
func (j Job) Server(ip string) string { return j.Full(ServersNode + "/" + ip) }

// Instances is "/{job}/instances".
func (j Job) Instances() string { return j.Full(InstancesNode) }

// Instance is "/{job}/instances/{instanceId}" (ephemeral).
func (j Job) Instance(instanceID string) string { return j.Full(InstancesNode + "/" + instanceID) }

// Trigger is "/{job}/trigger".
func (j Job) Trigger() string { return j.Full(TriggerNode) }

// TriggerInstance is "/{job}/trigger/{instanceId}".
func (j Job) TriggerInstance(instanceID string) string {
	return j.Full(TriggerNode + "/" + instanceID)
}

// Sharding is "/{job}/sharding".
func (j Job) Sharding() string { return j.Full(ShardingNode) }

// ShardingItem is "/{job}/sharding/{item}".
func (j Job) ShardingItem(item int) string {
	return j.root + "/" + ShardingNode + "/" + strconv.Itoa(item)
}

// ItemNode is "/{job}/sharding/{item}/{child}" for one of the Item*
// names. Built in one concatenation (one allocation): the trigger path
// builds several per item and fire.
func (j Job) ItemNode(item int, child string) string {
	return j.root + "/" + ShardingNode + "/" + strconv.Itoa(item) + "/" + child
}

// IsItemLeaf reports whether path is sharding/{item}/{child} of this job
// for one of the Item* names (the nodes under sharding/{item}; none has
// children in ElasticJob's tree) (a tree cache need not watch their children;
// running nodes come and go at every trigger). It does not allocate: the
// cache asks it of every node it loads.
func (j Job) IsItemLeaf(path string) bool {
	switch j.itemChild(path) {
	case ItemInstance, ItemRunning, ItemFailover, ItemFailovering, ItemMisfire, ItemDisabled:
		return true
	}
	return false
}

// IsRunning reports whether path is sharding/{item}/running of this job,
// without allocating.
func (j Job) IsRunning(path string) bool { return j.itemChild(path) == ItemRunning }

// IsFlag reports whether path is one of this job's failover or misfire
// flags: an item's misfire, failover or failovering node, or an item
// queued under leader/failover/items. It does not allocate (a tree cache
// counts them as it adds and removes nodes: reg.WithCounted).
func (j Job) IsFlag(path string) bool {
	switch j.itemChild(path) {
	case ItemMisfire, ItemFailover, ItemFailovering:
		return true
	}
	rel, ok := j.Rel(path)
	if !ok {
		return false
	}
	item, ok := strings.CutPrefix(rel, FailoverItemsNode+"/")
	return ok && item != "" && !strings.Contains(item, "/")
}

// itemChild returns {child} when path is sharding/{item}/{child} of this
// job, else "".
func (j Job) itemChild(path string) string {
	rel, ok := j.Rel(path)
	if !ok {
		return ""
	}
	rest, ok := strings.CutPrefix(rel, ShardingNode+"/")
	if !ok {
		return ""
	}
	item, child, ok := strings.Cut(rest, "/")
	if !ok || item == "" || strings.Contains(child, "/") {
		return ""
	}
	return child
}

// ShardingInstance is "/{job}/sharding/{item}/instance": the owner's id.
func (j Job) ShardingInstance(item int) string { return j.ItemNode(item, ItemInstance) }

// Running is "/{job}/sharding/{item}/running".
func (j Job) Running(item int) string { return j.ItemNode(item, ItemRunning) }

// Failover is "/{job}/sharding/{item}/failover" (ephemeral).
func (j Job) Failover(item int) string { return j.ItemNode(item, ItemFailover) }

// Failovering is "/{job}/sharding/{item}/failovering".
func (j Job) Failovering(item int) string { return j.ItemNode(item, ItemFailovering) }

// Misfire is "/{job}/sharding/{item}/misfire".
func (j Job) Misfire(item int) string { return j.ItemNode(item, ItemMisfire) }

// Disabled is "/{job}/sharding/{item}/disabled".
func (j Job) Disabled(item int) string { return j.ItemNode(item, ItemDisabled) }

// Leader is "/{job}/leader".
func (j Job) Leader() string { return j.Full(LeaderNode) }

// LeaderInstance is "/{job}/leader/election/instance" (ephemeral): the
// leader's instance id.
func (j Job) LeaderInstance() string { return j.Full(LeaderInstanceNode) }

// LeaderLatch is "/{job}/leader/election/latch" (container).
func (j Job) LeaderLatch() string { return j.Full(LeaderLatchNode) }

// ShardingNecessary is "/{job}/leader/sharding/necessary".
func (j Job) ShardingNecessary() string { return j.Full(ShardingNecessaryNode) }

// ShardingProcessing is "/{job}/leader/sharding/processing" (ephemeral).
func (j Job) ShardingProcessing() string { return j.Full(ShardingProcessingNode) }

// FailoverItems is "/{job}/leader/failover/items".
func (j Job) FailoverItems() string { return j.Full(FailoverItemsNode) }

// FailoverItem is "/{job}/leader/failover/items/{item}".
func (j Job) FailoverItem(item int) string {
	return j.Full(FailoverItemsNode + "/" + strconv.Itoa(item))
}

// FailoverLatch is "/{job}/leader/failover/latch" (container).
func (j Job) FailoverLatch() string { return j.Full(FailoverLatchNode) }

// Guarantee is "/{job}/guarantee".
func (j Job) Guarantee() string { return j.Full(GuaranteeNode) }

// GuaranteeStartedRoot is "/{job}/guarantee/started".
func (j Job) GuaranteeStartedRoot() string { return j.Full(GuaranteeStartedNode) }

// GuaranteeStarted is "/{job}/guarantee/started/{item}".
func (j Job) GuaranteeStarted(item int) string {
	return j.Full(GuaranteeStartedNode + "/" + strconv.Itoa(item))
}

// GuaranteeCompletedRoot is "/{job}/guarantee/completed".
func (j Job) GuaranteeCompletedRoot() string { return j.Full(GuaranteeCompletedNode) }

// GuaranteeCompleted is "/{job}/guarantee/completed/{item}".
func (j Job) GuaranteeCompleted(item int) string {
	return j.Full(GuaranteeCompletedNode + "/" + strconv.Itoa(item))
}

// GuaranteeStartedLatch is "/{job}/guarantee/started-latch" (container).
func (j Job) GuaranteeStartedLatch() string { return j.Full(GuaranteeStartedLatchNode) }

// GuaranteeCompletedLatch is "/{job}/guarantee/completed-latch" (container).
func (j Job) GuaranteeCompletedLatch() string { return j.Full(GuaranteeCompletedLatchNode) }

// SystemTime is "/{job}/systemTime/current": written before each execution
// when maxTimeDiffSeconds >= 0; its mtime is the registry time.
func (j Job) SystemTime() string { return j.Full(SystemTimeNode) }

// NextJobInstanceIP is "/{job}/next-job-instance-ip" (ephemeral, 3.0.5
// SINGLE_SHARDING_BALANCE with one item).
func (j Job) NextJobInstanceIP() string { return j.Full(NextJobInstanceIPNode) }

// Kind classifies a path under a job root.
type Kind int

// Path kinds. Item is set for the kinds under sharding/{item},
// leader/failover/items/{item} and guarantee/*/{item}; ID is set for
// KindServer (the IP), KindInstance and KindTriggerInstance (the instance
// id), and the latch participants (the child node name).
const (
	KindUnknown Kind = iota
	KindRoot
	KindConfig
	KindServers
	KindServer
	KindInstances
	KindInstance
	KindTrigger
	KindTriggerInstance
	KindSharding
	KindShardingItem
	KindShardingInstance
	KindRunning
	KindFailover
	KindFailovering
	KindMisfire
	KindDisabled
	KindLeaderInstance
	KindLeaderLatch
	KindLeaderLatchParticipant
	KindShardingNecessary
	KindShardingProcessing
	KindFailoverItems
	KindFailoverItem
	KindFailoverLatch
	KindFailoverLatchParticipant
	KindGuaranteeStartedRoot
	KindGuaranteeStarted
	KindGuaranteeCompletedRoot
	KindGuaranteeCompleted
	KindGuaranteeStartedLatch
	KindGuaranteeCompletedLatch
	KindSystemTime
	KindNextJobInstanceIP
	// KindIntermediate is a parent created implicitly with empty data:
	// leader, leader/election, leader/sharding, leader/failover, guarantee,
	// systemTime. ID holds the path relative to the job root.
	KindIntermediate
)

var kindNames = [...]string{
	"unknown", "root", "config", "servers", "server", "instances", "instance", "trigger", "trigger instance",
	"sharding", "sharding item", "sharding instance", "running", "failover", "failovering", "misfire", "disabled",
	"leader instance", "leader latch", "leader latch participant", "sharding necessary", "sharding processing",
	"failover items", "failover item", "failover latch", "failover latch participant",
	"guarantee started root", "guarantee started", "guarantee completed root", "guarantee completed",
	"guarantee started latch", "guarantee completed latch", "system time", "next job instance ip", "intermediate",
}

func (k Kind) String() string {
	if k < 0 || int(k) >= len(kindNames) {
		return "Kind(" + strconv.Itoa(int(k)) + ")"
	}
	return kindNames[k]
}

// Path is a parsed path.
type Path struct {
	Kind Kind
	Item int
	ID   string
}

// ipv4RE is upstream's ServerNode IPV4_REGEX. Upstream matches server
// paths against it, so a server node whose name is not an IPv4 address
// (never written by Java) is not a server for the listeners.
var ipv4RE = regexp.MustCompile(`^(25[0-5]|2[0-4]\d|((1\d{2})|([1-9]?\d)))(\.(25[0-5]|2[0-4]\d|((1\d{2})|([1-9]?\d)))){3}$`)

// IsIPv4 reports whether s matches upstream's server-node IPv4 pattern.
func IsIPv4(s string) bool { return ipv4RE.MatchString(s) }

// Parse classifies a path of this job. It returns false for paths outside
// the job root and for paths the tree does not define. Item numbers must
// be written canonically (as Java writes them: no sign, no leading zero);
// server names must be IPv4 addresses (upstream's ServerNode.isServerPath;
// upstream inserts the job name into that regex unescaped, ejob compares
// it literally).
func (j Job) Parse(path string) (Path, bool) {
	if path == j.root {
		return Path{Kind: KindRoot}, true
	}
	rel, ok := j.Rel(path)
	if !ok {
		return Path{}, false
	}
	seg := strings.Split(rel, "/")
	for _, s := range seg {
		if s == "" {
			return Path{}, false
		}
	}
	switch seg[0] {
	case ConfigNode:
		if len(seg) == 1 {
			return Path{Kind: KindConfig}, true
		}
	case ServersNode:
		switch {
		case len(seg) == 1:
			return Path{Kind: KindServers}, true
		case len(seg) == 2 && IsIPv4(seg[1]):
			return Path{Kind: KindServer, ID: seg[1]}, true
		}
	case InstancesNode:
		switch len(seg) {
		case 1:
			return Path{Kind: KindInstances}, true
		case 2:
			return Path{Kind: KindInstance, ID: seg[1]}, true
		}
	case TriggerNode:
		switch len(seg) {
		case 1:
			return Path{Kind: KindTrigger}, true
		case 2:
			return Path{Kind: KindTriggerInstance, ID: seg[1]}, true
		}
	case ShardingNode:
		if len(seg) == 1 {
			return Path{Kind: KindSharding}, true
		}
		item, ok := parseItem(seg[1])
		if !ok {
			return Path{}, false
		}
		if len(seg) == 2 {
			return Path{Kind: KindShardingItem, Item: item}, true
		}
		if len(seg) == 3 {
			kind := map[string]Kind{
				ItemInstance: KindShardingInstance, ItemRunning: KindRunning, ItemFailover: KindFailover,
				ItemFailovering: KindFailovering, ItemMisfire: KindMisfire, ItemDisabled: KindDisabled,
			}[seg[2]]
			if kind != KindUnknown {
				return Path{Kind: kind, Item: item}, true
			}
		}
	case LeaderNode:
		return parseLeader(rel)
	case GuaranteeNode:
		return parseGuarantee(rel, seg)
	case "systemTime":
		switch rel {
		case "systemTime":
			return Path{Kind: KindIntermediate, ID: rel}, true
		case SystemTimeNode:
			return Path{Kind: KindSystemTime}, true
		}
	case NextJobInstanceIPNode:
		if len(seg) == 1 {
			return Path{Kind: KindNextJobInstanceIP}, true
		}
	}
	return Path{}, false
}

func parseLeader(rel string) (Path, bool) {
	switch rel {
	case LeaderNode, "leader/election", "leader/sharding", "leader/failover":
		return Path{Kind: KindIntermediate, ID: rel}, true
	case LeaderInstanceNode:
		return Path{Kind: KindLeaderInstance}, true
	case LeaderLatchNode:
		return Path{Kind: KindLeaderLatch}, true
	case ShardingNecessaryNode:
		return Path{Kind: KindShardingNecessary}, true
	case ShardingProcessingNode:
		return Path{Kind: KindShardingProcessing}, true
	case FailoverItemsNode:
		return Path{Kind: KindFailoverItems}, true
	case FailoverLatchNode:
		return Path{Kind: KindFailoverLatch}, true
	}
	if child, ok := strings.CutPrefix(rel, LeaderLatchNode+"/"); ok && !strings.Contains(child, "/") {
		return Path{Kind: KindLeaderLatchParticipant, ID: child}, true
	}
	if child, ok := strings.CutPrefix(rel, FailoverLatchNode+"/"); ok && !strings.Contains(child, "/") {
		return Path{Kind: KindFailoverLatchParticipant, ID: child}, true
	}
	if child, ok := strings.CutPrefix(rel, FailoverItemsNode+"/"); ok {
		if item, ok := parseItem(child); ok {
			return Path{Kind: KindFailoverItem, Item: item}, true
		}
	}
	return Path{}, false
}

func parseGuarantee(rel string, seg []string) (Path, bool) {
	switch rel {
	case GuaranteeNode:
		return Path{Kind: KindIntermediate, ID: rel}, true
	case GuaranteeStartedNode:
		return Path{Kind: KindGuaranteeStartedRoot}, true
	case GuaranteeCompletedNode:
		return Path{Kind: KindGuaranteeCompletedRoot}, true
	case GuaranteeStartedLatchNode:
		return Path{Kind: KindGuaranteeStartedLatch}, true
	case GuaranteeCompletedLatchNode:
		return Path{Kind: KindGuaranteeCompletedLatch}, true
	}
	if len(seg) == 3 {
		if item, ok := parseItem(seg[2]); ok {
			switch seg[1] {
			case "started":
				return Path{Kind: KindGuaranteeStarted, Item: item}, true
			case "completed":
				return Path{Kind: KindGuaranteeCompleted, Item: item}, true
			}
		}
	}
	return Path{}, false
}

// parseItem accepts the canonical decimal form of a Java int >= 0.
func parseItem(s string) (int, bool) {
	if s == "" || (len(s) > 1 && s[0] == '0') {
		return 0, false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(s, 10, 32)
	if err != nil {
		return 0, false
	}
	return int(n), true
}

// The predicates below mirror upstream's *Node helpers used by listeners.

// IsConfigPath reports whether path is "/{job}/config".
func (j Job) IsConfigPath(path string) bool { return path == j.Config() }

// IsLeaderInstancePath reports whether path is the leader node.
func (j Job) IsLeaderInstancePath(path string) bool { return path == j.LeaderInstance() }

// IsInstancePath reports whether path is an instance node of this job.
func (j Job) IsInstancePath(path string) bool {
	p, ok := j.Parse(path)
	return ok && p.Kind == KindInstance
}

// IsLocalInstancePath reports whether path is the instance node of
// instanceID.
func (j Job) IsLocalInstancePath(path, instanceID string) bool {
	return path == j.Instance(instanceID)
}

// IsServerPath reports whether path is a server node (IPv4 name).
func (j Job) IsServerPath(path string) bool {
	p, ok := j.Parse(path)
	return ok && p.Kind == KindServer
}

// IsLocalServerPath reports whether path is the server node of ip.
func (j Job) IsLocalServerPath(path, ip string) bool { return path == j.Server(ip) }

// IsLocalTriggerPath reports whether path is the trigger node of instanceID.
func (j Job) IsLocalTriggerPath(path, instanceID string) bool {
	return path == j.TriggerInstance(instanceID)
}

// RunningItem returns the item of a "sharding/{item}/running" path.
func (j Job) RunningItem(path string) (int, bool) { return j.itemOf(path, KindRunning) }

// FailoverItemOf returns the item of a "sharding/{item}/failover" path
// (upstream's FailoverNode.getItemByExecutionFailoverPath).
func (j Job) FailoverItemOf(path string) (int, bool) { return j.itemOf(path, KindFailover) }

func (j Job) itemOf(path string, kind Kind) (int, bool) {
	p, ok := j.Parse(path)
	if !ok || p.Kind != kind {
		return 0, false
	}
	return p.Item, true
}

// IsGuaranteeStartedRoot reports whether path is this job's
// "guarantee/started" root.
func (j Job) IsGuaranteeStartedRoot(path string) bool { return path == j.GuaranteeStartedRoot() }

// IsGuaranteeCompletedRoot reports whether path is this job's
// "guarantee/completed" root.
func (j Job) IsGuaranteeCompletedRoot(path string) bool {
	return path == j.GuaranteeCompletedRoot()
}
