// Package config is the job configuration as ElasticJob-Lite 3.0.x stores it
// in the `/{job}/config` node: the JobConfiguration type with upstream's
// keys and defaults, a YAML codec that writes exactly what Java's SnakeYAML
// writes (so a Java instance and its console can share the namespace),
// validation with pluggable cron and plugin-catalog checks, the
// shardingItemParameters grammar, and the startup overwrite rule.
package config
