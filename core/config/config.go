package config

import (
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"time"

	"github.com/ejob-io/ejob/core/config/snakeyaml"
)

// Sentinel errors. Every error of this package wraps one of ErrInvalid,
// ErrMalformed and ErrJobConflict (SetUp's ErrRegistryConfig comes with one
// of the first two).
var (
	// ErrInvalid is wrapped by every validation error (Validate,
	// ParseShardingItemParameters).
	ErrInvalid = errors.New("invalid job configuration")
	// ErrMalformed is wrapped by every error Unmarshal returns: the YAML
	// cannot be parsed, or a key holds a value of the wrong type.
	ErrMalformed = errors.New("malformed job configuration YAML")
	// ErrJobConflict means the job root node holds another job class than
	// ours (setUpJobConfiguration's first check).
	ErrJobConflict = errors.New("job conflict with register center")
	// ErrRegistryConfig is wrapped, with ErrMalformed or ErrInvalid, by
	// SetUp's error for a config node in the registry that does not parse
	// or breaks a bound (Decode).
	ErrRegistryConfig = errors.New("the job's configuration in the registry is refused")
	// ErrInvalidJobName is wrapped by CheckJobName's errors.
	ErrInvalidJobName = errors.New("invalid job name")
)

// YAML keys of the config node (JobConfigurationPOJO's fields). JobKeys
// describes each.
const (
	KeyJobName                               = "jobName"
	KeyCron                                  = "cron"
	KeyTimeZone                              = "timeZone"
	KeyShardingTotalCount                    = "shardingTotalCount"
	KeyShardingItemParameters                = "shardingItemParameters"
	KeyJobParameter                          = "jobParameter"
	KeyMonitorExecution                      = "monitorExecution"
	KeyFailover                              = "failover"
	KeyMisfire                               = "misfire"
	KeyMaxTimeDiffSeconds                    = "maxTimeDiffSeconds"
	KeyReconcileIntervalMinutes              = "reconcileIntervalMinutes"
	KeyJobShardingStrategyType               = "jobShardingStrategyType"
	KeyJobExecutorThreadPoolSizeProviderType = "jobExecutorThreadPoolSizeProviderType"
	// KeyJobExecutorServiceHandlerType is the ≤3.0.4 spelling of
	// KeyJobExecutorThreadPoolSizeProviderType.
	KeyJobExecutorServiceHandlerType = "jobExecutorServiceHandlerType"
	KeyJobErrorHandlerType           = "jobErrorHandlerType"
	KeyJobListenerTypes              = "jobListenerTypes"
	KeyJobExtraConfigurations        = "jobExtraConfigurations"
	KeyDescription                   = "description"
	KeyProps                         = "props"
	KeyDisabled                      = "disabled"
	KeyOverwrite                     = "overwrite"
	KeyLabel                         = "label"
	KeyStaticSharding                = "staticSharding"
)

