package config

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/ejob-io/ejob/spi"
)

func readTestdata(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Every exact config string of upstream's YAML writer, of the real ZooKeeper
// tree and of upstream's JobConfigurationPOJOTest parses and writes back
// byte-identically.
func TestRoundTripExact(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob(filepath.Join("testdata", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no testdata: %v", err)
	}
	for _, f := range files {
		name := filepath.Base(f)
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			in := readTestdata(t, name)
			cfg, err := Unmarshal(in)
			if err != nil {
				t.Fatalf("Unmarshal: %v", err)
			}
			out, err := Marshal(cfg)
			if err != nil {
				t.Fatalf("Marshal: %v", err)
			}
			if string(out) != string(in) {
				t.Errorf("round trip differs\n--- want\n%s--- got\n%s", in, out)
			}
		})
	}
}

func TestMarshalFromGo(t *testing.T) {
	t.Parallel()
	builder := New("myJob", 3)
	builder.Cron = "0/5 * * * * ?"

	// upstream JobConfigurationPOJOTest.assertMarshal: a POJO, so Java's
	// POJO defaults (monitorExecution=false, misfire=false, reconcile 0).
	pojo := &JobConfiguration{
		JobName: "test_job", Cron: "0/1 * * * * ?", ShardingTotalCount: 3,
		ShardingItemParameters: "0=A,1=B,2=C", JobParameter: "param", MaxTimeDiffSeconds: -1,
		JobShardingStrategyType: "AVG_ALLOCATION", JobExecutorThreadPoolSizeProviderType: "CPU",
		JobErrorHandlerType: "IGNORE", Description: "Job description", Props: map[string]string{"key": "value"},
	}

	full := New("myJob", 4)
	full.Cron = "0 0/1 * * * ?"
	full.Description = "my desc"
	full.Failover = true
	full.JobListenerTypes = []string{"LOG"}
	full.JobParameter = "a: b"
	full.JobShardingStrategyType = "ROUND_ROBIN"
	full.Label = "lbl"
	full.Overwrite = true
	full.Props = map[string]string{"streaming.process": "true", "script.command.line": "echo hi"}
	full.ShardingItemParameters = "0=Beijing,1=Shanghai,2=Guangzhou,3=Shenzhen"
	full.StaticSharding = true
	full.TimeZone = "GMT+08:00"

	tree := New("javaSimpleJob", 3)
	tree.Cron = "0/2 * * * * ?"
	tree.Description = "java reference peer simple job"
	tree.Failover = true
	tree.Overwrite = true
	tree.ShardingItemParameters = "0=A,1=B,2=C"

	tests := map[string]struct {
		cfg  *JobConfiguration
		file string
		// omit is a line of the file ejob does not write on purpose.
		omit string
	}{
		"upstream builder defaults": {builder, "upstream_builder_default.yaml", ""},
		// A thread-pool type of CPU set in Go writes no key, which 3.0.4
		// and 3.0.5 both read as CPU; either spelling breaks one of them.
		// Read from YAML, it is written back (TestCPUReadIsKept).
		"upstream assertMarshal":  {pojo, "upstream_pojo_marshal.yaml", "jobExecutorThreadPoolSizeProviderType: CPU\n"},
		"upstream full example":   {full, "upstream_full.yaml", ""},
		"real tree javaSimpleJob": {tree, "tree_javaSimpleJob.yaml", ""},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got, err := Marshal(tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			want := string(readTestdata(t, tc.file))
			if tc.omit != "" {
				if !strings.Contains(want, tc.omit) {
					t.Fatalf("%s has no line %q", tc.file, tc.omit)
				}
				want = strings.Replace(want, tc.omit, "", 1)
			}
			if string(got) != want {
				t.Errorf("Marshal differs\n--- want\n%s--- got\n%s", want, got)
			}
		})
	}
}

