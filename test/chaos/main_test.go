package chaos

import (
	"flag"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/ejob-io/ejob/internal/proctest"
)

// Flags. The suite runs only with -chaos.run (make test runs the short form
// as its own step; make chaos-short, make chaos), so `go test ./...` skips
// it. Without -chaos.duration the short form runs.
var (
	flagRun      = flag.Bool("chaos.run", false, "run the chaos suite (make chaos / make chaos-short)")
	flagSeed     = flag.Int64("chaos.seed", 0, "seed of the fault schedule (0: derived from the clock; always logged)")
	flagDuration = flag.Duration("chaos.duration", 0, "long form: inject random faults for this long per ZooKeeper topology (0: the short form)")
	flagHosts    = flag.Int("chaos.hosts", 3, "number of `ejob run` hosts")
	flagTopology = flag.String("chaos.topology", "", "long form: standalone, ensemble or both (default both)")
	flagWindow   = flag.Duration("chaos.window", time.Second, "the tolerated overlap after a host learns its session is gone (see docs/chaos.md)")
)

// Built once in TestMain.
var (
	ejobBin     string
	recorderBin string
)

// TestMain builds ejob (without -race, to keep several hosts light on two
// cores; EJOB_CHAOS_RACE=1 builds it with -race) and the recorder.
func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	if !*flagRun {
		return m.Run() // TestChaos skips; nothing to build
	}
	dir, err := os.MkdirTemp("", "ejob-chaos-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	if ejobBin, recorderBin, err = proctest.BuildHost(dir, os.Getenv("EJOB_CHAOS_RACE") == "1"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}
