package config

import (
	"errors"
	"fmt"
	"maps"
	"slices"
)

// Bounds on the values of a job configuration that size memory or work.
// CheckBounds enforces them, and so does every entry point of a
// configuration: Validate (the host's file, the REST API, the console, the
// lifecycle API) and Decode (a config node read from the registry).
const (
	// MaxShardingTotalCount bounds shardingTotalCount. Every item costs
	// nodes, reads and ops of the resharding commit, and the commit is one
	// ZooKeeper multi, whose request must fit ZooKeeper's default packet
	// limit, jute.maxbuffer = 0xfffff = 1,048,575 bytes (the server drops
	// a connection that sends a larger one; a Java client reads replies up
	// to the same size).
	//
	// The commit of a job whose items are all new holds, per item, a
	// create of sharding/{i} and one of sharding/{i}/instance holding the
	// owner's instance id. In jute, a create op is a 9-byte multi header,
	// the path (4 + len), the data (4 + len), the ACL (4 + 23 bytes for
	// world:anyone) and the flags (4): 48 bytes plus path and data. The
	// path of sharding/{i} is "/" + namespace + "/" + job + "/sharding/" +
	// i, at most 1 + 255 + 1 + 128 + 10 + 3 = 398 bytes with a namespace
	// of MaxNamespaceBytes, a job name of MaxJobNameBytes and items below
	// 1,000; the instance node's path is 9 bytes longer, and an instance
	// id ("ip@-@pid", IPv6 included) is at most 64 bytes. So one item is
	// at most (48 + 398) + (48 + 407 + 64) = 965 bytes, and 1,000 items
	// 965,000 bytes; the fence check, the two flag deletes and the headers
	// add under 2 KB. A resharding of existing items deletes and creates
	// the instance node (17 + 407 + 48 + 407 + 64 = 943 bytes an item),
	// and one that lowers the count deletes each dropped item's nodes
	// (about 430 bytes a node). The child list of sharding that a
	// getChildren returns is 4 + 3 bytes an item, 7 KB. With the longest
	// names, 1,100 new items (about 1,062,000 bytes) make ZooKeeper close
	// the connection instead of committing (core/coord's
	// TestMaxShardingTotalCountFitsOneCommit commits the 1,000).
	MaxShardingTotalCount = 1000
	// MaxJobNameBytes bounds jobName (see MaxShardingTotalCount).
	MaxJobNameBytes = 128
	// MaxNamespaceBytes is the longest registry namespace the arithmetic
	// of MaxShardingTotalCount allows; the ZooKeeper client's
	// configuration refuses a longer one.
	MaxNamespaceBytes = 255
	// MaxParameterBytes bounds jobParameter. It goes to every item of
	// every execution; a SCRIPT job gets it, with its item's parameter,
	// in one command-line argument, which Linux limits to 128 KiB.
	MaxParameterBytes = 32 << 10
	// MaxItemParametersBytes bounds shardingItemParameters, all items
	// together (see MaxParameterBytes).
	MaxItemParametersBytes = 64 << 10
	// MaxCronBytes bounds cron: a Quartz expression listing every value
	// of every field, years included, is under 1,200 bytes.
	MaxCronBytes = 4 << 10
	// MaxTimeZoneBytes bounds timeZone (IANA names are under 40 bytes).
	MaxTimeZoneBytes = 255
	// MaxDescriptionBytes bounds description (shown in every job list).
	MaxDescriptionBytes = 4 << 10
	// MaxProps bounds how many props a job has; every execution sends
	// them to the job type's and the error handler's plugin.
	MaxProps = 256
	// MaxPropKeyBytes bounds a prop's name.
	MaxPropKeyBytes = 256
	// MaxPropsBytes bounds the props' names and values together.
	MaxPropsBytes = 256 << 10
	// MaxListenerTypes bounds jobListenerTypes (each is a plugin call
	// before and after every execution).
	MaxListenerTypes = 32
	// MaxExtraConfigurations bounds jobExtraConfigurations.
	MaxExtraConfigurations = 16
	// MaxTypeNameBytes bounds each plugin type name (sharding strategy,
	// thread pool, error handler, job listener) and label.
	MaxTypeNameBytes = 255
)

// CheckBounds returns every value of c that breaks a bound of this
// package (MaxShardingTotalCount and the others), each a *FieldError
// naming the key, the value (or its size), the limit and why, joined with
// errors.Join; nil when none does. It allocates nothing per item.
func (c *JobConfiguration) CheckBounds() error { return errors.Join(c.boundErrors()...) }

