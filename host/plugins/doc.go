// Package plugins is the host's plugin catalog and supervisor: it discovers
// `ejob-*` executables in the plugins directory, checks them (permissions,
// optional SHA-256 pinning, handshake, Info), indexes the types they serve
// by kind and case-insensitive type name, and hands the kernel spi
// implementations that start one long-lived process per binary on first
// use, relaunch it with backoff after it exits, and put a deadline on every
// call.
package plugins
