package e2e

import (
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/ejob-io/ejob/internal/proctree"
)

// TestKilledHostLeavesNoScriptRunning: when a host dies by SIGKILL while a
// SCRIPT item runs, the script must die with it. Otherwise, with failover
// on, a survivor takes the item over about one session timeout later while
// the orphan still runs it, and the item runs on two hosts at once. The
// host's plugin process gets SIGTERM from the kernel when the host dies
// (Pdeathsig); it then cancels its in-flight calls, and the SCRIPT job type
// kills the process group it started (internal/transport/drain.go).
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
	if !scriptAlive(run.recPID) {
		t.Fatalf("the script (pid %d) is gone before the kill: %v", run.recPID, run)
	}
	killedAt := c.kill(h)
	const grace = 3 * time.Second // the script still has 3 s or more to sleep
	deadline := killedAt.Add(grace)
	for scriptAlive(run.recPID) && time.Now().Before(deadline) {
		time.Sleep(pollInterval) // bounded polling of the script process
	}
	if !scriptAlive(run.recPID) {
		t.Logf("the script (pid %d) ended %v after its host was killed", run.recPID, time.Since(killedAt).Round(time.Millisecond))
	} else {
		_ = syscall.Kill(run.recPID, syscall.SIGKILL) // the orphan this test found
		t.Errorf("the SCRIPT process (pid %d) of %v still runs %v after its host was killed with SIGKILL; "+
			"with failover a survivor runs the item at the same time", run.recPID, run, grace)
	}
}

// scriptAlive reports whether pid still runs (a zombie counts as gone: it
// runs nothing).
func scriptAlive(pid int) bool { return !proctree.Gone(pid) }
