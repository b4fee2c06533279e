// Package regtest is the behavioural suite every reg.Client implementation
// must pass (like testing/fstest): CRUD and versions, sequential naming,
// ephemeral nodes and sessions, containers, transactions, one-shot watches,
// the TreeCache, the Curator-compatible latch and fenced writes, plus the
// applicable upstream ElasticJob registry tests. core/reg/embedded and
// core/reg/zookeeper run it with their own Harness.
package regtest
