// Package executor is the job execution pipeline (upstream's
// ElasticJobExecutor): one trigger of one job on one instance — environment
// check, sharding contexts, misfire guard, listeners, per-item execution on
// a pool sized by the thread-pool SPI, error handling through the
// error-handler SPI (including THROW's Propagate), the misfire loop, the
// failover enquiry and an optional per-execution timeout. All registry
// access goes through Facade; items run through an ItemRunner (typed SPI
// jobs, in-process SIMPLE and DATAFLOW jobs); tracing goes to Events.
package executor
