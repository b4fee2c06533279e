package testkit

import (
	"os"
	"strconv"
	"strings"
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
