package console

import (
	"fmt"
	"os"
	"testing"

	"github.com/ejob-io/ejob/core/reg/zktest"
	"github.com/ejob-io/ejob/internal/proctest"
)

// Built and started once in TestMain.
var (
	ejobBin     string // the ejob binary
	recorderBin string // test/recorder, the SCRIPT program
	zk          *zktest.Server
)

// TestMain builds ejob and the recorder once and starts one ZooKeeper
// shared by every test; each test uses its own namespace.
func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "ejob-console-bin-")
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
	return m.Run()
}
