package hostile

import (
	"fmt"
	"os"
	"testing"

	"github.com/ejob-io/ejob/core/reg/zktest"
	"github.com/ejob-io/ejob/internal/proctest"
	"github.com/ejob-io/ejob/internal/testkit"
)

// Built and started once in TestMain.
var (
	ejobBin     string // the ejob binary
	recorderBin string // test/recorder, a SCRIPT program that records runs
	zk          *zktest.Server
)

// TestMain builds ejob once (without -race: the processes are the system
// under test, the suite's own code is what -race checks) and starts one
// ZooKeeper that every test shares, each in a namespace of its own.
func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "ejob-hostile-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	if ejobBin, recorderBin, err = proctest.BuildHost(dir, false); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	zk, err = zktest.Launch(zktest.Options{Tick: zktest.DefaultTick})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer zk.Close()
	return testkit.Run(m)
}
