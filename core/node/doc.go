// Package node names ElasticJob-Lite 3.0.x's ZooKeeper tree (its *Node classes):
// typed builders for every path under /{job}, the reverse parsers the data
// listeners use to classify an event's path, and encoders and decoders for the
// node values that have a format (servers, instances, the job root). Paths are
// relative to the registry namespace, as Curator's are: the real ZooKeeper path
// is "/{namespace}" + path.
package node
