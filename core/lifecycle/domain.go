package lifecycle

// The domain objects of upstream's lifecycle API (executors spec §8.7).
// Their JSON field names and order are those ElasticJob-UI's backend
// serialises with Jackson, so a REST handler can encode them as they are.

// Status is a job's status as the console reports it (executors spec §8.4).
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

// JobBrief is upstream's JobBriefInfo: one job summarised.
type JobBrief struct {
	JobName string `json:"jobName"`
	Status  Status `json:"status"`
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

// ShardingStatus is one item's status (executors spec §8.6). There is no
// FAILOVER status: see ShardingInfo.Failover.
type ShardingStatus string

// Item statuses, in order of precedence.
const (
	ShardingDisabled ShardingStatus = "DISABLED"
	ShardingRunning  ShardingStatus = "RUNNING"
	ShardingFlag     ShardingStatus = "SHARDING_FLAG"
	ShardingPending  ShardingStatus = "PENDING"
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
