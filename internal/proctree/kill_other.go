//go:build !unix

package proctree

// Kill is a no-op without Unix signals (and without /proc, nothing is
// found to kill).
func Kill([]Proc) {}
