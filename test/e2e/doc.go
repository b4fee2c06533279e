// Package e2e holds the end-to-end tests of ejob: a real ZooKeeper started
// by scripts/zk.sh (through core/reg/zktest) and several real `ejob run`
// processes sharing one config file, driven and observed from outside as an
// operator would: job runs recorded by a SCRIPT program, kill -9, and the
// `ejob jobs` and `ejob trigger` commands. The package has no non-test
// code; run it with `go test ./test/e2e/`.
package e2e
