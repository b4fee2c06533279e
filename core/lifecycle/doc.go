// Package lifecycle is the operations API against a registry, as upstream's
// lifecycle module and console use it: trigger a job on every instance,
// and summarise jobs (cron, sharding total, instances, status). It reads and
// writes the registry only, so it works for jobs run by ejob and by Java
// ElasticJob alike.
package lifecycle
