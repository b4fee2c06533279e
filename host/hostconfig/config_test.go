package hostconfig

import (
	"bytes"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ejob-io/ejob/core/config"
	"github.com/ejob-io/ejob/core/reg/zookeeper"
	"github.com/ejob-io/ejob/spi"
)

// env is a fixed environment for tests.
func env(kv ...string) func(string) (string, bool) {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

// catalog stands for the plugin catalog: the built-in types plus SCRIPT and HTTP.
func catalog() LoadOptions {
	types := map[spi.Kind][]string{
		spi.KindJobType:      {"HTTP", "SCRIPT"},
		spi.KindSharding:     {"AVG_ALLOCATION", "ODEVITY", "ROUND_ROBIN"},
		spi.KindThreadPool:   {"CPU", "SINGLE_THREAD"},
		spi.KindErrorHandler: {"IGNORE", "LOG", "THROW"},
		spi.KindJobListener:  {"audit", "metrics"},
		spi.KindTracing:      {"RDB"},
	}
	return LoadOptions{
		Getenv: env("ZK_PASSWORD", "s3cret", "DB_PASSWORD", "dbpw"),
		KnownType: func(k spi.Kind, name string) bool {
			for _, t := range types[k] {
				if t == spi.NormalizeType(name) {
					return true
				}
			}
			return false
		},
		Types:         func(k spi.Kind) []string { return types[k] },
		KnownListener: func(name string) bool { return name == "audit" || name == "metrics" },
	}
}

func mustLoad(t *testing.T, path string, opts LoadOptions) *File {
	t.Helper()
	f, err := Load(path, opts)
	if err != nil {
		t.Fatalf("Load(%s): %v", path, err)
	}
	return f
}

func TestLoadEveryKey(t *testing.T) {
	t.Parallel()
	f := mustLoad(t, "testdata/all-keys.yaml", catalog())
	if len(f.Jobs) != 1 {
		t.Fatalf("jobs = %d, want 1", len(f.Jobs))
	}
	j := f.Jobs[0]
	c := j.Config
	for name, tc := range map[string]struct{ got, want any }{
		"regCenter.serverLists":                   {f.Registry.ServerLists, "zk1:2181,zk2:2181"},
		"regCenter.namespace":                     {f.Registry.Namespace, "ns/sub"},
		"regCenter.baseSleepTimeMilliseconds":     {f.Registry.BaseSleepTimeMilliseconds, 500},
		"regCenter.maxSleepTimeMilliseconds":      {f.Registry.MaxSleepTimeMilliseconds, 4000},
		"regCenter.maxRetries":                    {f.Registry.MaxRetries, 5},
		"regCenter.sessionTimeoutMilliseconds":    {f.Registry.SessionTimeoutMilliseconds, 30000},
		"regCenter.connectionTimeoutMilliseconds": {f.Registry.ConnectionTimeoutMilliseconds, 7000},
		"regCenter.digest":                        {f.Registry.Digest, "user:s3cret"},
		"http.oidc":                               {fmt.Sprintf("%+v", *f.Host.HTTP.OIDC), "{Issuer:https://sso.example.com/realms/ops ClientID:ejob-console ClientSecret:s3cret RedirectURL:https://ejob.example.com/login/sso/callback Scopes:[openid profile groups] RoleClaim:realm_access.roles AdminValues:[ejob-admins] ReadOnlyValues:[ejob-viewers auditors] UsernameClaim:email Line:85}"},
		"regCenter.sasl": {f.Registry.SASL, zookeeper.SASL{Mechanism: "GSSAPI", Principal: "ejob/host1@EXAMPLE.COM",
			Keytab: filepath.Join("testdata", "ejob.keytab"), Krb5Conf: "/etc/ejob/krb5.conf",
			ServiceName: "zk", ServiceHost: "zk.example.com", ACL: true}},
		"job.name":                                  {j.Name, "everyKey"},
		"job.line":                                  {j.Line, 21},
		"job.elasticJobType":                        {j.Type, "HTTP"},
		"job.jobBootstrapBeanName":                  {j.BootstrapBeanName, "everyKeyBean"},
		"job.jobName":                               {c.JobName, "everyKey"},
		"job.cron":                                  {c.Cron, "0 0/1 * * * ?"},
		"job.timeZone":                              {c.TimeZone, "GMT+08:00"},
		"job.shardingTotalCount":                    {c.ShardingTotalCount, 4},
		"job.shardingItemParameters":                {c.ShardingItemParameters, "0=Beijing,1=Shanghai,2=Guangzhou,3=Shenzhen"},
		"job.jobParameter":                          {c.JobParameter, "a: b"},
		"job.monitorExecution":                      {c.MonitorExecution, false},
		"job.failover":                              {c.Failover, true},
		"job.misfire":                               {c.Misfire, false},
		"job.maxTimeDiffSeconds":                    {c.MaxTimeDiffSeconds, 60},
		"job.reconcileIntervalMinutes":              {c.ReconcileIntervalMinutes, 0},
		"job.jobShardingStrategyType":               {c.JobShardingStrategyType, "ROUND_ROBIN"},
		"job.jobExecutorThreadPoolSizeProviderType": {c.JobExecutorThreadPoolSizeProviderType, "SINGLE_THREAD"},
		"job.legacyThreadPoolKey":                   {c.LegacyThreadPoolKey, false},
		"job.jobErrorHandlerType":                   {c.JobErrorHandlerType, "THROW"},
		"job.jobListenerTypes":                      {c.JobListenerTypes, []string{"audit", "metrics"}},
		"job.description":                           {c.Description, "my desc"},
		"job.props": {c.Props, map[string]string{
			"http.uri":                          "https://example.com/run",
			"http.method":                       "POST",
			"http.data":                         "x=1",
			"http.connect.timeout.milliseconds": "1000",
			"http.read.timeout.milliseconds":    "2000",
			"http.content.type":                 "application/x-www-form-urlencoded",
		}},
		"job.disabled":                   {c.Disabled, true},
		"job.overwrite":                  {c.Overwrite, true},
		"job.staticSharding":             {c.StaticSharding, true},
		"job.label":                      {c.Label, "lbl"},
		"job.oneOff":                     {j.OneOff(), false},
		"ejob.pluginsDir":                {f.Host.PluginsDir, "/opt/ejob/plugins"},
		"ejob.lockFile":                  {f.Host.LockFile, "/etc/ejob/plugins.lock"},
		"ejob.drainTimeout":              {f.Host.DrainTimeout, 90 * time.Second},
		"ejob.pluginStopGrace":           {f.Host.PluginStopGrace, 15 * time.Second},
		"ejob.logLevel":                  {f.Host.LogLevel, "debug"},
		"ejob.preferredNetworkInterface": {f.Host.PreferredNetworkInterface, "eno1"},
		"ejob.preferredNetworkIp":        {f.Host.PreferredNetworkIP, "192.168.*"},
		"ejob.javaPeers":                 {f.Host.JavaPeers, JavaPeersStrict},
		"ejob.http.sessionIdleTimeout":   {f.Host.HTTP.SessionIdleTimeout, 20 * time.Minute},
		"ejob.http.sessionMaxAge":        {f.Host.HTTP.SessionMaxAge, 8 * time.Hour},
		"ejob.http.tls": {*f.Host.HTTP.TLS, TLSFiles{CertFile: filepath.Join("testdata", "tls", "cert.pem"),
			KeyFile: filepath.Join("testdata", "tls", "key.pem")}},
		"ejob.http.trustedProxies": {f.Host.HTTP.TrustedProxies,
			[]netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("192.168.1.7/32")}},
		"ejob.http.allowInsecureHTTP": {f.Host.HTTP.AllowInsecureHTTP, false},
		"ejob.http.auditLog":          {f.Host.HTTP.AuditLog, "/var/log/ejob/audit.log"},
	} {
		t.Run(name, func(t *testing.T) {
			if !reflect.DeepEqual(tc.got, tc.want) {
				t.Errorf("got %#v, want %#v", tc.got, tc.want)
			}
		})
	}
	// The config node a Java instance would read, for the fields above.
	want := config.New("everyKey", 4)
	want.Cron, want.TimeZone = "0 0/1 * * * ?", "GMT+08:00"
	want.ShardingItemParameters, want.JobParameter = "0=Beijing,1=Shanghai,2=Guangzhou,3=Shenzhen", "a: b"
	want.MonitorExecution, want.Failover, want.Misfire = false, true, false
	want.MaxTimeDiffSeconds, want.ReconcileIntervalMinutes = 60, 0
	want.JobShardingStrategyType, want.JobExecutorThreadPoolSizeProviderType, want.JobErrorHandlerType = "ROUND_ROBIN", "SINGLE_THREAD", "THROW"
	want.JobListenerTypes, want.Description, want.Props = []string{"audit", "metrics"}, "my desc", c.Props
	want.Disabled, want.Overwrite, want.StaticSharding, want.Label = true, true, true, "lbl"
	if !c.Equal(want) {
		t.Errorf("config = %+v\nwant     %+v", c, want)
	}
}