func TestUnmarshalValues(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		file string
		want *JobConfiguration
	}{
		// upstream assertUnmarshal
		"pojo": {"upstream_pojo_marshal.yaml", &JobConfiguration{
			JobName: "test_job", Cron: "0/1 * * * * ?", ShardingTotalCount: 3,
			ShardingItemParameters: "0=A,1=B,2=C", JobParameter: "param", MaxTimeDiffSeconds: -1,
			JobShardingStrategyType: "AVG_ALLOCATION", JobExecutorThreadPoolSizeProviderType: "CPU",
			JobErrorHandlerType: "IGNORE", Description: "Job description", Props: map[string]string{"key": "value"},
		}},
		// upstream assertUnmarshalWithNullValue: missing strings are null
		// (""), missing booleans false.
		"with null": {"upstream_pojo_with_null.yaml", &JobConfiguration{
			JobName: "test_job", Cron: "0/1 * * * * ?", ShardingTotalCount: 3, MaxTimeDiffSeconds: -1,
		}},
		"legacy thread pool key": {"tracing_304.yaml", nil},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got, err := Unmarshal(readTestdata(t, tc.file))
			if err != nil {
				t.Fatal(err)
			}
			if tc.want == nil {
				if got.JobExecutorThreadPoolSizeProviderType != "SINGLE_THREAD" || !got.LegacyThreadPoolKey {
					t.Errorf("thread pool = %q legacy=%v, want SINGLE_THREAD legacy=true", got.JobExecutorThreadPoolSizeProviderType, got.LegacyThreadPoolKey)
				}
				return
			}
			if !got.Equal(tc.want) {
				t.Errorf("Unmarshal = %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

// Keys absent from the YAML get Java's loader defaults, not New's.
func TestUnmarshalAbsentKeyDefaults(t *testing.T) {
	t.Parallel()
	got, err := Unmarshal([]byte("jobName: j\nshardingTotalCount: 2\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := &JobConfiguration{JobName: "j", ShardingTotalCount: 2, MaxTimeDiffSeconds: -1}
	if !got.Equal(want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
	// Written back as Java would write the loaded POJO: nulls omitted.
	out, err := Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	const wantYAML = "disabled: false\nfailover: false\njobName: j\nmaxTimeDiffSeconds: -1\nmisfire: false\nmonitorExecution: false\noverwrite: false\nreconcileIntervalMinutes: 0\nshardingTotalCount: 2\nstaticSharding: false\n"
	if string(out) != wantYAML {
		t.Errorf("Marshal =\n%s\nwant\n%s", out, wantYAML)
	}
	n := New("j", 2)
	if !n.MonitorExecution || !n.Misfire || n.ReconcileIntervalMinutes != 10 || n.MaxTimeDiffSeconds != -1 {
		t.Errorf("New defaults = %+v", n)
	}
}

func TestUnmarshalYAML11Scalars(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		yaml  string
		check func(*JobConfiguration) bool
	}{
		"yes is true":        {"failover: yes\n", func(c *JobConfiguration) bool { return c.Failover }},
		"On is true":         {"misfire: On\n", func(c *JobConfiguration) bool { return c.Misfire }},
		"quoted true":        {"disabled: 'true'\n", func(c *JobConfiguration) bool { return c.Disabled }},
		"off is false":       {"monitorExecution: off\n", func(c *JobConfiguration) bool { return !c.MonitorExecution }},
		"hex int":            {"shardingTotalCount: 0x10\n", func(c *JobConfiguration) bool { return c.ShardingTotalCount == 16 }},
		"octal int":          {"shardingTotalCount: 010\n", func(c *JobConfiguration) bool { return c.ShardingTotalCount == 8 }},
		"underscore int":     {"reconcileIntervalMinutes: 1_0\n", func(c *JobConfiguration) bool { return c.ReconcileIntervalMinutes == 10 }},
		"base 60 int":        {"maxTimeDiffSeconds: 1:30\n", func(c *JobConfiguration) bool { return c.MaxTimeDiffSeconds == 90 }},
		"negative int":       {"maxTimeDiffSeconds: -5\n", func(c *JobConfiguration) bool { return c.MaxTimeDiffSeconds == -5 }},
		"plain int string":   {"jobParameter: 123\n", func(c *JobConfiguration) bool { return c.JobParameter == "123" }},
		"plain bool string":  {"jobParameter: yes\n", func(c *JobConfiguration) bool { return c.JobParameter == "yes" }},
		"null string":        {"cron: ~\n", func(c *JobConfiguration) bool { return c.Cron == "" }},
		"binary string":      {"jobParameter: !!binary |-\n  eAE=\n", func(c *JobConfiguration) bool { return c.JobParameter == "x\x01" }},
		"null props":         {"props:\n", func(c *JobConfiguration) bool { return c.Props == nil }},
		"props bool value":   {"props:\n  streaming.process: true\n", func(c *JobConfiguration) bool { return c.Props["streaming.process"] == "true" }},
		"duplicate key wins": {"cron: a\ncron: b\n", func(c *JobConfiguration) bool { return c.Cron == "b" }},
		"alias":              {"cron: &c 0 * * * * ?\ndescription: *c\n", func(c *JobConfiguration) bool { return c.Description == "0 * * * * ?" }},
		"both tp spellings":  {"jobExecutorServiceHandlerType: CPU\njobExecutorThreadPoolSizeProviderType: CPU\n", func(c *JobConfiguration) bool { return c.ThreadPoolType() == "CPU" && !c.LegacyThreadPoolKey }},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c, err := Unmarshal([]byte(tc.yaml))
			if err != nil {
				t.Fatal(err)
			}
			if !tc.check(c) {
				t.Errorf("unexpected result %+v", c)
			}
		})
	}
}

func TestUnmarshalErrorsNameKeyAndLine(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		yaml string
		want []string
	}{
		"bad int":       {"jobName: j\nshardingTotalCount: three\n", []string{"line 2", `"shardingTotalCount"`, "three"}},
		"int overflow":  {"shardingTotalCount: 3000000000\n", []string{"line 1", `"shardingTotalCount"`, "Java int"}},
		"bad bool":      {"jobName: j\n\nfailover: maybe\n", []string{"line 3", `"failover"`, "boolean"}},
		"map for str":   {"cron:\n  a: b\n", []string{"line 2", `"cron"`, "mapping"}},
		"scalar list":   {"jobListenerTypes: LOG\n", []string{"line 1", `"jobListenerTypes"`, "list"}},
		"nested props":  {"props:\n  email:\n    host: x\n", []string{"line 3", `"props.email"`}},
		"tp contradict": {"jobExecutorServiceHandlerType: CPU\njobExecutorThreadPoolSizeProviderType: SINGLE_THREAD\n", []string{"jobExecutorServiceHandlerType", "contradicts"}},
		"syntax":        {"jobName: [\n", []string{"line"}},
		"not a mapping": {"- a\n", []string{"not a mapping"}},
		"empty":         {"", []string{"empty"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := Unmarshal([]byte(tc.yaml))
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("err = %v, want ErrMalformed", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

// Quoting of single string values, as SnakeYAML writes them (vectors
// checked against SnakeYAML 1.33 with testdata/oracle).
func TestMarshalStringStyles(t *testing.T) {
	t.Parallel()
	words := strings.TrimSpace(strings.Repeat("abcdefghi ", 10))
	tests := map[string]struct {
		value string
		want  string // the jobParameter line(s)
	}{
		"empty":            {"", "jobParameter: ''\n"},
		"yes":              {"yes", "jobParameter: 'yes'\n"},
		"on":               {"on", "jobParameter: 'on'\n"},
		"No":               {"No", "jobParameter: 'No'\n"},
		"y is plain":       {"y", "jobParameter: y\n"},
		"true":             {"true", "jobParameter: 'true'\n"},
		"null":             {"null", "jobParameter: 'null'\n"},
		"tilde":            {"~", "jobParameter: '~'\n"},
		"sharding params":  {"0=a", "jobParameter: 0=a\n"},
		"int":              {"123", "jobParameter: '123'\n"},
		"float":            {"1.5", "jobParameter: '1.5'\n"},
		"underscore int":   {"1_000", "jobParameter: '1_000'\n"},
		"hex":              {"0x1F", "jobParameter: '0x1F'\n"},
		"sexagesimal":      {"1:30", "jobParameter: '1:30'\n"},
		"date":             {"2026-01-01", "jobParameter: '2026-01-01'\n"},
		"inf":              {".inf", "jobParameter: '.inf'\n"},
		"merge":            {"<<", "jobParameter: '<<'\n"},
		"ip":               {"10.0.0.1", "jobParameter: 10.0.0.1\n"},
		"instance id":      {"10.0.0.1@-@123", "jobParameter: 10.0.0.1@-@123\n"},
		"time zone":        {"GMT+08:00", "jobParameter: GMT+08:00\n"},
		"star cron":        {"* * * * * ?", "jobParameter: '* * * * * ?'\n"},
		"question space":   {"? x", "jobParameter: '? x'\n"},
		"question":         {"?x", "jobParameter: ?x\n"},
		"colon space":      {"a: b", "jobParameter: 'a: b'\n"},
		"space hash":       {"a #b", "jobParameter: 'a #b'\n"},
		"hash inside":      {"a#b", "jobParameter: a#b\n"},
		"dash space":       {"- a", "jobParameter: '- a'\n"},
		"dash":             {"-a", "jobParameter: -a\n"},
		"at":               {"@x", "jobParameter: '@x'\n"},
		"percent":          {"%x", "jobParameter: '%x'\n"},
		"bang":             {"!x", "jobParameter: '!x'\n"},
		"bracket end":      {"x]", "jobParameter: x]\n"},
		"document marker":  {"---", "jobParameter: '---'\n"},
		"leading space":    {" a", "jobParameter: ' a'\n"},
		"trailing space":   {"a ", "jobParameter: 'a '\n"},
		"apostrophe":       {"it's", "jobParameter: it's\n"},
		"quoted":           {"'q'", "jobParameter: '''q'''\n"},
		"double quotes":    {`"q"`, "jobParameter: '\"q\"'\n"},
		"tab":              {"a\tb", "jobParameter: \"a\\tb\"\n"},
		"multi-line":       {"a\nb", "jobParameter: |-\n  a\n  b\n"},
		"trailing newline": {"a\n", "jobParameter: |\n  a\n"},
		"keep newlines":    {"a\n\n", "jobParameter: |+\n  a\n\n"},
		"leading space ml": {" a\nb", "jobParameter: |2-\n   a\n  b\n"},
		"space break":      {"a \nb", "jobParameter: \"a \\nb\"\n"},
		"unicode":          {"北京", "jobParameter: 北京\n"},
		"non-printable":    {"x\x01", "jobParameter: !!binary |-\n  eAE=\n"},
		"folded at 80":     {words, "jobParameter: abcdefghi abcdefghi abcdefghi abcdefghi abcdefghi abcdefghi abcdefghi\n  abcdefghi abcdefghi abcdefghi\n"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			cfg := New("j", 1)
			cfg.JobParameter = tc.value
			out, err := Marshal(cfg)
			if err != nil {
				t.Fatal(err)
			}
			start := strings.Index(string(out), "jobParameter:")
			end := strings.Index(string(out), "maxTimeDiffSeconds:")
			if got := string(out)[start:end]; got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
			back, err := Unmarshal(out)
			if err != nil {
				t.Fatalf("Unmarshal(Marshal): %v\n%s", err, out)
			}
			if back.JobParameter != tc.value {
				t.Errorf("read back %q, want %q", back.JobParameter, tc.value)
			}
		})
	}
}

func TestExtraConfigurations(t *testing.T) {
	t.Parallel()
	cfg, err := Unmarshal(readTestdata(t, "tracing_305.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.JobExtraConfigurations) != 1 {
		t.Fatalf("extras = %d", len(cfg.JobExtraConfigurations))
	}
	x := cfg.JobExtraConfigurations[0]
	if want := "!!org.apache.shardingsphere.elasticjob.kernel.tracing.yaml.YamlTracingConfiguration"; x.Tag != want {
		t.Errorf("tag = %q, want %q", x.Tag, want)
	}
	var body struct {
		Type    string `yaml:"type"`
		Storage struct {
			DataSourceClassName string         `yaml:"dataSourceClassName"`
			Props               map[string]any `yaml:"props"`
		} `yaml:"tracingStorageConfiguration"`
	}
	if err := x.Decode(&body); err != nil {
		t.Fatal(err)
	}
	if body.Type != "RDB" || body.Storage.DataSourceClassName != "com.zaxxer.hikari.HikariDataSource" || body.Storage.Props["maximumPoolSize"] != 10 {
		t.Errorf("decoded %+v", body)
	}

	built, err := NewExtraConfiguration("!!org.apache.shardingsphere.elasticjob.kernel.tracing.yaml.YamlTracingConfiguration",
		map[string]any{"type": "RDB"})
	if err != nil {
		t.Fatal(err)
	}
	c := New("j", 1)
	c.JobExtraConfigurations = []ExtraConfiguration{built}
	out, err := Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	if want := "jobExtraConfigurations:\n- !!org.apache.shardingsphere.elasticjob.kernel.tracing.yaml.YamlTracingConfiguration\n  type: RDB\njobName: j\n"; !strings.Contains(string(out), want) {
		t.Errorf("Marshal =\n%s\nwant it to contain\n%s", out, want)
	}
}

func TestThreadPoolKeySpelling(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		legacy bool
		value  string
		want   string
		absent string
	}{
		"3.0.5 spelling by default": {false, "SINGLE_THREAD", "jobExecutorThreadPoolSizeProviderType: SINGLE_THREAD\n", "jobExecutorServiceHandlerType"},
		"legacy spelling":           {true, "SINGLE_THREAD", "jobExecutorServiceHandlerType: SINGLE_THREAD\n", "jobExecutorThreadPoolSizeProviderType"},
		"empty writes neither":      {false, "", "", "jobExecutor"},
		"CPU writes neither":        {false, "CPU", "", "jobExecutor"},
		"cpu writes neither":        {true, "cpu", "", "jobExecutor"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c := New("j", 1)
			c.LegacyThreadPoolKey = tc.legacy
			c.JobExecutorThreadPoolSizeProviderType = tc.value
			out, err := Marshal(c)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(out), tc.want) || strings.Contains(string(out), tc.absent) {
				t.Errorf("Marshal =\n%s", out)
			}
		})
	}
}

// TestCPUReadIsKept: a thread-pool key read from the registry is written
// back as read, CPU included (its writer's Java version reads that
// spelling).
func TestCPUReadIsKept(t *testing.T) {
	t.Parallel()
	for _, in := range []string{
		"jobExecutorThreadPoolSizeProviderType: CPU\njobName: j\nshardingTotalCount: 1\n",
		"jobExecutorServiceHandlerType: CPU\njobName: j\nshardingTotalCount: 1\n",
	} {
		cfg, err := Unmarshal([]byte(in))
		if err != nil {
			t.Fatal(err)
		}
		out, err := Marshal(cfg)
		if err != nil {
			t.Fatal(err)
		}
		key, _, _ := strings.Cut(in, "\n")
		if !strings.Contains(string(out), key+"\n") {
			t.Errorf("Marshal(Unmarshal(%q)) =\n%s\nwant the line %q kept", in, out, key)
		}
	}
}

func TestUnknownKeysKept(t *testing.T) {
	t.Parallel()
	cfg, err := Unmarshal(readTestdata(t, "unknown_keys.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := cfg.UnknownKeys(), []string{"aFutureKey", "zzz"}; !reflect.DeepEqual(got, want) {
		t.Errorf("UnknownKeys = %v, want %v", got, want)
	}
}

// Java iterates java.util.Properties (a ConcurrentHashMap) in bin order;
// vectors checked against OpenJDK 17.
func TestJavaPropertiesOrder(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		insert []string
		want   []string
	}{
		"upstream full example": {nil, []string{"script.command.line", "streaming.process"}},
		// inserted as an HTTP job's props usually are; uri and
		// connect.timeout share a bin, so insertion order decides.
		"http props": {
			[]string{"http.uri", "http.method", "http.data", "http.connect.timeout.milliseconds", "http.read.timeout.milliseconds", "http.content.type"},
			[]string{"http.uri", "http.connect.timeout.milliseconds", "http.read.timeout.milliseconds", "http.content.type", "http.method", "http.data"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			m := map[string]string{}
			for _, k := range tc.want {
				m[k] = "v"
			}
			if got := javaPropertiesOrder(tc.insert, m); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("order = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestParseShardingItemParameters(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		in      string
		want    map[int]string
		wantErr string
	}{
		"empty":                 {"", map[int]string{}, ""},
		"upstream assertGetMap": {"0=A,1=B,2=C", map[int]string{0: "A", 1: "B", 2: "C"}, ""},
		"trimmed":               {" 0 = A , 1=B ", map[int]string{0: "A", 1: "B"}, ""},
		"trailing comma":        {"0=A,", map[int]string{0: "A"}, ""},
		"only commas":           {",,", map[int]string{}, ""},
		"duplicate wins":        {"0=A,0=B", map[int]string{0: "B"}, ""},
		"signed key":            {"+1=A", map[int]string{1: "A"}, ""},
		"pair format invalid":   {"xxx-xxx", nil, "Sharding item parameters 'xxx-xxx' format error, should be int=xx,int=xx"},
		"empty value":           {"0=", nil, "Sharding item parameters '0=' format error, should be int=xx,int=xx"},
		"three parts":           {"0=a=b", nil, "Sharding item parameters '0=a=b' format error, should be int=xx,int=xx"},
		"empty piece":           {"0=a,,1=b", nil, "Sharding item parameters '0=a,,1=b' format error, should be int=xx,int=xx"},
		"item not number":       {"xxx=xxx", nil, "Sharding item parameters key 'xxx' is not an integer."},
		"empty key":             {"=a", nil, "Sharding item parameters key '' is not an integer."},
		"key overflows int":     {"3000000000=a", nil, "Sharding item parameters key '3000000000' is not an integer."},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got, err := ParseShardingItemParameters(tc.in)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr || !errors.Is(err, ErrInvalid) {
					t.Fatalf("err = %v, want %q wrapping ErrInvalid", err, tc.wantErr)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	t.Parallel()
	errCron := errors.New("bad cron")
	opts := ValidateOptions{
		CheckCron: func(expr, tz string) error {
			if expr == "nope" {
				return errCron
			}
			return nil
		},
		KnownType: func(kind spi.Kind, name string) bool {
			return spi.NormalizeType(name) == "AVG_ALLOCATION" || spi.NormalizeType(name) == "CPU" || spi.NormalizeType(name) == "LOG"
		},
		KnownListener: func(name string) bool { return name == "LOG" },
	}
	tests := map[string]struct {
		mutate func(*JobConfiguration)
		fields []string // keys named by the errors, in order
		is     error
	}{
		"valid":               {func(*JobConfiguration) {}, nil, nil},
		"empty job name":      {func(c *JobConfiguration) { c.JobName = "" }, []string{KeyJobName}, nil},
		"slash in job name":   {func(c *JobConfiguration) { c.JobName = "a/b" }, []string{KeyJobName}, nil},
		"task id separator":   {func(c *JobConfiguration) { c.JobName = "a@-@b" }, []string{KeyJobName}, nil},
		"control character":   {func(c *JobConfiguration) { c.JobName = "a\x01" }, []string{KeyJobName}, nil},
		"dot":                 {func(c *JobConfiguration) { c.JobName = "." }, []string{KeyJobName}, nil},
		"zero total":          {func(c *JobConfiguration) { c.ShardingTotalCount = 0; c.ShardingItemParameters = "" }, []string{KeyShardingTotalCount}, nil},
		"java int overflow":   {func(c *JobConfiguration) { c.MaxTimeDiffSeconds = 1 << 40 }, []string{KeyMaxTimeDiffSeconds}, nil},
		"negatives are valid": {func(c *JobConfiguration) { c.MaxTimeDiffSeconds = -7; c.ReconcileIntervalMinutes = -1 }, nil, nil},
		"bad parameters":      {func(c *JobConfiguration) { c.ShardingItemParameters = "0=a,x" }, []string{KeyShardingItemParameters}, nil},
		"item out of range":   {func(c *JobConfiguration) { c.ShardingItemParameters = "0=a,3=b,-1=c" }, []string{KeyShardingItemParameters, KeyShardingItemParameters}, nil},
		"duplicate item":      {func(c *JobConfiguration) { c.ShardingItemParameters = "0=a,1=b,0=c,0=d" }, []string{KeyShardingItemParameters}, nil},
		"bad cron":            {func(c *JobConfiguration) { c.Cron = "nope" }, []string{KeyCron}, errCron},
		"unknown strategy":    {func(c *JobConfiguration) { c.JobShardingStrategyType = "MAGIC" }, []string{KeyJobShardingStrategyType}, spi.ErrUnknownType},
		"known any case":      {func(c *JobConfiguration) { c.JobShardingStrategyType = "avg_allocation"; c.JobErrorHandlerType = "log" }, nil, nil},
		"unknown thread pool": {func(c *JobConfiguration) { c.JobExecutorThreadPoolSizeProviderType = "X" }, []string{KeyJobExecutorThreadPoolSizeProviderType}, nil},
		"unknown handler":     {func(c *JobConfiguration) { c.JobErrorHandlerType = "X" }, []string{KeyJobErrorHandlerType}, nil},
		"unknown listener":    {func(c *JobConfiguration) { c.JobListenerTypes = []string{"LOG", "X", ""} }, []string{KeyJobListenerTypes, KeyJobListenerTypes}, nil},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c := New("myJob", 3)
			c.Cron = "0/5 * * * * ?"
			c.ShardingItemParameters = "0=a,1=b,2=c"
			tc.mutate(c)
			err := c.Validate(opts)
			if len(tc.fields) == 0 {
				if err != nil {
					t.Fatalf("Validate = %v", err)
				}
				return
			}
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("err = %v, want ErrInvalid", err)
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("err = %v, want it to wrap %v", err, tc.is)
			}
			var fields []string
			for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
				var fe *FieldError
				if !errors.As(e, &fe) {
					t.Fatalf("%v is not a *FieldError", e)
				}
				if !strings.Contains(fe.Error(), fe.Field) {
					t.Errorf("%q does not name %q", fe.Error(), fe.Field)
				}
				fields = append(fields, fe.Field)
			}
			if !reflect.DeepEqual(fields, tc.fields) {
				t.Errorf("fields = %v, want %v (err %v)", fields, tc.fields, err)
			}
		})
	}
	// nil callbacks skip their checks.
	c := New("myJob", 1)
	c.Cron = "nope"
	c.JobShardingStrategyType = "MAGIC"
	if err := c.Validate(ValidateOptions{}); err != nil {
		t.Errorf("Validate with no hooks = %v", err)
	}
}

func TestSemanticsHelpers(t *testing.T) {
	t.Parallel()
	c := New("j", 1)
	if _, on := c.MaxTimeDiff(); on {
		t.Error("maxTimeDiffSeconds -1 must disable the check")
	}
	c.MaxTimeDiffSeconds = 0
	if d, on := c.MaxTimeDiff(); !on || d != 0 {
		t.Error("maxTimeDiffSeconds 0 must enable a zero tolerance")
	}
	if d, on := c.ReconcileInterval(); !on || d.Minutes() != 10 {
		t.Errorf("reconcile = %v %v", d, on)
	}
	c.ReconcileIntervalMinutes = 0
	if _, on := c.ReconcileInterval(); on {
		t.Error("reconcileIntervalMinutes 0 must disable reconcile")
	}
	if c.ShardingStrategyType() != "AVG_ALLOCATION" || c.ThreadPoolType() != "CPU" || c.ErrorHandlerType() != "LOG" {
		t.Error("defaults for empty plugin types")
	}
}

func TestExtraConfigurationsUntagged(t *testing.T) {
	t.Parallel()
	in := "jobExtraConfigurations:\n- 3\n- plain\n- a: 1\njobName: j\n"
	c, err := Unmarshal([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	out, err := Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(out), "disabled: false\nfailover: false\njobExtraConfigurations:\n- 3\n- plain\n- a: 1\njobName: j\n") {
		t.Errorf("Marshal =\n%s", out)
	}
}