// JobConfiguration is one job's configuration, field for field the
// upstream JobConfigurationPOJO. Each field but
// LegacyThreadPoolKey is a key of JobKeys, which says how it is read,
// written, defaulted and validated.
//
// Strings that Java keeps as null when unset (Cron, TimeZone, the three
// plugin types, Label) are omitted from the YAML when empty. Strings whose
// Java default is "" (ShardingItemParameters, JobParameter, Description) are
// always written, as `”` when empty, exactly as Java does.
//
// A value returned by Unmarshal also remembers what the Go fields cannot
// express, so that Marshal writes it back unchanged: keys that were absent
// (null in Java), keys that held `”` where Java would omit an empty value,
// keys this version does not know, and the insertion order of props. Assigning a
// non-empty value to a field overrides what was remembered for it. Use Equal to
// compare two configurations by their fields only.
//
// jobBootstrapBeanName is not a key of the config node: it belongs to the
// Spring Boot starter's (and ejob's host) configuration file, and Java's
// loader rejects unknown keys, so it is never written here.
type JobConfiguration struct {
	JobName string
	// Cron is a Quartz cron expression (6 or 7 fields), a standard 5-field
	// crontab or a descriptor such as @hourly or @every 90s (see
	// docs/cron.md); empty means a one-off job. Only the Quartz kind can be
	// read by Java ElasticJob instances.
	Cron string
	// TimeZone of Cron, e.g. "GMT+08:00"; empty means the host's zone.
	TimeZone           string
	ShardingTotalCount int
	// ShardingItemParameters is "0=A,1=B"; see ParseShardingItemParameters.
	ShardingItemParameters string
	JobParameter           string
	MonitorExecution       bool
	Failover               bool
	Misfire                bool
	// MaxTimeDiffSeconds < 0 disables the clock check; see MaxTimeDiff.
	MaxTimeDiffSeconds int
	// ReconcileIntervalMinutes <= 0 disables reconcile; see ReconcileInterval.
	ReconcileIntervalMinutes int
	// JobShardingStrategyType; empty means AVG_ALLOCATION.
	JobShardingStrategyType string
	// JobExecutorThreadPoolSizeProviderType; empty means CPU. Read from
	// either spelling; see LegacyThreadPoolKey for the one written.
	JobExecutorThreadPoolSizeProviderType string
	// JobErrorHandlerType; empty means LOG.
	JobErrorHandlerType    string
	JobListenerTypes       []string
	JobExtraConfigurations []ExtraConfiguration
	Description            string
	// Props are job-type and error-handler properties. Marshal writes them
	// in the iteration order of a Java 9+ java.util.Properties holding them.
	Props    map[string]string
	Disabled bool
	// Overwrite makes this (local) configuration replace the registry's at
	// startup; see SetUp.
	Overwrite bool
	// Label is stored but never used, as upstream.
	Label          string
	StaticSharding bool

	// LegacyThreadPoolKey makes Marshal write the thread-pool type under the
	// ≤3.0.4 key jobExecutorServiceHandlerType instead of 3.0.5's
	// jobExecutorThreadPoolSizeProviderType. Java's loader fails on a key it
	// does not know, and 3.0.4 knows only the first, 3.0.5 only the second,
	// so no spelling is read by both: the one spelling both read is none at
	// all, which both take as CPU. So an empty type and CPU (any case) write
	// neither key, unless the parsed input held it (it is then written back
	// as read). Any other type is written under 3.0.5's key by default, and
	// under the legacy one when set or when Unmarshal read it (a ≤3.0.4 peer
	// wrote the config); one Java version or the other cannot read it
	// (config.JavaPeerIssues says so).
	LegacyThreadPoolKey bool

	wire wireState
}

// wireState is what a parsed config remembers beyond its fields.
type wireState struct {
	null    keySet              // writeUnlessAbsent strings that were absent (Java null)
	empty   keySet              // writeUnlessNull strings that were present as ''
	unknown []rawKV             // keys this version does not know, in input order
	order   map[string][]string // a map key's entries in input order (Java insertion order), by key name
	// poolKeyRead: the input held the thread-pool key (either spelling)
	// with a value, so Marshal writes it back even when it is CPU.
	poolKeyRead bool
}

type rawKV struct {
	key   string
	value *snakeyaml.Node
}

// keySet is a set of keys: bit i stands for JobKeys()[i].
type keySet uint64

func keyBit(i int) keySet { return 1 << i }

func (s keySet) has(b keySet) bool { return s&b != 0 }

// New returns a configuration with the Java API's defaults
// (JobConfiguration.newBuilder(jobName, shardingTotalCount).build()):
// monitorExecution and misfire on, maxTimeDiffSeconds -1,
// reconcileIntervalMinutes 10, everything else empty or false.
//
// Unmarshal uses different defaults for absent keys (false, false, -1, 0),
// as Java's YAML loader does; see Unmarshal.
func New(jobName string, shardingTotalCount int) *JobConfiguration {
	c := &JobConfiguration{}
	keys := jobKeys()
	for i := range keys {
		k := &keys[i]
		k.set(c, k.def)
	}
	c.JobName, c.ShardingTotalCount = jobName, shardingTotalCount
	return c
}

// Default plugin type names used when the configured type is empty.
const (
	DefaultShardingStrategyType = "AVG_ALLOCATION"
	DefaultThreadPoolType       = "CPU"
	DefaultErrorHandlerType     = "LOG"
)

// MaxTimeDiff returns the tolerated clock difference between this host and
// the registry, and whether the check (run before every execution) is on:
// it is off when MaxTimeDiffSeconds < 0. Zero means "no difference at all".
func (c *JobConfiguration) MaxTimeDiff() (time.Duration, bool) {
	if c.MaxTimeDiffSeconds < 0 {
		return 0, false
	}
	return time.Duration(c.MaxTimeDiffSeconds) * time.Second, true
}

// ReconcileInterval returns the period of the reconcile service and whether
// it runs: it does not when ReconcileIntervalMinutes <= 0.
func (c *JobConfiguration) ReconcileInterval() (time.Duration, bool) {
	if c.ReconcileIntervalMinutes <= 0 {
		return 0, false
	}
	return time.Duration(c.ReconcileIntervalMinutes) * time.Minute, true
}

// ShardingStrategyType returns JobShardingStrategyType, or the default when
// it is empty. Lookups are case-insensitive (spi.NormalizeType).
func (c *JobConfiguration) ShardingStrategyType() string {
	return orDefault(c.JobShardingStrategyType, DefaultShardingStrategyType)
}

