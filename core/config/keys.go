package config

import (
	"fmt"

	"github.com/ejob-io/ejob/spi"
)

// JobKey describes one key of the config node: its name, its type (that of
// its JobConfiguration field), its defaults, its validation, how Marshal
// writes it and what docs/configuration.md says about it. JobKeys lists
// them all, and everything that handles job keys is driven by that list:
// New, Unmarshal, Marshal, Validate, the job section of the host's
// configuration file (host/hostconfig) and the job-key table of
// docs/configuration.md (generated, and checked by a test of host/hostconfig).
//
// Adding a key is adding its field to JobConfiguration and its entry to
// JobKeys (a Key* constant is optional).
type JobKey struct {
	// Name is the key as written in the config node (camelCase). In the
	// host's file, Spring's relaxed binding also accepts its kebab-case
	// and snake_case forms in any case (sharding-total-count).
	Name string
	// Legacy is an older spelling that is read too; Marshal writes it when
	// LegacyThreadPoolKey is set. Only the thread-pool key has one.
	Legacy string
	// Plugin is the kind of plugin type the value names (each item, for a
	// list), or "". Validate and the host's file check it against the
	// plugin catalog. A list key can only name job listeners.
	Plugin spi.Kind
	// InFile says that a job of the host's file may set the key. jobName
	// is not one (a job's key under `jobs` is its name), nor is
	// jobExtraConfigurations (not a key of Spring Boot starter jobs).
	InFile bool
	// Required says that a job of the host's file must set the key.
	Required bool
	// Doc is what the key means, as the `meaning` column of
	// docs/configuration.md's job-key table (Markdown, one line).
	Doc string

	// field returns a pointer to the key's field: *string, *int, *bool,
	// *[]string, *map[string]string or *[]ExtraConfiguration.
	field func(*JobConfiguration) any
	// write is how Marshal writes a string key (other types: ints and
	// bools are always written, lists and maps when not empty).
	write stringRule
	// def is New's value (the Java API's default) and absent Unmarshal's
	// for an absent key (the Java field's default); nil is the zero value.
	def, absent any
	// unset says, in the documentation, what an empty string means
	// ("host zone"); "" means "none".
	unset string
	// check returns why the key's value is invalid, or "".
	check func(*JobConfiguration) string
}

// stringRule is how Marshal writes a string key, and so what Unmarshal
// must remember about it beyond its value.
type stringRule uint8

const (
	// writeAlways: always written (jobName).
	writeAlways stringRule = iota
	// writeUnlessNull: Java's default is null, so an empty value is
	// omitted, unless the parsed input held an empty quoted string (the
	// wireState.empty bit).
	writeUnlessNull
	// writeUnlessAbsent: Java's default is "", so an empty value is
	// written (as an empty quoted string), unless the parsed input lacked
	// the key or held null (the wireState.null bit).
	writeUnlessAbsent
)

// numJobKeys is how many keys the config node has.
const numJobKeys = 22

// JobKeys returns the keys of the config node, in the order of
// docs/configuration.md. A function, not a variable: there is no
// package-level mutable state.
func JobKeys() []JobKey {
	keys := jobKeys()
	return keys[:]
}

