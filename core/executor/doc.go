// Package executor is the job execution pipeline (upstream's
// ElasticJobExecutor): one trigger of one job on one instance — environment
// check, sharding contexts, misfire guard, listeners, per-item execution on
// a pool sized by the thread-pool SPI, error handling through the
// error-handler SPI, the misfire loop and the failover enquiry. All registry
// access goes through Facade.
package executor
