package config

import (
	"fmt"
	"strings"
	"testing"
)

// TestExtraConfigurationPasswordNotPrinted: a job config node written by a
// Java instance with a tracing extra configuration (upstream persists the
// data source's password in clear) is read without error, and printing
// the configuration (as a log line would) does not show the password.
func TestExtraConfigurationPasswordNotPrinted(t *testing.T) {
	t.Parallel()
	data := strings.Replace(string(readTestdata(t, "tracing_305.yaml")), "      username: job\n",
		"      username: job\n      password: hunter2-secret\n", 1)
	if !strings.Contains(data, "hunter2-secret") {
		t.Fatal("test data not changed")
	}
	cfg, err := Unmarshal([]byte(data))
	if err != nil {
		t.Fatal(err)
	}
	for _, verb := range []string{"%v", "%+v", "%#v", "%s"} {
		if s := fmt.Sprintf(verb, cfg); strings.Contains(s, "hunter2-secret") {
			t.Errorf("%s of the configuration shows the password: %s", verb, s)
		}
	}
}