// TestEveryKeyInSample keeps all-keys.yaml complete: every key the package
// knows appears in it. The keys of core/config's JobKeys need not (they
// may): TestEveryJobKeyDecoded reads each of them.
func TestEveryKeyInSample(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("testdata/all-keys.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var fileOnly []string
	for _, k := range fileOnlyJobKeys() {
		fileOnly = append(fileOnly, k.name)
	}
	all := [][]string{topKeys(), elasticjobKeys(), regCenterKeys(), dumpKeys(), fileOnly, ejobKeys(), httpKeys(), httpUserKeys(), oidcKeys()}
	// regCenter.sasl's keys cannot all be set at once: the other
	// mechanism's and the JAAS file's are in testdata/sasl.
	samples, _ := filepath.Glob("testdata/sasl/*.yaml")
	samples = append(samples, "testdata/standalone-keys.yaml")
	for _, p := range samples {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		data = append(data, b...)
	}
	all = append(all, saslKeys())
	for _, keys := range all {
		for _, k := range keys {
			switch k {
			case keyElasticJobClass, keyEnabled:
				continue // rejected, or true by default
			}
			if !regexp.MustCompile(`(?m)^\s*` + k + `:`).Match(data) {
				t.Errorf("key %s is missing from testdata/all-keys.yaml", k)
			}
		}
	}
}

// normalized drops what legitimately differs between two spellings of one file.
func normalized(f *File) *File {
	cp := *f
	cp.Name = ""
	cp.Jobs = nil
	for _, j := range f.Jobs {
		j.Line = 0
		j.Config = j.Config.Clone()
		cp.Jobs = append(cp.Jobs, j)
	}
	if f.Tracing != nil {
		t := *f.Tracing
		t.Line = 0
		cp.Tracing = &t
	}
	if f.Host.HTTP != nil {
		h := *f.Host.HTTP
		if h.OIDC != nil {
			o := *h.OIDC
			o.Line = 0
			h.OIDC = &o
		}
		cp.Host.HTTP = &h
	}
	return &cp
}

func TestKebabCaseEqualsCamelCase(t *testing.T) {
	t.Parallel()
	camel := normalized(mustLoad(t, "testdata/all-keys.yaml", catalog()))
	kebab := normalized(mustLoad(t, "testdata/all-keys-kebab.yaml", catalog()))
	if !camel.Jobs[0].Config.Equal(kebab.Jobs[0].Config) {
		t.Errorf("job config differs:\ncamel %+v\nkebab %+v", camel.Jobs[0].Config, kebab.Jobs[0].Config)
	}
	camel.Jobs[0].Config, kebab.Jobs[0].Config = nil, nil
	if !reflect.DeepEqual(camel, kebab) {
		t.Errorf("files differ:\ncamel %+v\nkebab %+v", camel, kebab)
	}
}

func TestStarterExamples(t *testing.T) {
	t.Parallel()
	t.Run("typed jobs verbatim: tracing needs a dataSource", func(t *testing.T) {
		t.Parallel()
		_, err := Load("testdata/starter-typed.yaml", catalog())
		want := "testdata/starter-typed.yaml:18: elasticjob.tracing: no dataSource: a host on ZooKeeper records into a database its peers share " +
			"(set elasticjob.tracing.dataSource.url, e.g. jdbc:postgresql://db:5432/ejob; a standalone host defaults to SQLite)"
		if err == nil || err.Error() != want || !errors.Is(err, ErrInvalidFile) {
			t.Fatalf("err = %v\nwant  %s", err, want)
		}
	})
	t.Run("typed jobs", func(t *testing.T) {
		t.Parallel()
		data, err := os.ReadFile("testdata/starter-typed.yaml")
		if err != nil {
			t.Fatal(err)
		}
		// The file without its tracing section (a host on ZooKeeper needs a
		// dataSource there).
		before, after, _ := bytes.Cut(data, []byte("  tracing:"))
		_, dump, _ := bytes.Cut(after, []byte("\n  dump:"))
		f, err := Parse("starter-typed.yaml", append(before, append([]byte("  dump:"), dump...)...), catalog())
		if err != nil {
			t.Fatal(err)
		}
		if f.Host.DumpPort == nil || *f.Host.DumpPort != 9888 {
			t.Errorf("dump port = %v, want 9888", f.Host.DumpPort)
		}
		if got, want := f.Registry, ptr(zookeeper.DefaultConfig("localhost:6181", "elasticjob-springboot")); !reflect.DeepEqual(got, want) {
			t.Errorf("registry = %+v, want %+v", got, want)
		}
		var names []string
		for _, j := range f.Jobs {
			names = append(names, fmt.Sprintf("%s:%s:%d:%q:%v", j.Name, j.Type, j.Config.ShardingTotalCount, j.Config.Props["script.command.line"], j.OneOff()))
		}
		want := []string{`manualScriptJob:SCRIPT:9:"echo Manual SCRIPT Job: ":true`, `scriptJob:SCRIPT:3:"echo SCRIPT Job: ":false`}
		if !reflect.DeepEqual(names, want) {
			t.Errorf("jobs = %q, want %q", names, want)
		}
		if j, _ := f.Job("manualScriptJob"); j.BootstrapBeanName != "manualScriptJobBean" {
			t.Errorf("jobBootstrapBeanName = %q", j.BootstrapBeanName)
		}
	})
	t.Run("class-based job rejected, nothing else", func(t *testing.T) {
		t.Parallel()
		_, err := Load("testdata/starter.yaml", catalog())
		want := `testdata/starter.yaml:7: elasticjob.jobs.dataflowJob.elasticJobClass: ejob cannot run the Java class "org.apache.shardingsphere.elasticjob.dataflow.job.DataflowJob": give the job an elasticJobType instead (SCRIPT, HTTP or a plugin's job type; Go code runs as a job-type plugin built with package sdk, or in your own program through the ejob library)`
		if err == nil || err.Error() != want {
			t.Errorf("err = %v\nwant  %s", err, want)
		}
	})
	t.Run("properties spelling", func(t *testing.T) {
		t.Parallel()
		f := mustLoad(t, "testdata/starter-kebab.yaml", catalog())
		c := f.Jobs[0].Config
		if c.ShardingItemParameters != "0=a,1=b,2=c" || c.JobExecutorThreadPoolSizeProviderType != "SINGLE_THREAD" || !c.LegacyThreadPoolKey {
			t.Errorf("config = %+v", c)
		}
	})
}

func ptr[T any](v T) *T { return &v }

func TestDefaults(t *testing.T) {
	t.Parallel()
	f, err := Parse("min.yaml", []byte("elasticjob:\n  jobs:\n    j:\n      elasticJobType: SCRIPT\n      shardingTotalCount: 2\n"), LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if f.Registry != nil {
		t.Errorf("registry = %v, want nil (embedded registry)", f.Registry)
	}
	if want := (HostSettings{DrainTimeout: DefaultDrainTimeout, JavaPeers: JavaPeersWarn}); f.Host != want {
		t.Errorf("host = %+v, want %+v", f.Host, want)
	}
	want := config.New("j", 2)
	if c := f.Jobs[0].Config; !c.Equal(want) || c.LegacyThreadPoolKey {
		t.Errorf("config = %+v, want the Java API defaults %+v", c, want)
	}
	if !f.Jobs[0].OneOff() {
		t.Error("a job without cron is one-off")
	}
}

func TestLoadResolvesRelativePaths(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "ejob.yaml")
	data := "elasticjob:\n  jobs:\n    j: {elasticJobType: SCRIPT, shardingTotalCount: 1}\nejob:\n  pluginsDir: plugins\n  lockFile: /abs/lock\n"
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	f := mustLoad(t, path, LoadOptions{})
	if f.Host.PluginsDir != filepath.Join(dir, "plugins") || f.Host.LockFile != "/abs/lock" {
		t.Errorf("host = %+v", f.Host)
	}
	p, err := Parse("x.yaml", []byte(data), LoadOptions{})
	if err != nil || p.Host.PluginsDir != "plugins" {
		t.Errorf("Parse keeps paths as written: %+v, %v", p, err)
	}
	if _, err := Load(filepath.Join(dir, "missing.yaml"), LoadOptions{}); !errors.Is(err, os.ErrNotExist) || errors.Is(err, ErrInvalidFile) {
		t.Errorf("missing file: %v", err)
	}
}

// TestSyntaxErrorPosition: a YAML syntax error is reported at the line and
// column of the offending character, not at the line of the mapping it is
// in (which is all gopkg.in/yaml.v3 says).
func TestSyntaxErrorPosition(t *testing.T) {
	t.Parallel()
	head := "elasticjob:\n  jobs:\n    j:\n      elasticJobType: SCRIPT\n"
	for name, tc := range map[string]struct{ text, want string }{
		"tab":           {head + "\tshardingTotalCount: 1\n", "f.yaml:5:1: invalid YAML: found a tab character that violates indentation"},
		"indentation":   {head + "     shardingTotalCount: 1\n", "f.yaml:5:6: invalid YAML: did not find expected key"},
		"open quote":    {head + "      cron: \"0 * * * * ?\n      shardingTotalCount: 1\n", "f.yaml:5:13: invalid YAML: found unexpected end of stream"},
		"open sequence": {"elasticjob:\n  jobs:\n    j:\n      jobListenerTypes: [a\n      shardingTotalCount: 1\n", "f.yaml:5:7: invalid YAML: did not find expected ',' or ']'"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse("f.yaml", []byte(tc.text), LoadOptions{})
			if err == nil || err.Error() != tc.want {
				t.Errorf("err = %v\nwant  %s", err, tc.want)
			}
		})
	}
}

