package lifecycle_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/ejob-io/ejob/core/config"
	"github.com/ejob-io/ejob/core/lifecycle"
	"github.com/ejob-io/ejob/core/node"
	"github.com/ejob-io/ejob/core/reg"
)

// javaSimpleConfig is the config node Java wrote for javaSimpleJob.
const javaSimpleConfig = `cron: 0/2 * * * * ?
description: java reference peer simple job
disabled: false
failover: true
jobName: javaSimpleJob
jobParameter: ''
maxTimeDiffSeconds: -1
misfire: true
monitorExecution: true
overwrite: true
reconcileIntervalMinutes: 10
shardingItemParameters: 0=A,1=B,2=C
shardingTotalCount: 3
staticSharding: false
`

func TestGetAndUpdateConfig(t *testing.T) {
	registries(t, func(t *testing.T, c reg.Client) {
		load(t, c, javaTree(t, "A"))
		j := node.New(javaSimple)
		stored, err := lifecycle.GetConfig(ctxOf(t), c, javaSimple)
		if err != nil {
			t.Fatal(err)
		}
		if got := stored.Config; got.Cron != "0/2 * * * * ?" || got.ShardingTotalCount != 3 || !got.Failover || got.ShardingItemParameters != "0=A,1=B,2=C" {
			t.Fatalf("GetConfig = %+v", got)
		}
		before := snapshot(t, c)
		if before[j.Config()] != javaSimpleConfig {
			t.Fatalf("test bug: the loaded config is %q", before[j.Config()])
		}
		cfg := stored.Config.Clone()
		if err := lifecycle.SetConfigKeys(cfg, "cron=0/10 * * * * ?", "shardingTotalCount=4", "shardingItemParameters=0=A,1=B,2=C,3=D",
			"props.streaming.process=true", "jobListenerTypes=a, b"); err != nil {
			t.Fatal(err)
		}
		if err := lifecycle.UpdateConfig(ctxOf(t), c, cfg, lifecycle.IfVersion(stored.Version)); err != nil {
			t.Fatal(err)
		}
		// Java's YAML, with the keys changed in place: alphabetical, the
		// props' 'true' quoted as SnakeYAML quotes it.
		want := strings.NewReplacer(
			"cron: 0/2 * * * * ?", "cron: 0/10 * * * * ?",
			"shardingTotalCount: 3", "shardingTotalCount: 4",
			"shardingItemParameters: 0=A,1=B,2=C", "shardingItemParameters: 0=A,1=B,2=C,3=D",
			"jobName: javaSimpleJob\n", "jobListenerTypes:\n- a\n- b\njobName: javaSimpleJob\n",
			"overwrite: true\n", "overwrite: true\nprops:\n  streaming.process: 'true'\n",
		).Replace(javaSimpleConfig)
		assertDelta(t, before, snapshot(t, c), map[string]string{j.Config(): want})

		// A write based on the old version is a conflict; nothing written.
		after := snapshot(t, c)
		cfg.Description = "lost update"
		if err := lifecycle.UpdateConfig(ctxOf(t), c, cfg, lifecycle.IfVersion(stored.Version)); !errors.Is(err, lifecycle.ErrConflict) {
			t.Errorf("stale update: %v, want ErrConflict", err)
		}
		assertDelta(t, after, snapshot(t, c), nil)
	})
}

// A bad cron, a total below 1 or an unknown job never reach the registry.
func TestUpdateConfigRefusals(t *testing.T) {
	registries(t, func(t *testing.T, c reg.Client) {
		load(t, c, javaTree(t, "A"))
		before := snapshot(t, c)
		stored, err := lifecycle.GetConfig(ctxOf(t), c, javaSimple)
		if err != nil {
			t.Fatal(err)
		}
		bad := map[string]struct {
			settings []string
			want     error
			msg      string
		}{
			"bad cron":         {[]string{"cron=0/2 * * * *  ? ?"}, lifecycle.ErrInvalid, "cron"},
			"bad crontab":      {[]string{"cron=61 * * * *"}, lifecycle.ErrInvalid, "cron"},
			"bad zone":         {[]string{"timeZone=Mars/Olympus"}, lifecycle.ErrInvalid, "cron"},
			"zero total":       {[]string{"shardingTotalCount=0"}, lifecycle.ErrInvalid, "shardingTotalCount"},
			"param past end":   {[]string{"shardingTotalCount=2"}, lifecycle.ErrInvalid, "shardingItemParameters"},
			"unknown job":      {[]string{"jobName=x"}, lifecycle.ErrInvalid, "cannot be changed"},
			"unknown key":      {[]string{"cronn=x"}, lifecycle.ErrInvalid, "unknown key"},
			"not an int":       {[]string{"shardingTotalCount=three"}, lifecycle.ErrInvalid, "integer"},
			"not a bool":       {[]string{"failover=yes"}, lifecycle.ErrInvalid, "true or false"},
			"no equals":        {[]string{"failover"}, lifecycle.ErrInvalid, "key=value"},
			"props as a whole": {[]string{"props=x"}, lifecycle.ErrInvalid, "props.NAME"},
		}
		for name, tc := range bad {
			cfg := stored.Config.Clone()
			err := lifecycle.SetConfigKeys(cfg, tc.settings...)
			if err == nil {
				err = lifecycle.UpdateConfig(ctxOf(t), c, cfg)
			}
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("%s: %v, want %v naming %q", name, err, tc.want, tc.msg)
			}
		}
		gone := stored.Config.Clone()
		gone.JobName = "gone"
		if err := lifecycle.UpdateConfig(ctxOf(t), c, gone); !errors.Is(err, lifecycle.ErrJobNotFound) {
			t.Errorf("update of a job without config: %v, want ErrJobNotFound", err)
		}
		if _, err := lifecycle.GetConfig(ctxOf(t), c, "gone"); !errors.Is(err, lifecycle.ErrJobNotFound) {
			t.Errorf("GetConfig of an unknown job: %v", err)
		}
		assertDelta(t, before, snapshot(t, c), nil)
	})
}