// ThreadPoolType returns JobExecutorThreadPoolSizeProviderType or CPU.
func (c *JobConfiguration) ThreadPoolType() string {
	return orDefault(c.JobExecutorThreadPoolSizeProviderType, DefaultThreadPoolType)
}

// ErrorHandlerType returns JobErrorHandlerType or LOG.
func (c *JobConfiguration) ErrorHandlerType() string {
	return orDefault(c.JobErrorHandlerType, DefaultErrorHandlerType)
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// UnknownKeys lists the top-level keys Unmarshal did not recognise, in
// input order. Marshal writes them back unchanged.
func (c *JobConfiguration) UnknownKeys() []string {
	out := make([]string, 0, len(c.wire.unknown))
	for _, kv := range c.wire.unknown {
		out = append(out, kv.key)
	}
	return out
}

// Clone returns a deep copy.
func (c *JobConfiguration) Clone() *JobConfiguration {
	out := *c
	out.JobListenerTypes = slices.Clone(c.JobListenerTypes)
	out.JobExtraConfigurations = slices.Clone(c.JobExtraConfigurations)
	out.Props = maps.Clone(c.Props)
	out.wire.unknown = slices.Clone(c.wire.unknown)
	out.wire.order = maps.Clone(c.wire.order) // its slices are never modified
	return &out
}

// Equal reports whether c and o have the same field values, ignoring how
// they were (or will be) written: remembered absent keys, unknown keys,
// props order and LegacyThreadPoolKey. nil and empty collections are equal.
func (c *JobConfiguration) Equal(o *JobConfiguration) bool {
	if c == nil || o == nil {
		return c == o
	}
	a, b := *c, *o
	a.wire, b.wire = wireState{}, wireState{}
	a.LegacyThreadPoolKey, b.LegacyThreadPoolKey = false, false
	if !slices.Equal(a.JobListenerTypes, b.JobListenerTypes) || !maps.Equal(a.Props, b.Props) ||
		!slices.EqualFunc(a.JobExtraConfigurations, b.JobExtraConfigurations, func(x, y ExtraConfiguration) bool { return x.Equal(y) }) {
		return false
	}
	a.JobListenerTypes, b.JobListenerTypes = nil, nil
	a.Props, b.Props = nil, nil
	a.JobExtraConfigurations, b.JobExtraConfigurations = nil, nil
	return reflect.DeepEqual(a, b)
}

// ExtraConfiguration is one entry of jobExtraConfigurations: a tagged
// mapping such as tracing
// (`!!org.apache.shardingsphere.elasticjob.kernel.tracing.yaml.YamlTracingConfiguration`
// in 3.0.5, `...elasticjob.tracing.yaml...` in ≤3.0.4). Its body is kept as
// parsed and written back as Java would write it.
type ExtraConfiguration struct {
	// Tag is the YAML tag as written, e.g.
	// "!!org.apache...YamlTracingConfiguration".
	Tag  string
	body *snakeyaml.Node
}

// NewExtraConfiguration builds an entry from a tag and a Go value (a
// struct or map) that gopkg.in/yaml.v3 can encode. Java's loader only
// accepts tags naming classes under org.apache.shardingsphere.elasticjob.
func NewExtraConfiguration(tag string, body any) (ExtraConfiguration, error) {
	n, err := encodeNode(body)
	if err != nil {
		return ExtraConfiguration{}, fmt.Errorf("extra configuration %s: %w", tag, err)
	}
	return ExtraConfiguration{Tag: tag, body: n}, nil
}

// Decode decodes the entry's body into v with gopkg.in/yaml.v3.
func (x ExtraConfiguration) Decode(v any) error {
	if x.body == nil {
		return nil
	}
	if err := snakeyaml.ToYAML(x.body).Decode(v); err != nil {
		return fmt.Errorf("extra configuration %s: %w", x.Tag, err)
	}
	return nil
}

// Equal reports whether two entries have the same tag and body.
func (x ExtraConfiguration) Equal(y ExtraConfiguration) bool {
	if x.Tag != y.Tag {
		return false
	}
	bx, errx := x.marshalBody()
	by, erry := y.marshalBody()
	return errx == nil && erry == nil && string(bx) == string(by)
}

func (x ExtraConfiguration) marshalBody() ([]byte, error) {
	n := x.node()
	return snakeyaml.Dump(snakeyaml.Sequence(n))
}

func (x ExtraConfiguration) node() *snakeyaml.Node {
	n := snakeyaml.Mapping()
	if x.body != nil {
		cp := *x.body
		n = &cp
	}
	if x.Tag != "" {
		n.Tag = x.Tag
	}
	return n
}
