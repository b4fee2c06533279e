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
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
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
