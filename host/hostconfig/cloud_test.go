package hostconfig_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/ejob-io/ejob/host/hostconfig"
)

func TestParseCloud(t *testing.T) {
	const good = `elasticjob:
  regCenter: {serverLists: 'localhost:2181', namespace: cloud}
ejob:
  http: {listen: '127.0.0.1:8899'}
  cloud:
    launcher: {type: KUBERNETES, props: {ttlSecondsAfterFinished: '600'}}
    kubernetes: {kubeconfig: /k/config, context: test, namespace: jobs}
    pollInterval: 500ms
    failureBackoff: 2s
`
	f, err := hostconfig.ParseCloud("c.yaml", []byte(good), nil)
	if err != nil {
		t.Fatal(err)
	}
	c := f.Cloud
	if f.Registry.Namespace != "cloud" || f.HTTP.Listen != "127.0.0.1:8899" || c.LauncherType != "KUBERNETES" ||
		c.JobStateQueueSize != hostconfig.DefaultJobStateQueueSize || c.PollInterval.String() != "500ms" ||
		c.FailureBackoff.String() != "2s" {
		t.Fatalf("parsed %+v %+v", f, c)
	}
	lc := c.LauncherConfig()
	if lc["kubeconfig"] != "/k/config" || lc["context"] != "test" || lc["namespace"] != "jobs" || lc["ttlSecondsAfterFinished"] != "600" {
		t.Fatalf("LauncherConfig = %v", lc)
	}
}

// Every problem of a cloud file is reported at once, each at its line.
func TestParseCloudProblems(t *testing.T) {
	const bad = `elasticjob:
  regCenter: {serverLists: 'localhost:2181'}
ejob:
  http: {listen: '127.0.0.1:8899'}
  drainTimeout: 5s
  cloud:
    launcher: {props: {a: b}}
    jobStateQueueSize: 0
    pollInterval: 1h
    failureBackoff: 1ms
`
	_, err := hostconfig.ParseCloud("c.yaml", []byte(bad), nil)
	var fe *hostconfig.FileError
	if !errors.As(err, &fe) {
		t.Fatalf("err = %v, want a *FileError", err)
	}
	msg := err.Error()
	for _, want := range []string{
		"c.yaml:2: elasticjob.regCenter: missing required key namespace",
		`c.yaml:5: ejob: unknown key "drainTimeout"`,
		"c.yaml:7: ejob.cloud.launcher: missing required key type",
		"c.yaml:8: ejob.cloud.jobStateQueueSize: 0: want at least 1",
		"c.yaml:9: ejob.cloud.pollInterval: 1h0m0s: want 10ms to 1m",
		"c.yaml:10: ejob.cloud.failureBackoff: 1ms: want 100ms to 10m",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("missing %q in:\n%s", want, msg)
		}
	}
	if _, err := hostconfig.ParseCloud("c.yaml", []byte("ejob: {http: {listen: '127.0.0.1:1'}}\n"), nil); err == nil ||
		!strings.Contains(err.Error(), "no elasticjob section") || !strings.Contains(err.Error(), "missing required key cloud") {
		t.Errorf("no elasticjob, no cloud: %v", err)
	}
}
