// Package httpreg carries registry calls over HTTP: Handler serves a
// reg.Client's reads, multi-reads, writes and transactions as JSON
// requests, and New returns a reg.Client that sends its calls to such a
// handler. A standalone host serves its embedded registry this way on its
// control socket, so that the operator commands, which take a reg.Client,
// steer it as they steer a ZooKeeper namespace.
//
// Watches are not carried (the operator commands set none): GetW, ExistsW,
// ChildrenW fail with reg.ErrUnimplemented. Ephemeral nodes are refused:
// they would belong to the serving process's session, not to the caller.
package httpreg
