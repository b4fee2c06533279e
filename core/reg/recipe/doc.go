// Package recipe holds coordination recipes built on any reg.Client: a
// leader latch byte-compatible with Apache Curator's LeaderLatch (so Java
// ElasticJob instances in the same namespace interoperate), ExecuteInLeader
// and Elect as ElasticJob uses them, ElasticJob's leader election as an
// Election (campaign, is-leader, resign, fenced leader writes), and fenced
// writes that fail with ErrFenced once the writer has lost what it held.
package recipe
