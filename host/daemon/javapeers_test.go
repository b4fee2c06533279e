package daemon

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/ejob-io/ejob/core/reg"
	"github.com/ejob-io/ejob/core/reg/embedded"
	"github.com/ejob-io/ejob/host/hostconfig"
	"github.com/ejob-io/ejob/internal/proctest"
)

const javaPeersFile = `elasticjob:
  jobs:
    zone:
      elasticJobType: SCRIPT
      shardingTotalCount: 1
      timeZone: Asia/Shanghai
      jobShardingStrategyType: HASH_RING
    fine:
      elasticJobType: SCRIPT
      shardingTotalCount: 1
      timeZone: GMT+08:00
      jobExecutorThreadPoolSizeProviderType: CPU
    seeded:
      elasticJobType: SCRIPT
      shardingTotalCount: 1
      timeZone: Europe/Paris
    overwriting:
      elasticJobType: SCRIPT
      shardingTotalCount: 1
      jobExecutorThreadPoolSizeProviderType: SINGLE_THREAD
      overwrite: true
`

// TestCheckJavaPeers: each job about to write its configuration with
// values a Java instance cannot read gets one WARN (warn) or one line of the
// refusal (strict), naming the job, the key and what Java does; a job whose
// config node exists and that does not overwrite it writes nothing and is
// not checked; off says nothing.
func TestCheckJavaPeers(t *testing.T) {
	t.Parallel()
	file, err := hostconfig.Parse("f.yaml", []byte(javaPeersFile), hostconfig.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := embedded.NewServer().Connect("ns")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	ctx := context.Background()
	for _, job := range []string{"seeded", "overwriting"} {
		if _, err := c.Create(ctx, "/"+job+"/config", []byte("jobName: "+job+"\n"), reg.Persistent, reg.WithParents()); err != nil {
			t.Fatal(err)
		}
	}
	check := func(mode hostconfig.JavaPeers) (string, error) {
		var out proctest.Buffer
		log := hclog.New(&hclog.LoggerOptions{Output: &out, Level: hclog.Info})
		err := checkJavaPeers(ctx, c, file, mode, log)
		return out.String(), err
	}

	t.Run("warn", func(t *testing.T) {
		t.Parallel()
		out, err := check(hostconfig.JavaPeersWarn)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if len(lines) != 2 {
			t.Fatalf("want one WARN for each of zone and overwriting, got:\n%s", out)
		}
		for job, want := range map[string][]string{
			"zone": {`keys="timeZone,jobShardingStrategyType"`, `timeZone \"Asia/Shanghai\"`,
				"Invalid time zone specification", `jobShardingStrategyType \"HASH_RING\"`, "AVG_ALLOCATION instead"},
			"overwriting": {"keys=jobExecutorThreadPoolSizeProviderType", "a 3.0.4 instance fails to start"},
		} {
			var line string
			for _, l := range lines {
				if strings.Contains(l, " job="+job+" ") {
					line = l
				}
			}
			if !strings.Contains(line, "[WARN]") {
				t.Errorf("job %s: no WARN line:\n%s", job, out)
				continue
			}
			for _, w := range want {
				if !strings.Contains(line, w) {
					t.Errorf("job %s: WARN lacks %q:\n%s", job, w, line)
				}
			}
		}
	})
	t.Run("strict", func(t *testing.T) {
		t.Parallel()
		out, err := check(hostconfig.JavaPeersStrict)
		if !errors.Is(err, ErrJavaPeers) {
			t.Fatalf("error = %v, want ErrJavaPeers", err)
		}
		for _, want := range []string{
			`f.yaml:3: elasticjob.jobs.zone: timeZone "Asia/Shanghai": a Java instance accepts only GMT forms`,
			`f.yaml:17: elasticjob.jobs.overwriting: jobExecutorThreadPoolSizeProviderType "SINGLE_THREAD": only 3.0.5 knows this key`,
			"set ejob.javaPeers: warn or off",
		} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error lacks %q:\n%v", want, err)
			}
		}
		for _, not := range []string{"fine", "seeded"} {
			if strings.Contains(err.Error(), "jobs."+not) {
				t.Errorf("error names job %s:\n%v", not, err)
			}
		}
		if out != "" {
			t.Errorf("strict logged:\n%s", out)
		}
	})
	t.Run("off", func(t *testing.T) {
		t.Parallel()
		if out, err := check(hostconfig.JavaPeersOff); err != nil || out != "" {
			t.Errorf("off: error %v, logged:\n%s", err, out)
		}
	})
}
