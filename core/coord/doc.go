// Package coord is one job's coordination on one instance, wire-compatible
// with ElasticJob-Lite 3.0.x on ZooKeeper: the startup registration, leader
// election, lazy resharding, failover, trigger/shutdown/config reactions and
// connection-loss handling, and the executor.Facade the execution pipeline
// uses for every trigger. A Job is driven by Run; its Facade methods may be
// called from the pipeline's goroutine while Run is running.
package coord
