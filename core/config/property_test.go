package config

import (
	"bytes"
	"github.com/ejob-io/ejob/spi"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/ejob-io/ejob/core/config/snakeyaml"
)

// pieces random strings are built from: YAML indicators, YAML 1.1 look-alikes,
// whitespace, line breaks, non-ASCII and non-printable characters.
var pieces = []string{
	"a", "b", "Z", "0", "1", "9", " ", "  ", ":", ": ", "#", " #", "-", "- ", "?", "? ", "*", "'", `"`,
	"\n", "\n\n", "\t", "\r", "!", "@", ",", "[", "]", "{", "}", "%", "&", "|", ">", "=", ".", "`", "\\",
	"é", "北京", "😀", "\u00a0", "\u2028", "\x01", "\x7f",
	"yes", "No", "on", "OFF", "true", "null", "~", "1:30", "0x1F", "1_000", "2026-01-01", ".inf", "<<", "---",
	"abcdefghijkl", "0=a,1=b", "0/5 * * * * ?", "GMT+08:00",
}

func randString(r *rand.Rand) string {
	n := r.IntN(4)
	if r.IntN(4) == 0 {
		n = r.IntN(60) // long enough to fold at column 80
	}
	var b strings.Builder
	for range n {
		b.WriteString(pieces[r.IntN(len(pieces))])
	}
	return b.String()
}

func randConfig(r *rand.Rand, extras bool) *JobConfiguration {
	c := &JobConfiguration{
		JobName:                               randString(r),
		Cron:                                  randString(r),
		TimeZone:                              randString(r),
		ShardingTotalCount:                    r.IntN(200) - 10,
		ShardingItemParameters:                randString(r),
		JobParameter:                          randString(r),
		MonitorExecution:                      r.IntN(2) == 0,
		Failover:                              r.IntN(2) == 0,
		Misfire:                               r.IntN(2) == 0,
		MaxTimeDiffSeconds:                    int(r.Int32()) * (1 - 2*r.IntN(2)),
		ReconcileIntervalMinutes:              r.IntN(100) - 5,
		JobShardingStrategyType:               randString(r),
		JobExecutorThreadPoolSizeProviderType: randString(r),
		JobErrorHandlerType:                   randString(r),
		Description:                           randString(r),
		Disabled:                              r.IntN(2) == 0,
		Overwrite:                             r.IntN(2) == 0,
		Label:                                 randString(r),
		StaticSharding:                        r.IntN(2) == 0,
	}
	if r.IntN(8) == 0 {
		c.JobExecutorThreadPoolSizeProviderType = []string{"CPU", "cpu", " Cpu\n", "SINGLE_THREAD"}[r.IntN(4)]
	}
	for range r.IntN(3) {
		c.JobListenerTypes = append(c.JobListenerTypes, randString(r))
	}
	if n := r.IntN(4); n > 0 {
		c.Props = map[string]string{}
		for range n * 5 {
			c.Props[randString(r)] = randString(r)
		}
	}
	if extras {
		c.LegacyThreadPoolKey = r.IntN(2) == 0
		if r.IntN(3) == 0 {
			x, err := NewExtraConfiguration("!!org.apache.shardingsphere.elasticjob.kernel.tracing.yaml.YamlTracingConfiguration",
				map[string]any{"type": randString(r), "n": r.IntN(10), "list": []string{randString(r)}, "empty": []string{}})
			if err != nil {
				panic(err)
			}
			c.JobExtraConfigurations = append(c.JobExtraConfigurations, x)
		}
	}
	return c
}

// Unmarshal(Marshal(x)) == x for generated configurations, and a parsed
// configuration is a fixed point of Marshal/Unmarshal.
func TestPropertyRoundTrip(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 2000 {
		gen := randConfig(r, true)
		out, err := Marshal(gen)
		if err != nil {
			t.Fatalf("#%d Marshal: %v", i, err)
		}
		back, err := Unmarshal(out)
		if err != nil {
			t.Fatalf("#%d Unmarshal: %v\n%s", i, err, out)
		}
		want := gen
		if spi.NormalizeType(gen.JobExecutorThreadPoolSizeProviderType) == DefaultThreadPoolType {
			// CPU, set in Go, is written as no key (see LegacyThreadPoolKey).
			want = gen.Clone()
			want.JobExecutorThreadPoolSizeProviderType = ""
		}
		if !back.Equal(want) {
			t.Fatalf("#%d round trip changed the configuration\n--- yaml\n%s\n--- want %#v\n--- got  %#v", i, out, gen, back)
		}
		again, err := Marshal(back)
		if err != nil {
			t.Fatal(err)
		}
		if len(gen.Props) >= 12 {
			// From 12 props on, java.util.Properties resizes while it is
			// filled, which can reorder keys sharing a bin: Java's own
			// load/dump is then not idempotent, and neither is ours.
			continue
		}
		if !bytes.Equal(again, out) {
			t.Fatalf("#%d second Marshal differs\n--- first\n%s--- second\n%s", i, out, again)
		}
		back2, err := Unmarshal(again)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(back2, back) {
			t.Fatalf("#%d not a fixed point:\n%#v\n%#v", i, back, back2)
		}
	}
}

