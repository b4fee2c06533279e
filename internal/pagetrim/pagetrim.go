// Package pagetrim hands back the pages of the running executable that
// start-up touched and steady work does not need.
//
// A Go program runs every linked package's init at start, and the kernel
// maps a file page together with its neighbours (fault-around, 64 KiB),
// so a process of the ejob binary has most of its code and read-only data
// resident after start-up (21-25 MiB of its RSS), though an idle host
// runs a small part of it. ReleaseExecutable drops the process's mappings
// of those pages: they stay in the page cache, shared with every other
// process of the binary, and the ones the process uses again come back on
// the next access (a minor fault, from the page cache).
package pagetrim

import "errors"

// ErrUnsupported: the system has no way to release mapped pages (not
// Linux).
var ErrUnsupported = errors.New("releasing mapped pages is not supported on this system")

// Released is what ReleaseExecutable dropped.
type Released struct {
	Mappings int   // read-only mappings of the executable
	Bytes    int64 // their size (resident or not)
}
