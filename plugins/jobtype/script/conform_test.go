//go:build unix

package script_test

import (
	"testing"

	"github.com/ejob-io/ejob/plugins/jobtype/script"
	"github.com/ejob-io/ejob/sdk"
	"github.com/ejob-io/ejob/sdk/sdktest"
	"github.com/ejob-io/ejob/spi"
	"github.com/ejob-io/ejob/spi/spitest"
)

func conformanceOptions() *spitest.JobExecutorOptions {
	req := func(line string) *spi.ExecuteRequest {
		return &spi.ExecuteRequest{
			Context: spi.ShardingContext{JobName: "script_job", TaskID: "t", ShardingTotalCount: 3, ShardingParameter: ptr("a b")},
			Props:   map[string]string{script.PropCommandLine: line},
		}
	}
	return &spitest.JobExecutorOptions{
		ValidProps: []map[string]string{
			{script.PropCommandLine: "echo script-job"},
			{script.PropCommandLine: "/bin/sh -c 'echo a b'", script.PropArgvQuirk: script.QuirkUpstream},
			{script.PropCommandLine: `x "" y`, script.PropArgvQuirk: script.QuirkNone},
			{script.PropCommandLine: "/nonexistent/demo.sh"}, // existence is checked when run
		},
		InvalidProps: map[string]map[string]string{
			"missing":         {},
			"empty":           {script.PropCommandLine: ""},
			"blank":           {script.PropCommandLine: "   "},
			"unbalanced":      {script.PropCommandLine: `echo "a`},
			"empty_exe":       {script.PropCommandLine: `"" a`},
			"bad_quirk":       {script.PropCommandLine: "echo", script.PropArgvQuirk: "yes"},
			"quirk_mixed":     {script.PropCommandLine: `echo 'a"b'"c'd"`, script.PropArgvQuirk: script.QuirkUpstream},
			"only_quirk_prop": {script.PropArgvQuirk: script.QuirkUpstream},
		},
		Succeed:  req("echo script-job"),
		Fail:     req("sh -c 'exit 3'"),
		Blocking: req("sh -c 'exec sleep 30'"),
	}
}

func TestConformance(t *testing.T) {
	t.Parallel()
	spitest.TestJobExecutor(t, script.New(&recLogger{}), conformanceOptions())
}

func TestConformanceOverGRPC(t *testing.T) {
	t.Parallel()
	p := sdktest.Connect(t, sdk.Plugins{JobTypes: map[string]spi.JobExecutor{script.TypeName: script.New(&recLogger{})}})
	spitest.TestJobExecutor(t, p.JobExecutor("script"), conformanceOptions())
}