func TestBadFiles(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]string{
		"unknown-key": `
5: elasticjob.jobs.job1: unknown key "shardingTotalCont" (did you mean "shardingTotalCount"?)
6: elasticjob.jobs.job1: unknown key "script.command.line" (job-type and error-handler properties go under props)
8: ejob: unknown key "pluginDir" (did you mean "pluginsDir"?)`,
		"wrong-type": `
5: elasticjob.jobs.job1.shardingTotalCount: want an integer, got "three"
6: elasticjob.jobs.job1.failover: want true or false, got "maybe"
7: elasticjob.jobs.job1.cron: want a string, got a list
9: ejob.drainTimeout: want a duration such as 30s or 2m, got "30"`,
		"duplicate-key": `
6: elasticjob.jobs.job1: duplicate key "sharding-total-count": "shardingTotalCount" at line 5 is the same key
9: elasticjob.jobs.job1.props: duplicate key "script.command.line" (first at line 8)
10: elasticjob.jobs: duplicate key "job1" (first at line 3)`,
		"unknown-type": `
4: elasticjob.jobs.job1.elasticJobType: unknown job type "SCRIPTS" (available: HTTP, SCRIPT)
6: elasticjob.jobs.job1.jobShardingStrategyType: unknown sharding strategy type "ROUND" (available: AVG_ALLOCATION, ODEVITY, ROUND_ROBIN)
7: elasticjob.jobs.job1.jobExecutorServiceHandlerType: unknown thread pool type "SINGLE" (available: CPU, SINGLE_THREAD)
8: elasticjob.jobs.job1.jobErrorHandlerType: unknown error handler type "MAIL" (available: IGNORE, LOG, THROW)
11: elasticjob.jobs.job1.jobListenerTypes: unknown job listener type "nosuch" (available: audit, metrics)`,
		"invalid-cron": `
5: elasticjob.jobs.job1.cron: invalid cron "0/5 * * * ?": read as a standard crontab (5 fields): day-of-week field: '?' is Quartz syntax; in a 5-field crontab write '*' (a Quartz expression has 6 or 7 fields, seconds first)
9: elasticjob.jobs.quartz.cron: invalid cron "* * * * * *": read as Quartz (6 fields): specifying both a day-of-month and a day-of-week is not supported; use '?' in one of them
13: elasticjob.jobs.every.cron: invalid cron "@every 0s": read as a descriptor (starts with @): @every needs a positive whole number of seconds (fire times are whole seconds), got 0s
17: elasticjob.jobs.crontab.cron: invalid cron "0 0 * * 7": read as a standard crontab (5 fields): day-of-week field: end of range (7) above maximum (6): 7`,
		"bad-time-zone": `
6: elasticjob.jobs.iana.timeZone: cron: time zone "Asia/Shangai": unknown time zone (want an IANA name such as Asia/Shanghai, UTC, or GMT+08:00): unknown time zone Asia/Shangai
11: elasticjob.jobs.offset.timeZone: cron: time zone "GMT+25:00": unknown time zone (want an IANA name such as Asia/Shanghai, UTC, or GMT+08:00): unknown time zone GMT+25:00`,
		"bad-sharding-item-parameters": `
6: elasticjob.jobs.format.shardingItemParameters: cannot parse: Sharding item parameters '0=a,1' format error, should be int=xx,int=xx
10: elasticjob.jobs.key.shardingItemParameters: cannot parse: Sharding item parameters key 'x' is not an integer.
14: elasticjob.jobs.range.shardingItemParameters: item 3 is outside [0, 3)
18: elasticjob.jobs.twice.shardingItemParameters: item 0 is given more than once (upstream would keep the last, "c")`,
		"missing-sharding-total-count": `
3: elasticjob.jobs.job1: missing required key shardingTotalCount`,
		"unset-env": `
3: elasticjob.regCenter.serverLists: environment variable ZK_SERVERS is not set (write ${ZK_SERVERS:default} to give a default)
10: elasticjob.jobs.job1.props.script.command.line: environment variable GREETING is not set (write ${GREETING:default} to give a default)`,
		"java-class": `
4: elasticjob.jobs.dataflowJob.elasticJobClass: ejob cannot run the Java class "org.apache.shardingsphere.elasticjob.dataflow.job.DataflowJob": give the job an elasticJobType instead (SCRIPT, HTTP or a plugin's job type; Go code runs as a job-type plugin built with package sdk, or in your own program through the ejob library)`,
		"no-jobs": `
5: elasticjob.jobs: no jobs: a host without jobs has nothing to run`,
		"invalid-job-name": `
3: elasticjob.jobs.a/b: invalid job name: "a/b" must not contain '/'
6: elasticjob.jobs.x@-@y: invalid job name: "x@-@y" must not contain "@-@" (the task id separator)`,
		"syntax": `
5:6: invalid YAML: did not find expected key`,
		"registry": `
2: elasticjob.regCenter: missing required key namespace (remove regCenter to run standalone on the embedded registry)
3: elasticjob.regCenter.serverLists: "localhost" is not host:port: address localhost: missing port in address
4: elasticjob.regCenter.maxRetries: must be at most 29 (Curator's limit), got 40
5: elasticjob.regCenter.digest: must be user:password`,
		"several": `
3: elasticjob.dump.port: Port value out of range: 70000 (want 0 to 65535; 0 picks a free port)
7: elasticjob.jobs.zeta.shardingTotalCount: must be greater than 0, got 0
11: elasticjob.jobs.alpha.cron: invalid cron "not a cron": 3 fields fit no syntax: want 5 (crontab: minute hour day-of-month month day-of-week), 6 or 7 (Quartz: second minute hour day-of-month month day-of-week [year]), or a descriptor (@hourly, @daily, @every 90s, ...)
12: elasticjob.jobs.alpha.misfire: want true or false, got "sometimes"
13: elasticjob.tracing: missing required key type (RDB records into a database)
13: elasticjob.tracing: [tracing.includeJobNames] and [tracing.excludeJobNames] are mutually exclusive.`,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			path := "testdata/bad/" + name + ".yaml"
			opts := catalog()
			opts.Getenv = env()
			f, err := Load(path, opts)
			if f != nil {
				t.Errorf("Load returned a File with an error: %+v", f)
			}
			wantLines := strings.Split(strings.TrimPrefix(want, "\n"), "\n")
			for i := range wantLines {
				wantLines[i] = path + ":" + wantLines[i]
			}
			if err == nil || err.Error() != strings.Join(wantLines, "\n") {
				t.Fatalf("error:\n%v\nwant:\n%s", err, strings.Join(wantLines, "\n"))
			}
			var fe *FileError
			if !errors.Is(err, ErrInvalidFile) || !errors.As(err, &fe) || len(fe.Problems) != len(wantLines) {
				t.Errorf("error %T does not wrap ErrInvalidFile or has the wrong problem count", err)
			}
		})
	}
}

