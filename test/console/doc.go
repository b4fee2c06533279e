// Package console holds the web console's browser tests: a real ZooKeeper
// (core/reg/zktest), a real `ejob serve` and real `ejob run` hosts built
// from the tree, and Debian's headless chromium driven through
// internal/browsertest, as an operator would use the console. Screenshots
// for docs/console.md are written with EJOB_SCREENSHOTS=1 (or -update).
// The package has no non-test code; run it with `go test ./test/console/`.
package console
