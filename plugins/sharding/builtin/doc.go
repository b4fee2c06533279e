// Package shardingbuiltin implements ElasticJob's built-in sharding
// strategies, AVG_ALLOCATION, ODEVITY and ROUND_ROBIN, exactly as upstream
// 3.0.x computes them (its JobShardingStrategy implementations), plus
// JavaStringHashCode, the Java String.hashCode the name-based strategies need.
//
// Instances are used in the order the request gives them (at runtime,
// descending instance-id string order) and never sorted; every response
// lists the instances in request order. ROUND_ROBIN differs from upstream in
// one case only: a job name whose hash is math.MinInt32 (such as
// "polygenelubricants") with an instance count that is not a power of two
// makes upstream throw; here the offset is the non-negative remainder of the
// hash instead (see RoundRobin).
package shardingbuiltin
