//go:build !unix

package plugins

import "github.com/ejob-io/ejob/internal/proctree"

// killAll is a no-op without Unix signals: a stuck plugin's job processes
// outlive its kill there.
func killAll([]proctree.Proc) {}
