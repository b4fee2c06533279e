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
// ejob's own requests and follows go-zookeeper's watches, with
// library.go (its watch table) and peer.go (the handshake's checks);
// multitxn.go, multiread.go, recursive.go and sasl.go are the features on
// it, reaching it through its methods and the hooks it calls
// (TestConnectionFloor keeps the connection's files from naming them). Every
// reliance on go-zookeeper's internals is listed once, in library.go, with
// the upstream issue it works around and the test that pins it.
//
// The connection's state has no goroutine of its own. go-zookeeper's
// reader (recvLoop) is the one reader of the socket, and the interception
// runs on it: each frame is looked at when go-zookeeper asks for it, so the
// watch table moves in step with go-zookeeper's own, a reply's hook runs in
// order with the notifications around it, go-zookeeper's read deadline
// bounds the real socket read, and go-zookeeper's pace is the
// backpressure. An owner goroutine in between would read ahead of
// go-zookeeper: frames it took from a connection that then dies would have
// armed or fired watches go-zookeeper never saw (the setWatches check and
// the recursive routing go wrong); the zxid hold, a reader that waits,
// would become a queue of held frames; and go-zookeeper's deadline would
// be emulated with timers while the socket read runs without one. It
// cannot select on the socket and on the writers' messages either, so it
// would be two goroutines, and a write blocked on a full TCP window would
// stall the reads the server waits for. Instead the state is split by
// owner: configuration set before go-zookeeper's first call; the reader's
// own fields (sniffConn.rd), touched by no other goroutine; and the shared
// rest (deadlines, the request tables, the flags behind the ready, done
// and setWatches gates, which close under it) in one struct under one
// mutex. Lock order: the wire lock (sniffConn.wmu, held across one frame's
// write) before that mutex, which is a leaf: nothing is locked, called or
// done on the socket while it is held. The reader never takes the wire
// lock, so it never waits for a blocked writer.
package zookeeper
