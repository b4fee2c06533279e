package hostconfig_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/ejob-io/ejob/host/hostconfig"
)

// BenchmarkParse1000Jobs checks a file of 1,000 SCRIPT jobs, as ejob run
// does at its start (without the plugin catalog's checks).
func BenchmarkParse1000Jobs(b *testing.B) {
	var sb strings.Builder
	sb.WriteString("elasticjob:\n  jobs:\n")
	for i := range 1000 {
		fmt.Fprintf(&sb, "    job-%d:\n      elasticJobType: SCRIPT\n      cron: \"0 0 0 1 1 ? 2099\"\n      shardingTotalCount: 1\n"+
			"      props:\n        script.command.line: \"/bin/true\"\n", i)
	}
	sb.WriteString("ejob:\n  drainTimeout: 10s\n")
	data := []byte(sb.String())
	b.ReportAllocs()
	for b.Loop() {
		if _, err := hostconfig.Parse("bench.yaml", data, hostconfig.LoadOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}
