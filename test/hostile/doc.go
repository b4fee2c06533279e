// Package hostile is the hostile-input suite: each test feeds one real
// `ejob` process (a host, `ejob serve`, or a CLI command) a value, a request
// or an endpoint that an attacker or a careless operator could send, and
// checks that the process stays up, bounded and truthful, and gives nothing
// away. The tests drive the built binary over real sockets against a real
// ZooKeeper, the way an operator or an attacker would reach it.
package hostile
