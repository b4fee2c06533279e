// Package e2e holds the end-to-end tests of ejob: a real ZooKeeper started
// by scripts/zk.sh (through core/reg/zktest) and several real `ejob run`
// processes sharing one config file, driven and observed from outside as an
// operator would: job runs recorded by a SCRIPT program, kill -9, and the
// operator commands (`ejob jobs`, `trigger`, `disable`, `enable`, `job set`,
// `shutdown`, `remove`, `job delete`, `dump`), whose registry writes the
// running hosts must obey at once. The package has no non-test
// code; run it with `go test ./test/e2e/`.
package e2e
