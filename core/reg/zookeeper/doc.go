// Package zookeeper implements reg.Client on Apache ZooKeeper through
// go-zookeeper/zk v1.0.4; it is the only ejob package that imports it. Config
// carries ElasticJob's ZookeeperConfiguration keys and defaults; operations
// are retried with Curator's ExponentialBackoffRetry semantics on connection
// loss, bounded by ctx; go-zookeeper's session states become reg.ConnEvents
// (including the new session it opens by itself after an expiry); and nodes
// are created with the digest ACL when a digest is configured.
package zookeeper
