package lifecycle

// The domain objects of upstream's lifecycle API (JobBriefInfo,
// ServerBriefInfo, ShardingInfo).
// Their JSON field names and order are those ElasticJob-UI's backend
// serialises with Jackson, so a REST handler can encode them as they are.

// Status is a job's status as the console reports it: upstream's
// JobBriefInfo.JobStatus.
type Status string

// Job statuses.
const (
	StatusOK           Status = "OK"
	StatusCrashed      Status = "CRASHED"
	StatusDisabled     Status = "DISABLED"
	StatusShardingFlag Status = "SHARDING_FLAG"
	// StatusConfigError: the job's config node does not parse or breaks
	// a bound (config.Decode); no ejob instance fires it until a valid
	// one is written. JobBrief.ConfigError says why. Not an upstream
	// status.
	StatusConfigError Status = "CONFIG_ERROR"
)

// State is a job's state as ejob's own console and CLI show it. Status
// is upstream's, kept unchanged by the ElasticJob-compatible REST API; it
// calls a job that has never fired SHARDING_FLAG (nothing is sharded
// before the first fire) and cannot tell a running job from an idle one.
// State tells them apart. In order of precedence:
type State string

// Job states.
const (
	// StateConfigError: the config node is refused (StatusConfigError).
	StateConfigError State = "CONFIG_ERROR"
	// StateCrashed: no live instance (StatusCrashed).
	StateCrashed State = "CRASHED"
	// StateDisabled: the job has server nodes and every one is DISABLED,
	// so no instance fires it.
	StateDisabled State = "DISABLED"
	// StateRunning: an item has a running node (written while it runs
	// when monitorExecution is on, the default).
	StateRunning State = "RUNNING"
	// StateNeverRun: no item has an owner: the job has not fired yet (it
	// is sharded at its first fire): a one-off job never triggered, a cron
	// job before its first fire.
	StateNeverRun State = "NEVER_RUN"
	// StateResharding: the job has run, and a resharding is pending: the
	// leader/sharding/necessary flag is set (an instance came or went, the
	// item count changed) or an item's owner is not a live instance. The
	// next fire or trigger reshards first.
	StateResharding State = "RESHARDING"
	// StateReady: every item is owned by a live instance and nothing is
	// pending: the job waits for its next fire or trigger.
	StateReady State = "READY"
)

// JobBrief is upstream's JobBriefInfo: one job summarised.
type JobBrief struct {
	JobName string `json:"jobName"`
	Status  Status `json:"status"`
	// State is ejob's own state of the job (see State). Not part of
	// upstream's JSON.
	State State `json:"-"`
	// Description, Cron and ShardingTotalCount come from the job's
	// config; they are empty in the per-server briefs of JobsOfServer (as
	// upstream leaves them null and 0). An empty Cron is a one-off job.
	Description        string `json:"description"`
	Cron               string `json:"cron"`
	InstanceCount      int    `json:"instanceCount"`
	ShardingTotalCount int    `json:"shardingTotalCount"`
	// Instances are the instance ids counted in InstanceCount, sorted. Not
	// part of upstream's JSON.
	Instances []string `json:"-"`
	// TimeZone is the config's timeZone (empty in JobsOfServer's briefs),
	// for computing fire times. Not part of upstream's JSON.
	TimeZone string `json:"-"`
	// ConfigError is why the job's config node is refused, with Status
	// StatusConfigError ("" otherwise). Description, Cron and
	// ShardingTotalCount are then those of a node that parses but breaks
	// a bound, and empty for one that does not parse. Not part of
	// upstream's JSON.
	ConfigError string `json:"configError,omitempty"`
}

// ServerBrief is upstream's ServerBriefInfo: one server IP over all jobs.
type ServerBrief struct {
	ServerIP string `json:"serverIp"`
	// Instances are the instance ids on this IP (of any job), sorted.
	Instances []string `json:"instances"`
	// JobNames are the jobs with a servers/{ip} node for this IP, sorted.
	JobNames     []string `json:"jobNames"`
	InstancesNum int      `json:"instancesNum"`
	JobsNum      int      `json:"jobsNum"`
	// DisabledJobsNum counts the jobs whose servers/{ip} value is DISABLED
	// (any case).
	DisabledJobsNum int `json:"disabledJobsNum"`
}

// ShardingStatus is one item's status: upstream's
// ShardingInfo.ShardingStatus. There is no FAILOVER status: see
// ShardingInfo.Failover.
type ShardingStatus string

// Item statuses, in order of precedence.
const (
	ShardingDisabled ShardingStatus = "DISABLED"
	ShardingRunning  ShardingStatus = "RUNNING"
	ShardingFlag     ShardingStatus = "SHARDING_FLAG"
	ShardingPending  ShardingStatus = "PENDING"
)

// ItemState is one item's state as ejob's own console and CLI show it
// (ShardingStatus is upstream's, which calls an item that has never had an
// owner SHARDING_FLAG and an idle one PENDING). In order of precedence:
type ItemState string

// Item states.
const (
	// ItemDisabled: sharding/{item}/disabled exists.
	ItemDisabled ItemState = "DISABLED"
	// ItemRunning: sharding/{item}/running exists.
	ItemRunning ItemState = "RUNNING"
	// ItemNeverRun: no item of the job has an owner (the job has not
	// fired yet).
	ItemNeverRun ItemState = "NEVER_RUN"
	// ItemResharding: the item has no owner or its owner is not a live
	// instance, or the job's resharding flag is set: the next fire
	// reshards before it runs the item.
	ItemResharding ItemState = "RESHARDING"
	// ItemReady: owned by a live instance, waiting for the next fire.
	ItemReady ItemState = "READY"
)

// ShardingInfo is upstream's ShardingInfo: one sharding item of a job.
type ShardingInfo struct {
	Item int `json:"item"`
	// ServerIP and InstanceID are the owner's, from its instance node; when
	// that node is gone (the item's owner left, resharding pending) they
	// are taken from the owner id in sharding/{item}/instance. Both are
	// empty when the item has no owner.
	ServerIP   string         `json:"serverIp"`
	InstanceID string         `json:"instanceId"`
	Status     ShardingStatus `json:"status"`
	// Failover: a sharding/{item}/failover node exists (another instance
	// is running the item for a crashed one).
	Failover bool `json:"failover"`
}

// Target is one (job, server) or (job, instance) an operation acted on.
type Target struct {
	JobName    string `json:"jobName"`
	ServerIP   string `json:"serverIp,omitempty"`
	InstanceID string `json:"instanceId,omitempty"`
}