func TestErrorsAreTyped(t *testing.T) {
	t.Parallel()
	opts := catalog()
	opts.Getenv = env()
	for name, tc := range map[string]struct {
		file   string
		target error
	}{
		"unknown type":  {"unknown-type", spi.ErrUnknownType},
		"unset env":     {"unset-env", ErrEnvNotSet},
		"sharding item": {"bad-sharding-item-parameters", config.ErrInvalid},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := Load("testdata/bad/"+tc.file+".yaml", opts)
			if !errors.Is(err, tc.target) || !errors.Is(err, ErrInvalidFile) {
				t.Errorf("errors.Is(%v, %v) = false", err, tc.target)
			}
		})
	}
}

func TestParseProblems(t *testing.T) {
	t.Parallel()
	job := "  jobs:\n    j: {elasticJobType: SCRIPT, shardingTotalCount: 1}\n"
	for name, tc := range map[string]struct{ data, want string }{
		"empty file":        {"", "f.yaml:1: no elasticjob section: a host without jobs has nothing to run (add jobs under elasticjob.jobs)"},
		"no jobs key":       {"elasticjob:\n  regCenter: {serverLists: 'h:1', namespace: n}\n", "f.yaml:1: elasticjob: no jobs: a host without jobs has nothing to run (add jobs under elasticjob.jobs)"},
		"top-level unknown": {"spring:\n  application: x\nelasticjob:\n" + job, `f.yaml:1: top level: unknown key "spring" (known keys: elasticjob, ejob)`},
		"misplaced key":     {"elasticjob:\n  pluginsDir: x\n" + job, `f.yaml:2: elasticjob: unknown key "pluginsDir" (it belongs under ejob)`},
		"two documents":     {"elasticjob:\n" + job + "---\nejob: {}\n", "f.yaml:4: a second YAML document (---): the file must hold one document"},
		"not a mapping":     {"elasticjob: [1]\n", "f.yaml:1: elasticjob: want a mapping, got a list"},
		"disabled":          {"elasticjob:\n  enabled: false\n" + job, "f.yaml:2: elasticjob.enabled: false would disable every job; remove the key to run them"},
		"both job kinds":    {"elasticjob:\n  jobs:\n    j:\n      elasticJobClass: a.B\n      elasticJobType: SCRIPT\n      shardingTotalCount: 1\n", "f.yaml:5: elasticjob.jobs.j: elasticJobClass and elasticJobType are mutually exclusive"},
		"no type":           {"elasticjob:\n  jobs:\n    j:\n      shardingTotalCount: 1\n", "f.yaml:3: elasticjob.jobs.j: missing required key elasticJobType (available: HTTP, SCRIPT)"},
		"type as key":       {"elasticjob:\n  jobs:\n    j:\n      type: SCRIPT\n      shardingTotalCount: 1\n", `f.yaml:4: elasticjob.jobs.j: unknown key "type" (did you mean "elasticJobType"?)`},
		"two thread-pool spellings": {"elasticjob:\n  jobs:\n    j:\n      elasticJobType: SCRIPT\n      shardingTotalCount: 1\n      jobExecutorServiceHandlerType: CPU\n      jobExecutorThreadPoolSizeProviderType: CPU\n",
			"f.yaml:7: elasticjob.jobs.j: jobExecutorThreadPoolSizeProviderType and jobExecutorServiceHandlerType are two spellings of one key; set only jobExecutorThreadPoolSizeProviderType"},
		"int out of range":  {"elasticjob:\n  jobs:\n    j: {elasticJobType: SCRIPT, shardingTotalCount: 3000000000}\n", "f.yaml:3: elasticjob.jobs.j.shardingTotalCount: 3000000000 is out of range (a Java int: -2147483648 to 2147483647)"},
		"list in props":     {"elasticjob:\n  jobs:\n    j:\n      elasticJobType: SCRIPT\n      shardingTotalCount: 1\n      props:\n        email.to: [a, b]\n", "f.yaml:7: elasticjob.jobs.j.props.email.to: want a string, got a list (write a list as one comma-separated string)"},
		"retry prop":        {"elasticjob:\n  jobs:\n    j:\n      elasticJobType: SCRIPT\n      shardingTotalCount: 1\n      props:\n        script.command.line: echo\n        ejob.retry.max: -1\n", `f.yaml:8: elasticjob.jobs.j.props.ejob.retry.max: want an integer from 0 to 2147483647, got "-1"`},
		"retry nested":      {"elasticjob:\n  jobs:\n    j:\n      elasticJobType: SCRIPT\n      shardingTotalCount: 1\n      props:\n        ejob:\n          retry: {backoff: 2s, backoffMax: 1s}\n", "f.yaml:8: elasticjob.jobs.j.props.ejob.retry.backoffMax: 1s is less than ejob.retry.backoff (2s)"},
		"dump without port": {"elasticjob:\n  dump: {enabled: true}\n" + job, "f.yaml:2: elasticjob.dump: missing required key port (or enabled: false, or remove the section)"},
		"dump port":         {"elasticjob:\n  dump: {port: -1}\n" + job, "f.yaml:2: elasticjob.dump.port: Port value out of range: -1 (want 0 to 65535; 0 picks a free port)"},
		"dump key":          {"elasticjob:\n  dump: {prot: 1}\n" + job, `f.yaml:2: elasticjob.dump: unknown key "prot" (did you mean "port"?)`},
		"dump address":      {"elasticjob:\n  dump: {port: 1, address: 'localhost:9888'}\n" + job, `f.yaml:2: elasticjob.dump.address: "localhost:9888" is not an IP address (want 127.0.0.1, the default, or ::1 for loopback; a host's own address; 0.0.0.0 or :: for every interface)`},
		"log level":         {"elasticjob:\n" + job + "ejob: {logLevel: verbose}\n", `f.yaml:4: ejob.logLevel: want trace, debug, info, warn or error, got "verbose"`},
		"java peers":        {"elasticjob:\n" + job + "ejob:\n  javaPeers: loud\n", `f.yaml:5: ejob.javaPeers: want warn, strict or off, got "loud"`},
		"empty type":        {"elasticjob:\n  jobs:\n    j: {elasticJobType: '', shardingTotalCount: 1}\n", "f.yaml:3: elasticjob.jobs.j.elasticJobType: must not be empty (available: HTTP, SCRIPT)"},
		"bad placeholder":   {"elasticjob:\n  jobs:\n    j: {elasticJobType: '${X', shardingTotalCount: 1}\n", `f.yaml:3: elasticjob.jobs.j.elasticJobType: unterminated placeholder "${X" (write $${ for a literal ${)`},
		"tracing both lists": {"elasticjob:\n  tracing:\n    type: RDB\n    includeJobNames: a\n    excludeJobNames: [b]\n" + job,
			"f.yaml:2: elasticjob.tracing: [tracing.includeJobNames] and [tracing.excludeJobNames] are mutually exclusive."},
		"retention without tracing": {"elasticjob:\n" + job + "ejob: {tracingRetention: 30d}\n",
			"f.yaml:1: ejob.tracingRetention is set but elasticjob has no tracing section: nothing is recorded to purge"},
		"bad retention": {"elasticjob:\n  tracing: {type: RDB}\n" + job + "ejob: {tracingRetention: 3x}\n",
			`f.yaml:5: ejob.tracingRetention: want a duration such as 30s or 2m, got "3x"`},
		"tracing unknown type": {"elasticjob:\n  tracing: {type: MONGO}\n" + job, `f.yaml:2: elasticjob.tracing.type: unknown tracing type "MONGO" (available: RDB)`},
		"tracing unknown key":  {"elasticjob:\n  tracing: {type: RDB, dataSourc: {}}\n" + job, `f.yaml:2: elasticjob.tracing: unknown key "dataSourc" (did you mean "dataSource"?)`},
		"tracing on ZooKeeper without dataSource": {"elasticjob:\n  regCenter: {serverLists: 'h:1', namespace: n}\n  tracing: {type: RDB}\n" + job,
			"f.yaml:3: elasticjob.tracing: no dataSource: a host on ZooKeeper records into a database its peers share (set elasticjob.tracing.dataSource.url, e.g. jdbc:postgresql://db:5432/ejob; a standalone host defaults to SQLite)"},
		"http public without users": {"elasticjob:\n" + job + "ejob:\n  http: {listen: 0.0.0.0:8088}\n",
			`f.yaml:5: ejob.http.listen: "0.0.0.0:8088" is not a loopback address and no users are configured: add ejob.http.users (name, passwordHash, role) or ejob.http.oidc, or listen on 127.0.0.1`},
		"http no listen": {"elasticjob:\n" + job + "ejob:\n  http: {users: []}\n", "f.yaml:5: ejob.http: missing required key listen (e.g. listen: 127.0.0.1:8088)"},
		"http session idle": {"elasticjob:\n" + job + "ejob:\n  http: {listen: 127.0.0.1:1, sessionIdleTimeout: 10}\n",
			`f.yaml:5: ejob.http.sessionIdleTimeout: want a duration such as 30s or 2m, got "10"`},
		"http session max": {"elasticjob:\n" + job + "ejob:\n  http: {listen: 127.0.0.1:1, sessionMaxAge: 10ms}\n",
			`f.yaml:5: ejob.http.sessionMaxAge: want at least 1s, got 10ms`},
		"http bad listen": {"elasticjob:\n" + job + "ejob:\n  http: {listen: 8088}\n", `f.yaml:5: ejob.http.listen: want host:port (e.g. 127.0.0.1:8088), got "8088"`},
		"http plain password": {"elasticjob:\n" + job + "ejob:\n  http:\n    listen: 127.0.0.1:1\n    users:\n      - {name: a, passwordHash: secret, role: admin}\n",
			"f.yaml:8: ejob.http.users[0].passwordHash: not a bcrypt hash (crypto/bcrypt: hashedSecret too short to be a bcrypted password): store the hash, never the password (`ejob hash-password` or `htpasswd -nbBC 12 USER PASSWORD` makes one)"},
		"http role": {"elasticjob:\n" + job + "ejob:\n  http:\n    listen: 127.0.0.1:1\n    users:\n      - {name: a, passwordHash: '$2a$10$yvzp0AnemBgJhnX8b7YqouLn.eKECbS8KFEGKpVsE1EYTmoT1Aq.C', role: root}\n",
			`f.yaml:8: ejob.http.users[0].role: want admin or guest, got "root"`},
		"oidc missing keys": {"elasticjob:\n" + job + "ejob:\n  http:\n    listen: 127.0.0.1:1\n    oidc: {issuer: 'https://sso.example.com', clientId: c, roleClaim: groups, adminValues: [a]}\n",
			"f.yaml:7: ejob.http.oidc: missing required key clientSecret (write ${ENV_VAR} to keep it out of the file)\n" +
				"f.yaml:7: ejob.http.oidc: missing required key redirectUrl (e.g. https://ejob.example.com/login/sso/callback)"},
		"oidc http issuer": {"elasticjob:\n" + job + "ejob:\n  http:\n    listen: 127.0.0.1:1\n    oidc:\n      issuer: http://sso.example.com\n      clientId: c\n      clientSecret: s\n      redirectUrl: http://127.0.0.1:1/login/sso/callback\n      roleClaim: groups\n      adminValues: a\n",
			`f.yaml:8: ejob.http.oidc.issuer: want https (http only on a loopback host such as 127.0.0.1), got "http://sso.example.com"`},
		"oidc redirect path": {"elasticjob:\n" + job + "ejob:\n  http:\n    listen: 127.0.0.1:1\n    oidc:\n      issuer: http://127.0.0.1:9\n      clientId: c\n      clientSecret: s\n      redirectUrl: https://ejob.example.com/callback\n      roleClaim: groups\n      adminValues: a\n",
			`f.yaml:11: ejob.http.oidc.redirectUrl: the path must end in /login/sso/callback (the console's callback), without query or fragment, got "https://ejob.example.com/callback"`},
		"oidc no values": {"elasticjob:\n" + job + "ejob:\n  http:\n    listen: 127.0.0.1:1\n    oidc:\n      issuer: https://sso.example.com\n      clientId: c\n      clientSecret: s\n      redirectUrl: https://ejob.example.com/login/sso/callback\n      roleClaim: groups\n",
			"f.yaml:8: ejob.http.oidc: set adminValues and/or readOnlyValues: the values of roleClaim that give the admin and the read-only role (a user matching none is refused)"},
		"oidc value in both": {"elasticjob:\n" + job + "ejob:\n  http:\n    listen: 127.0.0.1:1\n    oidc:\n      issuer: https://sso.example.com\n      clientId: c\n      clientSecret: s\n      redirectUrl: https://ejob.example.com/login/sso/callback\n      roleClaim: groups\n      adminValues: [ops]\n      readOnlyValues: [ops]\n",
			`f.yaml:14: ejob.http.oidc.readOnlyValues: "ops" is also in ejob.http.oidc.adminValues: a value gives one role`},
		"oidc unknown key": {"elasticjob:\n" + job + "ejob:\n  http:\n    listen: 127.0.0.1:1\n    oidc: {isuer: x, clientId: c, clientSecret: s, redirectUrl: 'https://e.example.com/login/sso/callback', roleClaim: g, adminValues: a}\n",
			`f.yaml:7: ejob.http.oidc: unknown key "isuer" (did you mean "issuer"?)`},
		"http cheap hash": {"elasticjob:\n" + job + "ejob:\n  http:\n    listen: 127.0.0.1:1\n    users:\n      - {name: ops, passwordHash: '$2a$04$hgYuP43l7JeVt98vBKJY9O9jhXOhENKThfrvIrZuAa2w3uTCG0bmq', role: admin}\n",
			"f.yaml:8: ejob.http.users[0].passwordHash: user \"ops\": the bcrypt hash has cost 4, want at least 10 (a cheap hash makes guessed passwords cheap to try): make a new one with `ejob hash-password`"},
		"http plain on a public address": {"elasticjob:\n" + job + "ejob:\n  http:\n    listen: 0.0.0.0:8088\n    users:\n      - {name: a, passwordHash: '$2a$10$yvzp0AnemBgJhnX8b7YqouLn.eKECbS8KFEGKpVsE1EYTmoT1Aq.C', role: admin}\n",
			`f.yaml:6: ejob.http.listen: plain HTTP on a non-loopback address: "0.0.0.0:8088" would send passwords and session cookies in clear: set ejob.http.tls (certFile, keyFile), or allowInsecureHTTP: true when a proxy in front terminates TLS, or listen on 127.0.0.1`},
		"http tls missing key": {"elasticjob:\n" + job + "ejob:\n  http:\n    listen: 127.0.0.1:1\n    tls: {certFile: c.pem}\n",
			"f.yaml:7: ejob.http.tls: missing required key keyFile (a PEM file)"},
		"http tls unreadable": {"elasticjob:\n" + job + "ejob:\n  http:\n    listen: 127.0.0.1:1\n    tls: {certFile: /nonexistent/c.pem, keyFile: /nonexistent/k.pem}\n",
			"f.yaml:7: ejob.http.tls: certificate /nonexistent/c.pem and key /nonexistent/k.pem: open /nonexistent/c.pem: no such file or directory"},
		"http trusted proxy": {"elasticjob:\n" + job + "ejob:\n  http:\n    listen: 127.0.0.1:1\n    trustedProxies: [10.0.0.0/8, proxy.example.com]\n",
			`f.yaml:7: ejob.http.trustedProxies[1]: want an IP address or a CIDR range such as 10.0.0.0/8, got "proxy.example.com"`},
		"http insecure not a bool": {"elasticjob:\n" + job + "ejob:\n  http:\n    listen: 127.0.0.1:1\n    allowInsecureHTTP: maybe\n",
			`f.yaml:7: ejob.http.allowInsecureHTTP: want true or false, got "maybe"`},
		"http user key": {"elasticjob:\n" + job + "ejob:\n  http:\n    listen: 127.0.0.1:1\n    users:\n      - {name: a, password: x, role: admin}\n",
			"f.yaml:8: ejob.http.users[0]: unknown key \"password\" (did you mean \"passwordHash\"?)"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f, err := Parse("f.yaml", []byte(tc.data), catalog())
			if err == nil || err.Error() != tc.want {
				t.Errorf("error:\n%v\nwant:\n%s\n(file %+v)", err, tc.want, f)
			}
		})
	}
}

