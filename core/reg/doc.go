// Package reg is ejob's registry-center contract: a ctx-aware client for a
// ZooKeeper-shaped tree (get/set/create/delete with versions, children,
// atomic multi-ops, one-shot watches, and persistent recursive watches
// through the optional RecursiveWatcher), the registry session and its
// connection states, sentinel errors, and the pieces built on top of any
// Client: a CuratorCache-like TreeCache, a SharedCache that mirrors many
// subtrees (job roots) with one recursive watch and one goroutine (and
// reads an in-process registry's tree in place: StoreWatcher), and
// recursive helpers.
//
// The kernel programs against this package only; core/reg/zookeeper (real
// ZooKeeper through go-zookeeper) and core/reg/embedded (in-process, for
// standalone mode and tests) implement it with the same semantics, checked by
// the shared suite in core/reg/regtest.
//
// Every path is relative to the client's namespace: "/" is the namespace node
// itself and "/job/config" is "/{namespace}/job/config" on the server.
package reg