// TestAgainstSnakeYAML is a differential test against the real SnakeYAML:
// Java loads each generated YAML into a JobConfigurationPOJO look-alike and
// dumps it with ElasticJob's representer rules; the bytes must equal what
// Marshal(Unmarshal(yaml)) writes.
// It runs only when EJOB_SNAKEYAML_JAR names a SnakeYAML jar and java and
// javac are on PATH (e.g. Debian's libyaml-snake-java:
// EJOB_SNAKEYAML_JAR=/usr/share/java/snakeyaml.jar).
func TestAgainstSnakeYAML(t *testing.T) {
	jar := os.Getenv("EJOB_SNAKEYAML_JAR")
	if jar == "" {
		t.Skip("EJOB_SNAKEYAML_JAR not set")
	}
	dir := t.TempDir()
	if out, err := exec.Command("javac", "-cp", jar, "-d", dir, filepath.Join("testdata", "oracle", "Oracle.java")).CombinedOutput(); err != nil {
		t.Fatalf("javac: %v\n%s", err, out)
	}
	r := rand.New(rand.NewPCG(3, 4))
	var in bytes.Buffer
	var want [][]byte
	for range 2000 {
		c := randConfig(r, false)
		for k := range c.Props {
			// Java loads a !!binary key as a byte[], whose identity hash
			// makes the Properties order random.
			if !snakeyaml.IsPrintable(k) {
				delete(c.Props, k)
			}
		}
		out, err := Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		in.Write(out)
		// What Java does with it: load, then dump.
		loaded, err := Unmarshal(out)
		if err != nil {
			t.Fatal(err)
		}
		redumped, err := Marshal(loaded)
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, redumped)
		in.WriteByte(0)
	}
	cmd := exec.Command("java", "-cp", jar+string(os.PathListSeparator)+dir, "Oracle", "pojo")
	cmd.Stdin = &in
	got, err := cmd.Output()
	if err != nil {
		t.Fatalf("java: %v", err)
	}
	outs := bytes.Split(got, []byte{0})
	for i, w := range want {
		if !bytes.Equal(outs[i], w) {
			t.Errorf("#%d SnakeYAML writes\n%q\nwe write\n%q", i, outs[i], w)
		}
	}
}

// SetUp's Config when it writes is what its ConfigData parses to, as
// Equal compares (the job keeps it instead of parsing the node it wrote).
func TestPropertySetUpConfigReadsBack(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(3, 4))
	for i := range 2000 {
		local := randConfig(r, true)
		res, err := SetUp("com.example.Job", local, RegistryState{})
		if err != nil {
			t.Fatalf("#%d SetUp: %v", i, err)
		}
		if !res.Write {
			t.Fatalf("#%d SetUp on an empty registry did not write", i)
		}
		back, err := Unmarshal(res.ConfigData)
		if err != nil {
			t.Fatalf("#%d Unmarshal: %v\n%s", i, err, res.ConfigData)
		}
		if !back.Equal(res.Config) {
			t.Fatalf("#%d SetUp's Config differs from what its ConfigData parses to\n--- yaml\n%s\n--- Config %#v\n--- parsed %#v", i, res.ConfigData, res.Config, back)
		}
	}
}

// javaCompare's ASCII shortcut orders as the UTF-16 comparison does.
func TestJavaCompareASCII(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(7, 8))
	const alphabet = "aAzZ09_-.~ \x7f\x00é😀"
	for range 100_000 {
		var a, b strings.Builder
		for range r.IntN(6) {
			a.WriteString(string([]rune(alphabet)[r.IntN(len([]rune(alphabet)))]))
		}
		for range r.IntN(6) {
			b.WriteString(string([]rune(alphabet)[r.IntN(len([]rune(alphabet)))]))
		}
		if got, want := sign(javaCompare(a.String(), b.String())), sign(slices.Compare(utf16Units(a.String()), utf16Units(b.String()))); got != want {
			t.Fatalf("javaCompare(%q, %q) = %d, UTF-16 order says %d", a.String(), b.String(), got, want)
		}
	}
}

func sign(n int) int { return min(max(n, -1), 1) }

// A Marshaller writes every configuration as Marshal does, on generated
// configurations whose values come from a small pool (so that its memo
// is asked for the same key and value after entries that leave the output
// in different places: a folded string, a literal block, a quoted one),
// one Marshaller for all of them, from several goroutines.
func TestPropertyMarshallerWritesAsMarshal(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(7, 8))
	pool := make([]string, 24)
	for i := range pool {
		pool[i] = randString(r)
	}
	var cfgs []*JobConfiguration
	for range 3000 {
		c := randConfig(r, true)
		pick := func() string { return pool[r.IntN(len(pool))] }
		c.JobName, c.Cron, c.TimeZone, c.JobParameter = pick(), pick(), pick(), pick()
		c.ShardingItemParameters, c.Description, c.Label = pick(), pick(), pick()
		c.JobShardingStrategyType, c.JobErrorHandlerType = pick(), pick()
		c.ShardingTotalCount, c.MaxTimeDiffSeconds = r.IntN(3), r.IntN(3)-1
		cfgs = append(cfgs, c)
	}
	var m Marshaller
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := g; i < len(cfgs); i += 4 {
				want, werr := Marshal(cfgs[i])
				got, gerr := m.Marshal(cfgs[i])
				if !bytes.Equal(got, want) || (werr == nil) != (gerr == nil) {
					t.Errorf("#%d: the Marshaller writes\n%q (%v)\nMarshal\n%q (%v)", i, got, gerr, want, werr)
					return
				}
			}
		})
	}
	wg.Wait()
	if m.memo.Len() == 0 {
		t.Fatal("the memo remembered nothing: the test compares nothing it wrote from memory")
	}
}
