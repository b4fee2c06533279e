// Package daemon is the ejob host process behind `ejob run -c FILE`: it
// loads the config file, opens the plugin catalog, connects the registry
// (ZooKeeper, or the embedded one when the file has no regCenter), and runs
// the file's jobs until its context ends, then drains and leaves the
// registry cleanly.
package daemon
