// Package instance is a job instance's identity as ElasticJob-Lite 3.0.x
// spells it: the instance id "ip@-@pid" (JobInstance), the choice of the
// server IP as upstream's IpUtils makes it, the task id of one execution
// (JobExecutionEvent's taskId), and the ShardingContexts that listeners
// receive.
package instance
