// Package zkwire is the bottom floor of the ZooKeeper adapter: the
// protocol's framing, its jute records and its codes (operations, errors,
// reserved xids, event types), as ZooKeeper's zookeeper.jute defines them.
// It knows no connection, no feature and no go-zookeeper: the adapter's
// connection and its features (multi, multiRead, recursive watches, SASL)
// stand on it, and internal/archtest keeps it from importing them.
package zkwire
