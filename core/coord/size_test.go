package coord

import (
	"testing"
	"unsafe"
)

// TestJobSizeClass: a Job fits the runtime's 896-byte size class with
// the 8-byte header the runtime puts before an object of more than 512
// bytes that holds pointers. Every idle job holds one (docs/benchmarks.md,
// where an idle job's memory goes); the next class is 960 bytes, 64
// more a job. A field that pushes it over fails here: make room (padding,
// a field built at first use) or move the bound knowingly.
func TestJobSizeClass(t *testing.T) {
	const class, header = 896, 8
	if n := unsafe.Sizeof(Job{}); n+header > class {
		t.Errorf("a Job takes %d bytes (+%d of header), over the %d-byte size class", n, header, class)
	}
}