func TestRemoveConfig(t *testing.T) {
	registries(t, func(t *testing.T, c reg.Client) {
		load(t, c, javaTree(t, "A"))
		before := snapshot(t, c)
		var gone []string
		for p := range before {
			if p == "/"+javaSimple || strings.HasPrefix(p, "/"+javaSimple+"/") {
				gone = append(gone, p)
			}
		}
		if err := lifecycle.RemoveConfig(ctxOf(t), c, javaSimple); err != nil {
			t.Fatal(err)
		}
		assertDelta(t, before, snapshot(t, c), nil, gone...)
	})
}

func TestSetConfigKeys(t *testing.T) {
	cfg := config.New("j", 2)
	cfg.Props = map[string]string{"a": "1", "b": "2"}
	err := lifecycle.SetConfigKeys(cfg, "description=", "jobExecutorServiceHandlerType=SINGLE_THREAD", "misfire=false",
		"maxTimeDiffSeconds=-1", "props.a-", "props.c=x=y", "jobListenerTypes=")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.JobExecutorThreadPoolSizeProviderType != "SINGLE_THREAD" || cfg.Misfire || cfg.MaxTimeDiffSeconds != -1 ||
		len(cfg.Props) != 2 || cfg.Props["c"] != "x=y" || cfg.Props["b"] != "2" || cfg.JobListenerTypes != nil {
		t.Errorf("after SetConfigKeys: %+v", cfg)
	}
}

// The console's JSON: Jackson's field names and order, defaults on input,
// unknown fields (the console's own form fields) ignored, stored extras
// and unknown YAML keys kept.
func TestConfigJSON(t *testing.T) {
	stored, err := config.Unmarshal([]byte(javaSimpleConfig + "futureKey: 1\n"))
	if err != nil {
		t.Fatal(err)
	}
	out, err := json.Marshal(lifecycle.ToConfigJSON(stored))
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"jobName":"javaSimpleJob","cron":"0/2 * * * * ?","timeZone":"","shardingTotalCount":3,` +
		`"shardingItemParameters":"0=A,1=B,2=C","jobParameter":"","monitorExecution":true,"failover":true,"misfire":true,` +
		`"maxTimeDiffSeconds":-1,"reconcileIntervalMinutes":10,"jobShardingStrategyType":"","jobExecutorServiceHandlerType":"",` +
		`"jobErrorHandlerType":"","jobListenerTypes":[],"jobExtraConfigurations":null,"description":"java reference peer simple job",` +
		`"props":{},"disabled":false,"overwrite":true,"label":"","staticSharding":false}`
	if string(out) != want {
		t.Errorf("JSON =\n%s\nwant\n%s", out, want)
	}
	in, err := lifecycle.DecodeConfigJSON([]byte(`{"jobName":"javaSimpleJob","cron":"0/3 * * * * ?","shardingTotalCount":2,` +
		`"jobExecutorThreadPoolSizeProviderType":"CPU","propList":[],"streamingProcess2":true,"jobExtraConfigurations":[1]}`))
	if err != nil {
		t.Fatal(err)
	}
	if in.MaxTimeDiffSeconds != -1 || in.JobExecutorServiceHandlerType != "CPU" || in.Cron != "0/3 * * * * ?" {
		t.Errorf("DecodeConfigJSON = %+v", in)
	}
	applied := in.Apply(stored)
	data, err := config.Marshal(applied)
	if err != nil {
		t.Fatal(err)
	}
	// CPU is written as no key: the one spelling Java 3.0.4 and 3.0.5 both
	// read (docs/compatibility.md).
	if !strings.Contains(string(data), "futureKey: 1\n") || applied.JobExecutorThreadPoolSizeProviderType != "CPU" ||
		strings.Contains(string(data), "jobExecutorThreadPoolSizeProviderType") || strings.Contains(string(data), "jobExecutorServiceHandlerType") ||
		applied.Failover || applied.ShardingTotalCount != 2 {
		t.Errorf("applied config:\n%s", data)
	}
	for _, bad := range []string{`{`, `[]`, `{"shardingTotalCount":"x"}`, `{} {}`} {
		if _, err := lifecycle.DecodeConfigJSON([]byte(bad)); !errors.Is(err, lifecycle.ErrInvalid) {
			t.Errorf("DecodeConfigJSON(%s) = %v, want ErrInvalid", bad, err)
		}
	}
}