func TestValidateProps(t *testing.T) {
	t.Parallel()
	opts := catalog()
	var calls []string
	opts.ValidateProps = func(k spi.Kind, typ, job string, props map[string]string) error {
		calls = append(calls, fmt.Sprintf("%s/%s/%s", k, typ, job))
		if k == spi.KindErrorHandler && props["email.host"] == "" {
			return fmt.Errorf("%w: The property `email.host` is required.", spi.ErrInvalidConfig)
		}
		return nil
	}
	opts.KnownType = func(spi.Kind, string) bool { return true }
	data := "elasticjob:\n  jobs:\n    j:\n      elasticJobType: SCRIPT\n      shardingTotalCount: 1\n      jobErrorHandlerType: EMAIL\n      props:\n        script.command.line: echo\n        email.host: ''\n"
	_, err := Parse("f.yaml", []byte(data), opts)
	want := "f.yaml:9: elasticjob.jobs.j.props: invalid for error handler type EMAIL: invalid config: The property `email.host` is required."
	if err == nil || err.Error() != want || !errors.Is(err, spi.ErrInvalidConfig) {
		t.Errorf("error:\n%v\nwant:\n%s", err, want)
	}
	if want := []string{"jobtype/SCRIPT/j", "errorhandler/EMAIL/j"}; !reflect.DeepEqual(calls, want) {
		t.Errorf("calls = %q, want %q", calls, want)
	}
}

