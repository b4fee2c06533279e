package config

import (
	"strings"
	"testing"
)

func TestJavaPeerIssues(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		edit func(*JavaPeerJob)
		// want: for each issue, its key and words its Java text must hold.
		want map[string][]string
	}{
		"defaults":         {func(*JavaPeerJob) {}, nil},
		"java's own types": {javaTypes, nil},
		"GMT offset":       {func(j *JavaPeerJob) { j.Config.TimeZone = "GMT+08:00" }, nil},
		"quartz cron":      {func(j *JavaPeerJob) { j.Config.Cron = "0 0/5 * * * ? 2030" }, nil},
		"crontab": {func(j *JavaPeerJob) { j.Config.Cron = "*/5 * * * *" },
			map[string][]string{KeyCron: {"only Quartz crons", "fails to schedule"}}},
		"descriptor": {func(j *JavaPeerJob) { j.Config.Cron = "@every 90s" },
			map[string][]string{KeyCron: {"only Quartz crons"}}},
		"IANA zone": {func(j *JavaPeerJob) { j.Config.TimeZone = "Asia/Shanghai" },
			map[string][]string{KeyTimeZone: {"Invalid time zone specification", "GMT+08:00"}}},
		"UTC": {func(j *JavaPeerJob) { j.Config.TimeZone = "UTC" },
			map[string][]string{KeyTimeZone: {"Invalid time zone specification"}}},
		"CPU is written as no key": {func(j *JavaPeerJob) { j.Config.JobExecutorThreadPoolSizeProviderType = "cpu" }, nil},
		"SINGLE_THREAD, 3.0.5 key": {func(j *JavaPeerJob) { j.Config.JobExecutorThreadPoolSizeProviderType = "SINGLE_THREAD" },
			map[string][]string{KeyJobExecutorThreadPoolSizeProviderType: {"a 3.0.4 instance fails to start",
				"Unable to find property 'jobExecutorThreadPoolSizeProviderType'"}}},
		"SINGLE_THREAD, 3.0.4 key": {func(j *JavaPeerJob) {
			j.Config.JobExecutorThreadPoolSizeProviderType = "SINGLE_THREAD"
			j.Config.LegacyThreadPoolKey = true
		}, map[string][]string{KeyJobExecutorThreadPoolSizeProviderType: {"a 3.0.5 instance fails to start",
			"Unable to find property 'jobExecutorServiceHandlerType'"}}},
		"plugin thread pool": {func(j *JavaPeerJob) { j.Config.JobExecutorThreadPoolSizeProviderType = "HALF_CPU" },
			map[string][]string{KeyJobExecutorThreadPoolSizeProviderType: {"3.0.4 instance fails", "no thread pool of that type"}}},
		"plugin strategy": {func(j *JavaPeerJob) { j.Config.JobShardingStrategyType = "HASH_RING" },
			map[string][]string{KeyJobShardingStrategyType: {"Java leader cannot shard", "AVG_ALLOCATION instead"}}},
		"ejob-only handler": {func(j *JavaPeerJob) { j.Config.JobErrorHandlerType = "slack" },
			map[string][]string{KeyJobErrorHandlerType: {"3.0.4 instance fails to start", "as LOG does"}}},
		"listener": {func(j *JavaPeerJob) { j.Config.JobListenerTypes = []string{"LOG", "audit"} },
			map[string][]string{KeyJobListenerTypes: {"ships no job listener", "classpath"}}},
		"plugin job type": {func(j *JavaPeerJob) { j.Type = "SHELLX" },
			map[string][]string{KeyElasticJobType: {"cannot run the job", "SCRIPT and HTTP"}}},
		"in-process job": {func(j *JavaPeerJob) { j.Type = "" }, nil},
		"everything at once": {func(j *JavaPeerJob) {
			j.Config.TimeZone = "Europe/Paris"
			j.Config.JobShardingStrategyType = "X"
			j.Type = "Y"
		}, map[string][]string{KeyTimeZone: nil, KeyJobShardingStrategyType: nil, KeyElasticJobType: nil}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			j := JavaPeerJob{Config: New("j", 2), Type: "SCRIPT"}
			tc.edit(&j)
			got := JavaPeerIssues(j)
			if len(got) != len(tc.want) {
				t.Fatalf("issues = %v, want keys %v", got, tc.want)
			}
			for _, is := range got {
				words, ok := tc.want[is.Key]
				if !ok {
					t.Errorf("unexpected issue %s", is)
				}
				for _, w := range words {
					if !strings.Contains(is.Java, w) {
						t.Errorf("%s: Java text lacks %q", is, w)
					}
				}
				if is.Value == "" {
					t.Errorf("%s: no value", is)
				}
			}
		})
	}
}

func javaTypes(j *JavaPeerJob) {
	j.Type = "http"
	j.Config.JobShardingStrategyType = "round_robin"
	j.Config.JobErrorHandlerType = "EMAIL"
	j.Config.JobExecutorThreadPoolSizeProviderType = "CPU"
}

// The values a check reports are the ones Marshal writes: the thread-pool
// check fires exactly when the key is in the YAML.
func TestJavaPeerPoolCheckMatchesMarshal(t *testing.T) {
	t.Parallel()
	for _, v := range []string{"", "CPU", "cpu", "SINGLE_THREAD", "HALF_CPU"} {
		for _, legacy := range []bool{false, true} {
			c := New("j", 1)
			c.JobExecutorThreadPoolSizeProviderType, c.LegacyThreadPoolKey = v, legacy
			out, err := Marshal(c)
			if err != nil {
				t.Fatal(err)
			}
			written := strings.Contains(string(out), "jobExecutor")
			reported := false
			for _, is := range JavaPeerIssues(JavaPeerJob{Config: c}) {
				reported = reported || is.Key == KeyJobExecutorThreadPoolSizeProviderType
			}
			if written != reported {
				t.Errorf("type %q legacy %v: key written %v, reported %v:\n%s", v, legacy, written, reported, out)
			}
		}
	}
}
