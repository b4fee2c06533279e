package cloud

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestDecodeAppDefaultsAndProblems(t *testing.T) {
	a, err := DecodeApp([]byte(`{"appName":"a","appURL":"http://h/a.tgz","bootstrapScript":"bin/start.sh"}`))
	if err != nil || a.CPUCount != 1 || a.MemoryMB != 128 || !a.AppCacheEnable {
		t.Fatalf("defaults: %+v, %v", a, err)
	}
	_, err = DecodeApp([]byte(`{"appName":"","image":"x","appURL":"http://h","cpuCount":-1}`))
	if !errors.Is(err, ErrInvalid) {
		t.Fatalf("err = %v", err)
	}
	for _, want := range []string{"appName: must not be empty", "appURL and image: give one of them", "bootstrapScript: required with appURL", "cpuCount: -1"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q lacks %q", err, want)
		}
	}
}

// The execution type alone decides who owns the cron: a TRANSIENT job
// with a cron is valid (the scheduler fires it), a DAEMON job needs one.
func TestJobExecutionTypeDecides(t *testing.T) {
	base := `"jobName":"j","appName":"a","shardingTotalCount":2,"cpuCount":0.5,"memoryMB":64`
	for body, want := range map[string]string{
		`{` + base + `,"jobExecutionType":"TRANSIENT","cron":"0/5 * * * * ?"}`: "",
		`{` + base + `,"jobExecutionType":"TRANSIENT"}`:                        "",
		`{` + base + `,"jobExecutionType":"DAEMON","cron":"0/5 * * * * ?"}`:    "",
		`{` + base + `,"jobExecutionType":"DAEMON"}`:                           "cron: required for a DAEMON job",
		`{` + base + `,"cron":"0/5 * * * * ?"}`:                                `jobExecutionType: "": want TRANSIENT or DAEMON`,
		`{` + base + `,"jobExecutionType":"TRANSIENT","timeZone":"UTC"}`:       `unknown field "timeZone"`,
	} {
		_, err := DecodeJob([]byte(body))
		switch {
		case want == "" && err != nil:
			t.Errorf("%s: %v", body, err)
		case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
			t.Errorf("%s: %v, want %q", body, err, want)
		}
	}
}

func TestTaskIDRoundTripAndItemEnv(t *testing.T) {
	tid := TaskID{Job: "j", Item: 1, Type: "FAILOVER", Slave: "node-1", Fire: "f0123"}
	got, err := ParseTaskID(tid.String())
	if err != nil || got != tid || tid.String() != "j@-@1@-@FAILOVER@-@node-1@-@f0123" {
		t.Fatalf("%q -> %+v, %v", tid.String(), got, err)
	}
	j := Job{JobName: "j", ShardingTotalCount: 3, JobParameter: "p", JobExecutionType: Transient, ShardingItemParameters: "1=b"}
	params, _ := j.ItemParameters()
	env := ItemEnv(j, params, 1, tid)
	var sc map[string]any
	if err := json.Unmarshal([]byte(env["EJOB_SHARDING_CONTEXT"]), &sc); err != nil {
		t.Fatal(err)
	}
	if sc["shardingParameter"] != "b" || sc["taskId"] != tid.String() || env["EJOB_SHARDING_ITEM"] != "1" ||
		env["EJOB_SHARDING_TOTAL_COUNT"] != "3" || env["EJOB_SHARDING_PARAMETER"] != "b" || env["EJOB_JOB_PARAMETER"] != "p" {
		t.Fatalf("env %v", env)
	}
	if _, ok := ItemEnv(j, params, 0, tid)["EJOB_SHARDING_PARAMETER"]; ok {
		t.Fatal("an item without a parameter got EJOB_SHARDING_PARAMETER")
	}
}
