// Package chaos is ejob's chaos suite: several real `ejob run` processes on
// a real ZooKeeper (a standalone server and a 3-node ensemble, started by
// scripts/zk.sh through core/reg/zktest), a SCRIPT job type run by a
// recorder program that logs every item's start, heartbeats and end
// durably, and a driver that injects faults from a seeded schedule (kill -9
// of hosts and of the leader, SIGSTOP/SIGCONT past the session timeout, a
// TCP proxy between one host and ZooKeeper that drops or stalls its
// connections, ZooKeeper restarts, member loss and full outages), then
// checks the invariants described in docs/chaos.md.
//
// The suite runs only with -chaos.run, so `go test ./...` (where it would
// compete for the CPU with every other package) skips it. `make test` runs
// the short form on its own afterwards with a fixed seed (one standalone
// server, one round of every fault, about 90 s); `make chaos-short` runs it
// with any seed; `make chaos` runs the long form: `go test ./test/chaos -run
// TestChaos -chaos.run -chaos.seed=N -chaos.duration=5m -v` (both
// topologies, random faults for the duration). The package has no non-test
// code.
package chaos
