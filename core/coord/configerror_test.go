package coord_test

import (
	"errors"
	"testing"

	"github.com/ejob-io/ejob/core/config"
	"github.com/ejob-io/ejob/core/coord"
	"github.com/ejob-io/ejob/internal/testkit"
)

// A config node written elsewhere with a shardingTotalCount of 10^9, or
// YAML that does not parse, puts the running job in the config-error state
// (ConfigError, and Config refuses, so nothing runs with it or allocates
// per item); a valid node written back clears it, and the job runs again.
func TestConfigNodeRefusedWhileRunning(t *testing.T) {
	cl := newEmbeddedCluster(t)
	a := cl.start("192.168.1.1", 100, testConfig(2))
	if _, err := a.run(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	good, _ := cl.get(jp("config"))
	for name, bad := range map[string]string{
		"count": mustMarshal(t, testConfig(1_000_000_000)),
		"yaml":  "jobName: " + testJob + "\ncron: [\n",
	} {
		cl.persist(jp("config"), bad)
		testkit.Eventually(t, waitFor, name+": the config error", func() bool { return a.job.ConfigError() != nil })
		err := a.job.ConfigError()
		if !errors.Is(err, coord.ErrConfigInvalid) || (!errors.Is(err, config.ErrInvalid) && !errors.Is(err, config.ErrMalformed)) {
			t.Errorf("%s: ConfigError = %v", name, err)
		}
		if _, err := a.job.Config(ctxT(t)); !errors.Is(err, coord.ErrConfigInvalid) {
			t.Errorf("%s: Config = %v, want ErrConfigInvalid", name, err)
		}
		if _, err := a.run(ctxT(t)); !errors.Is(err, coord.ErrConfigInvalid) {
			t.Errorf("%s: a run with the node refused: %v, want ErrConfigInvalid", name, err)
		}
		cl.persist(jp("config"), good)
		testkit.Eventually(t, waitFor, name+": the config error cleared", func() bool { return a.job.ConfigError() == nil })
		if items, err := a.run(ctxT(t)); err != nil || len(items) != 2 {
			t.Errorf("%s: after the fix ran %v, %v; want items 0 and 1", name, items, err)
		}
	}
}

// A job whose config node in the registry is refused when it starts (the
// node wins over the local config) still starts, in the config-error
// state, and leaves it when a valid node is written.
func TestConfigNodeRefusedAtStart(t *testing.T) {
	cl := newEmbeddedCluster(t)
	cl.persist(jp(), testClass)
	cl.persist(jp("config"), mustMarshal(t, testConfig(1_000_000_000)))
	a := cl.start("192.168.1.1", 100, testConfig(2))
	if err := a.job.ConfigError(); !errors.Is(err, coord.ErrConfigInvalid) || !errors.Is(err, config.ErrInvalid) {
		t.Fatalf("ConfigError = %v, want ErrConfigInvalid and config.ErrInvalid", err)
	}
	cl.sync()
	if _, err := a.run(ctxT(t)); !errors.Is(err, coord.ErrConfigInvalid) {
		t.Errorf("a run with the node refused: %v, want ErrConfigInvalid", err)
	}
	if got, _ := cl.get(jp("config")); got != mustMarshal(t, testConfig(1_000_000_000)) {
		t.Errorf("the refused node was overwritten: %q", got)
	}
	cl.persist(jp("config"), mustMarshal(t, testConfig(3)))
	testkit.Eventually(t, waitFor, "the config error cleared", func() bool { return a.job.ConfigError() == nil })
	cl.sync()
	if items, err := a.run(ctxT(t)); err != nil || len(items) != 3 {
		t.Errorf("after the fix ran %v, %v; want items 0 to 2", items, err)
	}
}
