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