func TestYAMLFeatures(t *testing.T) {
	t.Parallel()
	data := `
defaults: &defaults
  elasticJobType: SCRIPT
  shardingTotalCount: 2
  failover: yes
elasticjob:
  jobs:
    a:
      <<: *defaults
      shardingTotalCount: 5
    b:
      <<: *defaults
      props:
        streaming.process: On
        quoted: 'yes'
        number: 010
        empty:
        email: {host: smtp, port: 465}
`
	_, err := Parse("f.yaml", []byte(data), LoadOptions{})
	if err == nil || !strings.Contains(err.Error(), `unknown key "defaults"`) {
		t.Fatalf("want an unknown-key error for the anchor holder, got %v", err)
	}
	data = `
elasticjob:
  jobs:
    a: &defaults
      elasticJobType: SCRIPT
      shardingTotalCount: 2
      failover: yes
    b:
      <<: *defaults
      shardingTotalCount: 5
      props:
        streaming.process: On
        quoted: 'yes'
        number: 010
        empty:
        email: {host: smtp, port: 465}
`
	f, err := Parse("f.yaml", []byte(data), LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	a, _ := f.Job("a")
	b, _ := f.Job("b")
	if a.Config.ShardingTotalCount != 2 || !a.Config.Failover || b.Type != "SCRIPT" || b.Config.ShardingTotalCount != 5 || !b.Config.Failover {
		t.Errorf("merge: a=%+v b=%+v", a.Config, b.Config)
	}
	want := map[string]string{"streaming.process": "true", "quoted": "yes", "number": "010", "empty": "", "email.host": "smtp", "email.port": "465"}
	if !reflect.DeepEqual(b.Config.Props, want) {
		t.Errorf("props = %q, want %q", b.Config.Props, want)
	}
}

func TestAliasExpansionIsBounded(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString("elasticjob:\n  jobs:\n    j:\n      elasticJobType: SCRIPT\n      shardingTotalCount: 1\n      props:\n        l0: &l0 {a: x, b: x, c: x, d: x, e: x, f: x, g: x, h: x, i: x, j: x}\n")
	for i := 1; i < 9; i++ {
		fmt.Fprintf(&b, "        l%d: &l%d {a: *l%d, b: *l%d, c: *l%d, d: *l%d, e: *l%d, f: *l%d, g: *l%d, h: *l%d, i: *l%d, j: *l%d}\n", i, i, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1)
	}
	_, err := Parse("f.yaml", []byte(b.String()), LoadOptions{})
	if err == nil || !strings.Contains(err.Error(), "too many nested entries") {
		t.Fatalf("err = %v", err)
	}
}

func TestEnvExpansionInFile(t *testing.T) {
	t.Parallel()
	data := `
elasticjob:
  regCenter:
    serverLists: ${ZK:localhost:2181}
    namespace: ${NS}
  jobs:
    j:
      elasticJobType: SCRIPT
      shardingTotalCount: ${COUNT:3}
      props:
        script.command.line: echo $${HOME} ${GREETING} $$ ${EMPTY}
        email:
          password: ${MAIL_PW:${FALLBACK_PW:none}}
`
	f, err := Parse("f.yaml", []byte(data), LoadOptions{Getenv: env("NS", "prod", "GREETING", "hi", "EMPTY", "", "FALLBACK_PW", "pw")})
	if err != nil {
		t.Fatal(err)
	}
	c := f.Jobs[0].Config
	for name, tc := range map[string]struct{ got, want any }{
		"default with colon": {f.Registry.ServerLists, "localhost:2181"},
		"set":                {f.Registry.Namespace, "prod"},
		"default for an int": {c.ShardingTotalCount, 3},
		"escape, $$, empty":  {c.Props["script.command.line"], "echo ${HOME} hi $$ "},
		"nested default":     {c.Props["email.password"], "pw"},
	} {
		if !reflect.DeepEqual(tc.got, tc.want) {
			t.Errorf("%s: got %#v, want %#v", name, tc.got, tc.want)
		}
	}
}

func TestExpand(t *testing.T) {
	t.Parallel()
	lookup := env("A", "1", "B", "", "SELF", "${A}")
	for in, want := range map[string]string{
		"plain":            "plain",
		"${A}":             "1",
		"x${A}y${A}":       "x1y1",
		"${B:default}":     "",
		"${C:default}":     "default",
		"${C:}":            "",
		"${C:a:b}":         "a:b",
		"${C:${A}}":        "1",
		"${C:${D:deep}}":   "deep",
		"$${A}":            "${A}",
		"$$${A}":           "$${A}",
		"$A $$ $":          "$A $$ $",
		"${SELF}":          "${A}",
		"${C:{x}}":         "{x}",
		"cost: $5, ${A}":   "cost: $5, 1",
		"${C:$${literal}}": "${literal}",
	} {
		got, err := expand(in, lookup)
		if err != nil || got != want {
			t.Errorf("expand(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for in, want := range map[string]string{
		"${C}":      "environment variable C is not set (write ${C:default} to give a default)",
		"${A":       `unterminated placeholder "${A" (write $${ for a literal ${)`,
		"${}":       `placeholder "${}" has no variable name`,
		"${:x}":     `placeholder "${:x}" has no variable name`,
		"${C:${D}}": "environment variable D is not set (write ${D:default} to give a default)",
	} {
		if _, err := expand(in, lookup); err == nil || err.Error() != want {
			t.Errorf("expand(%q) error = %v, want %q", in, err, want)
		}
	}
}

func TestHostIPOptions(t *testing.T) {
	t.Parallel()
	getenv := func(k string) string {
		return map[string]string{"EJOB_PREFERRED_NETWORK_INTERFACE": "eth9", "EJOB_PREFERRED_NETWORK_IP": "10."}[k]
	}
	o := HostSettings{PreferredNetworkIP: "192.168.*"}.IPOptions(getenv)
	if o.PreferredInterface != "eth9" || o.PreferredIP != "192.168.*" {
		t.Errorf("IPOptions = %+v", o)
	}
}

// TestDocExample keeps the complete example of docs/configuration.md
// loadable: testdata/example.yaml is that example, verbatim.
func TestDocExample(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("../../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	example, err := os.ReadFile("testdata/example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(doc), "```yaml\n"+string(example)+"```") {
		t.Error("testdata/example.yaml differs from the complete example in docs/configuration.md")
	}
	opts := catalog()
	opts.Getenv = env("ZK_PASSWORD", "pw")
	f := mustLoad(t, "testdata/example.yaml", opts)
	var got []string
	for _, j := range f.Jobs {
		got = append(got, fmt.Sprintf("%s/%s/oneOff=%v", j.Name, j.Type, j.OneOff()))
	}
	want := []string{"cityReport/SCRIPT/oneOff=false", "pingBilling/HTTP/oneOff=false", "rebuildIndex/SCRIPT/oneOff=true"}
	if !reflect.DeepEqual(got, want) || f.Registry.Digest != "ejob:pw" || f.Host.DrainTimeout != time.Minute {
		t.Errorf("jobs = %q, registry = %+v, host = %+v", got, f.Registry, f.Host)
	}
}

func TestTimeZonesIANAAndGMT(t *testing.T) {
	t.Parallel()
	for _, tz := range []string{"Asia/Shanghai", "Europe/London", "UTC", "GMT", "GMT+08:00", "GMT-5"} {
		data := "elasticjob:\n  jobs:\n    j:\n      elasticJobType: SCRIPT\n      cron: 0 0 2 * * ?\n      timeZone: " + tz + "\n      shardingTotalCount: 1\n"
		f, err := Parse("tz.yaml", []byte(data), catalog())
		if err != nil {
			t.Errorf("timeZone %s: %v", tz, err)
			continue
		}
		if got := f.Jobs[0].Config.TimeZone; got != tz {
			t.Errorf("timeZone %s parsed as %q", tz, got)
		}
	}
}

func TestOpenDespiteProblemsElsewhere(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := filepath.Join(dir, "f.yaml")
	os.WriteFile(p, []byte("elasticjob:\n  jobs:\n    j:\n      cron: bad\n      shardingTotalCount: x\nejob:\n  pluginsDir: plugins\n"), 0o644)
	o, err := Open(p, nil)
	if err != nil {
		t.Fatal(err)
	}
	if h := o.Host(); h.PluginsDir != filepath.Join(dir, "plugins") {
		t.Fatalf("pluginsDir = %q", h.PluginsDir)
	}
	if _, err := o.Check(LoadOptions{}); err == nil || !strings.Contains(err.Error(), ":4:") || !strings.Contains(err.Error(), ":5:") {
		t.Fatalf("Check: err = %v, want the cron (line 4) and shardingTotalCount (line 5) problems", err)
	}
	os.WriteFile(p, []byte("elasticjob:\n  jobs:\n    j:\n      cron: bad\nejob:\n  pluginDir: plugins\n"), 0o644)
	o, err = Open(p, nil)
	if err != nil {
		t.Fatal(err)
	}
	if o.HostOK() {
		t.Fatal("HostOK with an unknown key in the ejob section")
	}
	if _, err := o.Check(LoadOptions{}); err == nil || !strings.Contains(err.Error(), ":4:") || !strings.Contains(err.Error(), ":6:") {
		t.Fatalf("a problem in the ejob section: err = %v, want it (line 6) and the cron's (line 4)", err)
	}
}

// A file with problems in several sections, the ejob: section among them,
// must report every one with its line and key, sorted by line, not stop
// at the first section with a problem; a plugins directory that cannot be
// opened is one of them, at the pluginsDir key's line.
func TestOpenCheckReportsEveryProblem(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := filepath.Join(dir, "f.yaml")
	os.WriteFile(p, []byte(`ejob:
  drainTimeout: 10
  pluginsDir: ./nope
  logLevel: loud
elasticjob:
  dump:
    address: example.com
  jobs:
    a:
      elasticJobType: SCRIPT
      cron: "bad cron"
      shardingTotalCount: x
`), 0o644)
	o, err := Open(p, nil)
	if err != nil {
		t.Fatal(err)
	}
	if o.HostOK() {
		t.Fatal("HostOK with a bad drainTimeout and logLevel")
	}
	o.PluginsProblem(errors.New("plugins directory: stat nope: no such file or directory"), false)
	_, err = o.Check(LoadOptions{})
	var fe *FileError
	if !errors.As(err, &fe) {
		t.Fatalf("Check: err = %v, want a *FileError", err)
	}
	want := []string{
		p + ":2: ejob.drainTimeout: ",
		p + ":3: ejob.pluginsDir: plugins directory: stat nope",
		p + ":4: ejob.logLevel: ",
		p + ":7: elasticjob.dump.address: ",
		p + ":11: elasticjob.jobs.a.cron: ",
		p + ":12: elasticjob.jobs.a.shardingTotalCount: ",
	}
	if len(fe.Problems) != len(want) {
		t.Fatalf("got %d problems, want %d:\n%v", len(fe.Problems), len(want), err)
	}
	for i, w := range want {
		if got := fe.Problems[i].Error(); !strings.HasPrefix(got, w) {
			t.Errorf("problem %d = %q, want it to start with %q", i, got, w)
		}
	}
}

// A plugins directory that cannot be opened, with no pluginsDir key (it
// came from --plugins-dir), is reported at the ejob: section's line, else
// at line 1, naming where it came from.
func TestPluginsProblemLine(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := filepath.Join(dir, "f.yaml")
	for _, c := range []struct{ text, want string }{
		{"elasticjob:\n  jobs: {}\nejob:\n  logLevel: info\n", ":3: plugins directory (--plugins-dir or EJOB_PLUGINS_DIR): boom"},
		{"elasticjob:\n  jobs: {}\n", ":1: plugins directory (--plugins-dir or EJOB_PLUGINS_DIR): boom"},
	} {
		os.WriteFile(p, []byte(c.text), 0o644)
		o, err := Open(p, nil)
		if err != nil {
			t.Fatal(err)
		}
		o.PluginsProblem(errors.New("boom"), true)
		if _, err := o.Check(LoadOptions{}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: err = %v, want %q", c.text, err, c.want)
		}
	}
}

// TestEveryHostSettingIsParsed fails when a field of HostSettings is not
// read from the file: all-keys.yaml sets every ejob: key to a value other
// than its default, so every field must differ from the defaults. (The
// daemon's TestEveryHostSettingIsConsumed checks that each is used.)
func TestEveryHostSettingIsParsed(t *testing.T) {
	t.Parallel()
	f := mustLoad(t, "testdata/all-keys.yaml", catalog())
	// The keys of a standalone host only are in a file of their own.
	sf := mustLoad(t, "testdata/standalone-keys.yaml", catalog())
	defaults := HostSettings{DrainTimeout: DefaultDrainTimeout, JavaPeers: DefaultJavaPeers}
	got, def, alone := reflect.ValueOf(f.Host), reflect.ValueOf(defaults), reflect.ValueOf(sf.Host)
	for i := range got.NumField() {
		if got.Field(i).Equal(def.Field(i)) && alone.Field(i).Equal(def.Field(i)) {
			t.Errorf("HostSettings.%s is not read from testdata/all-keys.yaml: still %v", got.Type().Field(i).Name, got.Field(i))
		}
	}
}

// elasticjob.dump as the starter binds it: the service runs when port is
// set and enabled is not false.
func TestDumpSection(t *testing.T) {
	t.Parallel()
	job := "  jobs:\n    j: {elasticJobType: SCRIPT, shardingTotalCount: 1}\n"
	for data, want := range map[string]string{
		"":                                       "<nil>",
		"  dump: {port: 9888}\n":                 "9888",
		"  dump: {port: 0}\n":                    "0",
		"  dump: {port: 9888, enabled: false}\n": "<nil>",
		"  dump: {enabled: false}\n":             "<nil>",
		"  dump:\n    port: ${DUMP_PORT:7}\n":    "7",
		"  dump: {port: 1, address: '::'}\n":     ":: 1",
		"  dump: {port: 1, address: 10.0.0.2}\n": "10.0.0.2 1",
	} {
		f, err := Parse("f.yaml", []byte("elasticjob:\n"+data+job), catalog())
		if err != nil {
			t.Errorf("%q: %v", data, err)
			continue
		}
		got := "<nil>"
		if f.Host.DumpPort != nil {
			got = strconv.Itoa(*f.Host.DumpPort)
		}
		if f.Host.DumpAddress != "" {
			got = f.Host.DumpAddress + " " + got
		}
		if got != want {
			t.Errorf("%q: dump port %s, want %s", data, got, want)
		}
	}
}

// TestSASLSamples reads regCenter.sasl in each of its forms, and reports
// each bad key with its file and line (a JAAS file's problem with the JAAS
// file's line), never showing a password.
func TestSASLSamples(t *testing.T) {
	t.Parallel()
	opts := catalog()
	opts.Getenv = env("ZK_SASL_PASSWORD", "secret")
	for file, want := range map[string]zookeeper.SASL{
		"digest.yaml": {Mechanism: "DIGEST-MD5", Username: "bob", Password: "secret"},
		"cache.yaml":  {Mechanism: "gssapi", TicketCache: "/tmp/krb5cc_ejob"},
		"jaas.yaml":   {JAASFile: filepath.Join("testdata", "sasl", "jaas.conf")},
	} {
		t.Run(file, func(t *testing.T) {
			f := mustLoad(t, filepath.Join("testdata", "sasl", file), opts)
			if f.Registry.SASL != want {
				t.Errorf("sasl = %+v, want %+v", f.Registry.SASL, want)
			}
		})
	}
	for file, want := range map[string]string{
		"bad.yaml": `testdata/sasl/bad.yaml:5: elasticjob.regCenter.sasl.password: DIGEST-MD5 needs a password
testdata/sasl/bad.yaml:8: elasticjob.regCenter.sasl.keytab: is a GSSAPI setting; DIGEST-MD5 would ignore it
testdata/sasl/bad.yaml:9: elasticjob.regCenter.sasl.acl: want true or false, got "maybe"
testdata/sasl/bad.yaml:10: elasticjob.regCenter.sasl: unknown key "pasword" (did you mean "password"?)`,
		"badjaas.yaml": `testdata/sasl/badjaas.yaml:6: elasticjob.regCenter.sasl.jaasFile: testdata/sasl/badjaas.conf:2: DigestLoginModule needs username and password
testdata/sasl/badjaas.yaml:7: elasticjob.regCenter.sasl.username: must not be set with jaasFile: the JAAS file's Client section gives it`,
	} {
		t.Run(file, func(t *testing.T) {
			_, err := Load(filepath.Join("testdata", "sasl", file), opts)
			if err == nil || err.Error() != want {
				t.Errorf("error:\n%v\nwant:\n%s", err, want)
			}
		})
	}
}

// TestControlSocketIsStandaloneOnly: ejob.controlSocket is read (relative
// to the file's directory), and refused, at its line, in a file with a
// regCenter, whose host serves no control socket.
func TestControlSocketIsStandaloneOnly(t *testing.T) {
	t.Parallel()
	f := mustLoad(t, "testdata/standalone-keys.yaml", catalog())
	if want := filepath.Join("testdata", "run", "ejob.sock"); f.Host.ControlSocket != want {
		t.Errorf("ControlSocket = %q, want %q", f.Host.ControlSocket, want)
	}
	text := "elasticjob:\n  regCenter: {serverLists: 'zk:2181', namespace: ns}\n  jobs:\n    one: {elasticJobType: SCRIPT, shardingTotalCount: 1, props: {script.command.line: 'true'}}\nejob:\n  controlSocket: /run/ejob.sock\n"
	_, err := Parse("ejob.yaml", []byte(text), catalog())
	if err == nil || !strings.Contains(err.Error(), "ejob.yaml:6: ejob.controlSocket: only a standalone host") {
		t.Errorf("controlSocket with a regCenter: %v", err)
	}
}
