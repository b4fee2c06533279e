package lifecycle_test

import (
	"strings"
	"testing"

	"github.com/ejob-io/ejob/core/lifecycle"
	"github.com/ejob-io/ejob/core/node"
	"github.com/ejob-io/ejob/core/reg"
)

// A config node that does not parse (`cron: [`) or breaks a bound
// (shardingTotalCount 10^9) makes its job one CONFIG_ERROR brief with its
// reason, not a failed list; the other jobs keep their status, and the
// detail of the bad jobs answers with the items that exist, not one per
// item of the count.
func TestBadConfigNodeIsOneRow(t *testing.T) {
	registries(t, func(t *testing.T, c reg.Client) {
		a := "10.0.0.1@-@1"
		job(t, c, "ok", []string{a}, map[string]string{"10.0.0.1": "ENABLED"}, map[int]string{0: a, 1: a, 2: a})
		job(t, c, "huge", []string{a}, map[string]string{"10.0.0.1": "ENABLED"}, map[int]string{0: a})
		put(t, c, node.New("huge").Config(), "jobName: huge\ncron: 0/5 * * * * ?\nshardingTotalCount: 1000000000\n")
		job(t, c, "yaml", []string{a}, map[string]string{"10.0.0.1": "ENABLED"}, nil)
		put(t, c, node.New("yaml").Config(), "jobName: yaml\ncron: [\n")

		briefs, err := lifecycle.Jobs(ctxOf(t), c)
		if err != nil {
			t.Fatalf("Jobs: %v", err)
		}
		got := map[string]lifecycle.JobBrief{}
		for _, b := range briefs {
			got[b.JobName] = b
		}
		if got["ok"].Status != lifecycle.StatusOK || got["ok"].ConfigError != "" {
			t.Errorf("ok: %+v", got["ok"])
		}
		for name, want := range map[string]string{"huge": "1000000000 is above the limit of 1000", "yaml": "malformed job configuration YAML"} {
			b := got[name]
			if b.Status != lifecycle.StatusConfigError || !strings.Contains(b.ConfigError, want) || b.InstanceCount != 1 {
				t.Errorf("%s: %+v, want CONFIG_ERROR with %q and its instance", name, b, want)
			}
			d, err := lifecycle.Detail(ctxOf(t), c, name)
			if err != nil {
				t.Fatalf("Detail(%s): %v", name, err)
			}
			if d.Status != lifecycle.StatusConfigError || len(d.Items) > 1 {
				t.Errorf("Detail(%s): status %s, %d items; want CONFIG_ERROR and only the items in the registry", name, d.Status, len(d.Items))
			}
		}
		if got["huge"].ShardingTotalCount != 1_000_000_000 || got["huge"].Cron != "0/5 * * * * ?" {
			t.Errorf("huge: %+v, want the parsed values shown", got["huge"])
		}

		// A valid configuration replaces the node that does not parse.
		st, err := lifecycle.GetConfigToReplace(ctxOf(t), c, "yaml")
		if err != nil {
			t.Fatalf("GetConfigToReplace: %v", err)
		}
		st.Config.Cron = "0 0 0 * * ?"
		if err := lifecycle.UpdateConfig(ctxOf(t), c, st.Config, lifecycle.IfVersion(st.Version)); err != nil {
			t.Fatalf("UpdateConfig: %v", err)
		}
		if b, err := lifecycle.Job(ctxOf(t), c, "yaml"); err != nil || b.Status == lifecycle.StatusConfigError {
			t.Errorf("yaml after the update: %+v, %v", b, err)
		}
	})
}
