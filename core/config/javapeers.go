package config

import (
	"fmt"
	"slices"
	"strings"

	"github.com/ejob-io/ejob/core/cron"
	"github.com/ejob-io/ejob/spi"
)

// Upstream's built-in type names (ElasticJob 3.0.x), by what names them.
// A name outside these is one a Java instance cannot load unless someone
// put a plugin of that name on its classpath.
//
// Upstream ships no job listener type (ElasticJobListener implementations
// are the user's), so every listener name is outside them.
func javaBuiltins(key string) []string {
	switch key {
	case KeyJobShardingStrategyType:
		// SINGLE_SHARDING_BALANCE exists in 3.0.5 only; ejob has no
		// strategy of that name, so a config ejob writes never names it.
		return []string{"AVG_ALLOCATION", "ODEVITY", "ROUND_ROBIN"}
	case KeyJobExecutorThreadPoolSizeProviderType:
		return []string{"CPU", "SINGLE_THREAD"}
	case KeyJobErrorHandlerType:
		// EMAIL, WECHAT and DINGTALK are upstream add-on modules.
		return []string{"LOG", "THROW", "IGNORE", "EMAIL", "WECHAT", "DINGTALK"}
	case KeyElasticJobType:
		// Typed jobs; classed jobs (SIMPLE, DATAFLOW) are Java classes.
		return []string{"SCRIPT", "HTTP"}
	}
	return nil
}

// KeyElasticJobType names the job type in JavaPeerIssue.Key: it is not a
// key of the config node but the value of the job's root node.
const KeyElasticJobType = "elasticJobType"

// JavaPeerJob is what JavaPeerIssues checks: the configuration ejob is
// about to write to a job's config node, and the job type it writes to the
// job's root node.
type JavaPeerJob struct {
	Config *JobConfiguration
	// Type is the job type (elasticJobType: SCRIPT, HTTP or a plugin's);
	// "" for a job run in-process by a Go program, which no Java instance
	// runs anyway.
	Type string
}

// JavaPeerIssue is one value of a job that a Java ElasticJob 3.0.x
// instance sharing the namespace cannot read or run.
type JavaPeerIssue struct {
	// Key is the config node's key, or KeyElasticJobType.
	Key string
	// Value is the value ejob writes (list items joined by ", ").
	Value string
	// Java says what a Java instance does with it.
	Java string
}

func (i JavaPeerIssue) String() string {
	return fmt.Sprintf("%s %q: %s", i.Key, i.Value, i.Java)
}

// javaPeerCheck is one entry of javaPeerChecks: a key, the value ejob
// writes for it, and what a Java instance would do with that value ("" when
// it reads it fine).
type javaPeerCheck struct {
	key   string
	value func(JavaPeerJob) string
	java  func(j JavaPeerJob, value string) string
}

