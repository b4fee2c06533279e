// Package pluginhost is the host's plugin catalog and supervisor: it discovers
// `ejob-*` executables in the plugins directory, checks them (permissions,
// optional SHA-256 pinning, handshake, Info), indexes the types they serve
// by kind and case-insensitive type name, and hands the kernel spi
// implementations (Catalog.Lookup, an spi.Resolver) whose calls all run
// through one supervisor per binary: it starts one long-lived process on
// first use, relaunches it with backoff after it exits, and puts a deadline
// on every call.
package pluginhost
