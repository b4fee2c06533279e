package coord

import (
	"testing"
	"unsafe"
)

// TestJobSizeClass: a Job fits the runtime's 1,408-byte size class. Every
// idle job holds one (docs/benchmarks.md, where an idle job's memory
// goes); the next class is 1,536 bytes, 128 more a job. A field that
// pushes it over fails here: make room (padding, a field built at first
// use) or move the bound knowingly.
func TestJobSizeClass(t *testing.T) {
	const class = 1408
	if n := unsafe.Sizeof(Job{}); n > class {
		t.Errorf("a Job takes %d bytes, over the %d-byte size class", n, class)
	}
}
