// Package zktest starts real ZooKeeper servers for tests through the
// project's scripts/zk.sh (which installs Debian's zookeeper package when it
// is missing): Start for one server per test, Launch for one server shared by
// a whole test binary (from TestMain), StartEnsemble for three nodes. Servers
// can be stopped, killed and restarted on the same port and data directory,
// and can require SASL (Options.JAAS, DigestJAAS). Nothing is skipped: if
// ZooKeeper cannot be installed or started the test fails with the script's
// reason. StartKDC runs an MIT Kerberos KDC (scripts/kdc.sh) for GSSAPI
// tests; it skips only when the Kerberos packages cannot be installed.
package zktest
