package hostconfig

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/ejob-io/ejob/core/config"
)

var update = flag.Bool("update", false, "rewrite the job-key table of docs/configuration.md from the code")

const (
	docFile       = "../../docs/configuration.md"
	docTableStart = "<!-- The job-key table is generated from core/config's JobKeys and host/hostconfig's fileOnlyJobKeys: " +
		"go test ./host/hostconfig -run TestJobKeysDoc -update -->\n"
	docTableEnd = "<!-- end of the generated job-key table -->\n"
)

// jobKeysTable renders the job-key table of docs/configuration.md.
func jobKeysTable() string {
	var b strings.Builder
	b.WriteString("| key | type | default | meaning |\n|---|---|---|---|\n")
	for _, k := range fileOnlyJobKeys() {
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", k.name, k.typ, k.def, k.doc)
	}
	for _, k := range fileJobKeys() {
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", k.Name, k.TypeName(), k.DocDefault(), k.Doc)
	}
	return b.String()
}

// The doc's job-key table is the code's: a key added to the table, or a
// type, default or meaning changed, fails here until the doc is
// regenerated with -update.
func TestJobKeysDoc(t *testing.T) {
	data, err := os.ReadFile(docFile)
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.Index(data, []byte(docTableStart))
	n := bytes.Index(data, []byte(docTableEnd))
	if i < 0 || n < i {
		t.Fatalf("%s: no job-key table between the lines\n%s%s", docFile, docTableStart, docTableEnd)
	}
	got, want := string(data[i+len(docTableStart):n]), jobKeysTable()
	if got == want {
		return
	}
	if *update {
		out := slices.Concat(data[:i+len(docTableStart)], []byte(want), data[n:])
		if err := os.WriteFile(docFile, out, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	gotLines, wantLines := strings.Split(got, "\n"), strings.Split(want, "\n")
	for _, l := range wantLines {
		if !slices.Contains(gotLines, l) {
			t.Errorf("%s lacks the row\n%s", docFile, l)
		}
	}
	for _, l := range gotLines {
		if !slices.Contains(wantLines, l) {
			t.Errorf("%s has the row\n%s\nwhich the code does not", docFile, l)
		}
	}
	t.Errorf("%s: the job-key table differs from the code (rows or their order); "+
		"run go test ./host/hostconfig -run TestJobKeysDoc -update", docFile)
}

// kebab is the kebab-case form of a camelCase key: shardingTotalCount
// becomes sharding-total-count.
func kebab(key string) string {
	var b strings.Builder
	for _, r := range key {
		if 'A' <= r && r <= 'Z' {
			b.WriteByte('-')
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return b.String()
}

// Every key of core/config's JobKeys that a job of the file may set, in
// each of its spellings and their kebab-case forms, reaches the job's
// configuration.
func TestEveryJobKeyDecoded(t *testing.T) {
	t.Parallel()
	valid := map[string]string{ // string values that must pass validation
		"cron": "0 0/1 * * * ?", "timeZone": "UTC", "shardingItemParameters": "0=a",
	}
	for _, k := range fileJobKeys() {
		for _, name := range []string{k.Name, kebab(k.Name), k.Legacy, kebab(k.Legacy)} {
			if name == "" {
				continue
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				def := config.New("j", 3)
				var value string
				var want any
				switch v := k.Field(def).(type) {
				case *string:
					value = "v1"
					if s, ok := valid[k.Name]; ok {
						value = s
					}
					want = value
				case *int:
					value, want = "7", 7
				case *bool:
					value, want = fmt.Sprint(!*v), !*v
				case *[]string:
					value, want = "[a, b]", []string{"a", "b"}
				case *map[string]string:
					value, want = "{k: v}", map[string]string{"k": "v"}
				default:
					t.Fatalf("the file cannot hold a %T", v)
				}
				yaml := "elasticjob:\n  jobs:\n    j:\n      elasticJobType: SCRIPT\n      " + name + ": " + value + "\n"
				if k.Name != config.KeyShardingTotalCount {
					yaml += "      shardingTotalCount: 3\n"
				}
				f, err := Parse("f.yaml", []byte(yaml), LoadOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if got := reflect.ValueOf(k.Field(f.Jobs[0].Config)).Elem().Interface(); !reflect.DeepEqual(got, want) {
					t.Errorf("%s: %s gives %#v, want %#v", name, value, got, want)
				}
			})
		}
	}
}
