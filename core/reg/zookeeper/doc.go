// Package zookeeper implements reg.Client on Apache ZooKeeper through
// go-zookeeper/zk v1.0.4; it is the only ejob package that imports it. Config
// carries ElasticJob's ZookeeperConfiguration keys and defaults; operations
// are retried with Curator's ExponentialBackoffRetry semantics on connection
// loss, bounded by ctx; go-zookeeper's session states become reg.ConnEvents
// (including the new session it opens by itself after an expiry); and nodes
// are created with the digest ACL when a digest is configured. Requests
// go-zookeeper has no API for (multiRead, addWatch for recursive watches)
// are sent on its connection by ejob itself (wire.go, multiread.go,
// recursive.go).
package zookeeper