// jobKeys is JobKeys as an array: New, Marshal, Unmarshal and Validate
// walk the keys of every config they handle, and keep the array on their
// stack (a slice of them per call was a fifth of the bytes a 10,000-job
// start allocated).
func jobKeys() [numJobKeys]JobKey {
	return [numJobKeys]JobKey{{
		Name:  KeyJobName,
		field: func(c *JobConfiguration) any { return &c.JobName },
		check: func(c *JobConfiguration) string { return checkNodeName(c.JobName) },
		Doc:   "the job's name, a ZooKeeper node name; in the file, the job's key under `jobs`",
	}, {
		Name: KeyCron, InFile: true, write: writeUnlessNull,
		field: func(c *JobConfiguration) any { return &c.Cron },
		Doc: "Quartz cron expression, seconds first (`0/5 * * * * ?`), or a standard 5-field crontab (`*/5 * * * *`) " +
			"or descriptor (`@hourly`, `@every 90s`), which Java ElasticJob instances cannot read; see [cron.md](cron.md). " +
			"Leave it out (or empty) for a **one-off** job, run on demand with `ejob trigger`.",
	}, {
		Name: KeyTimeZone, InFile: true, write: writeUnlessNull, unset: "host zone",
		field: func(c *JobConfiguration) any { return &c.TimeZone },
		Doc: "zone of the cron: an IANA name such as `Asia/Shanghai` or `Europe/London` (DST-correct), `UTC`, " +
			"or `GMT` plus an offset such as `GMT+08:00` or `GMT-5`. Java ElasticJob instances accept only the `GMT` " +
			"forms (`Invalid time zone specification`), so in a namespace shared with Java instances use a `GMT` offset.",
	}, {
		Name: KeyShardingTotalCount, InFile: true, Required: true,
		field: func(c *JobConfiguration) any { return &c.ShardingTotalCount },
		check: func(c *JobConfiguration) string {
			if c.ShardingTotalCount <= 0 {
				return fmt.Sprintf("must be greater than 0, got %d", c.ShardingTotalCount)
			}
			return ""
		},
		Doc: "number of sharding items, from 1 to 1,000 (see [Bounds](#bounds))",
	}, {
		Name: KeyShardingItemParameters, InFile: true, write: writeUnlessAbsent,
		field: func(c *JobConfiguration) any { return &c.ShardingItemParameters },
		Doc:   "`0=Beijing,1=Shanghai`: a parameter for each item. Keys must be integers in [0, shardingTotalCount), each given once.",
	}, {
		Name: KeyJobParameter, InFile: true, write: writeUnlessAbsent,
		field: func(c *JobConfiguration) any { return &c.JobParameter },
		Doc:   "a free-form parameter passed to every item",
	}, {
		Name: KeyMonitorExecution, InFile: true, def: true,
		field: func(c *JobConfiguration) any { return &c.MonitorExecution },
		Doc:   "record running items in the registry; failover and misfire depend on it",
	}, {
		Name: KeyFailover, InFile: true,
		field: func(c *JobConfiguration) any { return &c.Failover },
		Doc:   "take over the items of an instance that crashed while running them",
	}, {
		Name: KeyMisfire, InFile: true, def: true,
		field: func(c *JobConfiguration) any { return &c.Misfire },
		Doc:   "re-run a fire that was missed because the previous run was still running",
	}, {
		Name: KeyMaxTimeDiffSeconds, InFile: true, def: -1, absent: -1,
		field: func(c *JobConfiguration) any { return &c.MaxTimeDiffSeconds },
		Doc:   "tolerated clock difference between this host and the registry, checked before each run; < 0 disables the check",
	}, {
		Name: KeyReconcileIntervalMinutes, InFile: true, def: 10,
		field: func(c *JobConfiguration) any { return &c.ReconcileIntervalMinutes },
		Doc:   "period of the consistency repair (resharding when needed); ≤ 0 disables it",
	}, {
		Name: KeyJobShardingStrategyType, InFile: true, write: writeUnlessNull, Plugin: spi.KindSharding,
		unset: "`" + DefaultShardingStrategyType + "`",
		field: func(c *JobConfiguration) any { return &c.JobShardingStrategyType },
		Doc: "sharding strategy: `AVG_ALLOCATION`, `ODEVITY`, `ROUND_ROBIN`, or a plugin's type " +
			"([strategies.md](strategies.md))",
	}, {
		Name: KeyJobExecutorThreadPoolSizeProviderType, Legacy: KeyJobExecutorServiceHandlerType, InFile: true,
		write: writeUnlessNull, Plugin: spi.KindThreadPool, unset: "`" + DefaultThreadPoolType + "`",
		field: func(c *JobConfiguration) any { return &c.JobExecutorThreadPoolSizeProviderType },
		Doc: "thread-pool type: `CPU` (2 × processors) or `SINGLE_THREAD`, or a plugin's type. " +
			"The ≤ 3.0.4 spelling `jobExecutorServiceHandlerType` is accepted too (see below).",
	}, {
		Name: KeyJobErrorHandlerType, InFile: true, write: writeUnlessNull, Plugin: spi.KindErrorHandler,
		unset: "`" + DefaultErrorHandlerType + "`",
		field: func(c *JobConfiguration) any { return &c.JobErrorHandlerType },
		Doc:   "error handler: `LOG`, `THROW`, `IGNORE`, `EMAIL`, `WECHAT`, `DINGTALK`, `SLACK`, `WEBHOOK` ([alerting.md](alerting.md)), or a plugin's type",
	}, {
		Name: KeyJobListenerTypes, InFile: true, Plugin: spi.KindJobListener,
		field: func(c *JobConfiguration) any { return &c.JobListenerTypes },
		Doc:   "job listener types",
	}, {
		Name: KeyDescription, InFile: true, write: writeUnlessAbsent,
		field: func(c *JobConfiguration) any { return &c.Description },
		Doc:   "free text, shown by the console",
	}, {
		Name: KeyProps, InFile: true,
		field: func(c *JobConfiguration) any { return &c.Props },
		Doc:   "job-type and error-handler properties; see [below](#job-properties-props)",
	}, {
		Name: KeyDisabled, InFile: true,
		field: func(c *JobConfiguration) any { return &c.Disabled },
		Doc: "this host starts with its server entry disabled, so it takes no items until enabled " +
			"(deploy first, enable later)",
	}, {
		Name: KeyOverwrite, InFile: true,
		field: func(c *JobConfiguration) any { return &c.Overwrite },
		Doc: "this file's configuration replaces the registry's at every start. When false, a job that already " +
			"exists in the registry runs with the registry's configuration (which the console may have edited), " +
			"and the file only seeds new jobs.",
	}, {
		Name: KeyStaticSharding, InFile: true,
		field: func(c *JobConfiguration) any { return &c.StaticSharding },
		Doc:   "*ejob extension, not a starter key*: keep the item assignment when instances come and go",
	}, {
		Name: KeyLabel, InFile: true, write: writeUnlessNull,
		field: func(c *JobConfiguration) any { return &c.Label },
		Doc:   "*ejob extension, not a starter key*: stored in the config node and never used, as upstream",
	}, {
		Name:  KeyJobExtraConfigurations,
		field: func(c *JobConfiguration) any { return &c.JobExtraConfigurations },
		Doc:   "tagged extra configurations, such as tracing's; kept and written back as parsed",
	}}
}

