package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// userHZ is the unit of the clock ticks in /proc/[pid]/stat: USER_HZ, 100
// on every Linux architecture the suite runs on (the kernel exports times
// to user space in it, whatever its own tick rate).
const userHZ = 100

// processStart is when process pid was created, from the kernel's record:
// its starttime in /proc/[pid]/stat (clock ticks since boot) set against
// /proc/uptime at now, to about 10 ms. A recorder frozen right after ejob
// started it (SIGSTOP of its host) writes its start line only once it
// runs again; its run still started when the process was created, before
// a run that failover started meanwhile.
func processStart(pid int, now time.Time) (time.Time, error) {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return time.Time{}, err
	}
	// The command name (field 2) is in parentheses and may hold spaces:
	// the fields after it start with field 3.
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return time.Time{}, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	fields := strings.Fields(s[i+1:])
	if len(fields) < 20 {
		return time.Time{}, fmt.Errorf("/proc/%d/stat: %d fields after the command name", pid, len(fields))
	}
	ticks, err := strconv.ParseInt(fields[19], 10, 64) // field 22, starttime
	if err != nil {
		return time.Time{}, fmt.Errorf("/proc/%d/stat starttime: %w", pid, err)
	}
	up, err := os.ReadFile("/proc/uptime")
	if err != nil {
		return time.Time{}, err
	}
	f := strings.Fields(string(up))
	if len(f) == 0 {
		return time.Time{}, fmt.Errorf("/proc/uptime: empty")
	}
	uptime, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("/proc/uptime: %w", err)
	}
	age := time.Duration((uptime - float64(ticks)/userHZ) * float64(time.Second))
	return now.Add(-age), nil
}
