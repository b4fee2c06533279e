// Package instance is a job instance's identity as ElasticJob-Lite 3.0.x
// spells it: the instance id "ip@-@pid" (protocol spec §4), the choice of
// the server IP as upstream's IpUtils makes it (executors spec §11.3), the
// task id of one execution (executors spec §2.1), and the ShardingContexts
// that listeners receive (executors spec §2.2).
package instance
