// Package kernel runs a set of jobs on one instance: for each job it
// wires the coordination (package coord, on the registry), the execution
// pipeline (package executor) and an entry in the process-wide trigger loop
// (package trigger), and it drains and deregisters them on shutdown. Both
// the ejob host and the Go library API are built on it.
package kernel
