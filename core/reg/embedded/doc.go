// Package embedded is an in-process registry with ZooKeeper's semantics:
// sessions whose ephemeral nodes die with them, data and child versions,
// zxids and server times, sequential names from the parent's cversion
// ("name0000000001"), container nodes, one-shot and recursive watches
// (reg.RecursiveWatcher) and atomic multi-ops.
// Several Clients (simulated instances, each with its own namespace view) can
// share one Server. It backs ejob's standalone single-host mode and fast
// tests; Client.Expire, Suspend and Resume inject session faults on demand.
package embedded
