package pagetrim

import (
	"bufio"
	_ "embed"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"unsafe"
)

const sampleMaps = `00400000-01334000 r-xp 00000000 fe:00 9986033                            /opt/ejob bin
01334000-024c0000 r--p 00f34000 fe:00 9986033                            /opt/ejob bin
024c0000-02582000 rw-p 020c0000 fe:00 9986033                            /opt/ejob bin
02582000-045d7000 rw-p 00000000 00:00 0
7fa5e3116000-7fa5e313c000 r--p 00000000 fe:00 326269                     /usr/lib/x86_64-linux-gnu/libc.so.6
7fa5e313c000-7fa5e3292000 r-xp 00026000 fe:00 326269                     /usr/lib/x86_64-linux-gnu/libc.so.6
`

func TestReleaseDropsOnlyTheExecutablesReadOnlyMappings(t *testing.T) {
	type call struct{ addr, length uintptr }
	var got []call
	r, err := release([]byte(sampleMaps), "/opt/ejob bin", func(addr, length uintptr) error {
		got = append(got, call{addr, length})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []call{{0x400000, 0x1334000 - 0x400000}, {0x1334000, 0x24c0000 - 0x1334000}}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("dropped %x, want %x (text and read-only data, not the writable data or libc)", got, want)
	}
	if r.Mappings != 2 || r.Bytes != int64(0x24c0000-0x400000) {
		t.Errorf("Released = %+v", r)
	}
}

func TestReleaseErrors(t *testing.T) {
	bad := "zz-01 r-xp 00000000 fe:00 1 /opt/ejob\n"
	if _, err := release([]byte(bad), "/opt/ejob", func(uintptr, uintptr) error { return nil }); err == nil ||
		!strings.Contains(err.Error(), "bad address range") {
		t.Errorf("bad range: err = %v", err)
	}
	boom := errors.New("boom")
	_, err := release([]byte(sampleMaps), "/opt/ejob bin", func(uintptr, uintptr) error { return boom })
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), "00400000-01334000") {
		t.Errorf("madvise failure: err = %v, want it wrapped with the mapping", err)
	}
}

// blob is 256 KiB in the test binary's read-only data that only the
// child process reads, before the release.
//
//go:embed testdata/blob.txt
var blob string

// TestReleaseExecutable releases the pages of a real process of this
// test binary (TestChildProcess): blob, resident after the child read
// it, is no longer mapped after the release (but for the 64 KiB at each
// end, which the kernel may map again with a neighbouring page the
// process touches), and the process still runs code afterwards.
func TestReleaseExecutable(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^TestChildProcess$")
	cmd.Env = append(os.Environ(), "PAGETRIM_CHILD=1")
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	outPipe, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	out := bufio.NewReader(outPipe)
	line := func() string {
		t.Helper()
		l, err := out.ReadString('\n')
		if err != nil {
			t.Fatalf("child: %v (said %q)", err, l)
		}
		return strings.TrimSpace(l)
	}
	var addr uintptr
	if _, err := fmt.Sscanf(line(), "ready %x", &addr); err != nil {
		t.Fatalf("child's first line: %v", err)
	}
	const edge = 64 << 10
	lo, hi := addr+edge, addr+uintptr(len(blob))-edge
	if n, all := present(t, cmd.Process.Pid, lo, hi); n != all {
		t.Fatalf("before the release %d of blob's %d inner pages are mapped, want all", n, all)
	}
	if _, err := in.Write([]byte("\n")); err != nil {
		t.Fatal(err)
	}
	if l := line(); l != "released" {
		t.Fatalf("child said %q, want released", l)
	}
	if n, all := present(t, cmd.Process.Pid, lo, hi); n != 0 {
		t.Errorf("after the release %d of blob's %d inner pages are still mapped", n, all)
	}
	if _, err := in.Write([]byte("\n")); err != nil {
		t.Fatal(err)
	}
	if l := line(); l != "ran 777" {
		t.Errorf("child said %q after the release, want ran 777", l)
	}
}

// TestChildProcess is the process TestReleaseExecutable measures: it
// reads blob, says "ready" and blob's address, releases on a line from
// stdin, says "released", and runs some code on the next line.
func TestChildProcess(t *testing.T) {
	if os.Getenv("PAGETRIM_CHILD") != "1" {
		t.Skip("run by TestReleaseExecutable")
	}
	if strings.Count(blob, "\n") == 0 {
		os.Exit(2)
	}
	in := bufio.NewReader(os.Stdin)
	fmt.Printf("ready %x\n", uintptr(unsafe.Pointer(unsafe.StringData(blob))))
	if _, err := in.ReadString('\n'); err != nil {
		os.Exit(2)
	}
	if _, err := ReleaseExecutable(); err != nil {
		fmt.Println("error:", err)
		os.Exit(2)
	}
	fmt.Println("released")
	if _, err := in.ReadString('\n'); err != nil {
		os.Exit(2)
	}
	n, _ := strconv.Atoi(strings.Repeat("7", 3))
	fmt.Println("ran", n)
	os.Exit(0)
}

// present counts the pages of [lo, hi) mapped in process pid
// (/proc/PID/pagemap's present bit) and all of them.
func present(t *testing.T, pid int, lo, hi uintptr) (n, all int) {
	t.Helper()
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/pagemap")
	if err != nil {
		t.Skipf("no pagemap: %v", err)
	}
	defer f.Close()
	page := uintptr(os.Getpagesize())
	first, last := (lo+page-1)/page, hi/page
	b := make([]byte, 8*(last-first))
	if _, err := f.ReadAt(b, int64(first*8)); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < len(b); i += 8 {
		if binary.LittleEndian.Uint64(b[i:])>>63 == 1 {
			n++
		}
	}
	return n, len(b) / 8
}
