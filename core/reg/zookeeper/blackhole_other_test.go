//go:build !linux

package zookeeper_test

import "testing"

// blackhole needs Linux's accept queue, which drops the SYNs of
// connections it has no room for.
func blackhole(t *testing.T) string {
	t.Skip("a blackholed address on loopback needs Linux")
	return ""
}
