package lifecycle_test

import (
	"strings"
	"testing"

	"github.com/ejob-io/ejob/core/lifecycle"
)

// Upstream acts on a line that starts with "dump@" and splits on '@' into
// exactly two parts (Java's split drops trailing empty parts).
func TestReadDumpRequest(t *testing.T) {
	tests := map[string]struct {
		in  string
		job string
		ok  bool
	}{
		"plain":              {"dump@myJob\n", "myJob", true},
		"crlf":               {"dump@myJob\r\nrest", "myJob", true},
		"cr":                 {"dump@myJob\rrest", "myJob", true},
		"no line end":        {"dump@myJob", "myJob", true},
		"trailing at":        {"dump@myJob@\n", "myJob", true},
		"trailing ats":       {"dump@myJob@@\n", "myJob", true},
		"at inside":          {"dump@my@Job\n", "", false},
		"empty job":          {"dump@\n", "", false},
		"double at":          {"dump@@x\n", "", false},
		"other command":      {"stat\n", "", false},
		"upper case":         {"DUMP@myJob\n", "", false},
		"leading space":      {" dump@myJob\n", "", false},
		"empty":              {"", "", false},
		"empty line":         {"\ndump@myJob\n", "", false},
		"too long":           {"dump@" + strings.Repeat("x", 100) + "\n", "", false},
		"second line unread": {"dump@a\ndump@b\n", "a", true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			job, ok, _ := lifecycle.ReadDumpRequest(strings.NewReader(tc.in), 64)
			if job != tc.job || ok != tc.ok {
				t.Errorf("ReadDumpRequest(%q) = %q, %v; want %q, %v", tc.in, job, ok, tc.job, tc.ok)
			}
		})
	}
}

// The dump of a host that masks nothing (a Java ElasticJob): its IP
// aliases change the URLs (ip2 for 10.0.0.5), so the stored values would
// not be found in it; RedactDump masks the config node's YAML by
// structure wherever it is, cached or not, and keeps every other line.
func TestRedactDump(t *testing.T) {
	const secret = "S3CR3T"
	config := "cron: 0/5 * * * * ?\njobName: j\nprops:\n" +
		"  email.password: 'p''a ss: #" + secret + "'\n" +
		"  http.uri: http://bob:" + secret + "@ip2:8080/run?token=" + secret + "\n" +
		"  http.data: apikey=" + secret + "\n" +
		"shardingTotalCount: 1\n"
	for name, tail := range map[string]string{"cached": "\n", "not cached": " |  | \n"} {
		text := "/j/sharding | \n/j/sharding/0/instance | ip1@-@7\n/j/servers/ip1 | ENABLED\n/j/config | " + config + tail
		got := lifecycle.RedactDump("j", text)
		if strings.Contains(got, secret) {
			t.Errorf("%s: a secret is left:\n%s", name, got)
		}
		want := strings.Replace(text, config, "", 1)
		if !strings.HasPrefix(got, want[:strings.Index(want, "/j/config | ")+len("/j/config | ")]) || !strings.HasSuffix(got, "shardingTotalCount: 1\n"+tail) {
			t.Errorf("%s: the dump's other lines changed:\n%s", name, got)
		}
	}
	if got := lifecycle.RedactDump("j", "\n"); got != "\n" {
		t.Errorf("the empty dump = %q", got)
	}
}
