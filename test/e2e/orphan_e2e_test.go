package e2e

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// TestKilledHostLeavesNoScriptRunning names an ejob bug: when a host dies
// by SIGKILL while a SCRIPT item runs, the script process lives on. The
// host's plugin process (the `ejob` binary serving the built-in job types)
// dies with it (Pdeathsig), but plugins/jobtype/script starts each script
// in its own process group with no parent-death signal, so nothing ends the
// script. With failover on, a survivor takes the item over about one
// session timeout later while the orphan still runs it: the item runs on
// two hosts at once (TestClusterShardingFailoverAndOperations sees exactly
// that and logs it). The script should die with its host.
//
// The test needs no ZooKeeper: a standalone host runs an item that sleeps
// 6 s, is killed while it runs, and the recorder process must be gone well
// before its sleep ends.
func TestKilledHostLeavesNoScriptRunning(t *testing.T) {
	c := newCluster(t)
	c.writeConfig(fmt.Sprintf(`elasticjob:
  jobs:
    longItem:
      elasticJobType: SCRIPT
      cron: "* * * * * ?"
      shardingTotalCount: 1
      shardingItemParameters: 0=6
      props:
        script.command.line: %s
`, c.scriptLine()))
	h := c.start("standalone")
	c.waitStarted(h, 30*time.Second)
	var run itemRun
	c.waitFor(15*time.Second, "the long item to start", func() (bool, string) {
		rs := c.records()
		if len(rs) == 0 {
			return false, "no run yet"
		}
		run = rs[0]
		return true, ""
	})
	killedAt := c.kill(h)
	const grace = 3 * time.Second // the script still has 3 s or more to sleep
	deadline := killedAt.Add(grace)
	for scriptAlive(run.recPID) && time.Now().Before(deadline) {
		time.Sleep(pollInterval) // bounded polling of the script process
	}
	if scriptAlive(run.recPID) {
		_ = syscall.Kill(run.recPID, syscall.SIGKILL) // the orphan this test found
		t.Errorf("BUG: the SCRIPT process (pid %d) of %v still runs %v after its host was killed with SIGKILL; "+
			"with failover a survivor runs the item at the same time", run.recPID, run, grace)
	}
}

// scriptAlive reports whether pid still exists (a zombie counts as gone:
// it runs nothing).
func scriptAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	if err != nil {
		return !errors.Is(err, syscall.ESRCH)
	}
	// Exists: is it a zombie waiting for its parent?
	return !isZombie(pid)
}

func isZombie(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// pid (comm) state ...: comm may hold spaces and parentheses.
	i := bytes.LastIndexByte(b, ')')
	return i >= 0 && i+2 < len(b) && b[i+2] == 'Z'
}
