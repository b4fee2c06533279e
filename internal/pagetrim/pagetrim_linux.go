package pagetrim

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// ReleaseExecutable drops this process's resident pages of its executable's
// read-only mappings (code, read-only data, the function tables) with
// madvise(MADV_DONTNEED). Those mappings are private and never written,
// so the pages come back unchanged from the file when touched again; the
// writable data mapping is left alone.
func ReleaseExecutable() (Released, error) {
	exe, err := os.Executable()
	if err != nil {
		return Released{}, fmt.Errorf("release executable pages: %w", err)
	}
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return Released{}, fmt.Errorf("release executable pages: %w", err)
	}
	return release(maps, exe, madvise)
}

func madvise(addr, length uintptr) error {
	if _, _, e := syscall.Syscall(syscall.SYS_MADVISE, addr, length, syscall.MADV_DONTNEED); e != 0 {
		return e
	}
	return nil
}

// release calls drop for every read-only mapping of exe in maps (the
// format of /proc/PID/maps).
func release(maps []byte, exe string, drop func(addr, length uintptr) error) (Released, error) {
	var r Released
	sc := bufio.NewScanner(bytes.NewReader(maps))
	for sc.Scan() {
		// 00400000-01334000 r-xp 00000000 fe:00 9986033   /path/to/exe
		f := strings.Fields(sc.Text())
		if len(f) < 6 || strings.Join(f[5:], " ") != exe {
			continue
		}
		if perms := f[1]; perms != "r-xp" && perms != "r--p" {
			continue
		}
		lo, hi, ok := strings.Cut(f[0], "-")
		if !ok {
			return r, fmt.Errorf("release executable pages: /proc/self/maps line %q: no address range", sc.Text())
		}
		start, err1 := strconv.ParseUint(lo, 16, 64)
		end, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 != nil || err2 != nil || end <= start {
			return r, fmt.Errorf("release executable pages: /proc/self/maps line %q: bad address range", sc.Text())
		}
		if err := drop(uintptr(start), uintptr(end-start)); err != nil {
			return r, fmt.Errorf("release executable pages: madvise %s: %w", f[0], err)
		}
		r.Mappings++
		r.Bytes += int64(end - start)
	}
	if err := sc.Err(); err != nil {
		return r, fmt.Errorf("release executable pages: %w", err)
	}
	return r, nil
}

// ResidentKiB is this process's resident set size (VmRSS), 0 when
// /proc/self/status cannot be read.
func ResidentKiB() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n
		}
	}
	return 0
}