// javaPeerChecks lists what JavaPeerIssues checks, one entry per concern.
// A check of another key (a cron expression that is not 6- or 7-field
// Quartz, for instance) is one more entry.
func javaPeerChecks() []javaPeerCheck {
	return []javaPeerCheck{{
		key:   KeyCron,
		value: func(j JavaPeerJob) string { return j.Config.Cron },
		java: func(_ JavaPeerJob, expr string) string {
			if cron.IsQuartz(expr) {
				return ""
			}
			return "a Java instance reads only Quartz crons (6 or 7 fields, seconds first): it fails to schedule the job " +
				"(its Quartz parser rejects the expression)"
		},
	}, {
		key:   KeyTimeZone,
		value: func(j JavaPeerJob) string { return j.Config.TimeZone },
		java: func(_ JavaPeerJob, tz string) string {
			if tz == "" || strings.HasPrefix(tz, "GMT") {
				return ""
			}
			return "a Java instance accepts only GMT forms such as GMT+08:00: it fails to schedule the job " +
				"(IllegalArgumentException: Invalid time zone specification)"
		},
	}, {
		key:   KeyJobExecutorThreadPoolSizeProviderType,
		value: func(j JavaPeerJob) string { return j.Config.JobExecutorThreadPoolSizeProviderType },
		java: func(j JavaPeerJob, typ string) string {
			name, ok := poolKeyWritten(j.Config)
			if !ok {
				return ""
			}
			key, fails := "only 3.0.5 knows this key", "3.0.4"
			if name == KeyJobExecutorServiceHandlerType {
				key, fails = "written as "+name+", which only 3.0.4 knows", "3.0.5"
			}
			java := fmt.Sprintf("%s: a %s instance fails to start (Unable to find property '%s') and its lifecycle API "+
				"cannot read the config; no spelling is read by both (only CPU is: it is written as no key)", key, fails, name)
			if !isJavaBuiltin(KeyJobExecutorThreadPoolSizeProviderType, typ) {
				java += "; and Java has no thread pool of that type (CPU, SINGLE_THREAD)"
			}
			return java
		},
	}, {
		key:   KeyJobShardingStrategyType,
		value: func(j JavaPeerJob) string { return j.Config.JobShardingStrategyType },
		java: notBuiltin(KeyJobShardingStrategyType,
			"a Java leader cannot shard with it: 3.0.4 fails each resharding, 3.0.5 shards with AVG_ALLOCATION instead"),
	}, {
		key:   KeyJobErrorHandlerType,
		value: func(j JavaPeerJob) string { return j.Config.JobErrorHandlerType },
		java: notBuiltin(KeyJobErrorHandlerType,
			"a 3.0.4 instance fails to start (Cannot find job error handler type); 3.0.5 logs failures as LOG does instead"),
	}, {
		key:   KeyJobListenerTypes,
		value: func(j JavaPeerJob) string { return strings.Join(j.Config.JobListenerTypes, ", ") },
		java: func(_ JavaPeerJob, names string) string {
			if names == "" {
				return ""
			}
			return "upstream ships no job listener: a Java instance fails to start unless a listener of each of these " +
				"types is on its classpath"
		},
	}, {
		key:   KeyElasticJobType,
		value: func(j JavaPeerJob) string { return j.Type },
		java: notBuiltin(KeyElasticJobType,
			"a Java instance cannot run the job: its job types are SCRIPT and HTTP (or a Java class)"),
	}}
}

// notBuiltin returns a check that reports java when the type is set and is
// not one of upstream's built-in names for key.
func notBuiltin(key, java string) func(JavaPeerJob, string) string {
	return func(_ JavaPeerJob, typ string) string {
		if strings.TrimSpace(typ) == "" || isJavaBuiltin(key, typ) {
			return ""
		}
		return java
	}
}

func isJavaBuiltin(key, typ string) bool {
	return slices.Contains(javaBuiltins(key), spi.NormalizeType(typ))
}

// poolKeyWritten reports whether Marshal writes the thread-pool key, and
// under which spelling.
func poolKeyWritten(c *JobConfiguration) (string, bool) {
	v := c.JobExecutorThreadPoolSizeProviderType
	if v == "" || (!c.wire.poolKeyRead && spi.NormalizeType(v) == DefaultThreadPoolType) {
		return "", false
	}
	if c.LegacyThreadPoolKey {
		return KeyJobExecutorServiceHandlerType, true
	}
	return KeyJobExecutorThreadPoolSizeProviderType, true
}

// JavaPeerIssues returns the values of j that a Java ElasticJob 3.0.x
// instance sharing the namespace could not read or run, in a fixed order
// (time zone, thread-pool key, sharding strategy, error handler,
// listeners, job type), or none. Call it before writing j's configuration
// to a namespace Java instances may share (ejob's host does, see its
// ejob.javaPeers setting).
func JavaPeerIssues(j JavaPeerJob) []JavaPeerIssue {
	if j.Config == nil {
		return nil
	}
	var out []JavaPeerIssue
	for _, c := range javaPeerChecks() {
		v := c.value(j)
		if java := c.java(j, v); java != "" {
			out = append(out, JavaPeerIssue{Key: c.key, Value: v, Java: java})
		}
	}
	return out
}
