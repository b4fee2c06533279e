package config

import (
	"strings"
	"testing"
)

// secret is in every secret of the configs below; no masked text may
// contain it.
const secret = "S3CR3T"

// A config node's YAML shows none of its secrets, however it is quoted or
// nested, and keeps everything else.
func TestRedact(t *testing.T) {
	t.Parallel()
	tracing := strings.Replace(string(readTestdata(t, "tracing_305.yaml")), "      username: job\n",
		"      username: job\n      password: hunter2-"+secret+"\n", 1)
	for name, tc := range map[string]struct {
		in   string
		keep []string // must still be there
	}{
		"props": {in: "jobName: j\nshardingTotalCount: 1\nprops:\n" +
			"  email.password: " + secret + "\n" +
			"  webhook.headers.X-Api-Key: '" + secret + "'\n" +
			"  webhook.secret: \"" + secret + "\"\n" +
			"  http.uri: https://bob:" + secret + "@h/p?token=" + secret + "\n" +
			"  http.data: apikey=" + secret + "&x=1\n" +
			"  script.command.line: 'curl -H \"Authorization: Bearer " + secret + "\" https://h/'\n",
			keep: []string{"jobName: j", "email.password: '***'", "http.data: apikey=***&x=1", "Authorization: Bearer ***", "https://***@h/p?token=***"}},
		"yaml-quoted": {in: "jobName: j\nprops:\n  email.password: 'p''a ss: #" + secret + "'\n  script.command.line: 'curl -H ''Authorization: Bearer " + secret + "'''\n",
			keep: []string{"email.password"}},
		"double-quoted escapes": {in: "jobName: j\nprops:\n  script.command.line: \"curl -H \\\"X-Api-Key: " + secret + "\\\" -d \\\"{\\\\\\\"password\\\\\\\":\\\\\\\"" + secret + "\\\\\\\"}\\\"\"\n",
			keep: []string{"X-Api-Key"}},
		"block scalar":  {in: "jobName: j\nprops:\n  email.password: |\n    line1 " + secret + "\n    line2\n  a: b\n", keep: []string{"a: b"}},
		"nested secret": {in: "jobName: j\ncredentials:\n  user: u\n  pw: " + secret + "\n", keep: []string{"jobName: j", "credentials: '***'"}},
		"tracing extra": {in: tracing, keep: []string{"username: job", "jdbcUrl: jdbc:postgresql://db:5432/elasticjob"}},
		"does not parse": {in: "cron: [\njobName: j\nprops:\n  email.password: 'p''a " + secret + "\n    " + secret + "'\n  http.data: token=" + secret + "\n  other: x\n",
			keep: []string{"cron: [", "  other: x", "  email.password: ***"}},
	} {
		t.Run(name, func(t *testing.T) {
			got := string(Redact([]byte(tc.in)))
			if strings.Contains(got, secret) {
				t.Errorf("Redact shows a secret:\n%s", got)
			}
			for _, k := range tc.keep {
				if !strings.Contains(got, k) {
					t.Errorf("Redact lost %q:\n%s", k, got)
				}
			}
		})
	}
	// Nothing to mask: the node as it is, byte for byte.
	plain := string(readTestdata(t, "tracing_305.yaml"))
	if got := string(Redact([]byte(plain))); got != plain {
		t.Errorf("Redact changed a config without secrets:\n%s", got)
	}
}