// Field returns a pointer to c's field for the key: a *string, *int,
// *bool, *[]string (a list), *map[string]string (a map) or
// *[]ExtraConfiguration.
func (k JobKey) Field(c *JobConfiguration) any { return k.field(c) }

// TypeName names the key's type as docs/configuration.md does: string,
// int, bool, list or map.
func (k JobKey) TypeName() string {
	switch k.field(&JobConfiguration{}).(type) {
	case *string:
		return "string"
	case *int:
		return "int"
	case *bool:
		return "bool"
	case *map[string]string:
		return "map"
	}
	return "list"
}

// DocDefault is the key's default as docs/configuration.md's job-key table
// shows it: New's value (the Java API's default, which the host's file
// uses too), in bold when Unmarshal's value for an absent key (Java's YAML
// loader's) differs; "required" for a required key.
func (k JobKey) DocDefault() string {
	if k.Required {
		return "required"
	}
	var api, loader JobConfiguration
	k.set(&api, k.def)
	k.set(&loader, k.absent)
	var s string
	var differs bool
	switch p := k.field(&api).(type) {
	case *string:
		switch {
		case k.write == writeUnlessAbsent:
			return "`\"\"`"
		case k.unset != "":
			return k.unset
		}
		return "none"
	case *int:
		s, differs = fmt.Sprint(*p), *p != *k.field(&loader).(*int)
	case *bool:
		s, differs = fmt.Sprint(*p), *p != *k.field(&loader).(*bool)
	case *map[string]string:
		return "`{}`"
	default:
		return "`[]`"
	}
	if differs {
		return "**" + s + "**"
	}
	return s
}

// set assigns v (nil: nothing) to c's field for the key.
func (k JobKey) set(c *JobConfiguration, v any) {
	if v == nil {
		return
	}
	switch p := k.field(c).(type) {
	case *string:
		*p = v.(string)
	case *int:
		*p = v.(int)
	case *bool:
		*p = v.(bool)
	default:
		panic(fmt.Sprintf("job key %s: a default for a %T", k.Name, p))
	}
}

// lookupJobKey returns the index in keys of the key named name (either
// spelling), or -1.
func lookupJobKey(keys []JobKey, name string) int {
	for i, k := range keys {
		if k.Name == name || (k.Legacy != "" && k.Legacy == name) {
			return i
		}
	}
	return -1
}
