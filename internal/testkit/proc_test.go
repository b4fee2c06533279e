package testkit

import (
	"os"
	"testing"
)

// The test binary maps itself: its segments are resident (the code
// running this test is), and a file it does not map is reported as such.
func TestProcMappingKBSumsTheFilesMappings(t *testing.T) {
	if _, err := os.Stat("/proc/self/smaps"); err != nil {
		t.Skip("needs /proc (Linux)")
	}
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		t.Fatal(err)
	}
	pid := os.Getpid()
	rss, ok := ProcMappingKB(pid, exe, "Rss")
	if !ok || rss <= 0 {
		t.Fatalf("ProcMappingKB(self, %s, Rss) = %d, %v; want the resident pages of the test binary", exe, rss, ok)
	}
	size, ok := ProcMappingKB(pid, exe, "Size")
	if !ok || size < rss {
		t.Fatalf("Size of the mappings = %d, %v; want at least their Rss %d", size, ok, rss)
	}
	total, ok := ProcStatusKB(pid, "RssFile")
	if !ok || rss > total+4 { // +4: the two files are read a moment apart
		t.Fatalf("the binary's Rss %d kB exceeds the process's RssFile %d kB", rss, total)
	}
	if kb, ok := ProcMappingKB(pid, exe+".not-mapped", "Rss"); ok {
		t.Fatalf("a file the process does not map: %d kB, found", kb)
	}
}
