//go:build !linux

package plugins

// descendants is only implemented on Linux (/proc); elsewhere a stuck
// plugin's job processes in their own process groups outlive its kill.
func descendants(int) []proc { return nil }

func killAll([]proc) {}
