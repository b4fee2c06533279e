// Package dump serves upstream's dump port (SnapshotService): a client sends one
// line, dump@{jobName}, and the host answers with every node under /{jobName} in
// the registry next to its own cached view of it, IP addresses masked, then
// closes the connection; anything else is closed without a byte. Render builds
// the text; Server listens.
package dump