// boundErrors is CheckBounds' list of errors.
func (c *JobConfiguration) boundErrors() []error {
	var errs []error
	fail := func(field, format string, args ...any) {
		errs = append(errs, &FieldError{Field: field, Msg: fmt.Sprintf(format, args...)})
	}
	if c.ShardingTotalCount > MaxShardingTotalCount {
		fail(KeyShardingTotalCount, "%d is above the limit of %d: every item is two nodes of the resharding commit, "+
			"one ZooKeeper transaction that must fit ZooKeeper's 1 MiB packet limit (jute.maxbuffer)",
			c.ShardingTotalCount, MaxShardingTotalCount)
	}
	size := func(field string, s string, limit int, why string) {
		if len(s) > limit {
			fail(field, "%d bytes is above the limit of %d bytes%s", len(s), limit, why)
		}
	}
	size(KeyJobName, c.JobName, MaxJobNameBytes, " (every node path of the job holds it)")
	size(KeyCron, c.Cron, MaxCronBytes, "")
	size(KeyTimeZone, c.TimeZone, MaxTimeZoneBytes, "")
	size(KeyShardingItemParameters, c.ShardingItemParameters, MaxItemParametersBytes, " (the items' parameters go to every execution)")
	size(KeyJobParameter, c.JobParameter, MaxParameterBytes, " (it goes to every item of every execution)")
	size(KeyDescription, c.Description, MaxDescriptionBytes, "")
	size(KeyLabel, c.Label, MaxTypeNameBytes, "")
	for _, t := range []struct{ key, v string }{
		{KeyJobShardingStrategyType, c.JobShardingStrategyType},
		{KeyJobExecutorThreadPoolSizeProviderType, c.JobExecutorThreadPoolSizeProviderType},
		{KeyJobErrorHandlerType, c.JobErrorHandlerType},
	} {
		size(t.key, t.v, MaxTypeNameBytes, "")
	}
	if n := len(c.JobListenerTypes); n > MaxListenerTypes {
		fail(KeyJobListenerTypes, "%d types is above the limit of %d (each is called before and after every execution)", n, MaxListenerTypes)
	}
	for i, l := range c.JobListenerTypes {
		if len(l) > MaxTypeNameBytes {
			fail(KeyJobListenerTypes, "item %d: %d bytes is above the limit of %d bytes", i, len(l), MaxTypeNameBytes)
			break
		}
	}
	if n := len(c.JobExtraConfigurations); n > MaxExtraConfigurations {
		fail(KeyJobExtraConfigurations, "%d entries is above the limit of %d", n, MaxExtraConfigurations)
	}
	if n := len(c.Props); n > MaxProps {
		fail(KeyProps, "%d props is above the limit of %d (every execution sends them to its plugins)", n, MaxProps)
		return errs
	}
	total := 0
	for _, k := range slices.Sorted(maps.Keys(c.Props)) {
		total += len(k) + len(c.Props[k])
		if len(k) > MaxPropKeyBytes {
			fail(KeyProps, "prop %s: its name of %d bytes is above the limit of %d bytes", quoteForError(k), len(k), MaxPropKeyBytes)
		}
	}
	if total > MaxPropsBytes {
		fail(KeyProps, "%d bytes of names and values is above the limit of %d bytes (every execution sends them to its plugins)",
			total, MaxPropsBytes)
	}
	return errs
}

// Decode parses a config node read from the registry (Unmarshal) and
// checks its bounds (CheckBounds): a node written by another tool or a
// Java peer that breaks one is refused as a local one is, so that nothing
// allocates or works per item from an unchecked count. The error wraps
// ErrMalformed (the YAML does not parse) or ErrInvalid (a bound is
// broken, each a *FieldError); with ErrInvalid the parsed configuration is
// returned too, for a caller that shows it. Decode does not run the other
// checks of Validate: a Java peer may write what those refuse in a local
// configuration (an item parameter out of range, a plugin type this host
// does not serve), and upstream runs with it.
func Decode(data []byte) (*JobConfiguration, error) {
	c, err := Unmarshal(data)
	if err != nil {
		return nil, err
	}
	if err := c.CheckBounds(); err != nil {
		return c, err
	}
	return c, nil
}
