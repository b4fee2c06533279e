package testkit

import (
	"os"
	"strconv"
	"strings"
	"time"
)

// ProcStatusKB reads a "NAME: N kB" field (VmRSS, VmHWM, ...) of
// /proc/PID/status; false when the process or the field is not there.
func ProcStatusKB(pid int, field string) (int64, bool) {
	return procFieldKB(pid, "status", field)
}

// ProcRollupKB is ProcStatusKB for /proc/PID/smaps_rollup (Pss, Pss_Anon,
// Pss_File, ...): the proportional set size counts a page shared by n
// processes (the same binary's text, say) as 1/n in each.
func ProcRollupKB(pid int, field string) (int64, bool) {
	return procFieldKB(pid, "smaps_rollup", field)
}

// ProcMappingKB sums a field of /proc/PID/smaps (Rss, Shared_Clean, ...)
// over the process's mappings of the file at path (its segments: code,
// read-only data, data); false when the process is not there or maps no
// such file.
func ProcMappingKB(pid int, path, field string) (int64, bool) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/smaps")
	if err != nil {
		return 0, false
	}
	var sum int64
	in, found := false, false
	for line := range strings.Lines(string(data)) {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if !strings.HasSuffix(f[0], ":") { // a mapping's header: "start-end perms offset dev inode [path]"
			in = len(f) >= 6 && strings.Join(f[5:], " ") == path
			found = found || in
			continue
		}
		if in && f[0] == field+":" && len(f) > 1 {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil {
				return 0, false
			}
			sum += kb
		}
	}
	return sum, found
}

func procFieldKB(pid int, file, field string) (int64, bool) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/" + file)
	if err != nil {
		return 0, false
	}
	for line := range strings.Lines(string(data)) {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			f := strings.Fields(v) // "12345 kB"
			if len(f) == 0 {
				return 0, false
			}
			kb, err := strconv.ParseInt(f[0], 10, 64)
			return kb, err == nil
		}
	}
	return 0, false
}

// SettledSample calls sample every interval until its last five values
// are within 1% of each other, at most for within, and returns the last
// value and the last five (settled is false when within ran out first).
// Benchmarks use it to read a resident size once it has stopped moving.
func SettledSample(interval, within time.Duration, sample func() int64) (last int64, recent []int64, settled bool) {
	var hist []int64
	for deadline := time.Now().Add(within); ; {
		hist = append(hist, sample())
		n := len(hist)
		recent = hist[max(n-5, 0):]
		if n >= 5 {
			lo, hi := recent[0], recent[0]
			for _, v := range recent {
				lo, hi = min(lo, v), max(hi, v)
			}
			if float64(hi-lo) < 0.01*float64(hi) {
				return hist[n-1], recent, true
			}
		}
		if time.Now().After(deadline) {
			return hist[n-1], recent, false
		}
		time.Sleep(interval) // the sampling interval
	}
}

// ProcCPU returns the CPU time (user + system) a process has used so far,
// from /proc/PID/stat; false when the process is not there.
func ProcCPU(pid int) (time.Duration, bool) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	// The command (field 2) is in parentheses and may hold spaces: the
	// fields after the last ')' start with field 3 (state).
	i := strings.LastIndexByte(string(data), ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(string(data[i+1:]))
	if len(f) < 13 {
		return 0, false
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64) // field 14
	stime, err2 := strconv.ParseInt(f[12], 10, 64) // field 15
	if err1 != nil || err2 != nil {
		return 0, false
	}
	// USER_HZ is 100 on every Linux ABI Go supports (sysconf(_SC_CLK_TCK)).
	return time.Duration(utime+stime) * (time.Second / 100), true
}
