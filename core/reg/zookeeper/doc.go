// Package zookeeper implements reg.Client on Apache ZooKeeper through
// go-zookeeper/zk v1.0.4; it is the only ejob package that imports it. Config
// carries ElasticJob's ZookeeperConfiguration keys and defaults; operations
// are retried with Curator's ExponentialBackoffRetry semantics on connection
// loss, bounded by ctx; go-zookeeper's session states become reg.ConnEvents
// (including the new session it opens by itself after an expiry); and nodes
// are created with the digest ACL when a digest is configured. Requests
// go-zookeeper has no API for (multi with containers, multiRead, addWatch
// for recursive watches, the SASL exchange) are sent on its connection by
// ejob itself.
//
// Floors, bottom up: internal/zkwire is the protocol (framing, jute
// records, codes) and imports nothing of the adapter; conn.go is the
// connection go-zookeeper reads and writes (sniffConn), which carries
// ejob's own requests and follows go-zookeeper's watches; multitxn.go,
// multiread.go, recursive.go and sasl.go are the features on it. Every
// reliance on go-zookeeper's internals is listed once, in library.go, with
// the upstream issue it works around and the test that pins it.
package zookeeper
