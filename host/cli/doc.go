// Package cli holds the ejob command-line interface: one cobra command tree
// whose commands are thin wrappers over the host and core packages. The
// ejob binary's main only calls Main.
package cli
