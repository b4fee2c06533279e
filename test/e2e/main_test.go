package e2e

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
// (tickTime 200 ms, so a 2 s session expires fast) shared by every test;
// each test uses its own namespace. ejob is built without -race to keep
// three hosts light on a 2-core machine; set EJOB_E2E_RACE=1 to build it
// with -race.
func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "ejob-e2e-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	if ejobBin, recorderBin, err = proctest.BuildHost(dir, os.Getenv("EJOB_E2E_RACE") == "1"); err != nil {
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
