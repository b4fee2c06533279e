package config_test

import (
	"testing"

	"github.com/ejob-io/ejob/core/config"
)

// BenchmarkMarshal writes the config node of a host's SCRIPT job, as every
// job does when it registers.
func BenchmarkMarshal(b *testing.B) {
	c := config.New("job-123", 1)
	c.Cron = "0 0 0 1 1 ? 2099"
	c.Props = map[string]string{"script.command.line": "/bin/true"}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := config.Marshal(c); err != nil {
			b.Fatal(err)
		}
	}
}
