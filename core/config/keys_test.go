package config

import (
	"reflect"
	"strings"
	"testing"
	"unicode"

	"github.com/ejob-io/ejob/spi"
)

// Every field of JobConfiguration but LegacyThreadPoolKey (how one key is
// spelled) is one key of the table, named after it, and the table keeps
// the rules its users rely on.
func TestJobKeysCoverTheStruct(t *testing.T) {
	t.Parallel()
	keys := JobKeys()
	if len(keys) > 64 {
		t.Fatalf("%d keys: keySet holds 64", len(keys))
	}
	var c JobConfiguration
	sv := reflect.ValueOf(&c).Elem()
	fieldOf := map[uintptr]string{}
	for i := range sv.NumField() {
		if f := sv.Type().Field(i); f.IsExported() && f.Name != "LegacyThreadPoolKey" {
			fieldOf[sv.Field(i).Addr().Pointer()] = f.Name
		}
	}
	seen := map[string]string{}
	legacy := 0
	for _, k := range keys {
		f, ok := fieldOf[reflect.ValueOf(k.Field(&c)).Pointer()]
		if !ok {
			t.Errorf("key %s: Field is not an exported field of JobConfiguration", k.Name)
			continue
		}
		if prev, dup := seen[f]; dup {
			t.Errorf("keys %s and %s have the same field %s", prev, k.Name, f)
		}
		seen[f] = k.Name
		if want := string(unicode.ToLower(rune(f[0]))) + f[1:]; k.Name != want {
			t.Errorf("field %s has key %q, want %q", f, k.Name, want)
		}
		if k.Legacy != "" {
			legacy++
			if _, ok := k.Field(&c).(*string); !ok || k.write != writeUnlessNull {
				t.Errorf("key %s: Unmarshal reads a key with two spellings as a string written unless null", k.Name)
			}
		}
		if strings.TrimSpace(k.Doc) == "" || strings.Contains(k.Doc, "\n") || strings.Contains(k.Doc, "|") {
			t.Errorf("key %s: Doc must be one line of Markdown without '|': %q", k.Name, k.Doc)
		}
		_, isString := k.Field(&c).(*string)
		if k.write != writeAlways && !isString {
			t.Errorf("key %s: a string write rule on a %s", k.Name, k.TypeName())
		}
		if _, isList := k.Field(&c).(*[]string); isList && k.Plugin != "" && k.Plugin != spi.KindJobListener {
			t.Errorf("key %s: a list can only name job listeners, not %s types", k.Name, k.Plugin)
		}
	}
	for _, f := range fieldOf {
		if _, ok := seen[f]; !ok {
			t.Errorf("field %s has no key in JobKeys", f)
		}
	}
	if legacy > 1 {
		t.Errorf("%d keys with a legacy spelling: LegacyThreadPoolKey chooses the spelling of one", legacy)
	}
}

// New has the Java API's defaults; the documented defaults follow from
// the table.
func TestJobKeysDefaults(t *testing.T) {
	t.Parallel()
	want := &JobConfiguration{JobName: "j", ShardingTotalCount: 2, MonitorExecution: true, Misfire: true,
		MaxTimeDiffSeconds: -1, ReconcileIntervalMinutes: 10}
	if got := New("j", 2); !reflect.DeepEqual(got, want) {
		t.Errorf("New = %+v\nwant %+v", got, want)
	}
	docs := map[string]string{}
	for _, k := range JobKeys() {
		docs[k.Name] = k.TypeName() + " " + k.DocDefault()
	}
	for key, want := range map[string]string{
		KeyCron:                                  "string none",
		KeyTimeZone:                              "string host zone",
		KeyShardingTotalCount:                    "int required",
		KeyShardingItemParameters:                "string `\"\"`",
		KeyMonitorExecution:                      "bool **true**",
		KeyFailover:                              "bool false",
		KeyMaxTimeDiffSeconds:                    "int -1",
		KeyReconcileIntervalMinutes:              "int **10**",
		KeyJobExecutorThreadPoolSizeProviderType: "string `CPU`",
		KeyJobListenerTypes:                      "list `[]`",
		KeyProps:                                 "map `{}`",
	} {
		if docs[key] != want {
			t.Errorf("%s: type and default %q, want %q", key, docs[key], want)
		}
	}
}
