// Package gocron measures go-co-op/gocron v2 in the program shapes of
// ejob's kernel benchmarks (core/kernel), so that the comparison with
// the library a Go shop would otherwise embed can be reproduced:
//
//	cd bench/gocron && go test -run '^$' -bench . -benchtime 1x
//
// It is a module of its own so that gocron is no dependency of ejob.
package gocron
